"""The exec gate (R-2.6, R-9.3): a server started through it is the process it would be without it.

Every test runs a real `StdioTransport` with a guard whose watchdog runs (the gate is used only
then) and compares what the server sees of its own process with a start of the same command
without the gate (`Unwatched`): environment, ignored and blocked
signals, open descriptors, PATH lookup, and exec errors (no shell fallback). The host killed
before the gate opens is in `test_guard.py`.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from mcp_center.errors import ServerUnreachable
from mcp_center.transports import ProcessGuard, StdioTransport, child_environment, gate
from tests.support.stdlib_program import assert_stdlib_program

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc"),
]

# What a server reports of its own process: its environment and descriptors on stderr (then it
# waits on stdin); grep, exec'd as the server itself, prints its signal masks on stdout (noise).
SELF_REPORT = (
    "import os, sys\n"
    "for line in sorted(f'env {k}={v}' for k, v in os.environ.items()): print(line, file=sys.stderr)\n"
    "print('fds', sorted(int(fd) for fd in os.listdir('/proc/self/fd')), file=sys.stderr)\n"
    "print('done', file=sys.stderr, flush=True)\n"
    "sys.stdin.read()\n"
)
SIGNAL_REPORT = ["grep", "-E", "^Sig(Ign|Blk|Cgt)", "/proc/self/status"]


class Unwatched(ProcessGuard):
    """A guard that never starts a watchdog: its servers are started directly, without the gate."""

    @property
    def startable(self) -> bool:
        return False


@pytest.fixture
async def guard() -> AsyncGenerator[ProcessGuard]:
    watched = ProcessGuard(grace_s=0.2)
    assert await anyio.to_thread.run_sync(watched.start), "the gate is used only while a watchdog runs"
    yield watched
    watched.close()


async def _report(argv: list[str], env: dict[str, str], guard: ProcessGuard) -> list[str]:
    """What the server wrote on stderr (up to its `done`) and stdout (noise, up to its exit)."""
    lines: list[str] = []
    done = anyio.Event()

    def collect(line: str) -> None:
        lines.append(line)
        if line == "done":
            done.set()

    stdio = StdioTransport(
        argv, env=env, on_stderr=collect, on_noise=lines.append, grace_s=0.2, kill_timeout_s=0.2, guard=guard
    )
    with anyio.fail_after(20):
        async with stdio:
            if argv == SIGNAL_REPORT:
                await stdio.exited.wait()  # grep prints and exits; the close drains stdout to its end
            else:
                await done.wait()
    return lines


async def test_a_gated_server_sees_its_environment_signals_and_descriptors_as_without_the_gate(
    guard: ProcessGuard,
) -> None:
    env = child_environment({"SERVER_TOKEN": "configured", "EMPTY": "", "SPACED": "a b=c"})
    for argv in ([sys.executable, "-I", "-S", "-c", SELF_REPORT], SIGNAL_REPORT):
        gated = await _report(argv, env, guard)
        assert gated == await _report(argv, env, Unwatched())
        assert gated, "the server reported nothing"
        if argv == SIGNAL_REPORT:
            assert len(gated) == 3 and gated[1].startswith("SigIgn:")  # SIGPIPE back to its default: as subprocess
        else:
            assert "env SERVER_TOKEN=configured" in gated and "env SPACED=a b=c" in gated
            assert "fds [0, 1, 2, 3]" in gated  # 3: listdir's own; the gate's closed with its exec


async def test_a_bare_command_name_is_looked_up_on_the_servers_path(guard: ProcessGuard, tmp_path: Path) -> None:
    (tmp_path / "my-server").write_text('#!/bin/sh\necho "found $0" >&2\nexec cat\n')
    (tmp_path / "my-server").chmod(0o755)
    env = child_environment({})
    env["PATH"] = f"{tmp_path}:{env.get('PATH', os.defpath)}"
    seen = anyio.Event()
    with anyio.fail_after(20):
        async with StdioTransport(["my-server"], env=env, on_stderr=lambda _line: seen.set(), guard=guard):
            await seen.wait()


async def test_an_executable_without_a_known_format_fails_to_start_and_no_shell_runs_it(
    guard: ProcessGuard, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "no-shebang"
    script.write_text(f"touch {marker}\n")
    script.chmod(0o755)
    with pytest.raises(ServerUnreachable) as caught:
        async with StdioTransport([str(script)], env=child_environment({}), guard=guard):
            pytest.fail("the server cannot start")
    assert caught.value.details["errno"] == errno.errorcode[errno.ENOEXEC]
    assert caught.value.details["reason"] == "spawn_failed"
    assert not marker.exists()
    assert guard.groups == []  # the gate that failed to exec is forgotten


async def test_a_missing_command_fails_to_start_as_without_the_gate(guard: ProcessGuard, tmp_path: Path) -> None:
    with pytest.raises(ServerUnreachable) as caught:
        async with StdioTransport(["no-such-server-here"], env={"PATH": str(tmp_path)}, guard=guard):
            pytest.fail("the server cannot start")
    assert caught.value.details["errno"] == errno.errorcode[errno.ENOENT]
    assert caught.value.details["command"] == "no-such-server-here"


def test_a_gate_whose_host_closed_without_a_go_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ours, theirs = socket.socketpair()
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", gate.__file__, str(theirs.fileno()), "/bin/touch", str(marker)],
            pass_fds=(theirs.fileno(),),
            env={},
        )
    finally:
        theirs.close()
    ours.sendall(gate.go_message({})[:5])  # a go cut short by the host's death
    ours.close()
    assert child.wait(timeout=20) == gate.CLOSED_STATUS
    assert not marker.exists()


def test_the_gate_program_imports_only_the_standard_library() -> None:
    """It runs as `python -I -S gate.py`: no site-packages, no mcp_center."""
    assert_stdlib_program(gate.__file__, "usage: gate.py")


def test_a_variable_exec_cannot_pass_is_refused_before_anything_starts_as_subprocess_refuses_it() -> None:
    for env, message in (
        ({"A=B": "x"}, "illegal environment variable name"),
        ({"": "x"}, "illegal environment variable name"),  # os.execve's refusal; subprocess passed it
        ({"NUL": "a\0b"}, "embedded null byte"),
        ({"NUL\0": "x"}, "embedded null byte"),
    ):
        with pytest.raises(ValueError, match=f"^{message}$"):
            gate.go_message(env)
        if env != {"": "x"}:
            with pytest.raises(ValueError, match=f"^{message}$"):
                subprocess.Popen(["true"], env=env)
