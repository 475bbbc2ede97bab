"""Start a server process whose group the watchdog knows before the server's code runs (R-2.6, R-9.3).

The process is started through the exec gate (`transports/gate.py`, docs/architecture.md#process-lifecycle):
`open_process` returns with the gate waiting, `ProcessGuard.adopt` registers the group, and only then
does the gate get its go and exec the command. A host killed at any point before the go leaves a
gate that sees end of file and exits without running anything; after it, the watchdog has the group.

Package-private: `transports/stdio.py` and `transports/warmup.py` are its users.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import Mapping, Sequence
from typing import IO, Final

import anyio
from anyio.abc import Process

from mcp_center.errors import ServerUnreachable
from mcp_center.models import ErrorReason
from mcp_center.transports.gate import READY, command_line, go_message
from mcp_center.transports.guard import ProcessGuard
from mcp_center.transports.reaper import GroupRef

__all__ = ["GateFailed", "open_guarded_process", "spawn_failure"]

logger = logging.getLogger(__name__)

_GO_S: Final = 10.0
"""Seconds for the gate to start, take its go and exec (one deadline for all three). A gate that
has not taken its go by then is killed (`GateFailed`); one that took it but has not reported its
exec is counted as started (a host under load): a later exec failure shows as exit status 127."""
_REAP_S: Final = 2.0
_GATE_EXITED: Final = "the exec gate exited before it started"
_GATE_LOST: Final = "the exec gate exited before it took the server's go"

_Stream = int | IO[bytes] | None


class GateFailed(OSError):
    """The exec gate itself failed before the server could run: it exited before it started
    (its interpreter could not start), or did not take its go within `_GO_S`. Nothing of the server ran.

    Attributes:
        status: The gate's exit status (negative: the signal), None when it was killed here.
    """

    def __init__(self, problem: str, status: int | None) -> None:
        super().__init__(problem)
        self.status = status


async def open_guarded_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    stdin: _Stream,
    stdout: _Stream,
    stderr: _Stream,
    pass_fds: Sequence[int],
    guard: ProcessGuard,
) -> tuple[Process, GroupRef | None]:
    """Start `argv` in a new session (pid == pgid == sid) and register its group with `guard`.

    While `guard` has a watchdog and its gate works (`ProcessGuard.gated`), the command runs only
    after its group was adopted (through the gate); otherwise it is started directly and adopted
    after. Cancellable: the spawn and `adopt` are shielded, and a cancellation while the gate waits
    for its go or exec kills its group (nothing of the server ran, or it dies at once) before it
    is delivered; no process is ever left behind.

    Args:
        argv: The command and its arguments, exec'd verbatim (PATH lookup in `env`'s PATH).
        env: The command's complete environment (the gate itself runs with the host's).
        cwd: Its working directory; None means ours.
        stdin / stdout / stderr: As for `anyio.open_process`.
        pass_fds: Descriptors the command inherits at their numbers.
        guard: The process guard that must know the group (its `start()` already called).
    Returns:
        The process (its pid is the command's) and its group's reference (None when the leader is
        already gone, or off Linux).
    Raises:
        GateFailed: the gate exited before it started or before it took its go, or did not take
            its go in time (an OSError without errno; no process is left).
        OSError: the command could not be started: the working directory (`filename` = `cwd`) or
            the exec (`filename` = argv[0]), as `subprocess` raises them; no process is left.
        ValueError: `env` holds a name or value exec cannot pass (`subprocess`'s messages).
    """
    if not (guard.watching and guard.gated):
        return await _spawn(list(argv), env, cwd, (stdin, stdout, stderr), pass_fds, guard)
    go = go_message(dict(env))
    ours, theirs = socket.socketpair()  # both close-on-exec; the gate inherits `theirs` alone
    try:
        try:  # env None: the gate runs with the host's environment (module doc of gate.py)
            gate = command_line(theirs.fileno(), argv)
            process, group = await _spawn(gate, None, cwd, (stdin, stdout, stderr), (*pass_fds, theirs.fileno()), guard)
        finally:
            theirs.close()
        try:
            failure = await _go(ours, go)
        except BaseException:  # cancelled while the gate waits: it must not live on
            await _discard(process, group, guard, kill=True)
            raise
    finally:
        ours.close()
    if failure is None:
        return process, group
    if isinstance(failure, int):  # the gate reported its exec's errno and exits
        await _discard(process, group, guard, kill=False)
        raise OSError(failure, os.strerror(failure), argv[0])
    exited = failure in (_GATE_EXITED, _GATE_LOST)
    await _discard(process, group, guard, kill=not exited)
    status = process.returncode if exited else None
    raise GateFailed(f"{failure} (exit status {status})" if exited else failure, status)


async def _spawn(
    argv: list[str],
    env: Mapping[str, str] | None,
    cwd: str | None,
    streams: tuple[_Stream, _Stream, _Stream],
    pass_fds: Sequence[int],
    guard: ProcessGuard,
) -> tuple[Process, GroupRef | None]:
    """Start `argv` in a new session and adopt its group, shielded: the process exists from the first await on."""
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            argv, env=None if env is None else dict(env), cwd=cwd, stdin=streams[0], stdout=streams[1],
            stderr=streams[2], start_new_session=True, pass_fds=pass_fds,
        )  # fmt: skip
        return process, guard.adopt(process.pid)  # for the gate: before the go
    raise RuntimeError("spawn was interrupted")  # pragma: no cover - a shielded scope swallows nothing


async def _discard(process: Process, group: GroupRef | None, guard: ProcessGuard, *, kill: bool) -> None:
    """Reap a gate that failed (killing its group at once when `kill`, else unless it exits within
    `_REAP_S`) and forget its group."""
    with anyio.CancelScope(shield=True):
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        with anyio.move_on_after(_REAP_S):
            await process.wait()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        await process.aclose()
        if group is not None:
            guard.release(group)


async def _go(sock: socket.socket, go: bytes) -> int | str | None:
    """Send the go and wait for the exec, within `_GO_S`: None once it ran (or the gate, killed after
    it took its go, closed its end: the process's exit tells), its errno when the exec failed, else
    what went wrong with the gate itself (exited before it started or before it took its go,
    or the deadline)."""
    sock.setblocking(False)
    view = memoryview(go)
    report = b""
    lost = False
    with anyio.move_on_after(_GO_S) as waited:
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:
                await anyio.wait_writable(sock)
            except OSError:  # the gate is gone (EPIPE): it never ran the server
                lost = True
                break
        while True:
            await anyio.wait_readable(sock)
            try:
                chunk = sock.recv(64)
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            report += chunk
    if not report:  # the deadline cut the go's send: did the gate start at least?
        with contextlib.suppress(OSError):  # BlockingIOError: nothing came
            report = sock.recv(64)
    if not report.startswith(READY):
        if waited.cancelled_caught:
            return f"the exec gate did not start within {_GO_S:g} s"
        return _GATE_EXITED
    if lost:
        return _GATE_LOST
    if waited.cancelled_caught:
        if view:
            return f"the exec gate did not take the server's go within {_GO_S:g} s"
        logger.warning("stdio.gate_slow", extra={"waited_s": _GO_S})
        return None
    report = report[len(READY) :]
    if not report:
        return None
    try:
        return int(report)
    except ValueError:
        return errno.EIO


def spawn_failure(command: str, cwd: str | None, exc: OSError) -> ServerUnreachable:
    """Map an exec/chdir failure of `open_guarded_process` (or the exec gate's, `GateFailed`) to
    `ServerUnreachable` with reason `spawn_failed` (R-2.6, R-7.3). Names the command, never args or env."""
    details: dict[str, str] = {
        "reason": ErrorReason.SPAWN_FAILED.value,
        "command": command,
        "errno": errno.errorcode.get(exc.errno, "") if exc.errno is not None else "",
    }
    if isinstance(exc, GateFailed):
        details["gate"] = "exec gate (python -I -S transports/gate.py)"
        problem = f"{exc}; the server did not run (see docs/decisions.md#exec-gate)"
    elif cwd is not None and exc.filename == cwd:
        details["cwd"] = cwd
        problem = f"working directory {cwd!r} is not usable ({exc.strerror})"
    elif isinstance(exc, FileNotFoundError):
        problem = "command not found (it is run directly, without a shell)"
    elif isinstance(exc, PermissionError):
        problem = "permission denied (is it an executable file?)"
    else:
        problem = exc.strerror or type(exc).__name__
    return ServerUnreachable(f"cannot start stdio server command {command!r}: {problem}", details=details)
