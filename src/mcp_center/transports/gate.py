"""The exec gate: a stdio server's code runs only once its process group is known to the watchdog (R-2.6, R-9.3).

Threat: a host SIGKILLed between starting a server and registering its group (`ProcessGuard.adopt`)
leaves the server running for good, because the watchdog never heard of it. That window is real:
the event loop takes several steps after the fork and exec (connecting the pipes) before `adopt`
runs, and a busy or descheduled host can stay in it for as long as a server needs to start and
answer (seen in the suite: issue 16).

So the host does not exec the server directly but this program, as
`python -I -S gate.py FD COMMAND ARGS...`, in the server's new session (it *is* the server's
process: same pid, group and start time, so `adopt` registers the group before the server runs).
It runs with the host's own environment (what the host's interpreter needed to start: a relocated
or SCL Python needs `LD_LIBRARY_PATH`; `-I` ignores the `PYTHON*` variables), never the server's,
so the server's `LD_PRELOAD` never applies to the gate's interpreter. It first writes `READY` to FD
(the host learns the gate itself started), then waits on FD, one end of a socket pair whose other
end only the host holds:

- the host's go (`go_message`): a 16-digit hex length, then the server's environment as
  `NAME=VALUE` entries separated by NUL bytes. The gate closes FD on exec, resets SIGPIPE and
  SIGXFSZ to their defaults (Python ignores them; `subprocess` resets them the same way) and execs
  COMMAND with exactly that environment, looked up on its PATH as `subprocess` does (`os.execvpe`:
  a path with `/` as is, else the PATH entries in order, the first error other than "not found"
  wins; no shell, and no fallback to `/bin/sh` for a file exec refuses).
- end of file instead (the host died before its go, however it died): it exits with
  `CLOSED_STATUS` and COMMAND never runs.

When the exec fails (an `OSError`, or a `ValueError` such as an empty command, reported as
`EINVAL`), the gate ignores SIGPIPE again, writes the errno in decimal to FD (a host that stopped
waiting does not turn it into a SIGPIPE death) and exits with `EXEC_FAILED_STATUS`; on success FD
closes with the exec, which is how the host learns the server runs. It imports the standard
library only and starts in about 8 ms (`-I -S`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` itself would cost more than the whole gate does
if TYPE_CHECKING:
    import signal as signals
    from collections.abc import Sequence
else:
    try:  # the C module: `signal` imports enum and functools, a third of the gate's start
        import _signal as signals
    except ImportError:  # pragma: no cover - not CPython
        import signal as signals

__all__ = ["CLOSED_STATUS", "EXEC_FAILED_STATUS", "READY", "command_line", "go_message", "run"]

CLOSED_STATUS = 125
"""Exit status of a gate whose host closed its end without a go (the host died): nothing ran."""
EXEC_FAILED_STATUS = 127
"""Exit status of a gate whose exec failed (after reporting the errno)."""
READY = b"+"
"""What the gate writes to FD first: its interpreter started (a gate that dies before is the gate's failure)."""
_HEADER_BYTES = 16
_EINVAL = 22  # Linux's; `errno` would be one more import


def command_line(fd: int, argv: Sequence[str]) -> list[str]:
    """The host's command line that starts `argv` through the gate waiting on descriptor `fd`."""
    return [sys.executable, "-I", "-S", __file__, str(fd), *argv]


def go_message(env: dict[str, str]) -> bytes:
    """The go for a gate: the server's environment, framed (see the module doc).

    Raises:
        ValueError: with `subprocess`'s own messages: "illegal environment variable name" (a name
            that holds `=`, or is empty: `os.execve` refuses it), "embedded null byte" (a NUL
            byte in a name or value).
    """
    entries: list[bytes] = []
    for name, value in env.items():
        key, data = os.fsencode(name), os.fsencode(value)
        if b"\0" in key or b"\0" in data:
            raise ValueError("embedded null byte")
        if not key or b"=" in key:
            raise ValueError("illegal environment variable name")
        entries.append(key + b"=" + data)
    payload = b"\0".join(entries)
    return f"{len(payload):0{_HEADER_BYTES}x}".encode("ascii") + payload


def _read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`, or None at end of file (the host is gone) or on an error."""
    data = b""
    while len(data) < size:
        try:
            chunk = os.read(fd, size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def run(fd: int, argv: list[str]) -> int:
    """Wait for the go on `fd`, then exec `argv` (returns only when that is not done).

    Returns:
        `CLOSED_STATUS` when no go came (end of file, or a malformed one); `EXEC_FAILED_STATUS`
        when the exec failed (its errno was written to `fd`).
    """
    try:
        os.write(fd, READY)
    except OSError:  # the host is gone
        return CLOSED_STATUS
    header = _read_exactly(fd, _HEADER_BYTES)
    try:
        size = int(header, 16) if header is not None else -1
    except ValueError:
        size = -1
    payload = _read_exactly(fd, size) if size >= 0 else None
    if payload is None:
        return CLOSED_STATUS
    env: dict[bytes, bytes] = {}
    for entry in payload.split(b"\0") if payload else []:
        name, _, value = entry.partition(b"=")
        env[name] = value
    os.set_inheritable(fd, False)  # closed by the exec: its end of file tells the host it ran
    for signum in (signals.SIGPIPE, signals.SIGXFSZ):
        signals.signal(signum, signals.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, env)  # noqa: S606 - exec'ing the command is the point; no shell
    except Exception as exc:  # noqa: BLE001 - every failed exec is reported, never a traceback
        code = (exc.errno or 0) if isinstance(exc, OSError) else _EINVAL
        signals.signal(signals.SIGPIPE, signals.SIG_IGN)  # a host gone: EPIPE, not a SIGPIPE death
        try:  # noqa: SIM105 - contextlib would add an import to a start that must stay cheap
            os.write(fd, str(code).encode("ascii"))
        except OSError:
            pass
    return EXEC_FAILED_STATUS


def _main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: gate.py FD COMMAND [ARGS...]\n")
        return 2
    return run(int(argv[0]), argv[1:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
