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

import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import anyio
import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth

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
        last_status: Status of the last POST if it failed (>= 400), or None.
        last_method: Its request method.
        last_url: Its URL (shown through `wording.display_url` only).
        www_authenticate: Its `WWW-Authenticate` header (401/403), or None.
        challenge_scopes: The `scope` of a 403 `insufficient_scope` challenge, split, or None.
        response_too_large: The limit in bytes that the body of a POST's response exceeded,
            until the next successful POST; that request failed alone (R-3.9).
        session_expired: A POST that carried `Mcp-Session-Id` got 404 (R-3.10).
        expired: Set together with `session_expired`, for waiters.
        session_id: The last `Mcp-Session-Id` the server assigned.
        initialize_refusal: The start of the body of an HTTP error answer to `initialize` (a server
            that refuses our protocol version says which ones it supports there, issue 14 item 10).
        stream_lost: Set when the standalone GET stream ended or could not be opened (the
            server may have gone away): the runtime pings at once instead of at its next
            interval (R-3.11). Whoever waits on it replaces it with a fresh event.
    """

    last_status: int | None = None
    last_method: str | None = None
    last_url: str | None = None
    www_authenticate: str | None = None
    challenge_scopes: list[str] | None = None
    response_too_large: int | None = None
    session_expired: bool = False
    session_id: str | None = None
    initialize_refusal: str | None = None
    expired: anyio.Event = field(default_factory=anyio.Event)
    stream_lost: anyio.Event = field(default_factory=anyio.Event)

    async def on_response(self, response: httpx2.Response) -> None:
        """httpx2 response hook: record status, challenge and session facts.

        Only POSTs count. The standalone GET stream is optional: a server may answer it 405,
        400 or 404 and the SDK retries it a bounded number of times and gives up (R-3.10), so
        its status must neither end the session nor be blamed for a later, unrelated error
        (a tool's JSON-RPC -32603 is not "HTTP 405"). The DELETE on close fails nobody. A
        successful POST clears the last failure, so a stale status is never attributed.
        """
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            self.session_id = session_id
        request = response.request
        if request.method != "POST":
            return
        if response.status_code < 400:
            self.last_status = self.last_method = self.last_url = self.www_authenticate = None
            self.challenge_scopes = self.response_too_large = None
            return
        self.last_status = response.status_code
        self.last_method = request.method
        self.last_url = str(request.url)
        self.www_authenticate = response.headers.get("www-authenticate")
        scope = extract_field_from_www_auth(response, "scope") if response.status_code == 403 else None
        self.challenge_scopes = scope.split() if scope else None
        if response.status_code == 404 and request.headers.get("mcp-session-id"):
            self.session_expired = True
            self.expired.set()


class ResponseTooLarge(ServerProtocolError, httpx2.StreamError):
    """A response body exceeded the size limit (bounded memory, R-3.9).

    Also an `httpx2.StreamError`: the SDK then fails only the request this body answered (with
    a JSON-RPC parse error) instead of its whole transport task group, which would take every
    other request of the session down with it.
    """


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, on_exceeded: Callable[[int], None]) -> None:
        self._inner = inner
        self._limit = limit
        self._on_exceeded = on_exceeded

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                self._on_exceeded(self._limit)
                raise ResponseTooLarge(
                    f"the server sent a response larger than {self._limit} bytes",
                    details={"reason": ErrorReason.PROTOCOL.value, "limit_bytes": self._limit},
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedStream(httpx2.AsyncByteStream):
    """The body of the standalone GET stream: `on_end()` runs when it ends, cleanly or not."""

    def __init__(self, inner: httpx2.AsyncByteStream, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        finally:
            self._on_end()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """Wraps the default transport: normalizes a 404 for our session; bounds bodies to `limit` bytes.

    A 404 to a POST that carried `Mcp-Session-Id` means the server no longer knows the session
    (R-3.10). SDK servers put a JSON-RPC error in its body (Python: -32600; TypeScript: -32001,
    which is also the SDK's REQUEST_TIMEOUT code), and the SDK would surface that code, after
    reading the body. The body is dropped, so the SDK resolves the request at once with its own
    INVALID_REQUEST "Session terminated", the one signal the runtime re-initializes on.

    A body over `limit` bytes raises instead of filling memory (R-3.9).

    The standalone GET stream is watched: when it cannot be opened (connection refused, reset)
    or its body ends, `diagnostics.stream_lost` is set, so a server that died is noticed at once
    (R-3.11) rather than at the next health ping.
    """

    def __init__(self, limit: int | None, diagnostics: HttpDiagnostics) -> None:
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        self._limit = limit
        self._diagnostics = diagnostics

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError:
            if request.method == "GET":
                self._diagnostics.stream_lost.set()
            raise
        if request.method == "GET" and response.status_code == 200:
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _WatchedStream(response.stream, self._diagnostics.stream_lost.set)
        if response.status_code == 404 and request.method == "POST" and request.headers.get("mcp-session-id"):
            await response.aclose()
            return httpx2.Response(404, request=request)
        if response.status_code >= 400 and request.method == "POST" and _is_initialize(request):
            return await self._keep_refusal(request, response)
        if self._limit is None:
            return response
        # SSE streams are long-lived and bounded per event by the SDK (`max_sse_event_size`);
        # every other body is bounded as a whole.
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(
            response.stream, self._limit, self._exceeded if request.method == "POST" else _ignore
        )
        return response

    async def _keep_refusal(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """Read the start of an error answer to `initialize` into the diagnostics; hand on what was read."""
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        head = bytearray()
        try:
            async for chunk in response.stream:
                head += chunk
                if len(head) >= _REFUSAL_BYTES:
                    break
        finally:
            await response.aclose()
        body = bytes(head[:_REFUSAL_BYTES])
        self._diagnostics.initialize_refusal = body.decode("utf-8", errors="replace")
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    def _exceeded(self, limit: int) -> None:
        self._diagnostics.response_too_large = limit

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
        transport=_GuardedTransport(max_response_bytes, diagnostics),
    )


def _ignore(limit: int) -> None:
    del limit


_REFUSAL_BYTES = 4096
"""How much of an error answer to `initialize` is kept (it names the versions a server supports)."""
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})


def _is_initialize(request: httpx2.Request) -> bool:
    """Whether a POST carries a JSON-RPC `initialize` request (its body is small and already built)."""
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return False
    if len(body) > 64 * 1024 or b"initialize" not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
