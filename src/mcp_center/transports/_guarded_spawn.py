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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Final

import anyio
from anyio.abc import Process

from mcp_center.transports.gate import go_message
from mcp_center.transports.guard import ProcessGuard
from mcp_center.transports.reaper import GroupRef

__all__ = ["open_guarded_process"]

logger = logging.getLogger(__name__)

_GATE: Final = str(Path(__file__).with_name("gate.py"))
_EXEC_REPORT_S: Final = 10.0
"""Seconds to wait for the gate's exec (its interpreter's start included) before counting the
command as started anyway; a later exec failure then shows as the process's exit status 127."""
_REAP_S: Final = 2.0

_Stream = int | IO[bytes] | None


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

    While `guard` has a watchdog, the command runs only after its group was adopted (through the
    gate); without one (not Linux, or it could not start) it is started directly and adopted after.
    Run it in a shielded cancel scope: the process exists from the first await on.

    Args:
        argv: The command and its arguments, exec'd verbatim (PATH lookup in `env`'s PATH).
        env: The command's complete environment.
        cwd: Its working directory; None means ours.
        stdin / stdout / stderr: As for `anyio.open_process`.
        pass_fds: Descriptors the command inherits at their numbers.
        guard: The process guard that must know the group (its `start()` already called).
    Returns:
        The process (its pid is the command's) and its group's reference (None when the leader is
        already gone, or off Linux).
    Raises:
        OSError: the command could not be started: the working directory (`filename` = `cwd`) or
            the exec (`filename` = argv[0]), as `subprocess` raises them; no process is left.
        ValueError: `env` holds a name or value exec cannot pass.
    """
    if not guard.watching:
        process = await anyio.open_process(
            list(argv), env=dict(env), cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
            start_new_session=True, pass_fds=pass_fds,
        )  # fmt: skip
        return process, guard.adopt(process.pid)
    go = go_message(dict(env))
    ours, theirs = socket.socketpair()  # both close-on-exec; the gate inherits `theirs` alone
    try:
        try:
            gate_argv = [sys.executable, "-I", "-S", _GATE, str(theirs.fileno()), *argv]
            process = await anyio.open_process(
                gate_argv, env={}, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                start_new_session=True, pass_fds=(*pass_fds, theirs.fileno()),
            )  # fmt: skip
        finally:
            theirs.close()
        group = guard.adopt(process.pid)  # before the go: from here the group dies with this process
        failure = await _go(ours, go)
    finally:
        ours.close()
    if failure is None:
        return process, group
    # The exec failed: the gate exits at once; reap it, forget its group, report as subprocess does.
    with anyio.move_on_after(_REAP_S):
        await process.wait()
    if process.returncode is None:  # pragma: no cover - a gate that does not exit after reporting
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
    await process.aclose()
    if group is not None:
        guard.release(group)
    raise OSError(failure, os.strerror(failure), argv[0])


async def _go(sock: socket.socket, go: bytes) -> int | None:
    """Send the go, then wait for the exec: None once it ran (or the gate is gone), else its errno."""
    sock.setblocking(False)
    view = memoryview(go)
    try:
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:
                await anyio.wait_writable(sock)
    except OSError:  # the gate is gone (killed): nothing runs, the session sees the exit
        return None
    report = b""
    with anyio.move_on_after(_EXEC_REPORT_S) as waited:
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
    if waited.cancelled_caught:
        logger.warning("stdio.gate_slow", extra={"waited_s": _EXEC_REPORT_S})
        return None
    if not report:
        return None
    try:
        return int(report)
    except ValueError:
        return errno.EIO
