"""`/mcp`: the gateway over Streamable HTTP, behind gateway tokens (R-8.1, R-7.1).

The SDK's session manager speaks the transport (sessions, SSE, the GET stream, DELETE). In
front of it sits one check: `Authorization: Bearer <gateway token>`. The admin token is not
accepted here — an MCP client's config file should hold a credential that can use tools through
the approval policy and nothing else. The host-wide Host allow-list and body-size limit apply.

A session belongs to the token that opened it: the SDK answers 404 to a request for it with
another token, and when that token is revoked (API, page or CLI — another process) the session
is ended within `REVOCATION_CHECK_S`: its open streams close, and its calls still waiting for an
approval or running are cancelled, so nothing a revoked client asked for is sent afterwards.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from mcp_center.gateway.server import Gateway
from mcp_center.secrets import presented_bearer
from mcp_center.service import GatewayTokens

__all__ = ["GATEWAY_PATH", "GatewayEndpoint"]

GATEWAY_PATH = "/mcp"
SESSION_IDLE_TIMEOUT_S = 3600.0
"""A downstream session unused this long is closed (the client re-initializes transparently)."""
REVOCATION_CHECK_S = 1.0
"""Seconds between checks for revoked tokens whose sessions are still open."""

logger = logging.getLogger(__name__)


def _principal(token_id: str) -> AuthenticatedUser:
    """The `scope["user"]` the SDK binds a session to (its `client_id`): the token's id, never the token."""
    return AuthenticatedUser(AccessToken(token="", client_id=token_id, scopes=[]))


class GatewayEndpoint:
    """ASGI app for `/mcp`. Enter `running()` (in the app's lifespan) before serving requests.

    Args:
        gateway: The gateway MCP server.
        tokens: Verifies presented gateway tokens.
    """

    def __init__(self, gateway: Gateway, tokens: GatewayTokens, *, admin_token: str | None = None) -> None:
        self.gateway = gateway
        self._tokens = tokens
        self._admin_token = admin_token
        """Only to say "the admin token is not accepted here" instead of "not recognised"; never accepted."""
        self._sessions = StreamableHTTPSessionManager(
            app=gateway.server,
            json_response=False,
            stateless=False,
            security_settings=None,  # the app's HostGuard checks Host and Origin for every path
            session_idle_timeout=SESSION_IDLE_TIMEOUT_S,
        )
        self._owners: dict[str, str] = {}
        """Session id → id of the token that opened it."""

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the session manager, the gateway's forwarding tasks and the revocation check."""
        async with self._sessions.run(), self.gateway.running(), anyio.create_task_group() as tg:
            tg.start_soon(self._end_revoked_sessions)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _end_revoked_sessions(self) -> None:
        while True:
            await anyio.sleep(REVOCATION_CHECK_S)
            try:
                revoked = {t for t in set(self._owners.values()) if not self._tokens.is_current(t)}
            except Exception:  # an unreadable token file must not stop the gateway
                logger.exception("gateway.revocation_check_failed")
                continue
            for session_id, token_id in list(self._owners.items()):
                if token_id in revoked:
                    self._owners.pop(session_id, None)
                    logger.info("gateway.session_revoked", extra={"token_id": token_id})
                    await self._terminate(session_id, token_id)

    async def _terminate(self, session_id: str, token_id: str) -> None:
        """End a session as its client's DELETE would (the SDK's public entry point, no private state)."""
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": GATEWAY_PATH,
            "raw_path": GATEWAY_PATH.encode("ascii"),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"mcp-session-id", session_id.encode("latin-1"))],
            "client": None,
            "server": None,
            "user": _principal(token_id),
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_message: Message) -> None:
            return None

        try:
            await self._sessions.handle_request(scope, receive, send)
        except Exception:  # one session that cannot be ended must not stop the others
            logger.exception("gateway.session_end_failed")

    def _refusal(self, presented: str | None) -> str:
        """Why a request with the bearer credential `presented` (None: none) was refused, in words that
        tell a missing token from a wrong one (never echoing it)."""
        how = "create one with 'mcp-center gateway token create NAME' or on the settings page's Gateway page"
        if presented is None:
            return f"GATEWAY_AUTH_REQUIRED: send 'Authorization: Bearer <gateway token>' ({how})"
        if self._admin_token and hmac.compare_digest(presented.encode(), self._admin_token.encode()):
            return f"GATEWAY_AUTH_REQUIRED: the admin token is not accepted by the gateway; use a gateway token ({how})"
        return f"GATEWAY_AUTH_REQUIRED: this gateway token is not recognised (mistyped, or revoked); {how}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), None)
        presented = presented_bearer(header)
        token_id = self._tokens.identify(presented)
        if token_id is None:
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": self._refusal(presented)}},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="mcp-center gateway"'},
            )
            await response(scope, receive, send)
            return
        scope["user"] = _principal(token_id)
        session_id = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"mcp-session-id"), None)
        if session_id is not None:
            await self._sessions.handle_request(scope, receive, send)
            if scope.get("method") == "DELETE" and self._owners.get(session_id) == token_id:
                self._owners.pop(session_id, None)  # ended by its own client (another token gets 404)
            return

        async def send_noting_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        self._owners[value.decode("latin-1")] = token_id
            await send(message)

        await self._sessions.handle_request(scope, receive, send_noting_session)
