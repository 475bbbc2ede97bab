"""The host's own safety at the HTTP edge (R-7.1, R-7.2).

Threats: another local program or web page using the admin API (every `/api` request needs the
admin token, compared in constant time and checked before the body is parsed or the route is
matched, so an anonymous caller learns nothing about either); DNS rebinding, where an attacker's
domain resolves to 127.0.0.1 and a browser sends the page's requests to us (the Host header must
be one of ours); cross-site requests from a browser (a state-changing request with a foreign
`Origin` is refused). The settings page's browser session cookie is accepted instead of the token
only through `CookieSessions.verify` (exact same origin, and a CSRF token for unsafe methods; the
web package implements it).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable
from typing import Protocol
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_center.api.errors import error_response
from mcp_center.errors import AdminAuthRequired, CenterError, RequestTooLarge
from mcp_center.secrets import presented_bearer

__all__ = [
    "MAX_BODY_BYTES",
    "AdminAuth",
    "AdminAuthGuard",
    "BodySizeLimit",
    "CookieSessions",
    "HostGuard",
    "allowed_host_names",
    "host_origin_refusal",
    "host_refusal",
    "jsonrpc_refusal",
    "too_large_jsonrpc",
]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def allowed_host_names(bind_host: str, extra: Iterable[str], public_url: str | None) -> frozenset[str]:
    """Host names (no port) we answer to: loopback, the bind address, `extra`, the public URL's host."""
    names = set(LOOPBACK_NAMES)
    if bind_host not in {"0.0.0.0", "::", ""}:  # noqa: S104 - comparing, not binding
        names.add(bind_host.strip("[]").lower())
    for host in extra:
        names.add(_host_only(host))
    if public_url:
        parsed = urlsplit(public_url).hostname
        if parsed:
            names.add(parsed.lower())
    return frozenset(names)


_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^:\[\]@/\\\s]+))(?::(?P<port>[0-9]{1,5}))?$")


_HOST_NAMES: dict[str, str] = {}
"""`_host_only` of the Host values seen (at most `_HOST_NAMES_KEPT`, each at most 255 characters):
every gateway request checks its Host, almost always one of a few values (issue 12)."""
_HOST_NAMES_KEPT = 64


def _host_only(value: str) -> str:
    """The host name of a `Host` header or allow-list entry, without port, lowercased.

    Anything that is not `name`, `name:port`, `[v6]` or `[v6]:port` (a port that is not a number,
    userinfo, trailing text after `]`) comes back whole, so it never equals an allowed name.
    """
    known = _HOST_NAMES.get(value)
    if known is not None:
        return known
    lowered = value.strip().lower()
    match = _HOST_PORT.fullmatch(lowered)
    # `lowered` whole when it does not match: includes a bare IPv6 allow-list entry such as "::1"
    name = lowered if match is None else match.group("v6") or match.group("name")
    if len(_HOST_NAMES) < _HOST_NAMES_KEPT and len(value) <= 255:  # bounded: Host values are the client's
        _HOST_NAMES[value] = name
    return name


class HostGuard:
    """ASGI middleware: refuse requests whose Host (or, for unsafe methods, Origin) is not ours."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str], *, jsonrpc: bool = False) -> None:
        """`jsonrpc`: refuse with a JSON-RPC error body (the MCP gateway: `jsonrpc_refusal`), not the
        REST API's error envelope."""
        self._app = app
        self._allowed = allowed
        self._jsonrpc = jsonrpc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        refusal = host_refusal(self._allowed, scope.get("headers", []), scope.get("method", "GET"))
        if refusal is not None:
            code, message = refusal
            response = jsonrpc_refusal(403, code, message) if self._jsonrpc else error_response(403, code, message)
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)


def host_refusal(
    allowed: frozenset[str], headers: Iterable[tuple[bytes, bytes]], method: str
) -> tuple[str, str] | None:
    """`(code, message)` of `HostGuard`'s 403 for a request with these `headers` (names in any case)
    and `method`, or None when it passes: its Host is an `allowed` name and, for an unsafe method,
    its Origin (if any) too (R-7.2). Also checked by the gateway's direct requests (`app.py`)."""
    host: str | None = None
    origin: str | None = None
    for key, value in headers:  # only the two it reads (every gateway call passes here)
        name = key.lower()
        if name == b"host" and host is None:
            host = value.decode("latin-1")
        elif name == b"origin" and origin is None:
            origin = value.decode("latin-1")
    return host_origin_refusal(allowed, host, origin, method)


