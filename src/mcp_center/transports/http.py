"""Streamable HTTP: the SDK transport over an `httpx2.AsyncClient` we build and observe (R-3.10).

The SDK's `streamable_http_client` speaks the protocol (session id, protocol-version header, JSON
or SSE responses, GET stream, Last-Event-ID, DELETE on close). What it hides — the HTTP status
behind "Server returned an error response", the `WWW-Authenticate` challenge, a 404 that means
the session expired — is captured by a response hook into `HttpDiagnostics`, which the runtime
reads to attribute errors (R-3.1) and to re-initialize once on session expiry.

Redirects: the client is built with `follow_redirects=False`; the SDK additionally refuses
cross-origin redirects for MCP requests (notes §3.2).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import anyio
import httpx2

from mcp_center.errors import ServerProtocolError
from mcp_center.models import ErrorReason

__all__ = ["HttpDiagnostics", "ResponseTooLarge", "build_http_client"]

DEFAULT_TIMEOUT = httpx2.Timeout(connect=10.0, read=900.0, write=30.0, pool=30.0)
"""Seconds. `read` bounds silence on a response or SSE stream; calls have their own deadline.

`read` is 15 minutes because a `tools/call` response stream is silent while the server waits for
a human to answer an elicitation card (R-6.1, notes §5); it must outlast the card's expiry
(10 minutes by default), or the call would fail while the user is still typing."""


@dataclass
class HttpDiagnostics:
    """What the last failing POST of one connection looked like (no bodies, no credentials).

    Attributes:
        last_status: Status of the last POST if it was not 2xx/3xx, else None.
        last_method: Its request method.
        www_authenticate: Its `WWW-Authenticate` header (401/403), or None.
        session_expired: A request that carried `Mcp-Session-Id` got 404 (R-3.10).
        expired: Set together with `session_expired`, for waiters.
        session_id: The last `Mcp-Session-Id` the server assigned.
    """

    last_status: int | None = None
    last_method: str | None = None
    www_authenticate: str | None = None
    session_expired: bool = False
    session_id: str | None = None
    expired: anyio.Event = field(default_factory=anyio.Event)

    async def on_response(self, response: httpx2.Response) -> None:
        """httpx2 response hook: record status, challenge and session facts."""
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            self.session_id = session_id
        request = response.request
        if request.method != "POST":
            # The optional GET stream may answer 405 and DELETE may be refused: neither explains
            # a failed request. Only POSTs carry JSON-RPC requests.
            return
        if response.status_code < 400:
            self.last_status = None
            self.www_authenticate = None
            return
        self.last_status = response.status_code
        self.last_method = request.method
        self.www_authenticate = response.headers.get("www-authenticate")
        if response.status_code == 404 and request.headers.get("mcp-session-id"):
            self.session_expired = True
            self.expired.set()


class ResponseTooLarge(ServerProtocolError):
    """A response body exceeded the size limit (bounded memory, R-3.9)."""


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(
                    f"the server sent a response larger than {self._limit} bytes",
                    details={"reason": ErrorReason.PROTOCOL.value, "limit_bytes": self._limit},
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    """Wraps the default transport; a body over `limit` bytes raises instead of filling memory."""

    def __init__(self, limit: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        # SSE streams are long-lived and bounded per event by the SDK (`max_sse_event_size`);
        # every other body is bounded as a whole.
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def build_http_client(
    headers: Mapping[str, str],
    diagnostics: HttpDiagnostics,
    *,
    auth: httpx2.Auth | None = None,
    timeout: httpx2.Timeout = DEFAULT_TIMEOUT,
    max_response_bytes: int | None = None,
) -> httpx2.AsyncClient:
    """Build the `httpx2.AsyncClient` for one remote connection.

    Args:
        headers: Configured headers including decrypted secret ones (validated against R-1.7).
        diagnostics: Receives every response through a hook.
        auth: Attaches OAuth tokens (R-4); None for no auth or static bearer (already in headers).
        timeout: httpx2 timeouts in seconds.
        max_response_bytes: Bound on any response body (and so on any SSE stream), or None.
    Returns:
        A client the caller must close (`async with`).
    """
    return httpx2.AsyncClient(
        headers=dict(headers),
        auth=auth,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        event_hooks={"response": [diagnostics.on_response]},
        transport=_CappedTransport(max_response_bytes) if max_response_bytes is not None else None,
    )
