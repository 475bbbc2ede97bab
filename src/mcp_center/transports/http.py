"""Streamable HTTP: the SDK transport over an `httpx2.AsyncClient` we build and observe (R-3.10).

The SDK's `streamable_http_client` speaks the protocol (session id, protocol-version header, JSON
or SSE responses, GET stream, Last-Event-ID, DELETE on close). What it hides — the HTTP status
behind "Server returned an error response", the `WWW-Authenticate` challenge, a 404 that means
the session expired — is captured by a response hook into `HttpDiagnostics`, which the runtime
reads to attribute errors (R-3.1) and to re-initialize once on session expiry.

Redirects: the client is built with `follow_redirects=False`; the SDK additionally refuses
cross-origin redirects for MCP requests (docs/sdk-notes.md#streamable-http).
"""

from __future__ import annotations

import functools
import json
import re
import ssl
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import anyio
import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth

from mcp_center.errors import ServerProtocolError
from mcp_center.models import ErrorReason, is_object
from mcp_center.transports.clip import ClipReport, JsonClipper, ReadLimits

__all__ = ["HttpDiagnostics", "ResponseTooLarge", "build_http_client", "clip_body", "shared_tls_context"]

DEFAULT_TIMEOUT = httpx2.Timeout(connect=10.0, read=900.0, write=30.0, pool=30.0)
"""Seconds. `read` bounds silence on a response or SSE stream; calls have their own deadline.

`read` is 15 minutes because a `tools/call` response stream is silent while the server waits for
a human to answer an elicitation card (R-6.1, docs/sdk-notes.md#elicitation); it must outlast the card's expiry
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
        clipped: What was cut from the answer to a request (`clip.ClipReport.to_dict()`), by request
            id, until the tap moves it into the result's `_meta` (bounded).
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
    clipped: dict[str, dict[str, object]] = field(default_factory=dict[str, dict[str, object]])
    expired: anyio.Event = field(default_factory=anyio.Event)
    stream_lost: anyio.Event = field(default_factory=anyio.Event)

    def note_clipped(self, request_id: str, report: ClipReport) -> None:
        """Remember what was cut from the answer to `request_id` (the oldest notes go first)."""
        self.clipped[request_id] = report.to_dict()
        while len(self.clipped) > _MAX_CLIPPED_NOTES:
            self.clipped.pop(next(iter(self.clipped)))

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


POOL_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=100, keepalive_expiry=5.0)
"""Connections to one server: at most 100 open, all of them kept alive for 5 s when idle."""


class ResponseTooLarge(ServerProtocolError, httpx2.StreamError):
    """A response body exceeded the size limit (bounded memory, R-3.9).

    Also an `httpx2.StreamError`: the SDK then fails only the request this body answered (with
    a JSON-RPC parse error) instead of its whole transport task group, which would take every
    other request of the session down with it.
    """


class _ClippedBody(httpx2.AsyncByteStream):
    """A JSON body read through a `JsonClipper`: handed on as one bounded chunk at its end."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, limits: ReadLimits, on_report: Callable[[ClipReport], None]
    ) -> None:
        self._inner = inner
        self._limits = limits
        self._on_report = on_report

    async def __aiter__(self) -> AsyncIterator[bytes]:
        clipper = JsonClipper(self._limits)
        async for chunk in self._inner:
            clipper.feed(chunk)
        kept = clipper.finish()
        self._on_report(clipper.report)
        if kept:
            body = bytes(kept)
            del kept
            yield body

    async def aclose(self) -> None:
        await self._inner.aclose()


