"""A scripted, in-process MCP server at the JSON-RPC level, for deterministic runtime tests.

Unlike a real SDK server it lets a test hold `initialize` at a gate, hand out malformed catalog
pages, push notifications at chosen moments and count exactly what it received — without
sockets, processes or sleeps. `ScriptedServer.factory` plugs into
`ConnectionManager(transport_factory=...)`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from mcp_center.models import TransportKind
from mcp_center.transports import ConnectionSpec, TransportProbe
from tests.support.wire import is_object

Handler = Callable[["ScriptedConnection", types.JSONRPCRequest], Awaitable[dict[str, Any] | types.ErrorData]]


def tool(name: str, **extra: Any) -> dict[str, Any]:
    """A valid tool definition."""
    return {"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}, **extra}


def spec(server_id: str = "fake", digest: str = "sha256:one", **overrides: Any) -> ConnectionSpec:
    """A remote-looking spec; the scripted factory ignores the URL."""
    values: dict[str, Any] = {
        "server_id": server_id,
        "transport": TransportKind.STREAMABLE_HTTP,
        "digest": digest,
        "url": "http://fake.invalid/mcp",
        "startup_timeout_s": 5.0,
        "call_timeout_s": 5.0,
    }
    values.update(overrides)
    return ConnectionSpec(**values)


@dataclass
class ScriptedConnection:
    """One client connection to the scripted server."""

    server: ScriptedServer
    number: int
    to_client: MemoryObjectSendStream[SessionMessage | Exception]
    received: list[types.JSONRPCMessage] = field(default_factory=list[types.JSONRPCMessage])

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to this client."""
        await self.to_client.send(
            SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=method, params=params))
        )


class ScriptedServer:
    """The server side. Attributes are the script; counters are what it saw.

    Attributes:
        initialize_gate: When set, `initialize` waits for this event before answering.
        tool_pages: Pages returned by successive `tools/list` calls of a refresh (the cursor is
            the page index); a page may be any JSON (malformed on purpose).
        handlers: Method → coroutine answering a request (overrides the defaults).
    """

    def __init__(self) -> None:
        self.initialize_gate: anyio.Event | None = None
        self.tool_pages: list[Any] = [{"tools": [tool("echo"), tool("add")]}]
        self.handlers: dict[str, Handler] = {}
        self.connections: list[ScriptedConnection] = []
        self.initialize_started = 0
        self.initialize_answered = 0
        self.requests: list[tuple[int, str, Any]] = []
        self.notifications: list[tuple[int, str, Any]] = []
        self._started = anyio.Event()

    def hold_calls(self) -> anyio.Event:
        """Make `tools/call` wait until the returned event is set."""
        release = anyio.Event()

        async def held(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
            await release.wait()
            return {"content": [], "isError": False}

        self.handlers["tools/call"] = held
        return release

    def count(self, method: str) -> int:
        """How many requests of `method` arrived, over all connections."""
        return sum(1 for _, m, _ in self.requests if m == method)

    @property
    def live(self) -> ScriptedConnection:
        """The newest connection."""
        return self.connections[-1]

    async def wait_for_initialize(self, count: int) -> None:
        """Wait until `count` initialize requests have arrived (callers bound the wait)."""
        while self.initialize_started < count:
            started = self._started
            await started.wait()

    @asynccontextmanager
    async def factory(self, _spec: ConnectionSpec, _probe: TransportProbe, **_callbacks: Any) -> AsyncGenerator[Any]:
        """`transport_factory` for `ConnectionManager`: yields a transport to this server."""
        yield _Transport(self)

    async def _serve(
        self,
        conn: ScriptedConnection,
        from_client: MemoryObjectReceiveStream[SessionMessage],
    ) -> None:
        async with anyio.create_task_group() as tg:
            async for message in from_client:
                msg = message.message
                conn.received.append(msg)
                if isinstance(msg, types.JSONRPCRequest):
                    self.requests.append((conn.number, msg.method, msg.params))
                    tg.start_soon(self._answer, conn, msg)
                elif isinstance(msg, types.JSONRPCNotification):
                    self.notifications.append((conn.number, msg.method, msg.params))
            tg.cancel_scope.cancel()

    async def _answer(self, conn: ScriptedConnection, request: types.JSONRPCRequest) -> None:
        handler = self.handlers.get(request.method) or _DEFAULTS.get(request.method)
        if handler is None:
            answer: dict[str, Any] | types.ErrorData = types.ErrorData(code=types.METHOD_NOT_FOUND, message="unknown")
        else:
            answer = await handler(conn, request)
        if isinstance(answer, types.ErrorData):
            reply: types.JSONRPCMessage = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=answer)
        else:
            reply = types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result=answer)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await conn.to_client.send(SessionMessage(reply))


async def _initialize(conn: ScriptedConnection, request: types.JSONRPCRequest) -> dict[str, Any]:
    server = conn.server
    server.initialize_started += 1
    started, server._started = server._started, anyio.Event()  # pyright: ignore[reportPrivateUsage]
    started.set()
    if server.initialize_gate is not None:
        await server.initialize_gate.wait()
    server.initialize_answered += 1
    params = request.params or {}
    return {
        "protocolVersion": params.get("protocolVersion", "2025-11-25"),
        "capabilities": {"tools": {"listChanged": True}, "prompts": {}, "resources": {}},
        "serverInfo": {"name": "scripted", "version": "0.0.1"},
    }


async def _tools_list(conn: ScriptedConnection, request: types.JSONRPCRequest) -> dict[str, Any] | types.ErrorData:
    server = conn.server
    cursor = (request.params or {}).get("cursor")
    index = int(cursor) if cursor else 0
    page = server.tool_pages[index]
    if isinstance(page, types.ErrorData):
        return page
    if is_object(page) and index + 1 < len(server.tool_pages):
        return {**page, "nextCursor": str(index + 1)}
    return page


async def _tools_call(_conn: ScriptedConnection, request: types.JSONRPCRequest) -> dict[str, Any]:
    params = request.params or {}
    text = f"called {params.get('name')} with {params.get('arguments')}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _lists(key: str) -> Handler:
    async def handler(_conn: ScriptedConnection, _request: types.JSONRPCRequest) -> dict[str, Any]:
        return {key: []}

    return handler


_DEFAULTS: dict[str, Handler] = {
    "initialize": _initialize,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "prompts/list": _lists("prompts"),
    "resources/list": _lists("resources"),
    "resources/templates/list": _lists("resourceTemplates"),
}


class _Transport:
    def __init__(self, server: ScriptedServer) -> None:
        self._server = server
        self._tg: anyio.abc.TaskGroup | None = None
        self._streams: list[Any] = []

    async def __aenter__(self) -> Any:
        to_client_send, to_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](100)
        to_server_send, to_server_recv = anyio.create_memory_object_stream[SessionMessage](100)
        self._streams = [to_client_send, to_client_recv, to_server_send, to_server_recv]
        conn = ScriptedConnection(self._server, len(self._server.connections) + 1, to_client_send)
        self._server.connections.append(conn)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._run, conn, to_server_recv, to_client_send)
        return to_client_recv, to_server_send

    async def _run(
        self,
        conn: ScriptedConnection,
        from_client: MemoryObjectReceiveStream[SessionMessage],
        to_client: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async with from_client, to_client:
            await self._server._serve(conn, from_client)  # pyright: ignore[reportPrivateUsage]

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        for stream in self._streams:
            await stream.aclose()
