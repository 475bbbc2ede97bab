"""StdioTransport against real child processes (R-2.6, R-3.1).

Loopback tier: the transport is the point, so every test runs a real process from
`tests/servers/` with `sys.executable`. "Dead" below means gone or a zombie: some container inits
(this sandbox's among them) reap orphans late, and a zombie holds nothing but a pid.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager, suppress
from pathlib import Path

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp.client import Client, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from mcp_center.errors import ServerProtocolError, ServerUnreachable
from mcp_center.models import ErrorReason
from mcp_center.secrets import REDACTED, Redactor
from mcp_center.transports.guard import GroupRef, ProcessGuard
from mcp_center.transports.stdio import INHERITED_ENV_VARS, StdioTransport, child_environment, resolve_command
from tests.support.exceptions import leaves
from tests.support.zygote import launch_command

SERVERS = Path(__file__).resolve().parent.parent / "servers"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")


def script(name: str, *args: str) -> list[str]:
    """argv that runs `tests/servers/<name>` with our interpreter."""
    return [sys.executable, str(SERVERS / name), *args]


def forked(name: str, *args: str) -> list[str]:
    """argv that runs `tests/servers/<name>` in the fork server (`launch_command`: the SDK imported
    once; issue 16), for tests about what the server says, not about its own process."""
    return launch_command(SERVERS / name, *args)


def transport(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    on_stderr: Callable[[str], None] | None = None,
    on_noise: Callable[[str], None] | None = None,
    grace_s: float = 1.0,
    kill_timeout_s: float = 0.5,
    max_message_bytes: int = 64 * 1024 * 1024,
    max_stderr_line_bytes: int = 8192,
    redactor: Redactor | None = None,
) -> StdioTransport:
    """A transport with the production env policy and short close timeouts (tests stay fast)."""
    return StdioTransport(
        argv,
        env=child_environment({}) if env is None else env,
        cwd=cwd,
        on_stderr=on_stderr,
        on_noise=on_noise,
        grace_s=grace_s,
        kill_timeout_s=kill_timeout_s,
        max_message_bytes=max_message_bytes,
        max_stderr_line_bytes=max_stderr_line_bytes,
        redactor=redactor,
    )


EOF_GRACE_S = 20.0
"""How long a test that expects a server to exit by itself on stdin EOF lets it (seconds): a bound
on that condition, not a speed goal. The SDK's server exits in well under a second on an idle
machine; with the 1 s default grace a loaded machine sometimes got it signalled (exit -15)."""


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, pgrp) of a process from /proc, or None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2])


def is_alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def live_group_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in group `pgid` (`killpg(pgid, 0)` first, /proc for zombies)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    members: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _proc_stat(int(name))) is not None:
            state, pgrp = stat
            if pgrp == pgid and state not in ("Z", "X"):
                members.append(int(name))
    return members


def live_children() -> set[int]:
    """Pids of our own live child processes."""
    children: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] not in (b"Z", b"X"):
            children.add(int(name))
    return children


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


def notification(item: SessionMessage | Exception) -> types.JSONRPCNotification:
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, types.JSONRPCNotification)
    return item.message


@contextmanager
def kill_group_on_failure(stdio: StdioTransport) -> Generator[None, None, None]:
    """Safety net: a failing test must not leave its `sleep 300` behind."""
    try:
        yield
    finally:
        if stdio.pid is not None:
            with suppress(ProcessLookupError):
                os.killpg(stdio.pid, signal.SIGKILL)


# -- the happy path ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_client_initializes_lists_and_calls_tools_over_stdio() -> None:
    stdio = transport(forked("echo_stdio.py"), grace_s=EOF_GRACE_S)
    with anyio.fail_after(10 + EOF_GRACE_S):
        async with Client(stdio, mode="legacy", cache=None) as client:
            assert client.server_info is not None
            assert client.server_info.name == "echo"
            tools = await client.list_tools()
            assert {tool.name for tool in tools.tools} == {"echo", "spawn_grandchild", "crash", "big"}
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
            # Larger than one 64 KiB read: framing must reassemble lines across chunks.
            big = "é" * 200_000
            assert text_of(await client.call_tool("echo", {"text": big})) == big
    assert stdio.exited.is_set()
    assert stdio.returncode == 0  # the SDK server exits on stdin EOF, inside the grace period


@pytest.mark.anyio
async def test_client_session_works_on_the_raw_streams() -> None:
    stdio = transport(forked("echo_stdio.py"))
    with anyio.fail_after(10):
        async with stdio as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "raw"})
            assert text_of(result) == "raw"


@pytest.mark.anyio
async def test_server_leads_its_own_session_and_process_group() -> None:
    stdio = transport(script("silent_stdio.py"))
    with anyio.fail_after(10):
        async with stdio:
            pid = stdio.pid
            assert pid is not None
            assert os.getpgid(pid) == pid
            assert os.getsid(pid) == pid
            assert os.getpgid(pid) != os.getpgrp()
        with pytest.raises(RuntimeError, match="single-use"):
            await stdio.__aenter__()
    assert live_group_members(pid) == []


# -- stopping leaves nothing behind ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_close_kills_a_grandchild_although_the_leader_exits_on_eof() -> None:
    """The SDK's stdio_client fails this: it signals the group only when the leader hangs."""
    stdio = transport(script("echo_stdio.py"), grace_s=EOF_GRACE_S)
    with kill_group_on_failure(stdio), anyio.fail_after(10 + EOF_GRACE_S):
        async with Client(stdio, mode="legacy", cache=None) as client:
            grandchild = int(text_of(await client.call_tool("spawn_grandchild", {})))
            assert stdio.pid is not None
            assert is_alive(grandchild)
            assert os.getpgid(grandchild) == stdio.pid
        assert stdio.returncode == 0
        assert not is_alive(grandchild)
        assert live_group_members(stdio.pid) == []


