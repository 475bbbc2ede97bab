"""A forwarded `tools/call` whose answer is lost with its reused keep-alive connection is never sent
to the server again (R-8.3): the server may have run it, and a tool is not known to be idempotent
(docs/architecture.md, "a call is never silently re-run"). A break of issue 12 found the lean
HTTP/1.1 client re-sending it on a new connection, so the tool ran twice while the agent saw one
result.

Between the host and `tests/servers/era_upstream.py` (which records every POST it gets) sits a
relay that passes each request on whole, and, for two chosen `tools/call`s, drops the host's
connection once the server has answered it, before any byte of the answer reaches the host: the
first on a reused keep-alive connection, the next on the fresh connection that follows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.servers.era_upstream import Post, make_era_server, recorded
from tests.support.composed import composed_host
from tests.support.gateway import gateway_client
from tests.support.loopback import serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-not-resent-admin-0123456789"
DROPPED = (3, 4)
"""The relay drops the answers of these tools/calls (1-based), after the server answered them: the
3rd goes on a reused connection, the 4th on a new one (the 3rd's was dropped)."""


async def _message(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 message (its head and its body: of declared length, chunked, or none), as bytes."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    if b"transfer-encoding: chunked" in lines:
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            body += size_line + await reader.readexactly(size + 2)
            if size == 0:
                return head + body
    length = 0
    for line in lines:
        if line.startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


@dataclass
class Relay:
    """Counts the tools/calls it passed on; drops the host's connection after the server answered one in `DROPPED`."""

    upstream_port: int
    tool_calls: int = 0

    async def handle(self, host_side: asyncio.StreamReader, host_writer: asyncio.StreamWriter) -> None:
        server_side, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            while True:
                request = await _message(host_side)
                if request.startswith(b"GET"):  # no server-sent stream for this test
                    host_writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                    continue
                server_writer.write(request)
                answer = await _message(server_side)
                if b'"tools/call"' in request:
                    self.tool_calls += 1
                    if self.tool_calls in DROPPED:
                        host_writer.transport.abort()  # the tool ran; its answer is lost with the connection
                        return
                host_writer.write(answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            server_writer.close()
            host_writer.close()


@dataclass
class Setup:
    base: str
    token: str
    posts: list[Post]
    relay: Relay


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncGenerator[Setup]:
    posts: list[Post] = []
    async with (
        serve_loopback(recorded(make_era_server().streamable_http_app(), posts)) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        relay = Relay(int(upstream.rsplit(":", 1)[1].split("/")[0]))
        server = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
        try:
            url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
            body = {"id": "eras", "name": "Eras", "transport": "streamable_http", "url": url}
            ready = await add_ready(composed.admin, {**body, "tool_policies": {"add": "allow"}})
            assert ready["status"]["state"] == "ready"
            yield Setup(composed.base, composed.token, posts, relay)
        finally:
            server.close()


async def test_a_call_whose_answer_was_lost_with_its_connection_is_not_sent_again(setup: Setup) -> None:
    """R-8.3: six calls, the third's and fourth's answers lost after the server ran them: the server
    gets six tools/calls (not eight), the third and fourth end in an error result (MCP_CONNECTION_LOST:
    sent and may have run, on a reused and on a fresh connection alike; not MCP_SERVER_UNREACHABLE,
    which says a request never reached the server, R-3.1), the others answer."""
    results: list[types.CallToolResult] = []
    async with gateway_client(setup.base, setup.token) as client:
        for i in range(6):
            with anyio.fail_after(20):
                results.append(await client.call_tool("mcp__eras__add", {"a": 100, "b": i}))
    assert setup.relay.tool_calls == 6
    assert len([post for post in setup.posts if post.method == "tools/call"]) == 6
    for i, result in enumerate(results):
        shown = " ".join(block.text for block in result.content if isinstance(block, types.TextContent))
        if i + 1 in DROPPED:
            assert result.is_error, shown
            assert shown.startswith("MCP_CONNECTION_LOST: "), shown
            assert "may have run" in shown, shown
        else:
            assert not result.is_error and shown == str(100 + i), shown
