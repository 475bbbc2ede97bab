"""Deterministic concurrency semantics of the connection manager (R-3.3, R-3.4, R-3.5, R-3.8).

The scripted server holds `initialize` at a gate; `anyio.wait_all_tasks_blocked()` makes sure
every caller is parked before the gate opens. No sleeps are used as synchronization.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_center.errors import CallCancelled, CenterError, ConnectionLost, OperationInUse, ServerDisabled
from mcp_center.models import ConnectionState
from mcp_center.runtime import Connection, ConnectionManager, ServerStatus
from tests.runtime.scripted import ScriptedConnection, ScriptedServer, spec

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> ScriptedServer:
    return ScriptedServer()


@pytest.fixture
def statuses() -> list[ServerStatus]:
    return []


@pytest.fixture
async def manager(server: ScriptedServer, statuses: list[ServerStatus]) -> AsyncGenerator[ConnectionManager]:
    async with ConnectionManager(transport_factory=server.factory, on_status=statuses.append) as opened:
        yield opened


async def _call_expecting_cancel(manager: ConnectionManager, operation_id: str, outcome: list[CallCancelled]) -> None:
    try:
        await manager.call_tool("fake", "echo", {}, operation_id=operation_id)
    except CallCancelled as exc:
        outcome.append(exc)


async def test_fifty_concurrent_connects_share_one_attempt(manager: ConnectionManager, server: ScriptedServer) -> None:
    server.initialize_gate = anyio.Event()
    await manager.configure("fake", spec())
    connections: list[Connection] = []

    async def connect() -> None:
        connections.append(await manager.connect("fake"))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(connect)
            await server.wait_for_initialize(1)
            await anyio.wait_all_tasks_blocked()
            assert connections == []
            server.initialize_gate.set()
    assert len(connections) == 50
    assert len({c.connection_id for c in connections}) == 1
    assert server.initialize_started == 1
    assert manager.handshakes == 1


async def test_a_disconnect_during_a_handshake_is_a_barrier_that_no_later_connect_crosses(
    manager: ConnectionManager, server: ScriptedServer, statuses: list[ServerStatus]
) -> None:
    server.initialize_gate = anyio.Event()
    await manager.configure("fake", spec())
    outcome: list[BaseException] = []
    first_id: str | None = None

    async def first_caller() -> None:
        try:
            await manager.connect("fake")
        except CenterError as exc:
            outcome.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first_caller)
            await server.wait_for_initialize(1)
            first_id = manager.status("fake").connection_id
            await manager.disconnect("fake")
        assert isinstance(outcome[0], ConnectionLost)
        server.initialize_gate.set()  # the old attempt's initialize may now be answered: too late
        second = await manager.connect("fake")
    assert second.connection_id != first_id
    assert server.initialize_started == 2
    assert manager.current("fake") is second
    ready_ids = {s.connection_id for s in statuses if s.state is ConnectionState.READY}
    assert ready_ids == {second.connection_id}


async def test_connect_disconnect_connect_never_resurrects_the_old_attempt(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    server.initialize_gate = anyio.Event()
    await manager.configure("fake", spec())
    results: list[Connection | BaseException] = []

    async def caller() -> None:
        try:
            results.append(await manager.connect("fake"))
        except CenterError as exc:
            results.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            await server.wait_for_initialize(1)
            await manager.disconnect("fake")
            tg.start_soon(caller)
            await server.wait_for_initialize(2)
            await anyio.wait_all_tasks_blocked()
            server.initialize_gate.set()
    assert isinstance(results[0], ConnectionLost)
    assert isinstance(results[1], Connection)
    assert results[1].is_live
    assert server.connections[0].number == 1
    assert manager.current("fake") is results[1]


async def test_a_config_change_during_a_handshake_never_yields_a_ready_session_with_the_old_config(
    manager: ConnectionManager, server: ScriptedServer, statuses: list[ServerStatus]
) -> None:
    server.initialize_gate = anyio.Event()
    old, new = spec(digest="sha256:old"), spec(digest="sha256:new")
    await manager.configure("fake", old)
    outcome: list[BaseException | Connection] = []
    old_id: str | None = None

    async def caller() -> None:
        try:
            outcome.append(await manager.connect("fake"))
        except CenterError as exc:
            outcome.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            await server.wait_for_initialize(1)
            old_id = manager.status("fake").connection_id
            await manager.configure("fake", new)  # returns only after the old candidate closed
            server.initialize_gate.set()
        current = await manager.connect("fake")
    assert isinstance(outcome[0], ConnectionLost)
    assert current.spec.digest == "sha256:new"
    assert all(s.connection_id != old_id for s in statuses if s.state is ConnectionState.READY)


async def test_a_candidate_whose_spec_drifted_after_its_handshake_closes_instead_of_becoming_ready(
    manager: ConnectionManager, server: ScriptedServer, statuses: list[ServerStatus]
) -> None:
    """The post-handshake re-check (R-3.3): the handshake finished, but the spec changed meanwhile."""
    tools_gate = anyio.Event()
    original_list = server.handlers.get("tools/list")

    async def slow_tools(conn: ScriptedConnection, request: types.JSONRPCRequest) -> dict[str, Any]:
        await tools_gate.wait()
        return {"tools": []}

    server.handlers["tools/list"] = slow_tools
    await manager.configure("fake", spec(digest="sha256:one"))
    outcome: list[BaseException | Connection] = []

    async def caller() -> None:
        try:
            outcome.append(await manager.connect("fake"))
        except CenterError as exc:
            outcome.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            while server.count("tools/list") < 1:
                await anyio.wait_all_tasks_blocked()
            # Simulate a spec change that did not go through the barrier (a racing writer):
            # the candidate must notice on its own after the handshake.
            slot = manager._slots["fake"]  # pyright: ignore[reportPrivateUsage]
            slot.spec = spec(digest="sha256:two")
            tools_gate.set()
    assert isinstance(outcome[0], ConnectionLost)
    assert not any(s.state is ConnectionState.READY for s in statuses)
    if original_list is None:
        server.handlers.pop("tools/list")


async def test_a_cancel_before_admission_never_dispatches_the_call(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.configure("fake", spec())
    await manager.connect("fake")
    assert manager.cancel("op-early") is False
    with anyio.fail_after(5), pytest.raises(CallCancelled):
        await manager.call_tool("fake", "echo", {}, operation_id="op-early")
    assert server.count("tools/call") == 0


async def test_a_cancel_while_the_call_waits_for_its_connection_never_dispatches_it(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    server.initialize_gate = anyio.Event()
    await manager.configure("fake", spec())
    outcome: list[CallCancelled] = []
    call = partial(_call_expecting_cancel, manager, "op-queued", outcome)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await server.wait_for_initialize(1)
            await anyio.wait_all_tasks_blocked()
            assert manager.is_running("op-queued")
            assert manager.cancel("op-queued") is True
        server.initialize_gate.set()
        await manager.connect("fake")
    assert len(outcome) == 1
    assert server.count("tools/call") == 0


async def test_a_cancel_while_running_reaches_the_server_as_notifications_cancelled(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    release = server.hold_calls()
    await manager.configure("fake", spec())
    outcome: list[CallCancelled] = []
    call = partial(_call_expecting_cancel, manager, "op-run", outcome)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            while server.count("tools/call") < 1:
                await anyio.wait_all_tasks_blocked()
            assert manager.cancel("op-run") is True
        while not any(m == "notifications/cancelled" for _, m, _ in server.notifications):
            await anyio.wait_all_tasks_blocked()
    release.set()
    assert len(outcome) == 1
    cancelled = [p for _, m, p in server.notifications if m == "notifications/cancelled"]
    call_ids = [m.id for m in server.live.received if isinstance(m, types.JSONRPCRequest) and m.method == "tools/call"]
    assert cancelled[0]["requestId"] == call_ids[0]


async def test_the_same_operation_id_cannot_run_twice_at_once(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    release = server.hold_calls()
    await manager.configure("fake", spec())
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(manager.call_tool, "fake", "echo", {}, operation_id="op-dup"))
            while server.count("tools/call") < 1:
                await anyio.wait_all_tasks_blocked()
            with pytest.raises(OperationInUse):
                await manager.call_tool("fake", "echo", {}, operation_id="op-dup")
            release.set()
    assert server.count("tools/call") == 1


async def test_a_server_without_a_spec_is_refused_with_a_stable_code(manager: ConnectionManager) -> None:
    with pytest.raises(ServerDisabled):
        await manager.connect("unknown")
    await manager.configure("fake", spec())
    await manager.configure("fake", None)
    with pytest.raises(ServerDisabled):
        await manager.call_tool("fake", "echo", {})


async def test_an_unchanged_spec_keeps_the_running_session(manager: ConnectionManager, server: ScriptedServer) -> None:
    await manager.configure("fake", spec())
    first = await manager.connect("fake")
    await manager.configure("fake", spec())
    assert manager.current("fake") is first
    assert server.initialize_started == 1


async def test_a_changed_spec_closes_the_old_connection_before_configure_returns(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.configure("fake", spec(digest="sha256:a"))
    first = await manager.connect("fake")
    await manager.configure("fake", spec(digest="sha256:b"))
    assert first.closed.is_set()
    assert manager.current("fake") is None
    second = await manager.connect("fake")
    assert second.spec.digest == "sha256:b"
    assert second.connection_id != first.connection_id


async def test_configure_none_overlapped_by_configure_leaves_the_second_spec_in_force(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    """configure() is serialized per server (issue 14 item 6): the first call removes the server while
    the second waits for its lock; the second then configures a fresh slot instead of a removed one."""
    await manager.configure("fake", spec(digest="sha256:a"))
    await manager.connect("fake")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.configure, "fake", None)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(manager.configure, "fake", spec(digest="sha256:b"))
    assert manager.configured() == ["fake"]
    conn = await manager.connect("fake")
    assert conn.spec.digest == "sha256:b"
    assert manager.status("fake").state is ConnectionState.READY


async def test_many_interleaved_configures_end_with_the_last_one(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    """Whatever the interleaving of None and specs, the call that took the lock last decides."""
    await manager.configure("fake", spec(digest="sha256:0"))
    await manager.connect("fake")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(1, 21):
                tg.start_soon(manager.configure, "fake", None if n % 2 else spec(digest=f"sha256:{n}"))
                await anyio.wait_all_tasks_blocked()
    assert manager.configured() == ["fake"]
    assert (await manager.connect("fake")).spec.digest == "sha256:20"
