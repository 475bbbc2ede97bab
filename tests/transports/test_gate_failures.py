"""The exec gate's own failures (R-2.6, R-9.3): told apart from the server's, bounded, cancellable.

A host interpreter is played by a small shell wrapper around the real one set as `sys.executable`
(what the gate's command line starts): one that needs a variable of the host's environment to
start (a relocated or SCL Python needs `LD_LIBRARY_PATH`), or one that stops itself (SIGSTOP)
before the gate runs. Real processes throughout, no mocks.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from mcp_center.errors import ServerUnreachable
from mcp_center.transports import ProcessGuard, StdioTransport, _guarded_spawn, child_environment, gate
from mcp_center.transports.reaper import GroupRef

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc"),
]

NEEDS = "MCP_CENTER_TEST_GATE_NEEDS"
# Prints on stderr, then waits on stdin: the server ran.
SERVER = [sys.executable, "-I", "-S", "-c", "import sys; print('ran', file=sys.stderr, flush=True); sys.stdin.read()"]


class Recording(ProcessGuard):
    """A real guard (its watchdog runs) that remembers every pid it adopted."""

    def __init__(self) -> None:
        super().__init__(grace_s=0.2)
        self.adopted: list[int] = []

    def adopt(self, pid: int) -> GroupRef | None:
        self.adopted.append(pid)
        return super().adopt(pid)


def _interpreter(tmp_path: Path, prologue: str) -> str:
    wrapper = tmp_path / "host-python"
    wrapper.write_text(f'#!/bin/sh\n{prologue}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.fixture
def needy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The host's interpreter starts only with NEEDS=yes in its environment (set: the host's own)."""
    monkeypatch.setenv(NEEDS, "yes")
    python = _interpreter(tmp_path, f'[ "${NEEDS}" = yes ] || {{ echo "no {NEEDS}" >&2; exit 127; }}')
    monkeypatch.setattr(sys, "executable", python)
    return python


@pytest.fixture
async def guard() -> AsyncGenerator[Recording]:
    watched = Recording()
    yield watched
    watched.close()


async def _runs(argv: list[str], guard: ProcessGuard, env: dict[str, str] | None = None) -> None:
    ran = anyio.Event()
    with anyio.fail_after(20):
        async with StdioTransport(
            argv, env=env or child_environment({}), on_stderr=lambda line: ran.set() if line == "ran" else None,
            guard=guard, grace_s=0.2, kill_timeout_s=0.2,
        ):  # fmt: skip
            await ran.wait()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_the_gate_starts_with_what_the_hosts_interpreter_needs_not_the_servers_environment(
    needy: str, guard: Recording
) -> None:
    assert await anyio.to_thread.run_sync(guard.start)
    assert guard.gated
    await _runs(SERVER, guard)  # the server's env lacks NEEDS: only the gate's interpreter needed it
    assert NEEDS not in child_environment({})


