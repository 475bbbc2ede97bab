"""Issue 14 on the gateway's lean path (`ConnectionManager.forward`, R-8.3): what a hostile server gets
from the SDK session it also gets from the lean forwarder and its own HTTP/1.1 client.

The lean path was built beside issue 14 (`runtime/forward.py`, `runtime/http1.py`); these tests call
`forward` directly against a plain-HTTP loopback server, so the requests go over `Http1Client`, not
through the `httpx2` transport whose read cap, resumption bound and checks the SDK path relies on.
Items 2 (read cap), 3 (outputSchema), 4 (progress), 8 (resumption) and 16 (capabilities).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from itertools import pairwise
from typing import Any

import anyio
import mcp_types as types
import pytest
from starlette.responses import Response, StreamingResponse

from mcp_center.errors import CapabilityNotOffered, ConnectionLost, ServerRequestFailed, ServerTimeout
from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager, eras
from mcp_center.runtime import manager as manager_module
from mcp_center.transports import ConnectionSpec, streamable
from mcp_center.transports import factory as transport_factory
from mcp_center.transports.backoff import Backoff
from mcp_center.transports.clip import ReadLimits
from tests.support.fakes.streamable_http import (
    ECHO_TOOL,
    FakeStreamableServer,
    json_response,
    rpc_error,
    rpc_result,
    serve_fake,
    sse_event,
)

pytestmark = pytest.mark.anyio

SERVER = "lean"
SMALL = ReadLimits(
    read_cap_bytes=1024 * 1024, max_message_bytes=256 * 1024, max_string_bytes=64 * 1024, max_tokens=5000
)
"""A small read cap standing in for the real one (`clip.read_limits`), so the tests move little data."""


def small_limits(max_result_bytes: int) -> ReadLimits:
    """`clip.read_limits` returning `SMALL` whatever the server's `max_result_bytes`."""
    del max_result_bytes
    return SMALL


TYPED = {
    "name": "typed",
    "inputSchema": {"type": "object"},
    "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
}


@asynccontextmanager
async def _managed(url: str, *, call_timeout_s: float = 5.0) -> AsyncGenerator[ConnectionManager]:
    spec = ConnectionSpec(
        server_id=SERVER,
        transport=TransportKind.STREAMABLE_HTTP,
        digest="digest-1",
        url=url,
        startup_timeout_s=5.0,
        call_timeout_s=call_timeout_s,
    )
    async with ConnectionManager() as manager:
        await manager.configure(SERVER, spec)
        await manager.connect(SERVER)
        yield manager


async def _forward(manager: ConnectionManager, name: str = "echo", **kwargs: Any) -> dict[str, Any]:
    with anyio.fail_after(20):
        return await manager.forward(SERVER, "tools/call", {"name": name, "arguments": {"text": "x"}}, **kwargs)


