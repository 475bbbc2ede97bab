"""A scriptable Streamable HTTP MCP server for fault-injection tests (R-3.10).

`FakeStreamableServer` speaks just enough of MCP 2025-11-25 over Streamable HTTP to be scripted
into misbehaving, and records every request it sees:

- `POST /mcp` `initialize` answers with a result and a fresh `Mcp-Session-Id`; notifications are
  acknowledged with `notification_status` (202, 200 or 204); requests are answered by
  `handlers[method]` (defaults: `tools/list` from `tools`, `tools/call` echoing `text`, `ping`),
  as JSON or as an SSE stream (`response_mode`). A request carrying an unknown session id gets
  404, one without a session id 400 — as a restarted server would answer.
- `GET /mcp` answers `get_status`; with 200 it opens the standalone SSE stream that `push()`
  writes to. A GET carrying a `Last-Event-ID` that a handler registered with `resume_with()` is
  answered with that stream instead (resumption of a POST stream).
- `DELETE /mcp` answers `delete_status` and forgets the session.

`restart()` forgets every session and closes every open stream, like a server process restart.
Serve it with `serve_fake()` (loopback, stopped on exit; handlers waiting on `shutdown` return).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.support.loopback import serve_loopback
from tests.support.wire import is_object, object_or_empty

__all__ = [
    "ECHO_TOOL",
    "FakeStreamableServer",
    "Handler",
    "SeenRequest",
    "json_response",
    "rpc_error",
    "rpc_result",
    "serve_fake",
    "sse_event",
    "sse_response",
]

Handler = Callable[["FakeStreamableServer", dict[str, Any]], Awaitable[Response]]
"""Answers one JSON-RPC request (the parsed POST body) with the whole HTTP response."""

ECHO_TOOL: dict[str, Any] = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


@dataclass(frozen=True)
class SeenRequest:
    """One HTTP request as the fake saw it; header names are lowercase, `body` is the POSTed JSON.

    `at` is `anyio.current_time()` when the request arrived (seconds, monotonic).
    """

    method: str
    headers: dict[str, str]
    body: Any = None
    at: float = 0.0

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC method of a POST, else None."""
        return self.body.get("method") if is_object(self.body) else None

    @property
    def session_id(self) -> str | None:
        return self.headers.get("mcp-session-id")


def rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    """A JSON-RPC result message."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error message."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def sse_event(data: str, *, event_id: str | None = None, retry_ms: int | None = None) -> str:
    """One SSE `message` event as wire text (single-line `data`; empty data is a priming event)."""
    lines: list[str] = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry_ms is not None:
        lines.append(f"retry: {retry_ms}")
    lines.append(f"data: {data}" if data else "data:")
    return "\n".join(lines) + "\n\n"


def json_response(message: dict[str, Any], *, headers: dict[str, str] | None = None) -> Response:
    """An `application/json` answer carrying one JSON-RPC message."""
    return Response(json.dumps(message), media_type="application/json", headers=headers)


def sse_response(chunks: Iterable[str], *, headers: dict[str, str] | None = None) -> Response:
    """A `text/event-stream` answer that writes `chunks` and then ends (closes the stream)."""
    items = list(chunks)

    async def body() -> AsyncIterator[str]:
        for chunk in items:
            yield chunk

    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def _initialize_result(message: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": message["params"]["protocolVersion"],
        "capabilities": capabilities,
        "serverInfo": {"name": "fake-http", "version": "0"},
    }


@dataclass(eq=False)
class FakeStreamableServer:
    """A scriptable Streamable HTTP server at `/mcp` (see the module docstring).

    Args:
        tools: Raw tool objects for the default `tools/list` (malformed ones are allowed).
        tools_result: Replaces the whole default `tools/list` result when not None (e.g. a page
            whose `tools` is not a list).
        response_mode: How default handlers answer requests: "json" or "sse".
        notification_status: Status of the answer to every notification POST.
        get_status: Status of a standalone GET; 200 opens the push stream.
        delete_status: Status of a DELETE.
        handlers: Per-method overrides (`initialize` included).
        sessions_expire_at_once: Answer 404 to every request that carries a session id (a
            server that loses each session right after creating it).
        not_found_error: `(code, message)` of the JSON-RPC error body sent with a 404 for an
            unknown session, as SDK servers do (Python: -32600, TypeScript: -32001); None sends
            a bare 404.
        capabilities: What `initialize` declares (default: tools with listChanged).
        get_body: When set, a standalone GET answers an SSE stream of this text that then ends at once
            (a server that closes its GET stream right away).
        empty_resumptions: A GET carrying a `Last-Event-ID` that no handler registered is answered
            with an event stream that ends at once, without events.
        sessionless: A POST whose `MCP-Protocol-Version` is 2026-07-28 needs no session (a server
            that speaks that era; its handlers tell the eras apart by the `_meta` they get).
        on_reply: Awaited with the client's answer to a request of the server (a POSTed JSON-RPC
            response) before that POST is acknowledged: a test orders what the server writes
            elsewhere before the acknowledgement.

    Attributes:
        requests: Every request received, in order.
        shutdown: Set when `serve_fake()` stops the server; handlers that hang wait on it.
    """

    tools: list[Any] = field(default_factory=lambda: [ECHO_TOOL])
    tools_result: Any = None
    response_mode: Literal["json", "sse"] = "json"
    notification_status: int = 202
    get_status: int = 200
    delete_status: int = 200
    handlers: dict[str, Handler] = field(default_factory=dict[str, Handler])
    sessions_expire_at_once: bool = False
    not_found_error: tuple[int, str] | None = None
    capabilities: dict[str, Any] = field(default_factory=lambda: {"tools": {"listChanged": True}})
    get_body: str | None = None
    empty_resumptions: bool = False
    sessionless: bool = False
    on_reply: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    requests: list[SeenRequest] = field(default_factory=list[SeenRequest])
    shutdown: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        self._sessions: set[str] = set()
        self._ids = itertools.count(1)
        self._streams: list[MemoryObjectSendStream[str]] = []
        self._resumptions: dict[str, list[str]] = {}
        self._changed = anyio.Event()
        self.app = Starlette(routes=[Route("/mcp", self._handle, methods=["GET", "POST", "DELETE"])])

    # ----- what the fake saw --------------------------------------------------------------------

    def posts(self, rpc_method: str) -> list[SeenRequest]:
        """The POSTs of one JSON-RPC method, in order."""
        return [r for r in self.requests if r.method == "POST" and r.rpc_method == rpc_method]

    @property
    def gets(self) -> list[SeenRequest]:
        return [r for r in self.requests if r.method == "GET"]

    @property
    def open_streams(self) -> int:
        """Standalone GET streams currently open."""
        return len(self._streams)

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` holds; re-checked after every request and stream change (bound it)."""
        while not predicate():
            await self._changed.wait()

    def _note(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    # ----- scripting ----------------------------------------------------------------------------

    def restart(self) -> None:
        """Forget every session and end every open stream (a server process restart)."""
        self._sessions.clear()
        self._resumptions.clear()
        for stream in self._streams:
            stream.close()
        self._streams.clear()
        self._note()

    async def push(self, message: dict[str, Any]) -> None:
        """Send a JSON-RPC message on every open standalone GET stream."""
        await self.push_raw(sse_event(json.dumps(message)))

    async def push_raw(self, text: str) -> None:
        """Write raw SSE text on every open standalone GET stream."""
        assert self._streams, "no GET stream is open"
        for stream in list(self._streams):
            await stream.send(text)

    def resume_with(self, last_event_id: str, chunks: list[str]) -> None:
        """Answer a GET carrying `Last-Event-ID: last_event_id` with an SSE stream of `chunks`."""
        self._resumptions[last_event_id] = chunks

    async def reply(self, message: dict[str, Any], result: Any) -> Response:
        """The answer to request `message` with `result`, as JSON or SSE per `response_mode`."""
        answer = rpc_result(message["id"], result)
        if self.response_mode == "sse":
            return sse_response([sse_event(json.dumps(answer))])
        return json_response(answer)

    # ----- HTTP -------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        body: Any = None
        if request.method == "POST":
            raw = await request.body()
            body = json.loads(raw) if raw else None
        headers = {k.lower(): v for k, v in request.headers.items()}
        seen = SeenRequest(request.method, headers, body, anyio.current_time())
        self.requests.append(seen)
        self._note()
        if request.method == "POST":
            return await self._post(seen)
        if request.method == "GET":
            return self._get(seen)
        return self._delete(seen)

    def _session_problem(self, seen: SeenRequest) -> Response | None:
        if seen.session_id is None:
            return Response("missing session id", status_code=400)
        if seen.session_id not in self._sessions or self.sessions_expire_at_once:
            if self.not_found_error is not None:
                code, text = self.not_found_error
                return Response(json.dumps(rpc_error(None, code, text)), 404, media_type="application/json")
            return Response("session not found", status_code=404)
        return None

    async def _post(self, seen: SeenRequest) -> Response:
        message: dict[str, Any] = seen.body
        method = message.get("method")
        if method == "initialize":
            handler = self.handlers.get("initialize", FakeStreamableServer._initialize)
            return await handler(self, message)
        modern = self.sessionless and seen.headers.get("mcp-protocol-version") == "2026-07-28"
        problem = None if modern else self._session_problem(seen)
        if problem is not None:
            return problem
        if "id" not in message or method is None:
            if method is None and "id" in message and self.on_reply is not None:
                await self.on_reply(message)
            return Response(status_code=self.notification_status)
        handler = self.handlers.get(method)
        if handler is not None:
            return await handler(self, message)
        if method == "tools/list":
            return await self.reply(
                message, self.tools_result if self.tools_result is not None else {"tools": self.tools}
            )
        if method == "tools/call":
            arguments = object_or_empty(message["params"].get("arguments"))
            return await self.reply(message, {"content": [{"type": "text", "text": str(arguments.get("text"))}]})
        if method == "ping":
            return await self.reply(message, {})
        return json_response(rpc_error(message["id"], -32601, f"no method {method}"))

    async def accept_initialize(self, message: dict[str, Any]) -> Response:
        """The default answer to `initialize`: a result and a fresh session (for handlers that wrap it)."""
        return await self._initialize(message)

    async def _initialize(self, message: dict[str, Any]) -> Response:
        session_id = f"session-{next(self._ids)}"
        self._sessions.add(session_id)
        answer = rpc_result(message["id"], _initialize_result(message, self.capabilities))
        headers = {"mcp-session-id": session_id}
        if self.response_mode == "sse":
            return sse_response([sse_event(json.dumps(answer))], headers=headers)
        return json_response(answer, headers=headers)

    def _get(self, seen: SeenRequest) -> Response:
        modern = self.sessionless and seen.headers.get("mcp-protocol-version") == "2026-07-28"
        problem = None if modern else self._session_problem(seen)
        if problem is not None:
            return problem
        last_event_id = seen.headers.get("last-event-id")
        if last_event_id is not None and last_event_id in self._resumptions:
            return sse_response(self._resumptions.pop(last_event_id))
        if last_event_id is not None and self.empty_resumptions:
            return sse_response([])
        if self.get_status != 200:
            return Response(status_code=self.get_status)
        if self.get_body is not None:
            return sse_response([self.get_body])
        send, receive = anyio.create_memory_object_stream[str](1000)
        self._streams.append(send)
        self._note()

        async def body() -> AsyncIterator[str]:
            try:
                async with receive:
                    async for chunk in receive:
                        yield chunk
            finally:
                send.close()
                if send in self._streams:
                    self._streams.remove(send)
                self._note()

        return StreamingResponse(body(), media_type="text/event-stream")

    def _delete(self, seen: SeenRequest) -> Response:
        if seen.session_id is not None:
            self._sessions.discard(seen.session_id)
        return Response(status_code=self.delete_status)


@asynccontextmanager
async def serve_fake(fake: FakeStreamableServer) -> AsyncGenerator[str]:
    """Serve `fake` on loopback and yield its MCP endpoint URL; on exit release hanging handlers."""
    try:
        async with serve_loopback(fake.app) as base:
            try:
                yield f"{base}/mcp"
            finally:
                fake.shutdown.set()
                fake.restart()
    finally:
        fake.shutdown.set()
