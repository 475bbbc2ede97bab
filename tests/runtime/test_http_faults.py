"""Fault injection for the Streamable HTTP and legacy SSE behaviour of the connection manager (R-3.6 to R-3.10).

Each test drives `ConnectionManager` (or `McpCenter`, where the catalog API is the point) against a
loopback server it controls: `FakeStreamableServer` scripted into misbehaving, the real SDK echo
server restarted on the same port, or the legacy SSE fake. Every wait is bounded by
`anyio.fail_after`. The only sleeps are the SDK's own reconnection delay (shortened, then bounded)
and the observation window of the list_changed flood, whose bound is derived from elapsed time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from starlette.responses import Response

import mcp_center.transports.factory as transport_factory
import mcp_center.transports.streamable as streamable
from mcp_center.errors import CenterError, ConnectionLost, ServerTimeout, ServerUnreachable
from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.runtime.connection import REFRESH_MIN_INTERVAL_S
from mcp_center.runtime.results import TRUNCATION_META_KEY
from mcp_center.service import McpCenter
from mcp_center.transports import ConnectionSpec
from mcp_center.transports.backoff import Backoff
from mcp_center.transports.clip import ReadLimits
from mcp_center.transports.http import ResponseTooLarge
from tests.servers.http_echo import streamable_app
from tests.servers.sse_fakes import FakeSseServer, mcp_replies
from tests.support.fakes.streamable_http import (
    ECHO_TOOL,
    FakeStreamableServer,
    json_response,
    rpc_error,
    rpc_result,
    serve_fake,
    sse_event,
    sse_response,
)
from tests.support.loopback import serve_loopback
from tests.support.readiness import ready_in_center

pytestmark = pytest.mark.anyio

SERVER = "fake"
ADD_TOOL: dict[str, Any] = {
    "name": "add",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
}


def _spec(url: str, *, transport: TransportKind = TransportKind.STREAMABLE_HTTP, **overrides: Any) -> ConnectionSpec:
    settings: dict[str, Any] = {"startup_timeout_s": 5.0, "call_timeout_s": 5.0, **overrides}
    return ConnectionSpec(server_id=SERVER, transport=transport, digest="digest-1", url=url, **settings)


@asynccontextmanager
async def _managed(url: str, **overrides: Any) -> AsyncGenerator[ConnectionManager]:
    async with ConnectionManager() as manager:
        await manager.configure(SERVER, _spec(url, **overrides))
        yield manager


async def _echo(manager: ConnectionManager, text: str) -> str:
    with anyio.fail_after(5):
        result = await manager.call_tool(SERVER, "echo", {"text": text})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _ready(center: McpCenter, url: str) -> str:
    view = await ready_in_center(center, {"name": "Fake", "transport": "streamable_http", "url": url})
    assert center.status(view["id"]).state.value == "ready"
    return view["id"]


@pytest.fixture
def fast_get_backoff(monkeypatch: pytest.MonkeyPatch) -> float:
    """Shorten the GET stream's backoff floor so a reopening (if any) would show up quickly."""
    floor_s = 0.05
    monkeypatch.setattr(streamable, "GET_BACKOFF", Backoff(floor_s=floor_s, cap_s=floor_s * 4))
    return floor_s


# ----- notifications and the optional GET stream (R-3.10) -----------------------------------------


@pytest.mark.parametrize("status", [202, 200, 204])
async def test_notifications_acknowledged_with_200_204_or_202_keep_the_session_working(status: int) -> None:
    fake = FakeStreamableServer(notification_status=status)
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert await _echo(manager, "hi") == "hi"
        assert await _echo(manager, "again") == "again"
        [initialized] = fake.posts("notifications/initialized")
        assert initialized.session_id == "session-1"
        assert manager.status(SERVER).state.value == "ready"
        assert manager.handshakes == 1


@pytest.mark.parametrize("status", [405, 400, 404])
async def test_a_refused_get_stream_is_not_reopened_and_calls_keep_working(
    status: int, fast_get_backoff: float
) -> None:
    """405 is the spec's "no GET stream"; 400 and 404 come from servers and gateways that route only POST.
    Asking again would only repeat the answer (issue 14 item 9)."""
    fake = FakeStreamableServer(get_status=status)
    async with serve_fake(fake) as url, _managed(url) as manager:
        connection = await manager.connect(SERVER)
        with anyio.fail_after(5):
            await fake.wait_until(lambda: len(fake.gets) >= 1)
        await anyio.sleep(10 * fast_get_backoff)  # room for any reopening to show up
        assert len(fake.gets) == 1
        assert all(get.session_id == "session-1" for get in fake.gets)
        assert await _echo(manager, "still here") == "still here"
        assert manager.status(SERVER).connection_id == connection.connection_id
        assert manager.handshakes == 1


