"""A process that never answers MCP: it reads stdin and says nothing on stdout.

Flags:
    --grandchild: first start `sleep 300` in our process group.
    --stubborn: ignore SIGTERM and stay alive after stdin EOF (only SIGKILL stops it).
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
    while sys.stdin.buffer.read(65536):
        pass
    while stubborn:
        time.sleep(60)


if __name__ == "__main__":
    main()
