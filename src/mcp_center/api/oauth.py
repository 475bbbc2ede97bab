"""OAuth routes (R-4.9): start an authorization, the browser callback, the headless completion, log out.

`/api/mcp/servers/{id}/oauth/...` needs the admin token like every `/api` route. `GET /oauth/callback`
is outside `/api` and has no admin token: the browser arrives there from the authorization server,
and the single-use, unguessable `state` created by `start` is what protects it (login CSRF and
replay are refused). It answers a small HTML page, or JSON when the client asks for JSON; the page's
script (`CALLBACK_SCRIPT`) tells an open settings page the outcome and closes the window (R-4.9).
"""

from __future__ import annotations

import html
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Body, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from mcp_center.api.bodies import OAuthCallbackUrl, OAuthStart
from mcp_center.api.errors import error_response
from mcp_center.api.openapi import API_ERRORS, envelope, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.errors import CenterError
from mcp_center.secrets import default_redactor
from mcp_center.service import McpCenter
from mcp_center.service.oauth import CALLBACK_PATH, CLIENT_METADATA_PATH, client_metadata_document

__all__ = ["callback_router", "router"]

router = APIRouter(prefix="/api/mcp/servers", tags=["oauth"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)
callback_router = APIRouter(tags=["oauth"])

_CALLBACK_PARAMS = ("code", "state", "iss", "error")
OAUTH_STATE_HEADER = "X-MCP-Center-OAuth-State"
"""The `state` of an authorization started here (`start`), for a balancer's stickiness of the callback."""


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


@router.post(
    "/{server_id}/oauth/start", summary="Start an OAuth authorization (user action)", responses=errors(404, 409, 502)
)
async def start(
    request: Request, response: Response, server_id: str, body: Annotated[OAuthStart | None, Body()] = None
) -> dict[str, Any]:
    """Body: nothing, or `{"issuer": "..."}` to choose among several authorization servers.

    Returns the `authorization_url` to open, with the `issuer` and `scopes` to show the user first
    (R-4.9). Machine grants (`client_credentials`, `cross_app_access`) answer `authorized: true` at once.
    Needs a trusted connection summary.

    The authorization's `state` is also in the `X-MCP-Center-OAuth-State` header (the caller has it
    already, in the URL): a load balancer stores it and sends the browser's `/oauth/callback` with
    that `state` to this instance, which alone holds the authorization in progress (R-10.2,
    `deploy/haproxy.cfg`).
    """
    started = await _center(request).oauth.start(
        server_id, None if body is None else body.model_dump(exclude_unset=True)
    )
    shown = started.to_dict()
    url = shown.get("authorization_url")
    if isinstance(url, str):
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        if state and state.isascii() and state.isprintable():
            response.headers[OAUTH_STATE_HEADER] = state
    return shown


@router.post(
    "/{server_id}/oauth/complete",
    summary="Complete an authorization from a pasted redirect URL",
    responses=errors(404, 409, 502),
)
async def complete(request: Request, server_id: str, body: Annotated[OAuthCallbackUrl, Body()]) -> dict[str, Any]:
    """Body `{"callback_url": "..."}`: the URL the browser was sent to, when it could not reach this host."""
    return (await _center(request).oauth.complete_from_url(server_id, body.model_dump())).to_dict()


@router.delete("/{server_id}/oauth", summary="Forget the OAuth authorization (log out)", responses=errors(404, 409))
async def forget(request: Request, server_id: str) -> dict[str, Any]:
    """Deletes the stored refresh token, client registration and metadata, and the in-memory access token."""
    return (await _center(request).oauth.forget(server_id)).to_dict()


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


_CALLBACK_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'none'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
CALLBACK_SCRIPT = "/static/js/oauth-callback.js"
"""The settings page's script that tells an open Authorization tab the outcome (server id, ok, error
code: never the code or state of the URL), strips the query from the address bar and closes the window."""


def _page(title: str, text: str, status: int, *, server_id: str | None = None, code: str | None = None) -> HTMLResponse:
    outcome = {"data-ok": "true" if status == 200 else "false", "data-server": server_id or "", "data-code": code or ""}
    data = " ".join(f'{name}="{html.escape(value)}"' for name, value in outcome.items())
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>mcp-center</title>"
        f"<script type='module' src='{CALLBACK_SCRIPT}'></script></head>"
        f"<body {data}><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
        "<p>You can close this window and go back to the mcp-center settings page.</p></body></html>"
    )
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "Content-Security-Policy": _CALLBACK_CSP}
    return HTMLResponse(body, status_code=status, headers=headers)


_CALLBACK_QUERY = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": meaning}
    for name, meaning in (
        ("code", "The authorization code."),
        ("state", "The single-use state `start` created."),
        ("iss", "The issuer that answered (RFC 9207)."),
        ("error", "The authorization server's refusal."),
    )
]
_CALLBACK_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Authorized: a page that tells the settings page and closes, or the outcome as JSON "
        "(`Accept: application/json`): `{server_id, issuer, scopes, ...}`.",
        "content": {"application/json": {"schema": {"type": "object"}}},
    },
    400: {
        "description": "The authorization failed: a page saying why (with JSON asked for, the error envelope "
        "with the error's own status instead).",
        "content": {"text/html": {"schema": {"type": "string"}}},
    },
    **errors(404, 409, 422, 500, 502, 504),
    403: envelope("The Host is not this host's (HOST_NOT_ALLOWED)."),
}


@callback_router.get(
    CALLBACK_PATH,
    summary="OAuth redirect target (browser)",
    response_model=None,
    response_class=HTMLResponse,
    responses=_CALLBACK_RESPONSES,
    openapi_extra={"parameters": _CALLBACK_QUERY},
)
async def callback(request: Request) -> Response:
    """The authorization server redirects the browser here with `code`, `state` (and `iss`) or `error`."""
    # `code` and `state` are single-use; the access log drops this path's query string
    # (secrets.redact.install_log_redaction), so nothing here needs the process-wide redactor.
    params: dict[str, str | None] = {name: request.query_params.get(name) for name in _CALLBACK_PARAMS}
    try:
        result = await _center(request).oauth.complete(params)
    except CenterError as exc:
        if _wants_json(request):
            return error_response(exc.http_status, exc.code, exc.message, exc.details)
        message = default_redactor.redact(exc.message)
        server_id = exc.details.get("server_id")
        return _page(
            "Authorization failed",
            f"{message} [{exc.code}]",
            400,
            server_id=server_id if isinstance(server_id, str) else None,
            code=exc.code,
        )
    if _wants_json(request):
        return JSONResponse(result.to_dict(), headers={"Cache-Control": "no-store"})
    scopes = " ".join(result.scopes) or "(none)"
    return _page(
        "Authorized",
        f"mcp-center is now authorized for server '{result.server_id}' by {result.issuer} (scopes: {scopes}).",
        200,
        server_id=result.server_id,
    )


@callback_router.get(
    CLIENT_METADATA_PATH,
    summary="This host's OAuth client ID metadata document",
    responses={403: envelope("The Host is not this host's (HOST_NOT_ALLOWED).")},
)
async def client_metadata(request: Request) -> JSONResponse:
    """Served for CIMD (R-4.10); configure its URL as `auth.client_metadata_url` only behind public https."""
    return JSONResponse(client_metadata_document(_center(request).settings))
