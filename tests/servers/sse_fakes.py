"""Legacy HTTP+SSE servers for transport tests: a real SDK server and a scriptable fake.

`echo_sse_app()` is the SDK's own legacy SSE app (`MCPServer.sse_app`) with an `echo` tool, wrapped
in `RecordingApp` so a test can assert what reached the server. `FakeSseServer` is a small Starlette
app that speaks just enough of MCP 2024-11-05 "HTTP with SSE" to be scripted into misbehaving:
announcing a foreign endpoint, never announcing one, answering 401/500, sending garbage, or
closing the stream mid-session. Both are served on loopback with `tests/support/loopback.py`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "FakeSseServer",
    "MessageHandler",
    "RecordedRequest",
    "RecordingApp",
    "echo_sse_app",
    "mcp_replies",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as a server saw it; header names are lowercase."""

    method: str
    path: str
    headers: dict[str, str]


class RecordingApp:
    """ASGI middleware that records every HTTP request before passing it on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[RecordedRequest] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            self.requests.append(RecordedRequest(scope["method"], scope["path"], headers))
        await self.app(scope, receive, send)


def echo_sse_app() -> RecordingApp:
    """The SDK's legacy SSE app (`GET /sse`, `POST /messages/`) with an `echo(text)` tool.

    `host="127.0.0.1"` turns on the SDK's DNS-rebinding protection with `127.0.0.1:*` allowed,
    which is what a loopback client sends.
    """
    server = MCPServer("t")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction] - registered by the decorator
        """Return `text` unchanged."""
        return text

    return RecordingApp(server.sse_app(host="127.0.0.1"))


MessageHandler = Callable[["FakeSseServer", dict[str, Any]], Awaitable[None]]
"""Called with each JSON-RPC message POSTed to the fake, before it answers the POST."""


def _initialize_result(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": request["params"]["protocolVersion"],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake-sse", "version": "0"},
    }


_ECHO_TOOL: dict[str, Any] = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


async def mcp_replies(fake: FakeSseServer, message: dict[str, Any]) -> None:
    """The fake's default behaviour: answer initialize, tools/list and tools/call (echo) over SSE."""
    method = message.get("method")
    if "id" not in message or method is None:
        return  # notifications and responses need no answer
    if method == "initialize":
        await fake.reply(message["id"], _initialize_result(message))
    elif method == "tools/list":
        await fake.reply(message["id"], {"tools": [_ECHO_TOOL]})
    elif method == "tools/call":
        text = message["params"]["arguments"]["text"]
        await fake.reply(message["id"], {"content": [{"type": "text", "text": text}]})
    else:
        await fake.send_event(
            "message", json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
        )


@dataclass(eq=False)
class FakeSseServer:
    """A scriptable legacy SSE server: `GET /sse` streams events, `POST /messages` records messages.

    Args:
        endpoint: Makes the announced endpoint from the server's base URL (`http://127.0.0.1:port`);
            None never announces one.
        get_status: Status of the GET; anything but 200 is answered without a stream.
        get_headers: Extra headers on the GET answer (e.g. `WWW-Authenticate`, `Location`).
        content_type: Content type of a 200 GET answer.
        preamble: Raw SSE text sent before the endpoint event.
        post_status: Status of every POST answer, or a function of the posted message.
        on_message: Reacts to each posted message (default: `mcp_replies`).

    Attributes:
        requests: Every request received, in order (`posts` filters the POSTs).
        messages: The JSON bodies of the POSTs.
        stream_opened / stream_closed: Set when the event stream starts / ends (either side).
    """

    endpoint: Callable[[str], str] | None = lambda base: "/messages?session_id=abc"
    get_status: int = 200
    get_headers: dict[str, str] = field(default_factory=dict[str, str])
    content_type: str = "text/event-stream"
    preamble: str = ""
    post_status: int | Callable[[dict[str, Any]], int] = 202
    on_message: MessageHandler = mcp_replies
    requests: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    messages: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    stream_opened: anyio.Event = field(default_factory=anyio.Event)
    stream_closed: anyio.Event = field(default_factory=anyio.Event)
    _events: MemoryObjectSendStream[str] | None = None

    def __post_init__(self) -> None:
        self._app = Starlette(
            routes=[
                Route("/sse", self._handle_get, methods=["GET"]),
                Route("/messages", self._handle_post, methods=["POST"]),
            ]
        )

    @property
    def app(self) -> Starlette:
        """The ASGI app to serve."""
        return self._app

    @property
    def posts(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    async def send_raw(self, text: str) -> None:
        """Write `text` to the open event stream as is (several events, or half of one)."""
        assert self._events is not None, "no event stream is open"
        await self._events.send(text)

    async def send_event(self, event: str, data: str) -> None:
        """Send one SSE event (single-line `data`)."""
        await self.send_raw(f"event: {event}\ndata: {data}\n\n")

    async def reply(self, request_id: int | str, result: dict[str, Any]) -> None:
        """Send a JSON-RPC result for `request_id` as an `event: message`."""
        await self.send_event("message", json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))

    def end_stream(self) -> None:
        """End the event stream cleanly (the response body completes)."""
        if self._events is not None:
            self._events.close()

    def _record(self, request: Request) -> None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(RecordedRequest(request.method, request.url.path, headers))

    async def _handle_get(self, request: Request) -> Response:
        self._record(request)
        if self.get_status != 200:
            return Response(status_code=self.get_status, headers=self.get_headers)
        send, receive = anyio.create_memory_object_stream[str](100)
        self._events = send
        if self.preamble:
            send.send_nowait(self.preamble)
        if self.endpoint is not None:
            send.send_nowait(f"event: endpoint\ndata: {self.endpoint(str(request.base_url).rstrip('/'))}\n\n")
        self.stream_opened.set()

        async def body() -> AsyncIterator[str]:
            try:
                async with receive:
                    async for chunk in receive:
                        yield chunk
            finally:
                send.close()
                self.stream_closed.set()

        return StreamingResponse(body(), media_type=self.content_type, headers=self.get_headers)

    async def _handle_post(self, request: Request) -> Response:
        self._record(request)
        message: dict[str, Any] = json.loads(await request.body())
        self.messages.append(message)
        status = self.post_status(message) if callable(self.post_status) else self.post_status
        if 200 <= status < 300:
            await self.on_message(self, message)
        return Response("Accepted" if status == 202 else "no", status_code=status)