class _ClippedEvents(httpx2.AsyncByteStream):
    """An event stream whose `data` (one JSON-RPC message per event) is read through a `JsonClipper`.

    Each event is handed on once it is complete; its other fields (`id`, `event`, `retry`) and
    comments are kept, each cut to `_FIELD_BYTES`. Memory: one event's kept data, one read chunk.
    """

    def __init__(
        self, inner: httpx2.AsyncByteStream, limits: ReadLimits, on_report: Callable[[ClipReport], None]
    ) -> None:
        self._inner = inner
        self._limits = limits
        self._on_report = on_report
        self._clipper: JsonClipper | None = None
        self._data_lines = 0
        self._fields = bytearray()
        self._line = bytearray()
        """The start of the current line, until it is known to be a data line (then fed on)."""
        self._in_data = False
        self._skip_lf = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            out = self._feed(chunk)
            if out:
                yield out
        out = self._end_line(final=True)
        if out:
            yield out

    def _feed(self, data: bytes) -> bytes:
        out = bytearray()
        start, size = 0, len(data)
        if self._skip_lf and data[:1] == b"\n":
            start = 1
        self._skip_lf = False
        while start < size:
            match = _LINE_END.search(data, start)
            end = match.start() if match else size
            self._take(data[start:end])
            if match is None:
                break
            out += self._end_line()
            if data[end] == 0x0D:  # "\r\n" counts once; a lone "\r" ends a line too
                if end + 1 < size and data[end + 1] == 0x0A:
                    end += 1
                elif end + 1 == size:
                    self._skip_lf = True
            start = end + 1
        return bytes(out)

    def _take(self, piece: bytes) -> None:
        if not piece:
            return
        if self._in_data:
            assert self._clipper is not None
            self._clipper.feed(piece)
            return
        if len(self._line) < _DATA_PREFIX_BYTES:  # not known yet whether this is a data line
            need = _DATA_PREFIX_BYTES - len(self._line)
            self._line += piece[:need]
            piece = piece[need:]
            if len(self._line) < _DATA_PREFIX_BYTES and not piece:
                return
            if self._line.startswith(b"data:"):
                self._classify()
                assert self._clipper is not None
                if piece:
                    self._clipper.feed(piece)
                return
        self._line += piece[: max(_FIELD_BYTES - len(self._line), 0)]

    def _classify(self) -> None:
        """The line starts with `data:`: it becomes (part of) the event's data, fed to its clipper."""
        payload = bytes(self._line[5:])
        payload = payload[1:] if payload.startswith(b" ") else payload
        self._line.clear()
        if self._clipper is None:
            self._clipper = JsonClipper(self._limits)
        elif self._data_lines:
            self._clipper.feed(b"\n")
        self._data_lines += 1
        self._in_data = True
        self._clipper.feed(payload)

    def _end_line(self, *, final: bool = False) -> bytes:
        if not self._in_data and self._line.startswith(b"data:"):
            self._classify()
        if self._in_data:
            self._in_data = False
            return b""
        line, self._line = bytes(self._line[:_FIELD_BYTES]), bytearray()
        if line or final:
            if line.startswith(b":"):
                return line + b"\n"  # a comment (keep-alive): passed on at once
            if line:
                self._fields += line + b"\n"
            if not final:
                return b""
        return self._dispatch()

    def _dispatch(self) -> bytes:
        """The blank line that ends an event: hand the event on, its data clipped."""
        out = bytearray(self._fields)
        self._fields.clear()
        if self._clipper is not None:
            kept = self._clipper.finish()
            self._on_report(self._clipper.report)
            for part in kept.split(b"\n"):
                out += b"data: " + part + b"\n"
            self._clipper = None
            self._data_lines = 0
        if out:
            out += b"\n"
        return bytes(out)

    async def aclose(self) -> None:
        await self._inner.aclose()


def clip_body(
    chunks: AsyncIterable[bytes], content_type: str, limits: ReadLimits, on_report: Callable[[ClipReport], None]
) -> AsyncIterator[bytes]:
    """A response body read through the read cap, for a reader that does not use `httpx2`.

    The lean forwarder's own HTTP/1.1 client (`runtime/http1.py`) reads the same answers the SDK's
    `httpx2` client would, so it clips them the same way (issue 14, item 2): an event stream per
    event (`limits.for_events()`), any other body as one JSON message handed on at its end.

    Args:
        chunks: The body as it arrives (not compressed).
        content_type: The response's `Content-Type`.
        on_report: Receives what was cut, once per message.
    """
    inner = _Chunks(chunks)
    if content_type.lower().startswith("text/event-stream"):
        return _ClippedEvents(inner, limits.for_events(), on_report).__aiter__()
    return _ClippedBody(inner, limits, on_report).__aiter__()


