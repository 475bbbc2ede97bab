"""Report how this process was started, then end as asked; for the fork server's tests (tests/test_zygote.py).

`python -m tests.servers.zygote_probe MODE [ARG]` writes one JSON line on stdout (not flushed: the
interpreter's exit must flush it): pid, session and group ids, cwd, sys.argv, the whole environment and
what stdin held; "to stderr" on stderr. A non-daemon thread writes "thread joined" once the main thread
has ended (the interpreter must wait for it) and an atexit handler "atexit ran". MODE `exit N` exits
with N; `wait` waits for a signal (SIGTERM's default action ends it).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading


def main() -> None:
    mode = sys.argv[1]
    stdin = sys.stdin.read() if mode == "exit" else ""
    facts = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "sid": os.getsid(0),
        "pgid": os.getpgid(0),
        "cwd": os.getcwd(),
        "argv": sys.argv,
        "env": dict(os.environ),
        "stdin": stdin,
        "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    }
    sys.stdout.write(json.dumps(facts) + "\n")
    sys.stderr.write("to stderr\n")

    def late() -> None:
        threading.main_thread().join()  # returns once the interpreter is shutting down
        sys.stdout.write("thread joined\n")

    atexit.register(sys.stdout.write, "atexit ran\n")
    if mode == "wait":
        sys.stdout.flush()
        signal.pause()
    threading.Thread(target=late).start()
    sys.exit(int(sys.argv[2]))


if __name__ == "__main__":
    main()