async def test_a_tool_error_after_a_refused_get_stream_is_not_blamed_on_the_get_status() -> None:
    """A JSON-RPC -32603 from a tool is the tool's error, not "the server answered HTTP 405"."""

    async def crash(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return json_response(rpc_error(message["id"], types.INTERNAL_ERROR, "tool crashed"))

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": crash})
    async with serve_fake(fake) as url, _managed(url) as manager:
        await manager.connect(SERVER)
        with anyio.fail_after(5):
            await fake.wait_until(lambda: len(fake.gets) >= 1)
        with anyio.fail_after(5), pytest.raises(CenterError) as caught:
            await manager.call_tool(SERVER, "echo", {"text": "x"})
        assert caught.value.code == "MCP_SERVER_ERROR"
        assert caught.value.details == {"reason": "protocol", "rpc_code": types.INTERNAL_ERROR}


# ----- a POST response stream that closes mid-call (R-3.10) -------------------------------------------


async def test_a_post_stream_that_closes_mid_call_without_event_ids_fails_the_call_promptly() -> None:
    async def cut_off(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "busy"}}
        return sse_response([sse_event(json.dumps(progress))])  # then the stream ends, no answer

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": cut_off})
    async with serve_fake(fake) as url, _managed(url) as manager:
        connection = await manager.connect(SERVER)
        started = anyio.current_time()
        with anyio.fail_after(5), pytest.raises(ConnectionLost) as caught:
            await manager.call_tool(SERVER, "echo", {"text": "lost"})
        assert anyio.current_time() - started < 5
        assert caught.value.details["reason"] == "closed"
        del fake.handlers["tools/call"]
        assert await _echo(manager, "next") == "next"
        assert manager.status(SERVER).connection_id == connection.connection_id


