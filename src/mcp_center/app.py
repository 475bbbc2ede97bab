"""Composition root: build the ASGI app (REST API, settings page, gateway at `/mcp`) whose lifespan
opens `McpCenter` (R-7.1, R-8.1)."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import replace
from types import FrameType

import uvicorn
from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mcp_center.api import create_api, end_event_streams
from mcp_center.config import Settings
from mcp_center.gateway import GATEWAY_PATH, Gateway, GatewayEndpoint
from mcp_center.secrets import install_log_redaction, load_or_create_admin_token
from mcp_center.service import McpCenter
from mcp_center.store.running import forget_running, record_running
from mcp_center.web import BrowserSessions, install_web

__all__ = ["HostServer", "create_app", "interrupt_waiting_calls"]

logger = logging.getLogger(__name__)


def create_app(settings: Settings) -> tuple[FastAPI, str, bool]:
    """Build the app for `settings`.

    Returns:
        `(app, admin_token, token_created_now)`; `serve` prints the token only when it was
        created now (R-7.1).
    Raises:
        SecretStoreError: the admin token file is unusable.
    """
    install_log_redaction()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    token, created = load_or_create_admin_token(settings.data_dir, settings.admin_token)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncGenerator[None]:
        async with McpCenter.open(settings) as center:
            app.state.center = center
            endpoint = GatewayEndpoint(Gateway(center), center.gateway_tokens, admin_token=token)
            async with endpoint.running():
                app.state.gateway_endpoint = endpoint
                yield

    sessions = BrowserSessions(settings.public_url)
    app = create_api(settings, token, lifespan=lifespan, sessions=sessions)
    install_web(app, settings=settings, admin_token=token, sessions=sessions)
    app.router.routes.append(Route(GATEWAY_PATH, endpoint=_GatewayRoute(app), methods=["GET", "POST", "DELETE"]))
    return app, token, created


class _GatewayRoute:
    """`/mcp` → the gateway endpoint the lifespan created (R-8.1)."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint: GatewayEndpoint | None = getattr(self._app.state, "gateway_endpoint", None)
        if endpoint is None:
            response = JSONResponse({"error": "the gateway is starting"}, status_code=503)
            await response(scope, receive, send)
            return
        await endpoint(scope, receive, send)


async def interrupt_waiting_calls(app: FastAPI) -> None:
    """Fail every call that waits for a human (approval, elicitation card) with MCP_CALL_INTERRUPTED.

    Called when the HTTP server starts to stop, while connections are still open: the callers
    get an explicit "not delivered" answer instead of a dropped connection, and pending cards are
    stored as interrupted (R-6.3).
    """
    center: McpCenter | None = getattr(app.state, "center", None)
    if center is None:
        return
    try:
        await center.interrupt_pending()
    except Exception:
        logger.exception("shutdown.interrupt_failed")


class HostServer(uvicorn.Server):
    """uvicorn's server, which first interrupts calls waiting for a human when it is asked to stop.

    With `settings`, it records where it listens in `<data dir>/serve.json` once its socket is
    bound (the real port, also for `--port 0`) and removes the record when it stops, so the CLI
    finds this host without `--url` (`mcp_center.store.running`).
    """

    def __init__(self, config: uvicorn.Config, app: FastAPI, settings: Settings | None = None) -> None:
        super().__init__(config)
        self._app = app
        self._settings = settings

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Open settings pages hold /api/events streams: end them, or the exit waits them out.
        end_event_streams(self._app)
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self._settings is not None:
            bound = [sock.getsockname() for server in self.servers for sock in server.sockets or ()]
            port = bound[0][1] if bound else self._settings.port
            url = self._settings.public_url or replace(self._settings, port=port).base_url
            try:
                record_running(self._settings.data_dir, url)
            except OSError:
                logger.warning("serve.record_failed", exc_info=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._settings is not None:
            forget_running(self._settings.data_dir)
        await interrupt_waiting_calls(self._app)
        await super().shutdown(sockets)
