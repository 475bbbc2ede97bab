"""A stdio command that runs its server in the tests' fork server (issue 16: suite time).

`python -I -S tests/support/zygote_launcher.py ADDRESS SCRIPT ARGS...` behaves, for the host that
execs it, as `python SCRIPT ARGS...` does, without importing what SCRIPT imports (the SDK: 0.6-0.7 s
of CPU per start): it sends its stdin, stdout and stderr (SCM_RIGHTS), its environment, cwd and
argv to the fork server listening at ADDRESS (`tests/support/zygote_server.py`, which has imported
the host and the SDK), whose forked child runs SCRIPT as `__main__`. Build the command with
`tests.support.zygote.launch_command`. Stdlib only, and `-I -S`: it starts in about 20 ms.

What the host sees of it:

- Its stdio: the child's own (the launcher holds none of them once handed over: its 0, 1, 2 become
  /dev/null), so stdout's and stderr's EOF and stdin's EOF are the child's, as with the real command.
- Its exit status: the child's (a child killed by signal N ends the launcher by signal N too).
- Signals: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to the launcher (or its
  process group) are passed on to the child; one that arrives before the child exists is passed on as
  soon as it does. SIGKILL cannot be passed on: the fork server SIGKILLs a launcher's child when the
  launcher's end of their reply socket closes, i.e. when the launcher dies however it dies, and the
  child dies with the fork server (`PR_SET_PDEATHSIG`): a child never outlives its launcher.

What differs, so tests about these keep the real command: the server's pid is not the launcher's
and it is not in the launcher's process group or session (a grandchild it starts is in the child's
group: a process-group kill of the launcher does not reach it); sys.flags, sys.path beyond its first
entry and the str hash seed are the fork server's; it runs outside any sandbox the launcher is in.

When the fork server cannot be reached (gone, or not reachable from here) the launcher execs the
real command instead (`python SCRIPT ARGS...`): slower, same behaviour.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from types import FrameType

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
"""Signals the launcher passes on to its child."""
LOST_STATUS = 255
"""Exit status when the fork server died before reporting the child's (the child died with it)."""


class _Relay:
    """The signals received, passed on to the child once its pidfd is known."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.pidfd: int | None = None

    def receive(self, signum: int, _frame: FrameType | None) -> None:
        self.pending.append(signum)
        self.flush()

    def flush(self) -> None:
        if self.pidfd is None:
            return
        while True:
            try:
                signum = self.pending.pop(0)  # a signal arriving now may have flushed the list already
            except IndexError:
                return
            try:  # noqa: SIM105 - contextlib would add imports to a start that must stay cheap
                signal.pidfd_send_signal(self.pidfd, signum)
            except ProcessLookupError:
                pass


def _handed_over(address: str, command: list[str], relay: _Relay) -> socket.socket | None:
    """Send the job; the reply socket once the child runs (its pidfd in `relay`), None if that failed."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    job = {
        "argv": [sys.executable, *command],
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "entry": f"path:{command[0]}",
        "new_session": False,
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn, theirs:
            conn.connect("\0" + address[1:] if address.startswith("@") else address)  # @NAME: abstract
            socket.send_fds(conn, [json.dumps(job).encode()], [theirs.fileno(), 0, 1, 2])
        data, fds, _flags, _addr = socket.recv_fds(ours, 4096, 1)
    except OSError:
        ours.close()
        return None
    if not fds or "pid" not in json.loads(data or b"{}"):
        ours.close()
        return None
    relay.pidfd = fds[0]
    return ours


def _end_as(code: int) -> None:
    """Exit with the child's status: its code, or by the signal that ended it."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default is not to end a process
    os._exit(code)


def main() -> None:
    """`zygote_launcher.py ADDRESS SCRIPT ARGS...` (see the module doc)."""
    address, *command = sys.argv[1:]
    relay = _Relay()
    for signum in FORWARDED:
        signal.signal(signum, relay.receive)
    reply = _handed_over(address, command, relay)
    if reply is None:  # no fork server: be the real command
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
        if relay.pending:
            _end_as(-relay.pending[0])
        os.execv(sys.executable, [sys.executable, *command])  # noqa: S606 - the command the host was given
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the child's stdio is the child's alone
    relay.flush()
    data = reply.recv(4096)  # the exit status, once the child has ended; EOF: the fork server died
    _end_as(int(json.loads(data)["returncode"]) if data else LOST_STATUS)


if __name__ == "__main__":
    main()
