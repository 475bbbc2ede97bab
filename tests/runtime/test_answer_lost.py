"""A request whose connection ends after the server read it, before any answer, fails
MCP_CONNECTION_LOST ("the request was sent and may have run"), not MCP_SERVER_UNREACHABLE (which says
it never reached the server), on the connections that do not use the lean HTTP/1.1 client too:
the `httpx2` client of an `https://` or OAuth server (sec37, R-3.1, R-8.3; the lean client's own
case is `tests/gateway/test_call_not_resent.py`).

Between the host and a fake server sits a relay that passes requests on whole and, for a
`tools/call`, reads it and closes the connection without passing it on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest

from mcp_center.errors import ConnectionLost
from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.transports import ConnectionSpec
from tests.servers.sse_fakes import echo_sse_app
from tests.support.fakes.streamable_http import FakeStreamableServer, serve_fake
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio

SERVER = "dropping"


class _Passing(httpx2.Auth):
    """An `httpx2.Auth` that adds nothing: a server with one is not sent over the lean client, as an
    OAuth server is not (`Connection.forwarder`)."""

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        yield request


async def _message(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 message of declared length (or none), as bytes."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


@asynccontextmanager
async def _dropping_relay(url: str) -> AsyncGenerator[str]:
    """`url` through a relay (answers of declared length, or a GET's stream) that drops a `tools/call`'s
    connection once it has read it."""
    upstream, _, path = url.removeprefix("http://").partition("/")
    host, port = upstream.rsplit(":", 1)

    handlers: set[asyncio.Task[object]] = set()

    async def handle(agent_side: asyncio.StreamReader, agent_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        server_side, server_writer = await asyncio.open_connection(host, int(port))
        try:
            while True:
                request = await _message(agent_side)
                if request.startswith(b"GET"):  # a legacy SSE stream: passed on as it comes
                    server_writer.write(request)
                    while chunk := await server_side.read(65536):
                        agent_writer.write(chunk)
                    return
                if b'"tools/call"' in request:
                    agent_writer.transport.abort()  # read, never answered
                    return
                server_writer.write(request)
                agent_writer.write(await _message(server_side))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the connection ended, or the relay is closing (a handler's end is nobody's to await)
        finally:
            server_writer.close()
            agent_writer.close()
            await asyncio.gather(server_writer.wait_closed(), agent_writer.wait_closed(), return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/{path}"
    finally:
        server.close()
        for task in handlers:  # each closes its two connections
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


@asynccontextmanager
async def _connected(
    url: str, transport: TransportKind = TransportKind.STREAMABLE_HTTP, auth: httpx2.Auth | None = None
) -> AsyncGenerator[ConnectionManager]:
    """A manager connected to `url` as `SERVER`."""
    async with ConnectionManager() as manager:
        await manager.configure(
            SERVER,
            ConnectionSpec(server_id=SERVER, transport=transport, digest="d", url=url, auth=auth, call_timeout_s=5.0),
        )
        await manager.connect(SERVER)
        yield manager


async def _dropped(manager: ConnectionManager, how: str) -> ConnectionLost:
    """The error of a `tools/call` of `echo` sent by `how` (`call_tool`: the SDK session; `forward`:
    the forwarder, or the session's dispatcher over legacy SSE)."""
    with anyio.fail_after(20), pytest.raises(ConnectionLost) as caught:
        if how == "call_tool":
            await manager.call_tool(SERVER, "echo", {"text": "x"})
        else:
            await manager.forward(SERVER, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
    return caught.value


async def test_a_call_dropped_after_it_was_read_is_connection_lost_over_the_httpx2_client() -> None:
    fake = FakeStreamableServer(get_status=405)
    async with (
        serve_fake(fake) as url,
        _dropping_relay(url) as relayed,
        _connected(relayed, auth=_Passing()) as manager,
    ):
        lost = await _dropped(manager, "forward")
        conn = manager.current(SERVER)
        assert conn is not None and conn.raw is not None
        assert conn.raw._lite is None  # pyright: ignore[reportPrivateUsage] - the httpx2 client, not the lean one
    assert "may have run" in lost.message, lost.message


@pytest.mark.parametrize("auth", [None, _Passing()], ids=["plain", "auth"])
async def test_a_call_dropped_after_it_was_read_is_connection_lost_over_the_sdk_session(
    auth: httpx2.Auth | None,
) -> None:
    fake = FakeStreamableServer(get_status=405)
    async with serve_fake(fake) as url, _dropping_relay(url) as relayed, _connected(relayed, auth=auth) as manager:
        lost = await _dropped(manager, "call_tool")
    assert "may have run" in lost.message, lost.message


@pytest.mark.parametrize("how", ["call_tool", "forward"])
async def test_a_call_dropped_after_it_was_read_is_connection_lost_over_legacy_sse(how: str) -> None:
    async with (
        serve_loopback(echo_sse_app()) as base,
        _dropping_relay(f"{base}/sse") as relayed,
        _connected(relayed, TransportKind.SSE) as manager,
    ):
        lost = await _dropped(manager, how)
    assert "may have run" in lost.message, lost.message