async def test_a_gate_that_dies_before_it_started_is_a_spawn_failure_naming_the_gate(
    needy: str, guard: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await anyio.to_thread.run_sync(guard.start)
    assert guard.gated
    monkeypatch.delenv(NEEDS)  # the host's interpreter no longer starts
    with anyio.fail_after(20), pytest.raises(ServerUnreachable) as caught:
        await _runs(SERVER, guard)
    assert caught.value.details["reason"] == "spawn_failed"
    assert "gate" in caught.value.details
    assert "exec gate exited before it started (exit status 127)" in str(caught.value)
    assert guard.groups == []
    assert all(_gone(pid) for pid in guard.adopted)


class Killing(Recording):
    """Kills the gate as its group is adopted, before its go: what a stray SIGKILL does."""

    def adopt(self, pid: int) -> GroupRef | None:
        ref = super().adopt(pid)
        pidfd = os.pidfd_open(pid)  # the loop's child watcher may reap it: wait on its pidfd instead
        try:
            os.kill(pid, signal.SIGKILL)
            assert select.select([pidfd], [], [], 10)[0], "the gate did not die"  # its socket is closed
        finally:
            os.close(pidfd)
        return ref


async def test_a_gate_killed_before_its_go_is_a_spawn_failure_not_the_servers_exit() -> None:
    guard = Killing()
    try:
        assert await anyio.to_thread.run_sync(guard.start)
        with anyio.fail_after(20), pytest.raises(ServerUnreachable) as caught:
            await _runs(SERVER, guard)
        assert caught.value.details["reason"] == "spawn_failed"
        assert "the exec gate exited before it" in str(caught.value)
        assert guard.groups == []
        assert all(_gone(pid) for pid in guard.adopted)
    finally:
        guard.close()


async def test_a_gate_that_cannot_start_here_is_found_at_the_guards_start_and_servers_start_directly(
    tmp_path: Path, guard: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watchdog (`-I -S reaper.py`) starts, the gate (`-I -S gate.py`) does not.
    monkeypatch.setattr(sys, "executable", _interpreter(tmp_path, 'case "$3" in *gate.py) exit 127;; esac'))
    assert await anyio.to_thread.run_sync(guard.start)  # the watchdog starts; the gate does not
    assert not guard.gated
    await _runs(SERVER, guard)
    assert len(guard.adopted) == 1  # adopted after the direct start


async def test_a_stopped_gate_with_a_go_larger_than_the_socket_buffer_fails_within_the_deadline(
    tmp_path: Path, guard: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await anyio.to_thread.run_sync(guard.start)
    monkeypatch.setattr(sys, "executable", _interpreter(tmp_path, "kill -STOP $$"))
    monkeypatch.setattr(_guarded_spawn, "_GO_S", 0.5)
    env = child_environment({f"BIG{i}": "b" * 32000 for i in range(64)})  # 2 MB: more than any socket buffer
    with anyio.fail_after(20), pytest.raises(ServerUnreachable) as caught:
        await _runs(SERVER, guard, env)
    assert "within 0.5 s" in str(caught.value)  # stopped before it started here: the go's send was cut too
    assert guard.groups == []
    assert all(_gone(pid) for pid in guard.adopted)


async def test_a_start_waiting_on_a_stopped_gate_stays_cancellable_and_leaves_nothing(
    tmp_path: Path, guard: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await anyio.to_thread.run_sync(guard.start)
    monkeypatch.setattr(sys, "executable", _interpreter(tmp_path, "kill -STOP $$"))
    with anyio.fail_after(5):  # the gate's own deadline is 10 s
        with anyio.move_on_after(0.3) as cancelled:
            async with StdioTransport(SERVER, env=child_environment({}), guard=guard):
                pytest.fail("a stopped gate never runs the server")
    assert cancelled.cancelled_caught
    assert guard.groups == []
    assert guard.adopted and all(_gone(pid) for pid in guard.adopted)


def _gate(argv: list[str]) -> tuple[subprocess.Popen[bytes], socket.socket]:
    ours, theirs = socket.socketpair()
    try:
        child = subprocess.Popen(gate.command_line(theirs.fileno(), argv), pass_fds=(theirs.fileno(),))
    finally:
        theirs.close()
    assert ours.recv(len(gate.READY)) == gate.READY
    return child, ours


def test_an_exec_that_fails_after_the_host_stopped_waiting_exits_as_a_failed_exec_not_sigpipe() -> None:
    child, ours = _gate(["/nonexistent/command"])
    ours.sendall(gate.go_message({}))
    ours.close()  # the host stopped waiting: the errno's write meets a closed socket
    assert child.wait(timeout=20) == gate.EXEC_FAILED_STATUS


async def test_an_empty_command_is_a_spawn_failure_not_a_crashed_gate_counted_as_started(guard: Recording) -> None:
    assert await anyio.to_thread.run_sync(guard.start)
    child, ours = _gate([""])
    with ours:
        ours.sendall(gate.go_message({}))
        assert ours.recv(16) == str(errno.EINVAL).encode()
    assert child.wait(timeout=20) == gate.EXEC_FAILED_STATUS
    with anyio.fail_after(20), pytest.raises(ServerUnreachable) as caught:
        await _runs([""], guard)
    assert caught.value.details["reason"] == "spawn_failed"
    assert caught.value.details["errno"] == "EINVAL"
    assert guard.groups == []