class _Chunks(httpx2.AsyncByteStream):
    """Any async iterable of bytes as an `httpx2.AsyncByteStream`."""

    def __init__(self, chunks: AsyncIterable[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        return None


class _Decompressed(httpx2.AsyncByteStream):
    """A gzip or deflate body, decompressed as it streams (so the clipper bounds the decompressed bytes)."""

    def __init__(self, inner: httpx2.AsyncByteStream, encoding: str) -> None:
        self._inner = inner
        wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
        self._decompressor = zlib.decompressobj(wbits)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            data = chunk
            while data:
                out = self._decompressor.decompress(data, _DECOMPRESS_STEP)
                if out:
                    yield out
                data = self._decompressor.unconsumed_tail
        rest = self._decompressor.flush()
        if rest:
            yield rest

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

    Every body is read through a `clip.JsonClipper` (issue 14, item 2): a JSON body whole, an event
    stream event by event, decompressed first when the server compressed it. Answers to catalog
    requests get `list_limits`, every other answer `limits`. What was cut is reported in
    `diagnostics.clipped` under the request id, which the tap adds to the result's `_meta`.

    The standalone GET stream is watched: when it cannot be opened (connection refused, reset)
    or its body ends, `diagnostics.stream_lost` is set, so a server that died is noticed at once
    (R-3.11) rather than at the next health ping.
    """

    def __init__(self, limits: ReadLimits | None, list_limits: ReadLimits | None, diagnostics: HttpDiagnostics) -> None:
        # Keep as many idle connections as may be open: with httpx2's default (20 kept of 100), a
        # burst of concurrent calls through the gateway closed and reopened a TCP connection for
        # most requests.
        # Two pools, each made on first use: plain `http://` requests never need the trust store, whose
        # TLS context costs 3.4 MB resident once loaded (R-8.3: idle RSS of a host with loopback
        # servers only); an `https://` request (an https server, its OAuth endpoints) always goes to
        # the verifying pool.
        self._plain: httpx2.AsyncHTTPTransport | None = None
        self._tls: httpx2.AsyncHTTPTransport | None = None
        self._limits = limits
        self._list_limits = list_limits or limits
        self._diagnostics = diagnostics

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._pool_for(request.url).handle_async_request(request)
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
        if self._limits is None:
            return response
        return self._clipped(request, response)

    def _clipped(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """`response` with its body read through a clipper (decompressed first when it must be)."""
        method, request_id = _rpc_of(request) if request.method == "POST" else (None, None)
        limits = self._list_limits if method in LIST_METHODS else self._limits
        assert limits is not None and self._list_limits is not None
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        # The body handed on is not the one the server sent: its length and encoding headers go.
        headers = httpx2.Headers([(k, v) for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS])
        if encoding in ("gzip", "deflate"):
            stream = _Decompressed(stream, encoding)
        elif encoding != "identity":
            raise ResponseTooLarge(
                f"the server answered with the content encoding {encoding[:40]!r}, which mcp-center does not read",
                details={"reason": ErrorReason.PROTOCOL.value},
            )

        def report(clipped: ClipReport) -> None:
            if not clipped.clipped:
                return
            if clipped.truncated and request.method == "POST":
                self._diagnostics.response_too_large = limits.max_message_bytes
            if request_id is not None:
                self._diagnostics.note_clipped(request_id, clipped)

        if headers.get("content-type", "").lower().startswith("text/event-stream"):
            clipped_stream: httpx2.AsyncByteStream = _ClippedEvents(stream, limits.for_events(), report)
        else:
            clipped_stream = _ClippedBody(stream, limits, report)
        extensions = response.extensions
        return httpx2.Response(response.status_code, headers=headers, stream=clipped_stream, extensions=extensions)

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

    def _pool_for(self, url: httpx2.URL) -> httpx2.AsyncHTTPTransport:
        """The verifying pool for `https://`, the plain one for anything else (made on first use)."""
        if url.scheme == "https":
            if self._tls is None:
                self._tls = httpx2.AsyncHTTPTransport(verify=shared_tls_context(), trust_env=False, limits=POOL_LIMITS)
            return self._tls
        if self._plain is None:
            self._plain = httpx2.AsyncHTTPTransport(verify=_trust_nothing(), trust_env=False, limits=POOL_LIMITS)
        return self._plain

    async def aclose(self) -> None:
        for pool in (self._plain, self._tls):
            if pool is not None:
                await pool.aclose()


@functools.cache
def _trust_nothing() -> ssl.SSLContext:
    """The TLS context of the plain pool, which only ever sends `http://` requests: it trusts no
    certificate, so were it ever used for TLS it would fail closed, never connect unverified."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The one TLS context of every server connection and of the OAuth broker's clients (system
    trust store as `httpx2` loads it, environment ignored), built on first use.

    An `httpx2` transport otherwise builds its own and loads the CA bundle into it: about 0.8 MB
    resident per connection, and a test connection, a reconnect or a probe builds one more each
    time (R-8.3: idle RSS). An `ssl.SSLContext` is meant to be shared; nothing here changes it.
    """
    return httpx2.create_ssl_context(trust_env=False)


def build_http_client(
    headers: Mapping[str, str],
    diagnostics: HttpDiagnostics,
    *,
    auth: httpx2.Auth | None = None,
    timeout: httpx2.Timeout = DEFAULT_TIMEOUT,
    read_limits: ReadLimits | None = None,
    list_limits: ReadLimits | None = None,
) -> httpx2.AsyncClient:
    """Build the `httpx2.AsyncClient` for one remote connection.

    Args:
        headers: Configured headers including decrypted secret ones (validated against R-1.7).
        diagnostics: Receives every response through a hook.
        auth: Attaches OAuth tokens (R-4); None for no auth or static bearer (already in headers).
        timeout: httpx2 timeouts in seconds.
        read_limits: The read cap of answers (`clip.read_limits`), or None for no clipping.
        list_limits: The read cap of catalog pages (defaults to `read_limits`).
    Returns:
        A client the caller must close (`async with`).
    """
    base = {"Accept-Encoding": "gzip, deflate", **dict(headers)}
    return httpx2.AsyncClient(
        headers=base,
        auth=auth,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        event_hooks={"response": [diagnostics.on_response]},
        transport=_GuardedTransport(read_limits, list_limits, diagnostics),
    )


_LINE_END = re.compile(rb"[\r\n]")
_DATA_PREFIX_BYTES = 6
"""`data: ` — how much of a line tells whether it is a data line."""
_FIELD_BYTES = 4096
"""An SSE line that is not data (`id`, `event`, `retry`, a comment) is cut to this many bytes."""
_DECOMPRESS_STEP = 256 * 1024
"""Decompressed bytes produced per step (a compression bomb is read in bounded pieces)."""
LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_MAX_CLIPPED_NOTES = 256


def _rpc_of(request: httpx2.Request) -> tuple[str | None, str | None]:
    """`(method, id)` of the JSON-RPC request a POST carries (a small body only), else Nones."""
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return None, None
    if len(body) > 1024 * 1024:
        return None, None
    try:
        message = json.loads(body)
    except ValueError:
        return None, None
    if not is_object(message):
        return None, None
    method, request_id = message.get("method"), message.get("id")
    return (
        method if isinstance(method, str) else None,
        str(request_id) if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None,
    )


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
    return is_object(message) and message.get("method") == "initialize"
