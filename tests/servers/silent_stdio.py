"""A process that never answers MCP: it reads stdin and says nothing on stdout.

Flags:
    --grandchild: first start `sleep 300` in our process group.
    --stubborn: ignore SIGTERM and stay alive after stdin EOF (only SIGKILL stops it).

Once its set-up is done (SIGTERM ignored, the grandchild started) it writes `ready` to stderr, so a
test can tell a stubborn process from one still starting (a SIGTERM that lands before the handler
is set ends it, which a loaded machine makes likely within a 0.2 s grace).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def main() -> None:
    stubborn = "--stubborn" in sys.argv
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--grandchild" in sys.argv:
        subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    sys.stderr.write("ready\n")
    sys.stderr.flush()
    while sys.stdin.buffer.read(65536):
        pass
    while stubborn:
        time.sleep(60)


if __name__ == "__main__":
    main()