async def test_a_post_stream_with_event_ids_resumes_with_last_event_id_after_the_retry_delay() -> None:
    retry_ms = 150

    async def prime_then_close(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        answer = rpc_result(message["id"], {"content": [{"type": "text", "text": "resumed"}]})
        fake.resume_with("event-1", [sse_event(json.dumps(answer), event_id="event-2")])
        return sse_response([sse_event("", event_id="event-1", retry_ms=retry_ms)])

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": prime_then_close})
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert await _echo(manager, "x") == "resumed"
        [call] = fake.posts("tools/call")
        [resume] = [get for get in fake.gets if "last-event-id" in get.headers]
        assert resume.headers["last-event-id"] == "event-1"
        assert resume.session_id == call.session_id
        assert resume.at - call.at >= retry_ms / 1000 * 0.9  # the server's `retry` was honoured


# ----- session expiry: re-initialize once, re-send once (R-3.10) -------------------------------------


@pytest.mark.parametrize(
    "not_found_error",
    [None, (types.INVALID_REQUEST, "Session not found"), (-32001, "Session not found")],
    ids=["bare-404", "python-sdk-body", "typescript-sdk-body"],
)
async def test_a_restarted_server_is_re_initialized_once_and_the_call_is_re_sent_once(
    not_found_error: tuple[int, str] | None,
) -> None:
    """The 404 may carry a JSON-RPC error body; the TypeScript SDK's -32001 is our REQUEST_TIMEOUT code."""
    fake = FakeStreamableServer(get_status=405, not_found_error=not_found_error)
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert await _echo(manager, "before") == "before"
        fake.restart()
        assert await _echo(manager, "after") == "after"
        first, second = fake.posts("initialize")
        assert "mcp-session-id" not in first.headers
        assert "mcp-session-id" not in second.headers  # no stale session id on the new handshake
        sent = [(r.session_id, r.body["params"]["arguments"]["text"]) for r in fake.posts("tools/call")]
        assert sent == [("session-1", "before"), ("session-1", "after"), ("session-2", "after")]
        assert manager.handshakes == 2
        assert manager.status(SERVER).state.value == "ready"


async def test_a_server_that_expires_every_session_fails_the_call_after_one_re_initialize() -> None:
    async def gone(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return Response("session not found", status_code=404)

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": gone})
    async with serve_fake(fake) as url, _managed(url) as manager:
        with anyio.fail_after(5), pytest.raises(ConnectionLost) as caught:
            await manager.call_tool(SERVER, "echo", {"text": "x"})
        assert caught.value.details["reason"] == "session_expired"
        assert len(fake.posts("initialize")) == 2
        assert [r.session_id for r in fake.posts("tools/call")] == ["session-1", "session-2"]


async def test_a_server_that_forgets_each_session_at_once_fails_each_use_after_a_single_initialize() -> None:
    fake = FakeStreamableServer(get_status=405, sessions_expire_at_once=True)
    async with serve_fake(fake) as url, _managed(url) as manager:
        for uses in (1, 2):
            with anyio.fail_after(5), pytest.raises(ConnectionLost) as caught:
                await manager.call_tool(SERVER, "echo", {"text": "x"})
            assert caught.value.details["reason"] == "session_expired"
            assert len(fake.posts("initialize")) == uses  # one handshake per use: no loop
        assert fake.posts("tools/call") == []
        assert [r.session_id for r in fake.posts("notifications/initialized")] == ["session-1", "session-2"]


async def test_calls_in_flight_when_the_server_restarts_are_all_re_sent_on_the_new_session() -> None:
    fake = FakeStreamableServer(get_status=405)
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert await _echo(manager, "before") == "before"
        fake.restart()
        answers: dict[int, str] = {}

        async def call(i: int) -> None:
            answers[i] = await _echo(manager, f"after-{i}")

        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(call, i)
        assert answers == {i: f"after-{i}" for i in range(5)}
        assert len(fake.posts("initialize")) == 2


async def test_a_real_sdk_server_restarted_on_the_same_port_is_re_initialized_once() -> None:
    async with ConnectionManager() as manager:
        async with serve_loopback(streamable_app()) as base:
            await manager.configure(SERVER, _spec(f"{base}/mcp"))
            assert await _echo(manager, "before") == "before"
            old = manager.status(SERVER).connection_id
        port = int(base.rsplit(":", 1)[1])
        async with serve_loopback(streamable_app(), port=port):
            assert await _echo(manager, "after") == "after"
            assert manager.handshakes == 2
            status = manager.status(SERVER)
            assert status.state.value == "ready"
            assert status.connection_id != old


# ----- catalogs over HTTP (R-3.6, R-3.7) -------------------------------------------------------------


async def test_a_malformed_tool_is_quarantined_with_a_reason_and_the_others_stay_listed_and_callable(
    center: McpCenter,
) -> None:
    broken_schema = {"name": "broken", "inputSchema": "not an object"}
    nameless = {"description": "no name", "inputSchema": {"type": "object"}}
    fake = FakeStreamableServer(tools=[ECHO_TOOL, broken_schema, nameless, ADD_TOOL])
    async with serve_fake(fake) as url:
        server_id = await _ready(center, url)
        catalog = await center.catalog(server_id)
        assert [tool.name for tool in catalog.tools] == ["echo", "add"]
        quarantined = {(q.index, q.name): q.reason for q in catalog.quarantined}
        assert set(quarantined) == {(1, "broken"), (2, None)}
        assert all(reason and ("inputSchema" in reason or "name" in reason) for reason in quarantined.values())
        result = await center.call_tool(server_id, "echo", {"text": "usable"})
        assert result.to_dict()["content"] == [{"type": "text", "text": "usable"}]


async def test_a_tools_page_that_is_not_a_list_keeps_the_last_valid_catalog_on_refresh(center: McpCenter) -> None:
    fake = FakeStreamableServer()
    async with serve_fake(fake) as url:
        server_id = await _ready(center, url)
        before = await center.catalog(server_id)
        fake.tools_result = {"tools": {"echo": ECHO_TOOL}}
        after = await center.catalog(server_id, refresh=True)
        assert [tool.name for tool in after.tools] == ["echo"]
        assert after.generation["tools"] == before.generation["tools"]
        assert after.error("tools") is not None
        assert "not a list" in (after.error("tools") or {})["message"]
        assert center.status(server_id).state.value == "ready"


async def test_a_list_changed_answered_by_a_malformed_page_keeps_the_last_valid_catalog(center: McpCenter) -> None:
    fake = FakeStreamableServer()
    async with serve_fake(fake) as url:
        server_id = await _ready(center, url)
        with anyio.fail_after(5):
            await fake.wait_until(lambda: fake.open_streams >= 1)
        fake.tools_result = {"tools": "nope"}
        async with center.events.subscribe() as events:
            await fake.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            with anyio.fail_after(5):
                while (event := await events.next())["type"] != "server.status":
                    pass  # the refresh worker reports the tools status after every tools refresh
        catalog = await center.catalog(server_id)
        assert [tool.name for tool in catalog.tools] == ["echo"]
        assert catalog.error("tools") is not None
        assert event["status"]["state"] == "ready"


async def test_malformed_notifications_on_the_get_stream_neither_erase_the_catalog_nor_end_the_session(
    center: McpCenter,
) -> None:
    fake = FakeStreamableServer()
    async with serve_fake(fake) as url:
        server_id = await _ready(center, url)
        connection_id = center.status(server_id).connection_id
        with anyio.fail_after(5):
            await fake.wait_until(lambda: fake.open_streams >= 1)
        async with center.events.subscribe() as events:
            await fake.push_raw("data: {this is not json\n\n")
            await fake.push_raw(sse_event(json.dumps({"hello": "world"})))
            await fake.push_raw(sse_event(json.dumps({"jsonrpc": "2.0", "method": "notifications/unknown"})))
            await fake.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": "oops"})
            fake.tools = [ECHO_TOOL, ADD_TOOL]
            await fake.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            with anyio.fail_after(5):
                while not (
                    (event := await events.next())["type"] == "server.catalog" and event["counts"]["tools"] == 2
                ):
                    pass
        catalog = await center.catalog(server_id)
        assert [tool.name for tool in catalog.tools] == ["echo", "add"]
        assert center.status(server_id).state.value == "ready"
        assert center.status(server_id).connection_id == connection_id


async def test_a_list_changed_flood_causes_a_bounded_number_of_tools_list_requests() -> None:
    fake = FakeStreamableServer()
    async with serve_fake(fake) as url, _managed(url) as manager:
        connection = await manager.connect(SERVER)
        with anyio.fail_after(5):
            await fake.wait_until(lambda: fake.open_streams >= 1)
        before = len(fake.posts("tools/list"))
        started = anyio.current_time()
        notification = sse_event(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        for _ in range(300):
            await fake.push_raw(notification)
        await anyio.sleep(3 * REFRESH_MIN_INTERVAL_S)  # observation window: refreshes still due show up
        elapsed = anyio.current_time() - started
        refreshes = len(fake.posts("tools/list")) - before
        assert 1 <= refreshes <= 2 + elapsed / REFRESH_MIN_INTERVAL_S
        assert [tool.name for tool in connection.catalog.tools] == ["echo"]
        assert manager.status(SERVER).connection_id == connection.connection_id


# ----- big results (R-3.9) ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_a_10_mb_tool_result_comes_back_truncated_and_marked(mode: str) -> None:
    async def huge(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return await fake.reply(message, {"content": [{"type": "text", "text": "x" * 10_000_000}]})

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": huge})
    fake.response_mode = "sse" if mode == "sse" else "json"
    async with serve_fake(fake) as url, _managed(url) as manager:
        with anyio.fail_after(20):
            result = await manager.call_tool(SERVER, "echo", {"text": "x"})
        limit = _spec(url).max_result_bytes
        marker = (result.meta or {})[TRUNCATION_META_KEY]
        assert marker["limit_bytes"] == limit
        assert marker["original_bytes"] > 10_000_000
        *kept, note = result.content
        assert isinstance(note, types.TextContent)
        assert note.text.startswith("[truncated by mcp-center")
        assert sum(len(b.text) for b in kept if isinstance(b, types.TextContent)) <= limit
        assert len(result.model_dump_json()) <= limit + 1024
        assert result.is_error is False


SMALL = ReadLimits(
    read_cap_bytes=1024 * 1024, max_message_bytes=256 * 1024, max_string_bytes=64 * 1024, max_tokens=5000
)
"""A small read cap standing in for the real one (`clip.read_limits`), so the tests move little data."""


def small_limits(max_result_bytes: int) -> ReadLimits:
    """`clip.read_limits` returning `SMALL` whatever the server's `max_result_bytes`."""
    del max_result_bytes
    return SMALL


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_an_answer_over_the_read_cap_comes_back_cut_and_marked_and_the_session_goes_on(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 2: strings are cut while they stream, and the rest of the message is discarded."""
    monkeypatch.setattr(transport_factory, "read_limits", small_limits)

    async def oversized(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        content = [{"type": "text", "text": "x" * (2 * 1024 * 1024)}]
        content += [{"type": "text", "text": f"block {n}"} for n in range(20_000)]
        return await fake.reply(message, {"content": content})

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": oversized})
    fake.response_mode = "sse" if mode == "sse" else "json"
    async with serve_fake(fake) as url, _managed(url) as manager:
        connection = await manager.connect(SERVER)
        with anyio.fail_after(10):
            result = await manager.call_tool(SERVER, "echo", {"text": "x"})
        clipped = (result.meta or {})["mcp-center/clipped"]
        assert clipped["strings_cut"] == 1 and clipped["message_cut"] is True
        assert clipped["bytes_not_read"] > 2 * 1024 * 1024
        assert (result.meta or {})[TRUNCATION_META_KEY]["original_bytes"] > 2 * 1024 * 1024
        first = result.content[0]
        assert isinstance(first, types.TextContent)
        assert "more bytes of this string were not read" in first.text or "truncated" in first.text
        del fake.handlers["tools/call"]
        assert await _echo(manager, "next") == "next"
        assert manager.status(SERVER).connection_id == connection.connection_id


async def test_a_body_over_the_read_cap_that_is_not_json_fails_only_that_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_factory, "read_limits", small_limits)

    async def garbage(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return Response("x" * (2 * 1024 * 1024), media_type="application/json")

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": garbage})
    async with serve_fake(fake) as url, _managed(url) as manager:
        connection = await manager.connect(SERVER)
        with anyio.fail_after(5), pytest.raises(CenterError) as caught:
            await manager.call_tool(SERVER, "echo", {"text": "x"})
        assert isinstance(caught.value, ResponseTooLarge)
        assert caught.value.details == {"reason": "protocol", "limit_bytes": SMALL.max_message_bytes}
        del fake.handlers["tools/call"]
        assert await _echo(manager, "next") == "next"
        assert manager.status(SERVER).connection_id == connection.connection_id


# ----- handshake failures (R-3.1) -------------------------------------------------------------------


async def test_a_server_that_never_answers_initialize_times_out_after_the_startup_timeout() -> None:
    async def never(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        await fake.shutdown.wait()
        return Response(status_code=503)

    fake = FakeStreamableServer(handlers={"initialize": never})
    async with serve_fake(fake) as url, _managed(url, startup_timeout_s=1.0) as manager:
        started = anyio.current_time()
        with anyio.fail_after(5), pytest.raises(ServerTimeout) as caught:
            await manager.connect(SERVER)
        assert 1.0 <= anyio.current_time() - started < 5
        assert caught.value.details["reason"] == "timeout"
        status = manager.status(SERVER)
        assert status.state.value == "error"
        assert status.error is not None and status.error["details"]["reason"] == "timeout"


@pytest.mark.parametrize(
    ("status", "challenge", "reason"),
    [
        (500, None, "http_status"),
        (401, 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"', "auth_required"),
        (403, 'Bearer error="insufficient_scope", scope="files:read files:write"', "step_up_required"),
    ],
)
async def test_an_http_error_on_initialize_is_attributed_with_reason_and_status(
    status: int, challenge: str | None, reason: str
) -> None:
    async def refuse(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return Response("no", status_code=status, headers={"WWW-Authenticate": challenge} if challenge else None)

    fake = FakeStreamableServer(handlers={"initialize": refuse})
    async with serve_fake(fake) as url, _managed(url) as manager:
        with anyio.fail_after(5), pytest.raises(ServerUnreachable) as caught:
            await manager.connect(SERVER)
        assert caught.value.details["reason"] == reason
        assert caught.value.details["status"] == status
        if reason == "step_up_required":
            assert caught.value.details["scopes"] == ["files:read", "files:write"]
        error = manager.status(SERVER).error
        assert error is not None and error["details"] == caught.value.details
        assert len(fake.posts("initialize")) == 1


# ----- legacy SSE ----------------------------------------------------------------------------------------


async def test_a_legacy_sse_stream_closed_during_a_call_fails_it_promptly_and_the_next_call_reconnects() -> None:
    closed_once: list[dict[str, Any]] = []

    async def close_on_first_call(fake: FakeSseServer, message: dict[str, Any]) -> None:
        if message.get("method") == "tools/call" and not closed_once:
            closed_once.append(message)
            fake.end_stream()
            return
        await mcp_replies(fake, message)

    fake = FakeSseServer(on_message=close_on_first_call)
    async with serve_loopback(fake.app) as base, ConnectionManager() as manager:
        await manager.configure(SERVER, _spec(f"{base}/sse", transport=TransportKind.SSE))
        first = await manager.connect(SERVER)
        started = anyio.current_time()
        with anyio.fail_after(5), pytest.raises(ConnectionLost) as caught:
            await manager.call_tool(SERVER, "echo", {"text": "lost"})
        assert anyio.current_time() - started < 5
        assert caught.value.details["reason"] == "closed"
        with anyio.fail_after(5):
            status = await manager.wait_for_status(SERVER, lambda s: s.state.value == "error")
        assert status.connection_id == first.connection_id
        assert status.error is not None and status.error["details"]["reason"] == "closed"
        assert await _echo(manager, "back") == "back"
        assert manager.handshakes == 2
        assert len([r for r in fake.requests if r.method == "GET"]) == 2
