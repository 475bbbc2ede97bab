"""Routes of the settings page: the login form, logout, the page shell at `/`, and its static files.

The shell is rendered here (Jinja2) and carries the session's CSRF token; the JavaScript in
`static/js/` draws the views and talks to the REST API under `/api` with the session cookie and the
`X-CSRF-Token` header. No route here reads or changes a server: that is the API's job, so the page
has exactly the API's powers and checks.

Every page answers with a strict Content-Security-Policy (scripts and styles only from `/static`,
no inline script, no framing) and `Cache-Control: no-store`; the files under `/static` are cached
by version (`mcp_center.web.assets`).
"""

from __future__ import annotations

import functools
import hmac
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp_center import __version__
from mcp_center.config import Settings
from mcp_center.errors import CenterError, OriginNotAllowed
from mcp_center.web.assets import STATIC_DIR, VersionedStaticFiles, module_imports, static_prefix

if TYPE_CHECKING:
    from jinja2 import Environment

from mcp_center.web.csrf import (
    CSRF_FIELD,
    SESSION_COOKIE,
    SESSION_MAX_S,
    BrowserSessions,
    cookie_value,
    origin_allowed_for_login,
)

__all__ = ["MAX_FORM_BYTES", "install_web"]

WEB_DIR = Path(__file__).parent
MAX_FORM_BYTES = 8 * 1024
"""Largest login/logout form body read, in bytes."""

_PAGE_PATHS = (
    "/new",
    "/import",
    "/export",
    "/gateway",
    "/inbox",
    "/inbox/{card_id}",
    "/servers/{server_id}",
    "/servers/{server_id}/{section}",
)
"""The page's own routes (`static/js/app.js`), which live after '#': requested without it by a browser,
they are redirected there (`page_address`)."""

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@functools.cache
def _templates() -> Environment:
    """The page templates, loaded with jinja2 on the first page served: a host serving only the
    gateway and the API never imports it (about 1.5 MB resident, R-8.3: idle RSS)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(
        loader=FileSystemLoader(WEB_DIR / "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _templates().get_template(name).render(version=__version__, static=static_prefix(), **context)
    return HTMLResponse(html, status_code=status, headers=_PAGE_HEADERS)


async def _read_form(request: Request) -> dict[str, str] | None:
    """The urlencoded form body (first value per field), or None when it is larger than MAX_FORM_BYTES."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    parsed = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {key: values[0] for key, values in parsed.items() if values}


def _is_secure(request: Request, settings: Settings) -> bool:
    return request.url.scheme == "https" or (settings.public_url or "").startswith("https://")


def _forbidden(error: CenterError) -> HTMLResponse:
    return _page("error.html", status=error.http_status, code=error.code, message=error.message)


def install_web(app: FastAPI, *, settings: Settings, admin_token: str, sessions: BrowserSessions) -> None:
    """Add the settings page to `app`: `GET /`, `GET|POST /login`, `POST /logout`, `/static/...`, and the
    redirect of a page's address without its '#' (`GET /servers/ID` → `/#/servers/ID`, browsers only).

    Args:
        app: The app built by `mcp_center.api.create_api` with the same `sessions`.
        settings: Host settings (the public URL decides the cookie's `Secure` flag and our origin).
        admin_token: What the login form must be given (compared in constant time).
        sessions: The browser session table the API's guard also consults.
    """
    router = APIRouter(include_in_schema=False)
    expected = admin_token.encode("utf-8")

    @router.get("/", response_class=HTMLResponse)
    async def shell(request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        """The page shell for a logged-in browser; anyone else is sent to the login form."""
        session = sessions.session_of(request.scope)
        if session is None:
            return RedirectResponse("/login", status_code=303, headers={"Cache-Control": "no-store"})
        return _page(
            "app.html",
            csrf_token=session.csrf_token,
            instance=settings.instance_label,
            preload=module_imports("app.js"),
        )

    @router.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        """The login form (a logged-in browser goes straight to the page)."""
        if sessions.session_of(request.scope) is not None:
            return RedirectResponse("/", status_code=303, headers={"Cache-Control": "no-store"})
        return _page("login.html")

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        """Check the admin token; on success start a session and set its cookie (never the token itself)."""
        if not origin_allowed_for_login(request.scope, settings.public_url):
            return _forbidden(OriginNotAllowed("log in from this host's own page"))
        form = await _read_form(request)
        presented = (form or {}).get("token", "").strip().encode("utf-8")
        if not presented or not hmac.compare_digest(presented, expected):
            return _page("login.html", status=401, error="That is not the admin token.")
        session_id, _ = sessions.create()
        response = RedirectResponse("/", status_code=303, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            SESSION_COOKIE,
            session_id,
            max_age=int(SESSION_MAX_S),
            path="/",
            httponly=True,
            samesite="strict",
            secure=_is_secure(request, settings),
        )
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        """End the session (CSRF token and same origin required) and clear the cookie."""
        form = await _read_form(request) or {}
        error = sessions.verify(request.scope, form_token=form.get(CSRF_FIELD))
        if error is not None and error.http_status != 401:
            return _forbidden(error)
        sessions.end(cookie_value(request.headers.get("cookie", "")))
        response = RedirectResponse("/login", status_code=303, headers={"Cache-Control": "no-store"})
        response.delete_cookie(
            SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=_is_secure(request, settings)
        )
        return response

    async def page_address(request: Request) -> Response:
        """A page's address typed or pasted without its '#' (`/servers/crashy`): a browser is sent to
        the page itself (`/#/servers/crashy`), anyone else gets the 404 an unknown path gets (issue 16)."""
        if "text/html" not in request.headers.get("accept", ""):
            raise StarletteHTTPException(status_code=404, detail="Not Found")
        location = "/#" + quote(request.url.path, safe="/")
        return RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})

    for path in _PAGE_PATHS:
        router.add_api_route(path, page_address, methods=["GET"], response_class=RedirectResponse)
    app.include_router(router)
    app.mount("/static", VersionedStaticFiles(directory=STATIC_DIR), name="static")