def host_origin_refusal(
    allowed: frozenset[str], host: str | None, origin: str | None, method: str
) -> tuple[str, str] | None:
    """`host_refusal` of a request whose (first) Host and Origin values were read already (None:
    absent), e.g. by the gateway's direct requests in their one pass over the headers (issue 12)."""
    if _host_only(host or "") not in allowed:
        return "HOST_NOT_ALLOWED", "this Host is not allowed (DNS rebinding protection); add it with --allowed-host"
    if origin and method not in _SAFE_METHODS and origin != "null":
        origin_host = urlsplit(origin).hostname or ""
        if origin_host.lower() not in allowed:
            return "ORIGIN_NOT_ALLOWED", "cross-origin requests are not allowed"
    elif origin == "null" and method not in _SAFE_METHODS:
        return "ORIGIN_NOT_ALLOWED", "cross-origin requests are not allowed"
    return None


SESSION_AUTH_KEY = "mcp_center.session_auth"
"""ASGI scope key `AdminAuthGuard` sets to True when it accepted a browser session (clients cannot set it)."""

_AUTH_MESSAGE = (
    "this API needs the admin token: send 'Authorization: Bearer <token>' (printed by 'mcp-center serve' "
    "on first start, stored in <data dir>/admin-token)"
)
_WRONG_TOKEN_MESSAGE = (
    "the token sent is not this host's admin token (a gateway token, or mistyped?): the admin token is "  # noqa: S105
    "printed by 'mcp-center serve' on first start and stored in <data dir>/admin-token"
)


def _auth_message(authorization: str | None) -> str:
    """Tell a missing admin token from a wrong one; never echo what was sent (R-7.1)."""
    return _WRONG_TOKEN_MESSAGE if presented_bearer(authorization) is not None else _AUTH_MESSAGE


class AdminAuth:
    """FastAPI dependency: the request must carry `Authorization: Bearer <admin token>` (R-7.1)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    def __repr__(self) -> str:
        return "AdminAuth(<token hidden>)"

    def check(self, presented: str | None) -> bool:
        """Constant-time comparison of a presented token."""
        return presented is not None and hmac.compare_digest(presented.encode("utf-8"), self._token)

    def authorizes(self, authorization: str) -> bool:
        """True when an `Authorization` header value is `Bearer <admin token>` (scheme case-insensitive)."""
        return self.check(presented_bearer(authorization))

    async def __call__(self, request: Request) -> None:
        if request.scope.get(SESSION_AUTH_KEY) is True:
            return  # AdminAuthGuard accepted the browser session cookie (origin + CSRF checked)
        authorization = request.headers.get("authorization", "")
        if not self.authorizes(authorization):
            raise AdminAuthRequired(_auth_message(authorization))


async def require_admin(request: Request) -> None:
    """FastAPI dependency of every `/api` route, declared by their routers (`ADMIN_ONLY`): the request
    carries the admin token, or `AdminAuthGuard` accepted its browser session. Checked by the app's own
    `AdminAuth` (`app.state.admin_auth`, set by `create_api`), so the routes are built once per process
    and shared by every app (R-7.1).

    Raises:
        AdminAuthRequired: neither was presented (401 in the error envelope).
    """
    auth: AdminAuth = request.app.state.admin_auth
    await auth(request)


ADMIN_ONLY = Depends(require_admin)
"""`require_admin` as a router's dependency: `APIRouter(dependencies=[ADMIN_ONLY], ...)`."""


class CookieSessions(Protocol):
    """Browser sessions of the settings page, accepted by the API instead of the bearer token (R-7.1)."""

    cookie_name: str
    """The session cookie's name (the OpenAPI description names it)."""
    csrf_header: str
    """The request header that carries the session's CSRF token on unsafe methods (R-7.2)."""

    def verify(self, scope: Scope) -> CenterError | None:
        """None when the request's session cookie names a live session and the request passes the
        origin and CSRF checks; otherwise the error to answer with (`AdminAuthRequired` when there
        is no live session)."""
        ...


