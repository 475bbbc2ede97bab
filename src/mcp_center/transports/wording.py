"""How network failures are worded, the same on every transport (issue 14, item 14; R-3.1).

A user reading an error must see which request failed where: `GET http://127.0.0.1:43115/sse
answered HTTP 404`, `POST https://mcp.example.com/mcp: connection refused`. So every network error
names the method and the URL *with its path*; the URL is shown without userinfo or fragment, and a
query parameter whose name looks like a credential (`?api_key=...`, R-1.5) has its value replaced by
`[redacted]`. A refused connection reads the same whether the transport is Streamable HTTP or
legacy SSE, and an HTTP status is classified by one rule (`status_reason`), so a plain 403 is
`http_status` everywhere and only a Bearer challenge makes it an authorization problem.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator
from typing import Final, cast

from mcp_center.interchange.display import REDACTED_VALUE, display_url
from mcp_center.models import ErrorReason

__all__ = ["REDACTED_VALUE", "connect_reason", "display_url", "status_reason", "unreachable_message"]


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, its causes, contexts and exception-group members, each once."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(cast(BaseExceptionGroup[BaseException], current).exceptions)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
        if current.__context__ is not None:
            pending.append(current.__context__)


def connect_reason(exc: BaseException) -> ErrorReason:
    """`refused`, `dns`, `tls` or `network`: why a connection could not be made, from the OS error
    under an httpx2 error (or the text httpx2 put in its message)."""
    for cause in _chain(exc):
        if isinstance(cause, ConnectionRefusedError) or (
            isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
        ):
            return ErrorReason.REFUSED
        if isinstance(cause, socket.gaierror):
            return ErrorReason.DNS
        if isinstance(cause, ssl.SSLError):
            return ErrorReason.TLS
    text = str(exc).lower()
    if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
        return ErrorReason.DNS
    if "certificate" in text or "ssl" in text or "tls" in text:
        return ErrorReason.TLS
    if "refused" in text or "all connection attempts failed" in text:
        return ErrorReason.REFUSED
    return ErrorReason.NETWORK


_CONNECT_WORDS: Final = {
    ErrorReason.REFUSED: "connection refused (nothing listens there; is the server running?)",
    ErrorReason.DNS: "the host name does not resolve",
    ErrorReason.TLS: "the TLS handshake failed",
    ErrorReason.NETWORK: "the network connection failed",
    ErrorReason.TIMEOUT: "no answer in time",
}


def unreachable_message(method: str | None, url: str | None, reason: ErrorReason) -> str:
    """`POST http://host:port/mcp: connection refused (...)` — one wording for every transport."""
    words = _CONNECT_WORDS.get(reason, "the connection failed")
    if url is None:
        return f"cannot reach the server: {words}"
    return f"{method + ' ' if method else ''}{display_url(url)}: {words}"


def status_reason(status: int, www_authenticate: str | None) -> ErrorReason:
    """How an HTTP error status is attributed, the same on every transport.

    401 → `auth_required`; 403 with `error="insufficient_scope"` → `step_up_required`; 403 with a
    Bearer challenge → `auth_required`; anything else (a plain 403 included) → `http_status`.
    """
    challenge = (www_authenticate or "").lower()
    if status == 401:
        return ErrorReason.AUTH_REQUIRED
    if status == 403 and "insufficient_scope" in challenge:
        return ErrorReason.STEP_UP_REQUIRED
    if status == 403 and challenge.lstrip().startswith("bearer"):
        return ErrorReason.AUTH_REQUIRED
    return ErrorReason.HTTP_STATUS
