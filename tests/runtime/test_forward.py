"""The runtime's lean forwarding on a Streamable HTTP session (`ConnectionManager.forward`, R-8.3),
against a scripted server: what the SDK session did for these requests, it still does (R-3.8,
R-3.10, R-3.11, R-1.5)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from mcp_center.errors import CallCancelled, ServerRequestFailed, ServerTimeout
from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.transports import ConnectionSpec
from tests.support.fakes.streamable_http import (
    FakeStreamableServer,
    json_response,
    rpc_error,
    rpc_result,
    serve_fake,
    sse_event,
    sse_response,
)
from tests.support.wire import is_object

pytestmark = pytest.mark.anyio

SERVER = "fake"


@asynccontextmanager
async def _managed(url: str) -> AsyncGenerator[ConnectionManager]:
    spec = ConnectionSpec(
        server_id=SERVER,
        transport=TransportKind.STREAMABLE_HTTP,
        digest="digest-1",
        url=url,
        startup_timeout_s=5.0,
        call_timeout_s=5.0,
    )
    async with ConnectionManager() as manager:
        await manager.configure(SERVER, spec)
        yield manager


async def _call(manager: ConnectionManager, text: str, **kwargs: Any) -> dict[str, Any]:
    with anyio.fail_after(10):
        return await manager.forward(SERVER, "tools/call", {"name": "echo", "arguments": {"text": text}}, **kwargs)


async def test_a_call_is_one_post_on_the_session_and_its_result_comes_back_as_sent() -> None:
    fake = FakeStreamableServer(get_status=405, response_mode="sse")
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _call(manager, "hello")
        [call] = fake.posts("tools/call")
    assert result["content"][0]["text"] == "hello"
    assert call.session_id is not None
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert str(call.body["id"]).startswith("mcpc-")  # the lean forwarder's ids, not the SDK session's
    entries = [e for e in manager.logbook(SERVER).entries() if e["method"] == "tools/call"]
    assert entries[-1]["status"] == "ok" and entries[-1]["response_bytes"]


async def test_progress_for_the_call_reaches_the_caller_and_the_server_error_is_raised_as_sent() -> None:
    async def progress_then_fail(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        token = message["params"]["_meta"]["progressToken"]
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
        error = {
            **rpc_error(message["id"], -32042, "planted"),
            "error": {"code": -32042, "message": "planted", "data": {"a": 1}},
        }
        return sse_response([sse_event(json.dumps(note)), sse_event(json.dumps(error))])

    seen: list[float] = []

    async def progress(value: float, total: float | None, text: str | None) -> None:
        seen.append(value)

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": progress_then_fail})
    async with serve_fake(fake) as url, _managed(url) as manager:
        with pytest.raises(ServerRequestFailed) as caught:
            await _call(manager, "x", progress=progress)
    assert seen == [1.0]
    assert caught.value.rpc_error == {"code": -32042, "message": "planted", "data": {"a": 1}}


async def test_the_request_logged_after_its_write_is_there_when_the_answer_ends_it() -> None:
    """Our request's log record is made once it is written (off the critical path, issue 12): the
    answer, here a JSON error, still finds it and ends it (duration, sizes, the error), R-3.11."""

    async def fail(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        return json_response(rpc_error(message["id"], -32042, "planted"))

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": fail})
    async with serve_fake(fake) as url, _managed(url) as manager:
        with pytest.raises(ServerRequestFailed):
            await _call(manager, "x")
        entries = [e for e in manager.logbook(SERVER).entries() if e["method"] == "tools/call"]
    [entry] = [e for e in entries if e["direction"] == "client→server"]
    assert entry["status"] == "error" and entry["error"]["code"] == -32042
    assert entry["request_bytes"] and entry["response_bytes"] and entry["duration_ms"] is not None


async def test_a_stream_that_ends_early_is_resumed_with_last_event_id() -> None:
    async def prime_then_close(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        answer = rpc_result(message["id"], {"content": [{"type": "text", "text": "resumed"}]})
        fake.resume_with("event-1", [sse_event(json.dumps(answer), event_id="event-2")])
        return sse_response([sse_event("", event_id="event-1", retry_ms=50)])

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": prime_then_close})
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _call(manager, "x")
        [resume] = [get for get in fake.gets if "last-event-id" in get.headers]
    assert result["content"][0]["text"] == "resumed"
    assert resume.headers["last-event-id"] == "event-1"


async def test_an_expired_session_is_re_initialized_once_and_the_call_re_sent_once() -> None:
    fake = FakeStreamableServer(get_status=405)
    async with serve_fake(fake) as url, _managed(url) as manager:
        assert (await _call(manager, "before"))["content"][0]["text"] == "before"
        fake.restart()
        assert (await _call(manager, "after"))["content"][0]["text"] == "after"
    assert len(fake.posts("initialize")) == 2


async def test_a_cancelled_call_sends_notifications_cancelled_for_its_request() -> None:
    started = anyio.Event()

    async def hang(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        started.set()
        await fake.shutdown.wait()
        return json_response(rpc_result(message["id"], {"content": []}))

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": hang})
    async with serve_fake(fake) as url, _managed(url) as manager:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                with pytest.raises(CallCancelled):
                    await _call(manager, "x", operation_id="op-1")

            tg.start_soon(call)
            with anyio.fail_after(10):
                await started.wait()
            assert manager.cancel("op-1")
        with anyio.fail_after(10):
            await fake.wait_until(lambda: bool(fake.posts("notifications/cancelled")))
        [call_seen] = fake.posts("tools/call")
        [cancelled] = fake.posts("notifications/cancelled")
    assert cancelled.body["params"]["requestId"] == call_seen.body["id"]


async def _hanging_server() -> FakeStreamableServer:
    async def hang(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        await fake.shutdown.wait()
        return json_response(rpc_result(message["id"], {"content": []}))

    return FakeStreamableServer(get_status=405, handlers={"tools/call": hang})


@pytest.mark.parametrize("outer_admission", [False, True], ids=["riding", "own-scope"])
async def test_a_call_that_outlives_its_deadline_is_a_timeout_not_a_cancel(outer_admission: bool) -> None:
    """The deadline rides the call's admission scope (issue 12) or, when an outer block admitted the
    operation, has a scope of its own: either way expiry is `ServerTimeout` naming the method and
    its seconds (R-3.8), never `CallCancelled`; the server is told, and the next call on the same
    connection and the same operation id is not cancelled by what is left of the first."""
    fake = await _hanging_server()
    async with serve_fake(fake) as url, _managed(url) as manager:
        with pytest.raises(ServerTimeout) as caught:
            if outer_admission:
                with manager.operations.admit("op-t"):
                    await _call(manager, "x", operation_id="op-t", timeout_s=0.5)
            else:
                await _call(manager, "x", operation_id="op-t", timeout_s=0.5)
        with anyio.fail_after(10):
            await fake.wait_until(lambda: bool(fake.posts("notifications/cancelled")))
        fake.handlers.pop("tools/call")
        again = await _call(manager, "again", operation_id="op-t")
    assert caught.value.code == "MCP_SERVER_TIMEOUT"
    assert caught.value.message == "tools/call timed out after 0.5 s"
    assert again["content"][0]["text"] == "again"
    assert not manager.operations.is_running("op-t")


async def test_a_cancel_by_id_of_a_call_near_its_deadline_stays_a_cancel() -> None:
    """A cancel by operation id is `CallCancelled` even though the deadline shares its scope (issue 12)."""
    fake = await _hanging_server()
    async with serve_fake(fake) as url, _managed(url) as manager, anyio.create_task_group() as tg:

        async def call() -> None:
            with pytest.raises(CallCancelled):
                await _call(manager, "x", operation_id="op-c", timeout_s=30)

        tg.start_soon(call)
        with anyio.fail_after(10):
            await fake.wait_until(lambda: bool(fake.posts("tools/call")))
        assert manager.cancel("op-c")


async def test_a_server_request_on_the_call_stream_is_answered_and_posted_back() -> None:
    async def ping_first(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        answer = rpc_result(message["id"], {"content": [{"type": "text", "text": "after ping"}]})
        return sse_response([sse_event(json.dumps(ping)), sse_event(json.dumps(answer))])

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": ping_first})
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _call(manager, "x")
        with anyio.fail_after(10):
            await fake.wait_until(lambda: any(is_object(r.body) and r.body.get("id") == "srv-1" for r in fake.requests))
        [reply] = [r for r in fake.requests if is_object(r.body) and r.body.get("id") == "srv-1"]
    assert result["content"][0]["text"] == "after ping"
    assert reply.body == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}


async def test_a_calls_answer_that_ends_its_stream_while_a_server_request_is_answered_is_not_lost() -> None:
    """elic40 (R-3.10, R-6.1, R-8.3): the server asks something on the call's stream; while the
    forwarder answers it and POSTs the answer back, the server sends the call's result and ends
    the stream, and only then acknowledges the POSTed answer (what a fast answer to an elicitation
    card, a sampling or a ping does to a server in another process). The result must come back:
    it used to be dropped with the stream's end (MCP_CONNECTION_LOST, "SSE stream ended without a
    response"). Ordered by events on the server, no sleeps: the stream has ended before the
    acknowledgement is written, so both are in the client's sockets when it reads the latter."""
    replied = anyio.Event()
    ended = anyio.Event()

    async def ask_then_answer(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        answer = rpc_result(message["id"], {"content": [{"type": "text", "text": "answered while asked"}]})

        async def body() -> AsyncIterator[str]:
            yield sse_event(json.dumps(ask))
            with anyio.fail_after(10):
                await replied.wait()
            yield sse_event(json.dumps(answer))

        return StreamingResponse(body(), media_type="text/event-stream", background=BackgroundTask(ended.set))

    async def acknowledge_after_the_end(message: dict[str, Any]) -> None:
        assert message["id"] == "srv-1"
        replied.set()
        with anyio.fail_after(10):
            await ended.wait()  # the answer and the stream's end are written before the 202

    fake = FakeStreamableServer(
        get_status=405, handlers={"tools/call": ask_then_answer}, on_reply=acknowledge_after_the_end
    )
    async with serve_fake(fake) as url, _managed(url) as manager:
        result = await _call(manager, "x")
    assert result["content"][0]["text"] == "answered while asked"
    assert ended.is_set()