class AdminAuthGuard:
    """ASGI middleware: every request under `/api` needs the admin token before anything else runs.

    A route dependency alone runs after FastAPI has parsed the body and matched the route, so an
    anonymous caller could tell a malformed body (422), an unknown path (404) or a wrong method
    (405) from a real endpoint. Checked here, all of them answer 401 first.

    A request with an `Authorization` header is judged by it alone. Without one, the settings
    page's session cookie counts when `sessions` is given and `sessions.verify` passes it (exact
    same origin; the CSRF token for unsafe methods): a failed origin or CSRF check answers 403 with
    that error's code, a missing or dead session 401.
    """

    def __init__(
        self, app: ASGIApp, auth: AdminAuth, prefix: str = "/api", sessions: CookieSessions | None = None
    ) -> None:
        self._app = app
        self._auth = auth
        self._prefix = prefix
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.pop(SESSION_AUTH_KEY, None)
            path: str = scope.get("path", "")
            if path == self._prefix or path.startswith(self._prefix + "/"):
                refusal = self._refusal(scope)
                if refusal is not None:
                    await refusal(scope, receive, send)
                    return
        await self._app(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        authorization = next(
            (v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"authorization"), None
        )
        if authorization is not None:
            if self._auth.authorizes(authorization):
                return None
        elif self._sessions is not None:
            error = self._sessions.verify(scope)
            if error is None:
                scope[SESSION_AUTH_KEY] = True
                return None
            if not isinstance(error, AdminAuthRequired):
                return error_response(error.http_status, error.code, error.message)
        return error_response(401, AdminAuthRequired.code, _auth_message(authorization))


MAX_BODY_BYTES = 1024 * 1024
"""Largest request body, in bytes, except where `BODY_LIMIT_OVERRIDES` says otherwise."""
BODY_LIMIT_OVERRIDES: dict[str, int] = {"/api/mcp/import/": 16 * 1024 * 1024}
"""Path prefix → larger limit (a backstop: the import routes refuse over 8 MiB themselves, with a clearer error)."""


def jsonrpc_refusal(status: int, code: str, message: str, details: dict[str, object] | None = None) -> JSONResponse:
    """HTTP `status` with the JSON-RPC error an MCP client reads, for a request the gateway's guards
    refuse before reading it (R-7.2, R-7.3, R-8.1): -32600 (the SDK's code for a request its
    transport refuses), the stable `code` first in the message and in `data` with `details`:
    `{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "<code>: <message>",
    "data": {"code": "<code>", ...details}}}`. The id is null: the body was not read."""
    error = {"code": -32600, "message": f"{code}: {message}", "data": {"code": code, **(details or {})}}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=status)


def too_large_jsonrpc(exc: RequestTooLarge) -> JSONResponse:
    """HTTP 413 `jsonrpc_refusal` of `exc` (`data`: `{"code": "REQUEST_TOO_LARGE", "limit_bytes": N}`)."""
    return jsonrpc_refusal(exc.http_status, exc.code, exc.message, exc.details)


class BodySizeLimit:
    """ASGI middleware: a request body over the limit is refused with 413 before anything parses it.

    Threat: a 300 MB body buffered whole (or a config with millions of entries) exhausting memory
    and making every later request slow (R-7.3). A declared Content-Length over the limit is
    answered at once; a streamed body is counted while it is read.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES, *, jsonrpc: bool = False) -> None:
        """`jsonrpc`: refuse in a JSON-RPC error body (the MCP gateway, whose clients read nothing
        else: `too_large_jsonrpc`), not the REST API's error envelope."""
        self._app = app
        self._limit = limit
        self._jsonrpc = jsonrpc

    def _refusal(self, limit: int) -> JSONResponse:
        too_large = RequestTooLarge(
            f"the request body is over the limit of {limit} bytes", details={"limit_bytes": limit}
        )
        if self._jsonrpc:
            return too_large_jsonrpc(too_large)
        return error_response(413, too_large.code, too_large.message, too_large.details)

    def _limit_for(self, path: str) -> tuple[int, bool]:
        """`(limit, check the declared length)`: routes with their own limit answer that themselves."""
        for prefix, limit in BODY_LIMIT_OVERRIDES.items():
            if path.startswith(prefix):
                return limit, False
        return self._limit, True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        limit, check_declared = self._limit_for(scope.get("path", ""))
        declared: int | None = None
        chunked = False
        for name, value in scope.get("headers", []):
            if check_declared and name == b"content-length" and value.isdigit():
                declared = int(value)
                if declared > limit:
                    await self._refusal(limit)(scope, receive, send)
                    return
            elif name == b"transfer-encoding":
                chunked = True
        if declared is not None and not chunked:
            # The HTTP parser delivers exactly the declared length, which is within the limit: nothing
            # to count (the gateway's hot path, R-8.3).
            await self._app(scope, receive, send)
            return
        seen = 0
        exceeded = False
        refused = False

        async def counted() -> Message:
            # A streamed (chunked) body over the limit ends here: the app sees an empty last chunk,
            # and whatever it answers to that cut body is replaced by the 413 below.
            nonlocal seen, exceeded
            if exceeded:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    exceeded = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def answered(message: Message) -> None:
            nonlocal refused
            if not exceeded:
                await send(message)
            elif not refused and message["type"] == "http.response.start":
                refused = True
                await self._refusal(limit)(scope, counted, send)

        await self._app(scope, counted, answered)