@pytest.mark.anyio
async def test_close_while_the_caller_is_cancelled_still_kills_the_group() -> None:
    stdio = transport(script("echo_stdio.py"))
    grandchild = -1
    with kill_group_on_failure(stdio), anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            async with Client(stdio, mode="legacy", cache=None) as client:
                grandchild = int(text_of(await client.call_tool("spawn_grandchild", {})))
                scope.cancel()
                await anyio.lowlevel.checkpoint()
        assert scope.cancelled_caught
        assert grandchild > 0
        assert stdio.pid is not None
        assert stdio.exited.is_set()
        assert not is_alive(grandchild)
        assert live_group_members(stdio.pid) == []


@pytest.mark.anyio
async def test_server_that_ignores_eof_and_sigterm_is_killed() -> None:
    ready = anyio.Event()
    stdio = transport(
        script("silent_stdio.py", "--stubborn", "--grandchild"),
        grace_s=0.2,
        kill_timeout_s=0.2,
        on_stderr=lambda line: ready.set() if line.strip() == "ready" else None,
    )
    with kill_group_on_failure(stdio), anyio.fail_after(10):
        async with stdio:
            await ready.wait()  # SIGTERM is ignored from here on (a loaded machine starts it late)
        assert stdio.returncode == -signal.SIGKILL
        assert stdio.pid is not None
        assert live_group_members(stdio.pid) == []


@pytest.mark.anyio
async def test_server_that_never_answers_initialize_times_out_and_leaves_no_process() -> None:
    stdio = transport(script("silent_stdio.py", "--stubborn", "--grandchild"), grace_s=0.2, kill_timeout_s=0.2)
    with kill_group_on_failure(stdio):
        with pytest.raises(TimeoutError), anyio.fail_after(3):
            async with Client(stdio, mode="legacy", cache=None):
                pytest.fail("initialize cannot succeed")
        assert stdio.pid is not None
        assert stdio.returncode == -signal.SIGKILL
        assert live_group_members(stdio.pid) == []