def _uses_http1(manager: ConnectionManager) -> bool:
    conn = manager.current(SERVER)
    return conn is not None and conn.raw is not None and conn.raw._lite is not None  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_a_forwarded_answer_over_the_read_cap_is_cut_while_it_streams_and_marked(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 2: the lean path's own HTTP/1.1 client reads through the same clipper as `httpx2`."""
    monkeypatch.setattr(transport_factory, "read_limits", small_limits)

    async def oversized(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        content = [{"type": "text", "text": "x" * (2 * 1024 * 1024)}]
        content += [{"type": "text", "text": f"block {n}"} for n in range(20_000)]
        return await fake.reply(message, {"content": content})

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": oversized}, response_mode=mode)  # pyright: ignore[reportArgumentType]
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _forward(manager)
        assert _uses_http1(manager)
        clipped = result["_meta"]["mcp-center/clipped"]
        assert clipped["strings_cut"] == 1 and clipped["message_cut"] is True
        assert clipped["bytes_not_read"] > 2 * 1024 * 1024
        assert result["_meta"]["mcp-center/truncated"]["original_bytes"] > 2 * 1024 * 1024
        assert len(json.dumps(result)) < 1024 * 1024 + 4096
        del fake.handlers["tools/call"]
        assert (await _forward(manager))["content"][0]["text"] == "x"


async def test_a_forwarded_result_that_breaks_its_output_schema_keeps_its_content_and_is_marked() -> None:
    """Item 3: the raw result is checked against the catalog's outputSchema as `call_tool`'s is."""

    async def untyped(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return await fake.reply(message, {"content": [{"type": "text", "text": "kept"}], "structuredContent": {}})

    fake = FakeStreamableServer(get_status=405, tools=[TYPED], handlers={"tools/call": untyped})
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _forward(manager, "typed")
        assert result["isError"] is True
        assert result["content"][0]["text"] == "kept"
        assert "n" in result["_meta"]["mcp-center/output_schema_mismatch"]["problem"]
        notes = [e for e in manager.logbook(SERVER).entries() if e["status"] == "output_invalid"]
        assert notes


def _progress_stream(message: dict[str, Any], count: int, interval_s: float) -> Response:
    token = message["params"]["_meta"]["progressToken"]

    async def body() -> AsyncIterator[str]:
        for n in range(1, count + 1):
            await anyio.sleep(interval_s)
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": n},
            }
            yield sse_event(json.dumps(note))
        yield sse_event(json.dumps(rpc_result(message["id"], {"content": [{"type": "text", "text": "finished"}]})))

    return StreamingResponse(body(), media_type="text/event-stream")


async def test_progress_keeps_a_forwarded_call_alive_past_its_timeout_and_is_published() -> None:
    """Item 4: progress every 0.3 s for 1.8 s against a 1 s call timeout; each one is an event."""

    async def progressing(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return _progress_stream(message, 6, 0.3)

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": progressing})
    async with serve_fake(fake) as url, _managed(url, call_timeout_s=1.0) as manager:
        async with manager.events.subscribe() as events:
            result = await _forward(manager)
            assert result["content"][0]["text"] == "finished"
            seen: list[float] = []
            while len(seen) < 6:
                with anyio.fail_after(5):
                    event = await events.next()
                if event["type"] == "operation.progress":
                    seen.append(event["progress"])
        assert _uses_http1(manager)
    assert seen == [1, 2, 3, 4, 5, 6]


async def test_progress_cannot_keep_a_forwarded_call_alive_beyond_its_maximum_total(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Item 4: endless progress still ends, at PROGRESS_MAX_FACTOR x the call timeout."""
    monkeypatch.setattr(manager_module, "PROGRESS_MAX_FACTOR", 2)

    async def endless(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return _progress_stream(message, 1000, 0.2)

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": endless})
    async with serve_fake(fake) as url, _managed(url, call_timeout_s=1.0) as manager:
        started = anyio.current_time()
        with pytest.raises(ServerTimeout) as caught:
            await _forward(manager)
        elapsed = anyio.current_time() - started
    assert "maximum of 2 s (2 x call_timeout_s)" in caught.value.message
    assert elapsed < 6


async def test_a_forwarded_call_whose_stream_resumes_to_nothing_gives_up_spaced_and_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Item 8: a few resumptions spaced by the backoff (`retry: 20` only a minimum), then MCP_CONNECTION_LOST."""
    monkeypatch.setattr(streamable, "RESUME_BACKOFF", Backoff(floor_s=0.1, cap_s=0.4))

    async def primed_then_closed(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        del fake, message
        return StreamingResponse(iter([sse_event("", event_id="event-1", retry_ms=20)]), media_type="text/event-stream")

    fake = FakeStreamableServer(get_status=405, empty_resumptions=True, handlers={"tools/call": primed_then_closed})
    async with serve_fake(fake) as url, _managed(url, call_timeout_s=60) as manager:
        started = anyio.current_time()
        with pytest.raises(ConnectionLost) as caught:
            await _forward(manager)
        elapsed = anyio.current_time() - started
        resumptions = [get for get in fake.gets if get.headers.get("last-event-id") == "event-1"]
    assert "closed without the result" in caught.value.message
    assert caught.value.details["resumptions"] == streamable.RESUME_ATTEMPTS
    assert len(resumptions) == streamable.RESUME_ATTEMPTS
    assert all(b.at - a.at >= 0.08 for a, b in pairwise(resumptions))
    assert elapsed < 10


async def test_a_forwarded_call_to_a_server_that_offers_no_tools_is_refused_without_asking_it() -> None:
    """Item 16: MCP_CAPABILITY_NOT_OFFERED, and no tools/call reached the server."""
    fake = FakeStreamableServer(get_status=405, capabilities={"prompts": {}}, tools=[ECHO_TOOL])
    async with serve_fake(fake) as url, _managed(url) as manager:
        with pytest.raises(CapabilityNotOffered) as caught:
            await _forward(manager)
        assert caught.value.details == {"server_id": SERVER, "capability": "tools"}
        assert not fake.posts("tools/call")


async def test_the_capabilities_read_once_per_session_follow_a_server_restarted_with_other_ones() -> None:
    """Item 16 with issue 12's per-session reading (`OpenSession.offers`): a server that comes back
    without tools is refused without being asked, and one that comes back with them is called."""
    fake = FakeStreamableServer(get_status=405, tools=[ECHO_TOOL])
    async with serve_fake(fake) as url, _managed(url) as manager:
        await _forward(manager)
        assert len(fake.posts("tools/call")) == 1
        fake.capabilities = {"prompts": {}}
        await manager.disconnect(SERVER)  # as a restart: the next call opens a new session
        with pytest.raises(CapabilityNotOffered):
            await _forward(manager)
        assert len(fake.posts("tools/call")) == 1
        fake.capabilities = {"tools": {}}
        await manager.disconnect(SERVER)
        await _forward(manager)
        assert len(fake.posts("tools/call")) == 2


def _sessionless(message: dict[str, Any]) -> bool:
    return "io.modelcontextprotocol/protocolVersion" in (message["params"].get("_meta") or {})


async def _discover(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
    return await fake.reply(message, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})


async def test_a_server_that_asks_for_input_without_end_is_given_up_after_bounded_rounds() -> None:
    """issue 12 round 3 (`runtime/eras.py`): a tool gone the 2026-07-28 way whose server answers
    `input_required` every time is sent at most `INPUT_ROUNDS` + 1 times, then fails clearly."""

    async def call(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        if not _sessionless(message):
            return await fake.reply(message, {"content": [{"type": "text", "text": "over the session"}]})
        return await fake.reply(message, {"resultType": "input_required", "requestState": "again"})

    fake = FakeStreamableServer(sessionless=True, handlers={"server/discover": _discover, "tools/call": call})
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert (await _forward(manager))["content"][0]["text"] == "over the session"
        with pytest.raises(ServerRequestFailed) as caught:
            await _forward(manager)
    assert "asked for input more than 10 times" in caught.value.message
    sessionless = [seen for seen in fake.posts("tools/call") if _sessionless(seen.body)]
    assert len(sessionless) == 11
    assert all(seen.body["params"].get("requestState") == "again" for seen in sessionless[1:])
    assert all("mcp-session-id" not in seen.headers for seen in sessionless)


async def test_a_2026_call_refused_before_it_ran_is_sent_again_over_the_session() -> None:
    """A server that refuses the sessionless request at its headers (HEADER_MISMATCH: e.g. a tool
    that wants `Mcp-Param-*` headers) never ran the tool, so the call is re-sent over the session;
    the tool stays there."""

    async def call(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        if _sessionless(message):
            return json_response(rpc_error(message["id"], types.HEADER_MISMATCH, "Mcp-Param-Text header missing"))
        return await fake.reply(message, {"content": [{"type": "text", "text": "over the session"}]})

    fake = FakeStreamableServer(sessionless=True, handlers={"server/discover": _discover, "tools/call": call})
    async with serve_fake(fake) as url, _managed(url) as manager:
        results = [(await _forward(manager))["content"][0]["text"] for _ in range(3)]
    assert results == ["over the session"] * 3
    eras = ["2026" if _sessionless(seen.body) else "session" for seen in fake.posts("tools/call")]
    assert eras == ["session", "2026", "session", "session"]


async def test_a_server_silent_on_discover_keeps_every_call_on_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The `server/discover` probe is bounded (`eras.DISCOVER_TIMEOUT_S`, shortened here): a server
    that never answers it costs the first call that bound once, and every call stays on the session."""
    monkeypatch.setattr(eras, "DISCOVER_TIMEOUT_S", 0.5)

    async def silent(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        await fake.shutdown.wait()
        return await fake.reply(message, {})

    fake = FakeStreamableServer(sessionless=True, handlers={"server/discover": silent})
    async with serve_fake(fake) as url, _managed(url) as manager:
        results = [(await _forward(manager))["content"][0]["text"] for _ in range(3)]
    assert results == ["x"] * 3
    assert len(fake.posts("server/discover")) == 1
    assert not [seen for seen in fake.posts("tools/call") if _sessionless(seen.body)]
