"""`/mcp`: the gateway over Streamable HTTP, behind gateway tokens (R-8.1, R-7.1).

The SDK's session manager speaks the transport (sessions, SSE, the GET stream, DELETE). In
front of it sits one check: `Authorization: Bearer <gateway token>`. The admin token is not
accepted here — an MCP client's config file should hold a credential that can use tools through
the approval policy and nothing else. The host-wide Host allow-list and body-size limit apply.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from mcp_center.gateway.server import Gateway
from mcp_center.service import GatewayTokens

__all__ = ["GATEWAY_PATH", "GatewayEndpoint"]

GATEWAY_PATH = "/mcp"
SESSION_IDLE_TIMEOUT_S = 3600.0
"""A downstream session unused this long is closed (the client re-initializes transparently)."""


class GatewayEndpoint:
    """ASGI app for `/mcp`. Enter `running()` (in the app's lifespan) before serving requests.

    Args:
        gateway: The gateway MCP server.
        tokens: Verifies presented gateway tokens.
    """

    def __init__(self, gateway: Gateway, tokens: GatewayTokens) -> None:
        self.gateway = gateway
        self._tokens = tokens
        self._sessions = StreamableHTTPSessionManager(
            app=gateway.server,
            json_response=False,
            stateless=False,
            security_settings=None,  # the app's HostGuard checks Host and Origin for every path
            session_idle_timeout=SESSION_IDLE_TIMEOUT_S,
        )

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the session manager and the gateway's forwarding tasks."""
        async with self._sessions.run(), self.gateway.running():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        header = ""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value.decode("latin-1")
                break
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not self._tokens.verify(presented.strip()):
            response = JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32001,
                        "message": "GATEWAY_AUTH_REQUIRED: send 'Authorization: Bearer <gateway token>' "
                        "(create one with 'mcp-center gateway token create NAME')",
                    },
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="mcp-center gateway"'},
            )
            await response(scope, receive, send)
            return
        await self._sessions.handle_request(scope, receive, send)
