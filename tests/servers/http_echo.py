"""A small real MCP server (SDK `MCPServer`) for loopback tests over Streamable HTTP or legacy SSE.

Tools: `echo(text)`, `add(a, b)`, `sleep(seconds)` (for timeouts and cancellation), and
`whoami()` which returns the request headers it saw (minus none: tests use it to check what the
host sent).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request


def make_echo_server(name: str = "echo-http", *, sleep_started: anyio.Event | None = None) -> MCPServer:
    """Build the server with its tools; `sleep_started` is set when a `sleep` call begins (in-process tests)."""
    server = MCPServer(name, version="1.2.3")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, then answer (for timeout and cancellation tests)."""
        if sleep_started is not None:
            sleep_started.set()
        await anyio.sleep(seconds)
        return "slept"

    @server.tool()
    def whoami(ctx: Context) -> dict[str, str]:
        """The HTTP headers of this request (lower-cased names)."""
        request = ctx.request_context.request
        if not isinstance(request, Request):
            return {}
        return {k.lower(): v for k, v in request.headers.items()}

    return server


def streamable_app(server: MCPServer | None = None, *, json_response: bool = False) -> Starlette:
    """The Streamable HTTP ASGI app at `/mcp` (DNS-rebinding protection for 127.0.0.1 on)."""
    return (server or make_echo_server()).streamable_http_app(json_response=json_response)


def sse_app(server: MCPServer | None = None) -> Starlette:
    """The legacy SSE ASGI app: GET `/sse`, POST `/messages/`."""
    return (server or make_echo_server()).sse_app()
