"""stdio transport: a local MCP server process that we can always stop (R-2.6, R-3.1).

Threats this module stops:

- **Orphaned process trees.** The server starts in its own session and process group
  (`start_new_session=True`, so pid == pgid == sid). Closing always signals the whole group
  (SIGTERM, then SIGKILL), even when the leader already exited on stdin EOF, so a grandchild such
  as `sleep 300` that the server forked cannot outlive the connection. The SDK's `stdio_client`
  signals the group only when the leader hangs, and leaks such grandchildren (docs/sdk-notes.md#stdio).
  Signalling and watching the group is `transports/_process_group.py`.
- **Orphans of a dead host.** Every group is registered with this process's `ProcessGuard`
  (`transports.guard`): its watchdog stops the group if this process dies without closing the
  transport (SIGKILL, a crash), and `serve` records the group so that the next serve reaps it
  even if the watchdog died too (R-9.3, docs/architecture.md#process-lifecycle). The server is
  started through the exec gate (`transports/gate.py`): its code runs only once the group is
  registered, so no instant exists in which this process's death would leave it unknown.
- **Shell interpretation.** argv goes to exec as a list and no shell ever sees it: `|`, `;`, `>`,
  `$(...)` are plain bytes of an argument, and `"npx foo | sh"` as a command is a file name that
  does not exist (spawn fails with `ServerUnreachable`, reason `spawn_failed`).
- **Host environment leaking into servers.** The child gets exactly the `env` it is given.
  `child_environment` builds it from a small allow-list of the host's variables plus the server's
  configured env, so host secrets (API keys, database URLs, our own master key) never reach a server
  (`transports/environment.py`).
- **Unbounded memory and blocked children.** stdout is read in chunks and every line goes through a
  `clip.JsonClipper` while it streams: strings over the read cap's string limit are cut, and what
  exceeds the message's byte or token cap is discarded as it arrives (issue 14, item 2), so a
  400 MiB answer costs no more memory than the cap; stderr is drained continuously (a child never
  blocks on a full pipe) and cut into lines of at most `max_stderr_line_bytes`.
- **A secret leaking in pieces.** A redactor replaces secrets in stderr and stdout-noise text
  *before* it is cut to `max_stderr_line_bytes`, holding back a bounded carry-over between pieces,
  so a cut never falls inside a secret and no record holds part of one (R-1.5). The line readers
  for both are `transports/_stdio_lines.py`.

Framing is newline-delimited JSON-RPC (MCP 2025-11-25, basic/transports "stdio"). Shutdown follows
the spec's order (close stdin, wait, SIGTERM, SIGKILL); making the signals group-wide and
unconditional is our policy. The SDK's own transport hides the pid, the exit code and stderr,
which R-3.1 ("process exited with code N") and R-2.6 (stderr into the server's log) need.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Final

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from anyio.abc import ByteReceiveStream, ByteSendStream, Process, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from mcp_center.errors import ServerProtocolError
from mcp_center.models import ErrorReason
from mcp_center.secrets import Redactor
from mcp_center.transports._guarded_spawn import open_guarded_process, spawn_failure
from mcp_center.transports._process_group import group_alive, signal_group, wait_group_gone
from mcp_center.transports._stdio_lines import (
    TRUNCATED,
    ClippedLines,
    RedactingLines,
    decoded_with_replacement,
    unreadable_response,
)
from mcp_center.transports.clip import ClipReport, ReadLimits, mark_clipped
from mcp_center.transports.environment import INHERITED_ENV_VARS, child_environment, host_path, resolve_command
from mcp_center.transports.guard import ProcessGuard, process_guard
from mcp_center.transports.reaper import GroupRef
from mcp_center.transports.sandbox import TLS_TRUST_ENV_VARS, SandboxLaunch, SandboxSpec, prepare_launch

__all__ = [
    "INHERITED_ENV_VARS",
    "TLS_TRUST_ENV_VARS",
    "StdioTransport",
    "child_environment",
    "host_path",
    "resolve_command",
]

logger = logging.getLogger(__name__)

_READ_CHUNK_BYTES: Final = 64 * 1024
"""Bytes asked for per read of stdout or stderr."""

LIST_METHODS: Final = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
"""Requests answered by catalog pages, which get the larger `list_limits` read cap."""

_WRITER_FLUSH_S: Final = 0.5
"""At close, seconds the writer gets to hand already accepted messages to the child."""

_EXIT_DRAIN_S: Final = 1.0
"""After the leader exited, seconds stdout may still deliver its last messages before the read
stream ends anyway (a grandchild that inherited stdout would otherwise keep it open forever)."""

_PIPE_DRAIN_S: Final = 0.5
"""At close, seconds the pipe readers get to reach EOF once the group is gone (stderr's last words)."""

_REAP_TIMEOUT_S: Final = 2.0
"""After SIGKILL, seconds to wait for the group to vanish and the leader to be reaped."""


class StdioTransport:
    """An `mcp.client.Transport` for a local MCP server process (R-2.6, R-3.1).

    An async context manager yielding `(read_stream, write_stream)`, usable as
    `Client(StdioTransport(...), mode="legacy", cache=None)` or with `ClientSession(read, write)`.
    It is single-use (one process per instance) and must be entered and exited by the same task
    (it owns an anyio task group; the connection task does both, docs/sdk-notes.md#manager-shape).

    The read stream carries `SessionMessage`s. A line over the read cap is kept as a valid prefix
    (`clip.JsonClipper`) and a response among them carries `_meta["mcp-center/clipped"]`; when
    nothing readable is left of it, its request gets an error answer if its id could be read back,
    else one `ServerProtocolError` (reason `protocol`, `details.limit_bytes`) is pushed, which the
    runtime takes as the end of the session (every pending request fails at once). The read
    stream ends when the server closes stdout, when its stdin breaks, or at most about 1 s after
    the leader exited, so the session sees "connection closed" even if a grandchild still holds
    stdout.

    Args:
        argv: The command and its arguments, passed to exec verbatim (never a shell).
        env: The child's complete environment, used as is; build it with `child_environment`.
        cwd: The child's working directory; None means ours.
        on_stderr: Called once per stderr line (UTF-8, invalid bytes replaced, no line ending,
            redacted). A line longer than `max_stderr_line_bytes` arrives in pieces of at most
            that many bytes, flushed as soon as they are full, newline or not (less the redactor's
            carry-over, shorter than twice the longest secret). Runs on the event loop: keep it
            fast; exceptions are logged and swallowed.
        on_noise: Called once per stdout line that is not a JSON-RPC message (a banner, stray
            logging), redacted, then truncated to `max_stderr_line_bytes` bytes and marked
            `" [truncated]"`. Such lines are skipped, never pushed into the session. Same rules
            as `on_stderr`.
        redactor: Replaces secrets in stderr and noise text before it is cut (R-1.5), so no
            piece holds part of one; None passes the text on unredacted.
        grace_s: At close, seconds to wait for the leader to exit after its stdin closed.
        kill_timeout_s: At close, seconds between SIGTERM and SIGKILL to the process group.
        max_message_bytes: Largest stdout line (one JSON-RPC message) we keep, in bytes, when
            `read_limits` is not given.
        read_limits: The read cap of answers (`clip.read_limits`); `list_limits` applies instead
            while a catalog request (`tools/list`, ...) is pending.
        max_stderr_line_bytes: Longest stderr or noise line passed to a callback, in bytes.
        guard: Registers the server's process group so that it dies with this process even on
            SIGKILL (R-9.3); None means the process-wide `process_guard()`.
        sandbox: Run the server inside this bubblewrap sandbox (R-11.1, `transports.sandbox`):
            the process started is bubblewrap, which leads the process group like an unconfined
            server would, and the server runs under it in its own PID namespace. `cwd` is then a
            path inside the sandbox (None: the sandbox's home).

    Attributes:
        pid: The leader's pid (== its pgid and sid), set once spawned.
        returncode: The leader's exit status once it exited (negative: killed by that signal).
        exited: Set when the leader process has exited, on its own or by our close.

    Raises:
        ValueError: `argv` is empty, a size limit is not positive or a timeout is negative.
        TypeError: `argv` is a string (it would be split into characters, or tempt a shell).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        on_stderr: Callable[[str], None] | None = None,
        on_noise: Callable[[str], None] | None = None,
        grace_s: float = 2.0,
        kill_timeout_s: float = 2.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_stderr_line_bytes: int = 8192,
        redactor: Redactor | None = None,
        read_limits: ReadLimits | None = None,
        list_limits: ReadLimits | None = None,
        guard: ProcessGuard | None = None,
        sandbox: SandboxSpec | None = None,
    ) -> None:
        if isinstance(argv, str):
            raise TypeError("argv must be a sequence of arguments, not a string")
        if not argv:
            raise ValueError("argv must contain at least the command")
        if max_message_bytes < 1 or max_stderr_line_bytes < 1:
            raise ValueError("max_message_bytes and max_stderr_line_bytes must be positive")
        if grace_s < 0 or kill_timeout_s < 0:
            raise ValueError("grace_s and kill_timeout_s must not be negative")
        self._argv = list(argv)
        self._env = dict(env)
        self._cwd = cwd
        self._on_stderr = on_stderr
        self._on_noise = on_noise
        self._grace_s = grace_s
        self._kill_timeout_s = kill_timeout_s
        self._max_message_bytes = max_message_bytes
        self._read_limits = read_limits or ReadLimits(max_message_bytes, max_message_bytes, max_message_bytes, 1 << 62)
        self._list_limits = list_limits or self._read_limits
        self._pending_lists: set[str] = set()
        self._max_stderr_line_bytes = max_stderr_line_bytes
        self._redactor = redactor
        self._guard = guard if guard is not None else process_guard()
        self._group: GroupRef | None = None
        self._sandbox = sandbox

        self.pid: int | None = None
        self.returncode: int | None = None
        self.exited = anyio.Event()

        self._entered = False
        self._process: Process | None = None
        self._tg: TaskGroup | None = None
        self._reader_scope = anyio.CancelScope()
        self._stdout_done = anyio.Event()
        self._stderr_done = anyio.Event()
        self._writer_done = anyio.Event()
        self._read_send: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._read_recv: MemoryObjectReceiveStream[SessionMessage | Exception] | None = None
        self._write_send: MemoryObjectSendStream[SessionMessage] | None = None

    @property
    def command(self) -> str:
        """argv[0], as given (not resolved)."""
        return self._argv[0]

    async def __aenter__(self) -> TransportStreams:
        """Spawn the server and start pumping its pipes.

        Returns:
            `(read_stream, write_stream)` for `ClientSession` / `Client`.
        Raises:
            ServerUnreachable: the process could not be started (`details.reason` = `spawn_failed`,
                `details.command`, `details.errno`; for a sandbox that cannot be set up,
                `details.sandbox_path`); no process is left behind.
            SandboxUnavailable: a sandbox was asked for and this host cannot run one.
            RuntimeError: the transport was entered before (it is single-use).
        """
        if self._entered:
            raise RuntimeError("StdioTransport is single-use: create a new one per connection")
        self._entered = True
        await anyio.lowlevel.checkpoint_if_cancelled()  # the spawn below is partly shielded: do not start doomed
        process = await self._spawn()
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        if stdin is None or stdout is None or stderr is None:  # pragma: no cover - we asked for pipes
            raise RuntimeError("spawned process is missing a pipe")
        # From here on a process exists: nothing below awaits before the task group owns the pumps,
        # and __aexit__ is the only way out, so a cancelled caller cannot leak it.
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        self._read_send, self._read_recv, self._write_send = read_send, read_recv, write_send
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._pump_stdout, stdout, read_send)
        tg.start_soon(self._pump_stdin, stdin, write_recv, read_send)
        tg.start_soon(self._pump_stderr, stderr)
        tg.start_soon(self._watch_exit, process)
        return read_recv, write_send

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the server and its whole process group, then release every pipe.

        Runs shielded from the caller's cancellation (the caller's cancel is delivered afterwards)
        and is bounded: near zero for a server that exits on stdin EOF, `grace_s` +
        `kill_timeout_s` seconds for one that ignores EOF and SIGTERM, at most about 5 s more for
        a process that even SIGKILL cannot stop (it is then logged and abandoned).

        Steps: flush pending writes (0.5 s at most), close stdin, wait `grace_s` for the leader,
        SIGTERM the group (always, even if the leader is gone), wait `kill_timeout_s` for every
        live member to go, SIGKILL the group, reap the leader, drain and close the pipes (R-2.6).
        A member counts as gone once it is a zombie (Linux: read from /proc), because some
        container inits reap orphans late and a zombie holds nothing but its pid.
        """
        tg = self._tg
        if tg is None:
            return
        try:
            with anyio.CancelScope(shield=True):
                await self._stop()
        finally:
            tg.cancel_scope.cancel()
            self._tg = None
            await tg.__aexit__(None, None, None)

    # -- spawn -----------------------------------------------------------------------------------

    async def _spawn(self) -> Process:
        guard = self._guard
        if guard.startable:  # the first server of this process: start its watchdog (once)
            await anyio.to_thread.run_sync(guard.start)
        launch: SandboxLaunch | None = None
        if self._sandbox is not None:
            sandbox, argv, cwd = self._sandbox, self._argv, self._cwd
            launch = await anyio.to_thread.run_sync(lambda: prepare_launch(sandbox, argv, cwd=cwd))
        # Cancellable: `open_guarded_process` shields what must not be cut and strands no child.
        try:
            # The group is adopted before the server's code runs: it dies with this process,
            # however this process ends (the exec gate, `_guarded_spawn`).
            process, self._group = await open_guarded_process(
                launch.argv if launch is not None else self._argv,
                env=self._env,
                cwd="/" if launch is not None else self._cwd,  # bubblewrap changes to the cwd inside
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=launch.pass_fds if launch is not None else (),
                guard=guard,
            )
        except OSError as exc:
            program = launch.argv[0] if launch is not None else self._argv[0]
            raise spawn_failure(program, None if launch is not None else self._cwd, exc) from exc
        finally:
            if launch is not None:
                launch.close()
        if self._group is not None and guard.recording:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(guard.save)
        self._process = process
        self.pid = process.pid
        logger.debug("stdio.spawned", extra={"pid": process.pid, "command": self._argv[0]})
        return process

    # -- pumps (tasks of the internal task group) ------------------------------------------------

    async def _pump_stdout(
        self, stdout: ByteReceiveStream, read_send: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        """Frame stdout into JSON-RPC messages; after the session is gone, keep draining and discard."""
        lines = ClippedLines(self._current_limits)
        delivering = True
        try:
            with self._reader_scope:
                while True:
                    try:
                        chunk = await stdout.receive(_READ_CHUNK_BYTES)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        break
                    if delivering:
                        for line, report in lines.feed(chunk):
                            delivering = await self._deliver(read_send, line, report)
                            if not delivering:
                                break
                if delivering:
                    for line, report in lines.finish():
                        await self._deliver(read_send, line, report)
        finally:
            read_send.close()
            self._stdout_done.set()

    def _current_limits(self) -> ReadLimits:
        """The read cap for the next line: a catalog page's while a catalog request is pending."""
        return self._list_limits if self._pending_lists else self._read_limits

    async def _deliver(
        self, read_send: MemoryObjectSendStream[SessionMessage | Exception], line: bytearray, report: ClipReport
    ) -> bool:
        """Send one framed line to the session. Returns False once nobody reads any more.

        The line is ours (the clipper handed it over): it is emptied once parsed, so a long answer
        is not held twice while the session works on it.
        """
        item: SessionMessage | Exception
        if not line or line.isspace():
            if not report.truncated:
                return True
            item = self._over_limit()
        else:
            try:
                message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                line.clear()
            except ValueError as exc:  # pydantic's ValidationError: not JSON, or not JSON-RPC
                if report.truncated:
                    answer = unreadable_response(
                        line, exc, why=f"it was larger than the read cap ({report.kept_bytes} bytes kept)"
                    )
                    item = SessionMessage(answer) if answer is not None else self._over_limit()
                    return await self._send(read_send, item)
                repaired = decoded_with_replacement(line)
                if repaired is not None:
                    message = repaired
                else:
                    _notify(self._on_noise, self._noise_text(line), "on_noise")
                    answer = unreadable_response(line, exc)
                    if answer is None:
                        return True
                    message = answer
            if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
                self._pending_lists.discard(str(message.id))
            if report.clipped and isinstance(message, mcp_types.JSONRPCResponse):
                message = mark_clipped(message, report)
            item = SessionMessage(message)
        return await self._send(read_send, item)

    def _over_limit(self) -> ServerProtocolError:
        limit = self._current_limits().max_message_bytes
        return ServerProtocolError(
            f"message from server exceeds {limit} bytes; discarded",
            details={"reason": ErrorReason.PROTOCOL.value, "limit_bytes": limit},
        )

    @staticmethod
    async def _send(
        read_send: MemoryObjectSendStream[SessionMessage | Exception], item: SessionMessage | Exception
    ) -> bool:
        try:
            await read_send.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    def _noise_text(self, line: bytes | bytearray) -> str:
        """A noise line as `on_noise` gets it: redacted, then cut to the limit and marked.

        Redaction runs on the pieces splitter, so only about one piece plus the carry-over of the
        line is decoded and redacted however long the line is (at most `max_message_bytes`).
        """
        pieces = RedactingLines(self._max_stderr_line_bytes, self._redactor)
        for start in range(0, len(line), _READ_CHUNK_BYTES):
            full = pieces.feed(bytes(line[start : start + _READ_CHUNK_BYTES]))
            if full:  # a full first piece: more text follows it, the line is cut here
                return full[0] + TRUNCATED
        rest = pieces.finish()
        if len(rest) > 1:  # the redacted end of the line filled the first piece
            return rest[0] + TRUNCATED
        return rest[0] if rest else ""

    async def _pump_stdin(
        self,
        stdin: ByteSendStream,
        write_recv: MemoryObjectReceiveStream[SessionMessage],
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        """Write each session message as one JSON line; a broken stdin ends the read stream."""
        try:
            async with write_recv:
                async for session_message in write_recv:
                    outgoing = session_message.message
                    if isinstance(outgoing, mcp_types.JSONRPCRequest) and outgoing.method in LIST_METHODS:
                        if len(self._pending_lists) > 1000:
                            self._pending_lists.pop()
                        self._pending_lists.add(str(outgoing.id))
                    data = outgoing.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The child closed its stdin (it is usually dying) or we closed it: what we just sent
            # will never be answered, so let the session see the connection end now.
            read_send.close()
        finally:
            self._writer_done.set()

    async def _pump_stderr(self, stderr: ByteReceiveStream) -> None:
        """Drain stderr continuously into `on_stderr`, line by line, in bounded pieces."""
        lines = RedactingLines(self._max_stderr_line_bytes, self._redactor)
        try:
            while True:
                try:
                    chunk = await stderr.receive(_READ_CHUNK_BYTES)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    break
                for line in lines.feed(chunk):
                    _notify(self._on_stderr, line, "on_stderr")
            for line in lines.finish():
                _notify(self._on_stderr, line, "on_stderr")
        finally:
            self._stderr_done.set()

    async def _watch_exit(self, process: Process) -> None:
        """Record the leader's exit; then end the read stream even if a grandchild holds stdout."""
        # anyio 4.16 resolves Process.wait() on the exit itself, not on pipe EOF as asyncio does
        # (pinned by the grandchild-holds-stdout test).
        returncode = await process.wait()
        self._note_exit(returncode)
        logger.debug("stdio.exited", extra={"pid": process.pid, "returncode": returncode})
        with anyio.move_on_after(_EXIT_DRAIN_S):
            await self._stdout_done.wait()
        self._reader_scope.cancel()

    def _note_exit(self, returncode: int) -> None:
        if self.returncode is None:
            self.returncode = returncode
        self.exited.set()

    # -- close -----------------------------------------------------------------------------------

    async def _stop(self) -> None:
        """The shutdown sequence of `__aexit__`; every wait is bounded. Must run shielded."""
        process = self._process
        if process is None or self._write_send is None or self._read_recv is None:  # pragma: no cover
            return
        pgid = process.pid  # start_new_session: the leader's pid is the group id (never getpgid: reaped)

        # 1. Let the writer hand over what the session already sent, then refuse further writes.
        self._write_send.close()
        with anyio.move_on_after(_WRITER_FLUSH_S):
            await self._writer_done.wait()
        # 2. Nobody reads any more: the stdout pump now discards, so the child never blocks on it.
        self._read_recv.close()
        # 3. EOF on stdin is the polite stop request; give the leader grace_s to take it.
        if process.stdin is not None:
            await _aclose_quietly(process.stdin)
        if process.returncode is None:
            with anyio.move_on_after(self._grace_s):
                await process.wait()
        # 4. Always signal the group: a grandchild outlives a leader that exited on EOF.
        gone = await self._terminate_group(pgid)
        # 5. Reap the leader; record its status.
        if process.returncode is None:
            with anyio.move_on_after(_REAP_TIMEOUT_S):
                await process.wait()
        if process.returncode is None:
            logger.error("stdio.leader_unreaped", extra={"pid": pgid})
        else:
            self._note_exit(process.returncode)
        # The group is gone: the watchdog and the record forget it (one that resisted stays listed).
        if gone and self._group is not None:
            self._guard.release(self._group)
            if self._guard.recording:
                await anyio.to_thread.run_sync(self._guard.save)
        # 6. Let the pumps read to EOF (stderr's last words), then release the pipes.
        with anyio.move_on_after(_PIPE_DRAIN_S):
            await self._stderr_done.wait()
            await self._stdout_done.wait()
        if process.returncode is not None:
            # Closes all three pipes and the subprocess transport; wait() returns at once now.
            await process.aclose()
        else:  # pragma: no cover - an unkillable leader (uninterruptible sleep)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    await _aclose_quietly(stream)

    async def _terminate_group(self, pgid: int) -> bool:
        """SIGTERM the group, wait `kill_timeout_s` for its live members, then SIGKILL.

        Returns:
            True when the group has no live member any more.
        """
        if not signal_group(pgid, signal.SIGTERM):
            return not await group_alive(pgid)
        if await wait_group_gone(pgid, self._kill_timeout_s):
            return True
        logger.warning("stdio.kill_escalated", extra={"pgid": pgid, "kill_timeout_s": self._kill_timeout_s})
        if signal_group(pgid, signal.SIGKILL) and not await wait_group_gone(pgid, _REAP_TIMEOUT_S):
            logger.error("stdio.group_survived", extra={"pgid": pgid})
            return False
        return not await group_alive(pgid)


# -- helpers ---------------------------------------------------------------------------------------


def _notify(callback: Callable[[str], None] | None, text: str, name: str) -> None:
    if callback is None:
        return
    try:
        callback(text)
    except Exception:
        logger.exception("stdio.callback_failed", extra={"callback": name})


async def _aclose_quietly(stream: ByteSendStream | ByteReceiveStream) -> None:
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()
