"""The REST API (FastAPI): routes, the error envelope, admin auth and the Host allow-list."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp

from mcp_center import __version__
from mcp_center.api import capabilities, debugging, gateway, imports, instances, oauth, operations, servers
from mcp_center.api.debugging import end_event_streams
from mcp_center.api.errors import error_response, install_error_handlers
from mcp_center.api.health import HEALTH_PATH, health_response
from mcp_center.api.instances import InstanceHeader
from mcp_center.api.openapi import install_openapi
from mcp_center.api.security import (
    AdminAuth,
    AdminAuthGuard,
    BodySizeLimit,
    CookieSessions,
    HostGuard,
    allowed_host_names,
)
from mcp_center.config import Settings
from mcp_center.service import ImportPreviews

__all__ = ["AdminAuth", "CookieSessions", "create_api", "end_event_streams", "error_response", "guard_gateway"]


def guard_gateway(app: ASGIApp, settings: Settings) -> ASGIApp:
    """`app` behind the checks every request of this host passes that apply to the gateway: the
    Host/Origin allow-list (R-7.2) and the body-size limit (R-7.3), each refused with a JSON-RPC
    error, the only body an MCP client reads (`security.jsonrpc_refusal`). The admin token does not apply:
    the gateway checks its own tokens (R-7.1)."""
    return HostGuard(
        BodySizeLimit(app, jsonrpc=True),
        allowed=allowed_host_names(settings.host, settings.allowed_hosts, settings.public_url),
        jsonrpc=True,
    )


Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]


def create_api(
    settings: Settings,
    admin_token: str,
    *,
    lifespan: Lifespan | None = None,
    sessions: CookieSessions | None = None,
) -> FastAPI:
    """Build the ASGI app: `/api/...` (admin token required), `/oauth/callback` (R-4.9), `/openapi.json`,
    `/healthz`.

    No `/docs`: FastAPI's Swagger UI loads its script from a CDN, which would run third-party code
    on the admin origin with the browser session (R-7.2). `/openapi.json` works in any OpenAPI tool:
    it lists every status each route answers with the error envelope, the typed request bodies and
    the security schemes (`api.openapi`); schemathesis checks it against a live serve
    (tests/api/test_openapi_live.py).

    `app.state.center` must hold an open `McpCenter` before requests arrive (the lifespan in
    `mcp_center.app` sets it; tests may set it directly). With `sessions`, `/api` also accepts the
    settings page's browser session cookie under its origin and CSRF checks (R-7.2).
    """
    app = FastAPI(
        title="mcp-center",
        version=__version__,
        summary="A self-hosted MCP host: servers, trust, tools, OAuth, gateway.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        # Never answer a path with a redirect to another one: `DELETE /api/gateway/tokens/..%2f`
        # (decoded `.../../`) was redirected 307 to `/api/gateway/..`. A path that matches no
        # route (a trailing slash, a `/` in a path parameter, even encoded) is 404 NOT_FOUND in
        # the envelope, saying so.
        redirect_slashes=False,
    )
    install_error_handlers(app)
    auth = AdminAuth(admin_token)
    app.state.admin_auth = auth
    app.state.import_previews = ImportPreviews()
    # The routers' routes themselves, not `include_router`: FastAPI builds an included router's routes
    # again for each app on its first request (every parameter's and body's validator: ~0.1 s of CPU
    # per app, paid by every host a process starts). The routes were built once, at import, with the
    # admin token dependency (`security.ADMIN_ONLY`, which checks with `app.state.admin_auth`) and the
    # documented error statuses (`API_ERRORS`) their routers declare; they hold no state of an app.
    for router in (
        servers.router,
        operations.router,
        gateway.router,
        debugging.router,
        imports.router,
        capabilities.router,
        instances.router,
        oauth.router,
        oauth.callback_router,  # no admin token: the single-use OAuth state protects it
    ):
        app.router.routes.extend(router.routes)
    install_openapi(
        app,
        session_cookie=sessions.cookie_name if sessions is not None else None,
        csrf_header=sessions.csrf_header if sessions is not None else None,
    )

    @app.get(HEALTH_PATH, include_in_schema=False)
    async def healthz(request: Request) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return await health_response(request.app.state)

    # The last middleware added runs first: the Host check, the admin token, the body size, routing.
    app.add_middleware(BodySizeLimit)
    app.add_middleware(AdminAuthGuard, auth=auth, sessions=sessions)
    app.add_middleware(
        HostGuard, allowed=allowed_host_names(settings.host, settings.allowed_hosts, settings.public_url)
    )
    app.add_middleware(InstanceHeader, name=settings.instance_label)  # outermost: every response says who answered
    return app
