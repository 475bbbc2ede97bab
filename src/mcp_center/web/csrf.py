"""Browser sessions and their CSRF defence for the settings page and the REST API (R-7.1, R-7.2).

Threats this module stops:
- the admin token living in the browser: after login the browser holds only a random session id in
  an `HttpOnly`, `SameSite=Strict`, `Path=/` cookie (never the token, never in a URL or in
  `localStorage`); the id is looked up by its SHA-256, so the table holds no usable cookie values;
- cross-site request forgery: a request that changes state and is authenticated by the cookie must
  carry the session's CSRF token in the `X-CSRF-Token` header (or the `csrf_token` field of the
  logout form) and an `Origin` that is exactly ours — scheme, host and port, compared with the
  request's own scheme and `Host` or with the configured public URL. `SameSite=Strict` alone is not
  enough: another port on 127.0.0.1 is the *same site*, so a page served there would get the cookie;
- a cookie read by any other path: `Sec-Fetch-Site`, when the browser sends it, must say
  `same-origin` (or `none`, a typed URL) for a cookie to count at all.

Sessions live in memory: a host restart or a logout ends them. They expire after
`SESSION_IDLE_S` without use and `SESSION_MAX_S` after login; at most `MAX_SESSIONS` exist (the
oldest goes first).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.types import Scope

from mcp_center.config.origins import normalize_origin
from mcp_center.errors import AdminAuthRequired, CenterError, CsrfTokenInvalid, OriginNotAllowed

__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "MAX_SESSIONS",
    "SESSION_COOKIE",
    "SESSION_IDLE_S",
    "SESSION_MAX_S",
    "BrowserSession",
    "BrowserSessions",
    "cookie_value",
    "expected_origins",
    "normalize_origin",
    "origin_allowed_for_login",
]

SESSION_COOKIE = "mcp_center_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SESSION_IDLE_S = 12 * 3600.0
"""Seconds a session stays valid without a request."""
SESSION_MAX_S = 7 * 24 * 3600.0
"""Seconds a session stays valid after login, however much it is used."""
MAX_SESSIONS = 256
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass
class BrowserSession:
    """One logged-in browser: its CSRF token and its clock readings (`time.monotonic()` seconds)."""

    csrf_token: str
    created_s: float
    last_used_s: float


def expected_origins(scheme: str, host_header: str, public_url: str | None) -> frozenset[str]:
    """The origins a same-origin browser request to us may carry.

    Args:
        scheme: The request's scheme (`http`, or `https` behind TLS).
        host_header: The request's `Host` header (already checked against the allow-list).
        public_url: The configured public base URL, whose origin is ours too (a TLS proxy in front).
    """
    found: set[str] = set()
    own = normalize_origin(f"{scheme}://{host_header}") if host_header else None
    if own:
        found.add(own)
    if public_url:
        public = normalize_origin(public_url)
        if public:
            found.add(public)
    return frozenset(found)


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def cookie_value(cookie_header: str, name: str = SESSION_COOKIE) -> str | None:
    """The value of cookie `name` in a `Cookie` header, or None."""
    for part in cookie_header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name and value:
            return value
    return None


class BrowserSessions:
    """The in-memory table of logged-in browsers, and the check every cookie-authenticated request passes.

    Args:
        public_url: The configured public base URL (its origin counts as ours).
        clock: Seconds from a monotonic clock (tests pass a fake one).
    """

    cookie_name = SESSION_COOKIE
    csrf_header = CSRF_HEADER

    def __init__(self, public_url: str | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._public_url = public_url
        self._clock = clock
        self._sessions: dict[str, BrowserSession] = {}

    def __repr__(self) -> str:
        return f"BrowserSessions(<{len(self._sessions)} sessions>)"

    def create(self) -> tuple[str, BrowserSession]:
        """Start a session after a successful login.

        Returns:
            `(session_id, session)`: the id goes into the cookie and nowhere else.
        """
        self._expire()
        while len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda k: self._sessions[k].created_s)
            del self._sessions[oldest]
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        session = BrowserSession(csrf_token=secrets.token_urlsafe(32), created_s=now, last_used_s=now)
        self._sessions[_hash(session_id)] = session
        return session_id, session

    def lookup(self, session_id: str | None) -> BrowserSession | None:
        """The live session for a cookie value (refreshing its idle clock), or None."""
        if not session_id:
            return None
        key = _hash(session_id)
        session = self._sessions.get(key)
        if session is None:
            return None
        now = self._clock()
        if now - session.last_used_s > SESSION_IDLE_S or now - session.created_s > SESSION_MAX_S:
            del self._sessions[key]
            return None
        session.last_used_s = now
        return session

    def end(self, session_id: str | None) -> None:
        """Forget a session (logout); unknown ids are ignored."""
        if session_id:
            self._sessions.pop(_hash(session_id), None)

    def session_of(self, scope: Scope) -> BrowserSession | None:
        """The live session named by the request's cookie, without any origin or CSRF check (page reads)."""
        return self.lookup(cookie_value(_headers(scope).get("cookie", "")))

    def verify(self, scope: Scope, form_token: str | None = None) -> CenterError | None:
        """Check a request authenticated by the session cookie.

        Args:
            scope: The ASGI scope of the request.
            form_token: The `csrf_token` form field, for the HTML logout form (the JS sends the header).
        Returns:
            None when the request may proceed: a live session and, if the browser says where the
            request comes from, our own origin; for a state-changing method also an `Origin` equal
            to ours and the session's CSRF token. Otherwise the error to answer with:
            `AdminAuthRequired` (no live session), `OriginNotAllowed`, or `CsrfTokenInvalid`.
        """
        headers = _headers(scope)
        session = self.lookup(cookie_value(headers.get("cookie", "")))
        if session is None:
            return AdminAuthRequired("no valid browser session: log in again")
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site not in {"same-origin", "none"}:
            return OriginNotAllowed("the browser says this request comes from another site")
        ours = expected_origins(str(scope.get("scheme", "http")), headers.get("host", ""), self._public_url)
        origin = headers.get("origin")
        if origin is not None and normalize_origin(origin) not in ours:
            return OriginNotAllowed("cross-origin requests are not allowed with the session cookie")
        if str(scope.get("method", "GET")).upper() in _SAFE_METHODS:
            return None
        if origin is None:
            return OriginNotAllowed("a state-changing request with the session cookie must carry its Origin")
        presented = headers.get(CSRF_HEADER) or form_token or ""
        if not hmac.compare_digest(presented.encode("utf-8"), session.csrf_token.encode("utf-8")):
            return CsrfTokenInvalid(
                "a state-changing request with the session cookie needs the page's CSRF token (X-CSRF-Token)"
            )
        return None

    def _expire(self) -> None:
        now = self._clock()
        stale = [
            key
            for key, s in self._sessions.items()
            if now - s.last_used_s > SESSION_IDLE_S or now - s.created_s > SESSION_MAX_S
        ]
        for key in stale:
            del self._sessions[key]


def origin_allowed_for_login(scope: Scope, public_url: str | None) -> bool:
    """True when a login form post is not from another origin (an absent `Origin` is a non-browser client)."""
    headers: Mapping[str, str] = _headers(scope)
    origin = headers.get("origin")
    if origin is None:
        return True
    ours = expected_origins(str(scope.get("scheme", "http")), headers.get("host", ""), public_url)
    return normalize_origin(origin) in ours
