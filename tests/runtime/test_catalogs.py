"""Catalog validation, list_changed refreshes, generations and storm bounds (R-3.6, R-3.7)."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_center.runtime import ConnectionManager
from mcp_center.runtime.catalog import MAX_CATALOG_PAGES, Catalog, Fetched
from mcp_center.runtime.connection import REFRESH_MIN_INTERVAL_S
from tests.runtime.scripted import ScriptedConnection, ScriptedServer, spec, tool

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> ScriptedServer:
    return ScriptedServer()


@pytest.fixture
async def manager(server: ScriptedServer) -> AsyncGenerator[ConnectionManager]:
    async with ConnectionManager(transport_factory=server.factory) as opened:
        await opened.configure("fake", spec())
        yield opened


def names(items: list[Any]) -> list[str]:
    return [item.name for item in items]


async def test_a_malformed_tool_is_quarantined_while_the_rest_stay_usable(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    server.tool_pages = [
        {
            "tools": [
                tool("ok"),
                {"name": "bad-schema", "inputSchema": "not an object"},
                {"description": "no name", "inputSchema": {"type": "object"}},
                tool("ok"),
                tool("tab\tname"),
                tool("fine"),
            ]
        }
    ]
    catalog = await manager.catalog("fake")
    assert names(catalog.tools) == ["ok", "fine"]
    reasons = {(q.name, q.reason.split(":")[0]) for q in catalog.quarantined["tools"]}
    assert ("bad-schema", "inputSchema") in reasons
    assert (None, "name") in reasons
    assert any(q.name == "ok" and "duplicate" in q.reason for q in catalog.quarantined["tools"])
    assert any(q.name == "tab\tname" and "printable" in q.reason for q in catalog.quarantined["tools"])
    result = await manager.call_tool("fake", "fine", {})
    assert result.is_error is False


async def test_pages_are_followed_and_a_repeating_cursor_ends_the_walk(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    server.tool_pages = [{"tools": [tool(f"t{i}")]} for i in range(3)]
    assert names(await manager.list_tools("fake")) == ["t0", "t1", "t2"]

    async def looping(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
        return {"tools": [], "nextCursor": "again"}

    server.handlers["tools/list"] = looping
    await manager.refresh("fake", ("tools",))
    assert server.count("tools/list") <= 3 + 2  # three pages, then two for the loop (first + repeat)
    assert server.count("tools/list") < MAX_CATALOG_PAGES


async def test_a_malformed_page_on_refresh_keeps_the_last_valid_catalog(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    before = await manager.catalog("fake")
    assert names(before.tools) == ["echo", "add"]
    server.tool_pages = [{"tools": "definitely not a list"}]
    after = await manager.refresh("fake", ("tools",))
    assert names(after.tools) == ["echo", "add"]
    assert after.generation["tools"] == 1
    assert after.errors["tools"] is not None
    assert "not a list" in after.errors["tools"]["message"]
    server.tool_pages = [types.ErrorData(code=-32603, message="database down")]
    again = await manager.refresh("fake", ("tools",))
    assert names(again.tools) == ["echo", "add"]
    assert again.errors["tools"] is not None


async def test_a_refresh_the_server_never_answers_fails_after_the_call_timeout_and_keeps_the_catalog(
    server: ScriptedServer,
) -> None:
    """A server whose later `tools/list` never answers held a manual refresh (a REST request) open for
    good, and the list_changed worker with it (found by a breaker): a listing gets as long as a call
    or a start, whichever is longer."""
    async with ConnectionManager(transport_factory=server.factory) as manager:
        await manager.configure("fake", spec(call_timeout_s=2.0, startup_timeout_s=2.0))
        before = await manager.catalog("fake")

        async def silent(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        server.handlers["tools/list"] = silent
        with anyio.fail_after(30):  # a bound for the test only: the refresh ends after 2 s
            after = await manager.refresh("fake", ("tools",))
        assert names(after.tools) == names(before.tools)
        assert after.errors["tools"] is not None
        assert after.errors["tools"]["code"] == "MCP_SERVER_TIMEOUT", after.errors["tools"]
        assert manager.status("fake").state.value == "ready"


async def test_list_changed_commits_a_new_generation_and_announces_it(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.connect("fake")
    async with manager.events.subscribe() as events:
        server.tool_pages = [{"tools": [tool("echo"), tool("add"), tool("new")]}]
        await server.live.notify("notifications/tools/list_changed")
        with anyio.fail_after(5):
            event = await events.next()
            while event["type"] != "server.catalog":
                event = await events.next()
    catalog = await manager.catalog("fake")
    assert names(catalog.tools) == ["echo", "add", "new"]
    assert catalog.generation["tools"] == 2
    assert event["generation"] == {"tools": 2}
    assert event["counts"]["tools"] == 3
    assert manager.status("fake").tool_count == 3


async def test_a_list_changed_storm_is_coalesced_into_a_bounded_number_of_refreshes(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.connect("fake")
    before = server.count("tools/list")
    started = anyio.current_time()
    async with manager.events.subscribe() as events:
        for _ in range(500):
            await server.live.notify("notifications/tools/list_changed")
        with anyio.fail_after(10):
            while (await events.next())["type"] != "server.catalog":
                pass
    elapsed = anyio.current_time() - started
    refreshes = server.count("tools/list") - before
    assert 1 <= refreshes <= 2 + math.ceil(elapsed / REFRESH_MIN_INTERVAL_S)
    assert refreshes < 50


async def test_a_list_then_notify_loop_is_rate_limited(manager: ConnectionManager, server: ScriptedServer) -> None:
    """A server that announces list_changed every time it is listed cannot make us spin."""
    answered = 0

    async def listing_notifies(conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
        nonlocal answered
        answered += 1
        if answered > 1:
            await conn.notify("notifications/tools/list_changed")
        return {"tools": [tool("echo")]}

    server.handlers["tools/list"] = listing_notifies
    await manager.connect("fake")
    started = anyio.current_time()
    await server.live.notify("notifications/tools/list_changed")
    with anyio.move_on_after(1.6):
        await anyio.sleep_forever()  # let the loop run for a bounded time
    elapsed = anyio.current_time() - started
    assert answered <= 2 + math.ceil(elapsed / REFRESH_MIN_INTERVAL_S)


async def test_a_malformed_notification_does_not_erase_the_catalog(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.connect("fake")
    await server.live.notify("notifications/tools/list_changed", {"_meta": "not an object"})
    await server.live.notify("notifications/unknown/thing", {"x": 1})
    await server.live.notify("notifications/message", {"level": "nonsense", "data": 1})
    with anyio.fail_after(5):
        result = await manager.call_tool("fake", "echo", {"a": 1})
    assert result.is_error is False
    assert names(await manager.list_tools("fake")) == ["echo", "add"]


async def test_the_request_log_records_method_timing_and_sizes_but_no_arguments(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    await manager.call_tool("fake", "echo", {"password": "hunter2-secret-value"})
    entries = manager.logbook("fake").entries()
    methods = [e["method"] for e in entries if e["kind"] == "request"]
    assert methods[:2] == ["initialize", "tools/list"]
    call = next(e for e in entries if e["method"] == "tools/call")
    assert call["status"] == "ok"
    assert call["request_bytes"] > 0 and call["response_bytes"] > 0
    assert call["duration_ms"] is not None
    assert "hunter2" not in repr(entries)


async def test_an_older_refresh_that_answers_last_is_discarded(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    """Only the newest refresh commits (R-3.7, issue 14 item 5): the first refresh is held until the
    second one committed; its (older) answer arrives last and is discarded."""
    await manager.connect("fake")
    release_first = anyio.Event()
    first_waiting = anyio.Event()
    answers = iter([[tool("old")], [tool("new")]])

    async def gated(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
        mine = next(answers)
        if mine[0]["name"] == "old":
            first_waiting.set()
            await release_first.wait()
        return {"tools": mine}

    server.handlers["tools/list"] = gated
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.refresh, "fake", ("tools",))
        with anyio.fail_after(5):
            await first_waiting.wait()
        newer = await manager.refresh("fake", ("tools",))
        assert names(newer.tools) == ["new"]
        release_first.set()
    catalog = await manager.catalog("fake")
    assert names(catalog.tools) == ["new"]
    assert catalog.generation["tools"] == 3
    assert catalog.errors["tools"] is None


async def test_overlapping_refreshes_each_validate_their_own_pages(
    manager: ConnectionManager, server: ScriptedServer
) -> None:
    """Two refreshes in flight at once never see each other's names as duplicates (issue 14 item 5)."""
    await manager.connect("fake")
    both_waiting = anyio.Event()
    waiting = 0

    async def slow(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
        nonlocal waiting
        waiting += 1
        if waiting == 2:
            both_waiting.set()
        await both_waiting.wait()
        return {"tools": [tool("echo"), tool("add"), tool("echo")]}

    server.handlers["tools/list"] = slow
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.refresh, "fake", ("tools",))
            tg.start_soon(manager.refresh, "fake", ("tools",))
    catalog = await manager.catalog("fake")
    assert names(catalog.tools) == ["echo", "add"]
    assert [(q.index, q.name) for q in catalog.quarantined["tools"]] == [(2, "echo")]


def test_a_catalog_finds_a_tool_by_name_as_a_scan_would_and_follows_a_refresh() -> None:
    """R-3.9, R-8.3: the lookup the gateway's output check makes per call gives the first tool of that
    name, None for an unknown one, and the new list's tool once a refresh committed."""
    first = types.Tool(name="echo", input_schema={"type": "object"}, description="first")
    second = types.Tool(name="echo", input_schema={"type": "object"}, description="second")
    other = types.Tool(name="other", input_schema={"type": "object"})
    catalog = Catalog()
    assert catalog.tool("echo") is None
    assert catalog.commit("tools", catalog.begin("tools"), Fetched([first, second, other]))
    assert catalog.tool("echo") is first
    assert catalog.tool("other") is other
    assert catalog.tool("missing") is None
    assert catalog.commit("tools", catalog.begin("tools"), Fetched([second]))
    assert catalog.tool("echo") is second
    assert catalog.tool("other") is None