# -- no shell, no host env --------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("command", ["echo hi | cat", "touch {marker}; true", "$(touch {marker})"])
async def test_shell_syntax_in_the_command_is_a_missing_file_not_a_pipeline(command: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    argv0 = command.format(marker=marker)
    before = live_children()
    stdio = transport([argv0])
    with pytest.raises(ServerUnreachable) as caught:
        await stdio.__aenter__()
    assert caught.value.code == "MCP_SERVER_UNREACHABLE"
    assert caught.value.details["reason"] == ErrorReason.SPAWN_FAILED.value
    assert caught.value.details["command"] == argv0
    assert caught.value.details["errno"] == "ENOENT"
    assert stdio.pid is None
    assert not marker.exists()
    assert live_children() <= before


@pytest.mark.anyio
async def test_arguments_reach_the_child_verbatim(tmp_path: Path) -> None:
    args = ["a|b", ";", ">x", "$(touch pwned)", "`id`", "*", "&&", "it's", "", "two words"]
    stdio = transport(script("print_argv.py", *args), cwd=str(tmp_path))
    with anyio.fail_after(10):
        async with stdio as (read, _write):
            params = notification(await read.receive()).params
    assert params is not None
    assert params["argv"] == args
    assert await anyio.Path(params["cwd"]).resolve() == await anyio.Path(tmp_path).resolve()
    assert [entry async for entry in anyio.Path(tmp_path).iterdir()] == []  # no redirection, no substitution


@pytest.mark.anyio
async def test_child_receives_no_host_variable_beyond_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CENTER_TEST_LEAK", "host-secret")
    stdio = transport(script("print_argv.py"), env=child_environment({"SERVER_TOKEN": "configured"}))
    with anyio.fail_after(10):
        async with stdio as (read, _write):
            params = notification(await read.receive()).params
    assert params is not None
    env = params["env"]
    assert "MCP_CENTER_TEST_LEAK" not in env
    assert "host-secret" not in env.values()
    assert env["SERVER_TOKEN"] == "configured"


def test_child_environment_is_the_allow_list_plus_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CENTER_TEST_LEAK", "host-secret")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("TERM", "() { :; }; echo pwned")  # an exported shell function (Shellshock)
    env = child_environment({"API_KEY": "k", "LANG": "de_DE.UTF-8"})
    assert "MCP_CENTER_TEST_LEAK" not in env
    assert "TERM" not in env
    # The host's PATH, then mcp-center's own bin dir (uvx) appended: a server's python stays the host's.
    assert env["PATH"] == f"/usr/bin:/bin:{Path(sys.executable).parent}"
    assert env["LANG"] == "de_DE.UTF-8"  # configured wins
    assert env["API_KEY"] == "k"
    assert set(env) <= {*INHERITED_ENV_VARS, "API_KEY"}
    assert set(INHERITED_ENV_VARS) == {
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LC_ALL",
        "TMPDIR",
    } | {
        "SSL_CERT_FILE",  # CA bundle locations: paths, not secrets; uvx/npx need them behind a TLS proxy
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }


def test_resolve_command_follows_exec_rules(tmp_path: Path) -> None:
    path = os.environ["PATH"]
    python3 = resolve_command("python3", path)
    assert python3 is not None
    assert os.path.isabs(python3)
    assert os.access(python3, os.X_OK)
    assert resolve_command("mcp-center-no-such-command", path) is None
    assert resolve_command("echo hi | cat", path) is None
    assert resolve_command("", path) is None
    assert resolve_command(sys.executable, None) == sys.executable
    sh = resolve_command("sh", None)  # no PATH in the child: exec searches os.defpath
    assert sh is not None
    assert os.path.dirname(sh) in os.defpath.split(os.pathsep)

    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    assert resolve_command(str(tool), path) is None  # not executable
    tool.chmod(0o755)
    assert resolve_command(str(tool), path) == str(tool)
    assert resolve_command("./tool", path, cwd=str(tmp_path)) == str(tool)
    assert resolve_command("tool", str(tmp_path)) == str(tool)
    assert resolve_command(str(tmp_path), path) is None  # a directory


@pytest.mark.anyio
async def test_spawn_failures_are_attributed_without_leaking_args_or_env(tmp_path: Path) -> None:
    not_executable = tmp_path / "server.py"
    not_executable.write_text("print('hi')\n")
    secret_env = child_environment({"API_KEY": "env-secret"})
    with pytest.raises(ServerUnreachable) as caught:
        await StdioTransport([str(not_executable), "--token=arg-secret"], env=secret_env).__aenter__()
    assert caught.value.details["errno"] == errno.errorcode[errno.EACCES]
    assert str(not_executable) in caught.value.message
    assert "secret" not in caught.value.message
    assert "secret" not in str(caught.value.details)

    missing_dir = str(tmp_path / "missing")
    with pytest.raises(ServerUnreachable) as caught:
        await StdioTransport([sys.executable], env=secret_env, cwd=missing_dir).__aenter__()
    assert caught.value.details["reason"] == ErrorReason.SPAWN_FAILED.value
    assert caught.value.details["cwd"] == missing_dir

    with pytest.raises(ServerUnreachable) as caught:
        await StdioTransport([sys.executable], env=secret_env, cwd=str(not_executable)).__aenter__()
    assert caught.value.details["errno"] == "ENOTDIR"

    with pytest.raises(ValueError, match="argv"):
        StdioTransport([], env={})
    with pytest.raises(TypeError):
        StdioTransport("npx foo | sh", env={})


# -- the process dies on its own --------------------------------------------------------------------


@pytest.mark.anyio
async def test_server_exiting_with_code_3_ends_the_read_stream() -> None:
    stderr: list[str] = []
    stdio = transport(script("exit_at_once.py", "3"), on_stderr=stderr.append)
    with anyio.fail_after(5):
        async with stdio as (read, _write):
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
            await stdio.exited.wait()
            assert stdio.returncode == 3
    assert stderr == ["fatal: configuration missing"]  # the last words are drained before close returns


@pytest.mark.anyio
async def test_client_entry_fails_promptly_when_the_server_exits() -> None:
    stdio = transport(script("exit_at_once.py", "3"))
    with anyio.fail_after(5), pytest.raises((MCPError, ExceptionGroup)) as caught:
        async with Client(stdio, mode="legacy", cache=None):
            pytest.fail("initialize cannot succeed")
    assert any(
        isinstance(leaf, MCPError) and leaf.error.code == types.CONNECTION_CLOSED for leaf in leaves(caught.value)
    )
    assert stdio.returncode == 3


@pytest.mark.anyio
async def test_read_stream_ends_when_the_leader_exits_although_a_grandchild_holds_stdout() -> None:
    stdio = transport(script("orphan_stdout.py"))
    with kill_group_on_failure(stdio), anyio.fail_after(10):
        async with stdio as (read, _write):
            params = notification(await read.receive()).params
            assert params is not None
            grandchild = int(params["pid"])
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
            assert stdio.exited.is_set()
            assert stdio.returncode == 0
            assert is_alive(grandchild)  # the leader's exit alone does not stop the group ...
        assert not is_alive(grandchild)  # ... our close does


# -- noise, stderr and size limits ------------------------------------------------------------------


@pytest.mark.anyio
async def test_banner_on_stdout_is_reported_as_noise_and_the_session_still_works() -> None:
    noise: list[str] = []
    stdio = transport(forked("echo_stdio.py", "--banner"), on_noise=noise.append)
    with anyio.fail_after(10):
        async with Client(stdio, mode="legacy", cache=None) as client:
            assert text_of(await client.call_tool("echo", {"text": "after banner"})) == "after banner"
    assert noise == ["echo server 1.0 starting (this line is not JSON-RPC)"]


@pytest.mark.anyio
async def test_a_megabyte_of_stderr_does_not_block_the_server() -> None:
    """1 MiB is far beyond a pipe buffer: without continuous draining the server blocks before serving."""
    lines: list[str] = []
    stdio = transport(forked("echo_stdio.py", "--stderr-bytes", str(1024 * 1024)), on_stderr=lines.append)
    with anyio.fail_after(10):
        async with Client(stdio, mode="legacy", cache=None) as client:
            assert text_of(await client.call_tool("echo", {"text": "ok"})) == "ok"
    flood = [line for line in lines if line == "e" * 1023]
    assert len(flood) == 1024


@pytest.mark.anyio
async def test_stderr_line_without_newline_is_flushed_in_bounded_pieces() -> None:
    total = 100_000
    limit = 8192
    pieces: list[str] = []
    most_arrived = anyio.Event()

    def on_stderr(line: str) -> None:
        pieces.append(line)
        if sum(map(len, pieces)) >= total - limit:
            most_arrived.set()

    stdio = transport(script("stderr_unterminated.py", str(total)), on_stderr=on_stderr, max_stderr_line_bytes=limit)
    with anyio.fail_after(10):
        async with stdio:
            await most_arrived.wait()  # no newline and no EOF yet: pieces flow anyway
            assert stdio.returncode is None
    assert all(len(piece.encode()) <= limit for piece in pieces)
    assert "".join(pieces) == "z" * total  # the tail arrives at EOF


SECRET = "SEKRIT-LEAK-55aa77"
STRADDLER = (
    "import sys\n"
    "secret, pads = sys.argv[1], [int(a) for a in sys.argv[2:]]\n"
    "for pad in pads:\n"
    "    sys.stdout.write('N' * pad + secret + ' tail\\n')\n"
    "    sys.stderr.write('A' * pad + secret + ' tail\\n')\n"
    "sys.stdout.flush()\n"
    "sys.stderr.flush()\n"
)
"""Writes `pad` padding characters then the secret, on stdout (noise) and stderr, for each pad."""


def _secret_pieces(text: str, secret: str = SECRET, size: int = 4) -> set[str]:
    grams = {secret[i : i + size] for i in range(len(secret) - size + 1)}
    return {text[i : i + size] for i in range(len(text) - size + 1)} & grams


@pytest.mark.anyio
async def test_stderr_and_noise_are_redacted_before_they_are_cut_so_no_record_holds_part_of_a_secret() -> None:
    """R-1.5: a secret straddling the 8192-byte cut is replaced whole, never split into two halves."""
    limit = 8192
    pads = [limit - back for back in (0, 1, 2, 4, 9, 17, 18)] + [2 * limit - 5, 3]
    redactor = Redactor()
    redactor.add(SECRET)
    stderr: list[str] = []
    noise: list[str] = []
    stdio = transport(
        [sys.executable, "-c", STRADDLER, SECRET, *map(str, pads)],
        on_stderr=stderr.append,
        on_noise=noise.append,
        redactor=redactor,
    )
    with anyio.fail_after(10), kill_group_on_failure(stdio):
        async with stdio:
            await stdio.exited.wait()
    for record in stderr + noise:
        assert not _secret_pieces(record), (record[:20], record[-40:])
    assert all(len(record.encode()) <= limit for record in stderr)
    # Joined, the pieces of each stderr line are that line with the secret replaced whole.
    assert "".join(stderr) == "".join(f"{'A' * pad}{REDACTED} tail" for pad in pads)
    assert len(noise) == len(pads)
    for pad, line in zip(pads, noise, strict=True):
        whole = f"{'N' * pad}{REDACTED} tail"
        assert line == (whole if len(whole.encode()) <= limit else "N" * min(pad, limit) + " [truncated]")


@pytest.mark.anyio
async def test_an_endless_stderr_line_still_flows_in_bounded_pieces_with_a_long_secret_registered() -> None:
    """The redactor holds back less than twice the longest secret, however long the line."""
    total, limit = 1_000_000, 8192
    redactor = Redactor()
    redactor.add("s" * 32 * 1024)  # as long as a stored secret may be
    pieces: list[str] = []
    most_arrived = anyio.Event()

    def on_stderr(line: str) -> None:
        pieces.append(line)
        if sum(map(len, pieces)) >= total - limit - 2 * 32 * 1024:
            most_arrived.set()

    stdio = transport(
        script("stderr_unterminated.py", str(total)),
        on_stderr=on_stderr,
        max_stderr_line_bytes=limit,
        redactor=redactor,
    )
    with anyio.fail_after(10):
        async with stdio:
            await most_arrived.wait()  # no newline, no EOF: pieces flow anyway
            assert stdio.returncode is None
    assert all(len(piece.encode()) <= limit for piece in pieces)
    assert "".join(pieces) == "z" * total


@pytest.mark.anyio
async def test_oversized_message_is_discarded_and_reported_while_the_next_one_arrives() -> None:
    limit = 64 * 1024
    stdio = transport(script("oversized_line.py", str(1024 * 1024)), max_message_bytes=limit)
    with anyio.fail_after(10):
        async with stdio as (read, _write):
            first = await read.receive()
            assert isinstance(first, ServerProtocolError)
            assert first.details == {"reason": ErrorReason.PROTOCOL.value, "limit_bytes": limit}
            assert notification(await read.receive()).method == "test/after"


@pytest.mark.anyio
async def test_a_raising_callback_does_not_break_the_transport(caplog: pytest.LogCaptureFixture) -> None:
    def broken(line: str) -> None:
        raise RuntimeError(line)

    stdio = transport(forked("echo_stdio.py", "--banner"), on_noise=broken)
    with anyio.fail_after(10):
        async with Client(stdio, mode="legacy", cache=None) as client:
            assert text_of(await client.call_tool("echo", {"text": "still fine"})) == "still fine"
    assert any(record.getMessage() == "stdio.callback_failed" for record in caplog.records)


@pytest.mark.anyio
async def test_a_response_too_deep_to_read_fails_its_request_at_once_instead_of_timing_out() -> None:
    """R-3.6, R-3.11: a tools/list answer nested past the parser's limit is an attributed error now."""
    noise: list[str] = []
    stdio = transport(script("raw_stdio.py", "--deep-schema", "400"), on_noise=noise.append)
    with anyio.fail_after(10), kill_group_on_failure(stdio):
        async with Client(stdio, mode="legacy", cache=None) as client:
            with pytest.raises(MCPError) as caught:
                await client.list_tools()
            assert caught.value.error.code == types.INTERNAL_ERROR
            assert "could not read the server's response" in caught.value.error.message
            assert "recursion limit" in caught.value.error.message
            # The session stays usable: the next request is answered normally.
            await client.send_ping()  # pyright: ignore[reportDeprecated]
    assert len(noise) == 1


# -- a start cancelled between the spawn and the guard ------------------------------------------------


class CancellingGuard(ProcessGuard):
    """A process guard (no watchdog) that cancels `scope` — the start that spawned the server — at
    the moment the new group is handed to it: the one point where a process exists and the
    transport's close may not yet be arranged."""

    def __init__(self, scope: anyio.CancelScope, *, watched: bool) -> None:
        super().__init__(grace_s=0.5)
        self._scope = scope
        self._watched = watched
        self.adopted: list[int] = []

    @property
    def startable(self) -> bool:
        return self._watched and super().startable  # watched: the server starts through the exec gate

    def adopt(self, pid: int) -> GroupRef | None:
        self.adopted.append(pid)
        self._scope.cancel()
        return super().adopt(pid)


@pytest.mark.anyio
@pytest.mark.parametrize("through", ["transport", "sdk client"])
@pytest.mark.parametrize("watched", [False, True], ids=["direct", "gated"])
async def test_a_start_cancelled_as_its_process_is_handed_to_the_guard_leaves_no_process(
    through: str, watched: bool
) -> None:
    """No window between the spawn and the guard (R-2.6): the spawn and `adopt` run in one shielded
    scope with no pause between them, and `__aenter__` does not pause after it, so a cancel that
    lands there is delivered at the caller's next await, inside the `async with`: the close runs
    and kills the group (a grandchild included). The SDK's `Client`, whose start then awaits
    `initialize`, unwinds the transport the same way."""
    scope = anyio.CancelScope()
    guard = CancellingGuard(scope, watched=watched)
    stdio = StdioTransport(
        script("silent_stdio.py", "--stubborn", "--grandchild"),
        env=child_environment({}),
        grace_s=0.2,
        kill_timeout_s=0.2,
        guard=guard,
    )
    with kill_group_on_failure(stdio), anyio.fail_after(10), scope:
        if through == "transport":
            async with stdio:
                await anyio.sleep_forever()
        else:
            async with Client(stdio, mode="legacy", cache=None):
                pytest.fail("initialize cannot succeed once the start is cancelled")
    assert scope.cancelled_caught
    assert len(guard.adopted) == 1
    if watched:
        assert stdio.pid is None  # the gate never got its go: no server, no transport to close
    else:
        assert guard.adopted == [stdio.pid]
        assert stdio.exited.is_set()
    assert live_group_members(guard.adopted[0]) == []
    assert guard.groups == []  # released once its group was gone
    guard.close()
