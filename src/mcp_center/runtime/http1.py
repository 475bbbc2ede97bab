"""A minimal HTTP/1.1 client for the lean forwarding path to plain-HTTP servers (R-8.3).

Profiled, `httpx2` was half of the gateway's CPU per forwarded call: its connection pool checks
every idle connection's socket on each request (with 64 connections in flight, 64 `select`
calls), and its HTTP/1.1 layer is pure Python. This client does what forwarding needs and no
more: keep-alive connections reused last-in first-out, the response parsed by `httptools`
(llhttp, already serve's HTTP parser).

Each connection is an asyncio `Protocol` (round 2 of issue 12): the request is one
`transport.write` (no await), the response is parsed as the event loop delivers it, and the
connection keeps reading all the time. Over anyio's socket streams each receive resumed and
paused the transport's reading (an epoll change, i.e. a system call, each time), each send was a
task switch, and an idle connection had to be checked with `select` before reuse; here the
protocol simply knows when its server closed it (`connection_lost`). The host runs on asyncio
(uvloop), which is the only event loop this client supports.

A response body is read through `Http1Response.aiter_bytes`; a response whose caller stopped
reading before its end (a forwarded call's POST stream, which the server ends right after the
answer) is finished in the background for at most `DRAIN_S` seconds and the connection then goes
back to the pool, instead of being closed. At most `MAX_BUFFERED` bytes are buffered before the
connection stops reading until they are consumed.

Scope, on purpose: `http://` URLs only (R-1.6 allows them for loopback servers, which is where
per-call overhead shows); `https://` servers and servers with OAuth keep the connection's
`httpx2` client (its TLS and auth flows). No redirects are followed (as `httpx2` is configured).

A body of declared length up to `HELD_BODY_BYTES` is held in the connection until it is whole:
its caller is woken once, with the whole response, not once for the head and once more for the
body. A server on uvicorn writes a response's head and body in two `write` calls, so the body of
a forwarded call's answer came in a second read most of the time, and every such read resumed the
whole chain of coroutines waiting on the answer for nothing (issue 12). A streamed body (no
declared length, e.g. SSE) wakes its reader on every chunk, as before.

A request that fails on a reused connection before any byte of its response arrived may be sent
once more on a new connection (`send(resend=True)`, the default): most often the server had closed
the idle connection (its keep-alive timeout) before reading the request. It cannot be told apart
from a server that read the request, ran it, and then closed or crashed before answering, so a
request that must not run twice (a `tools/call`: a tool is not known to be idempotent) is sent with
`resend=False` and fails instead (`Http1Error`, "it may have run"). Idle connections older than
`IDLE_S` seconds are not reused at all, which keeps that case rare.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import httptools

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DRAIN_S",
    "IDLE_S",
    "MAX_CONNECTIONS",
    "Http1Client",
    "Http1Error",
    "Http1Response",
]

IDLE_S = 3.0
"""Seconds an idle connection may be reused (below the 5 s keep-alive timeout of uvicorn and Node)."""
MAX_CONNECTIONS = 100
"""Connections kept idle at most; more requests at once open more connections (closed after use)."""
CONNECT_TIMEOUT_S = 10.0
DRAIN_S = 0.5
"""Seconds a response left unread may take to end in the background before its connection is closed."""
MAX_BUFFERED = 1 << 20
"""Bytes of body buffered unread before the connection pauses reading."""
HELD_BODY_BYTES = 64 * 1024
"""A declared body of at most this many bytes (below `MAX_BUFFERED`) wakes its reader only when whole."""


class Http1Error(Exception):
    """The HTTP exchange failed (connection refused or reset, malformed response, body too large).

    An internal signal of runtime/ (tests/test_contracts.py): `forward.py` re-raises it as an
    `httpx2.TransportError`, which error attribution turns into a `CenterError`. `sent` is True when
    the connection ended after the request was written and before its response did: the server may
    have run the request (R-8.3)."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class _Connection(asyncio.Protocol):
    """One keep-alive connection; parses the response of the request in flight (httptools callbacks)."""

    def __init__(self, client: Http1Client) -> None:
        self._client = client
        self._loop = asyncio.get_running_loop()  # made by `create_connection`, on the loop; one lookup per connection
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = time.monotonic()
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._parser: httptools.HttpResponseParser | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        # the response in flight
        self.active = False
        self.received = False
        self.error: Http1Error | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.headers_done = False
        self.held = False
        """The body has a declared length of at most `HELD_BODY_BYTES`: no wake-up before it is whole."""
        self.complete = False
        self.discarding = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # pyright: ignore[reportAttributeAccessIssue] - a stream transport
        self.idle_since = time.monotonic()
        # One parser for the connection's responses, in order: only a connection whose response
        # ended (`on_message_complete`) takes another request; a parse error closes it (issue 12).
        self._parser = httptools.HttpResponseParser(self)

    def data_received(self, data: bytes) -> None:
        if not self.active or self._parser is None or self.complete:  # nothing asked: the server misbehaves
            self.error = Http1Error("the server sent data nobody asked for")
            self.close()
            return
        self.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self.error = Http1Error("the server sent a malformed HTTP response")
            self.close()
        if self.buffered > MAX_BUFFERED and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        if not self.held or self.complete or self.error is not None:
            self._wake()

    def eof_received(self) -> bool:
        self.lost = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.headers_done = True
        if self._parser is not None:
            self.status = self._parser.get_status_code()
        declared = self.headers.get("content-length")
        self.held = declared is not None and declared.isdigit() and int(declared) <= HELD_BODY_BYTES

    def on_body(self, body: bytes) -> None:
        if not self.discarding:
            self.chunks.append(body)
            self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.complete = True
        if self.discarding:
            self._client.finished_in_background(self)

    # used by the client and the response
    def start(self, payload: bytes) -> None:
        """Send one request (a single write) and expect its response."""
        assert self.transport is not None
        self.active = True
        self.received = self.headers_done = self.held = self.complete = self.discarding = False
        self.error = None
        self.status = 0
        self.headers = {}
        self.chunks = []
        self.buffered = 0
        self.transport.write(payload)

    def take(self) -> list[bytes]:
        """The body chunks received so far (resumes reading if it was paused)."""
        chunks, self.chunks, self.buffered = self.chunks, [], 0
        if self._paused and self.transport is not None and not self.lost:
            self._paused = False
            self.transport.resume_reading()
        return chunks

    async def wait(self) -> None:
        """Until the next event of this connection (data, end, loss)."""
        if self.lost:
            return
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def waiter(self) -> asyncio.Future[None]:
        """`wait` without its coroutine: the future the next event sets (done at once when the
        connection is lost); call `unwait` once it was awaited (or given up on)."""
        waiter = self._waiter = self._loop.create_future()
        if self.lost:
            waiter.set_result(None)
        return waiter

    def unwait(self) -> None:
        """The waiter of `waiter` is no longer awaited."""
        self._waiter = None

    def discard_rest(self) -> None:
        """Read the rest of the response without keeping it; back to the pool when it ends (`DRAIN_S` at most)."""
        self.discarding = True
        self.take()
        self._drain_timer = self._loop.call_later(DRAIN_S, self.close)

    def finished(self) -> None:
        """The response ended; the connection is idle now."""
        self.active = False
        self.discarding = False
        self.idle_since = time.monotonic()
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Http1Response:
    """A response being read: `status_code`, `headers` (lower-case names), then its body."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self.status_code = connection.status
        self.headers: Mapping[str, str] = connection.headers

    @property
    def complete(self) -> bool:
        """The whole response has arrived."""
        return self._connection.complete

    async def aiter_bytes(self, limit: int) -> AsyncIterator[bytes]:
        """The body as it arrives, at most `limit` bytes in all.

        The end (or loss) of the response is looked at only when nothing received is left unread: a
        caller may hold a chunk for a long time (the forwarder answers a server's elicitation while
        it holds the chunk that asked), and the rest of the body, its end included, often arrives
        meanwhile. Ending on `complete` right after the held chunk dropped that rest: the call's
        answer was lost and the call failed as MCP_CONNECTION_LOST (elic40, R-3.10, R-6.1).

        Raises:
            Http1Error: the connection ended before the body did, or the body exceeds `limit`.
        """
        connection = self._connection
        seen = 0
        while True:
            chunks = connection.take()
            if chunks:
                for chunk in chunks:
                    seen += len(chunk)
                    if seen > limit:
                        raise Http1Error(f"the response is larger than {limit} bytes")
                    yield chunk
                continue  # what arrived while the caller held a chunk comes before the end
            if connection.complete:
                return
            if connection.error is not None:
                raise connection.error
            if connection.lost:
                raise Http1Error("the connection ended before the response did", sent=True)
            await connection.wait()

    async def aread(self, limit: int) -> bytes:
        """The whole body (at most `limit` bytes)."""
        return b"".join([chunk async for chunk in self.aiter_bytes(limit)])

    def whole_body(self, at_most: int) -> bytes | None:
        """The whole body when it has arrived already and declares a `content-length` of at most
        `at_most` bytes (a held body, usually: see the module docstring); None otherwise, and nothing
        is read. No coroutine: a forwarded call's answer is read in the step that woke its caller."""
        connection = self._connection
        if not connection.complete or connection.error is not None:
            return None
        declared = self.headers.get("content-length")
        if declared is None or not declared.isdigit() or int(declared) > at_most:
            return None
        chunks = connection.take()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def read_declared(self, at_most: int) -> bytes | None:
        """The whole body, when the response declares a `content-length` of at most `at_most` bytes
        (waiting for the rest of it); None otherwise, and nothing is read.

        A forwarded call's answer is usually such a body: this reads it without the async
        iteration of `aiter_bytes` (R-8.3).

        Raises:
            Http1Error: the connection ended before the body did.
        """
        declared = self.headers.get("content-length")
        if declared is None or not declared.isdigit() or int(declared) > at_most:
            return None
        connection = self._connection
        while not connection.complete:
            if connection.error is not None:
                raise connection.error
            if connection.lost:
                raise Http1Error("the connection ended before the response did", sent=True)
            await connection.wait()
        chunks = connection.take()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class Http1Client:
    """Keep-alive HTTP/1.1 connections to one `http://host:port`.

    Args:
        url: An `http://` URL; requests go to its path and query.
        headers: Sent with every request (configured headers, secrets included).
    """

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("Http1Client serves http:// URLs only")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc.rpartition("@")[2]
        fixed = {"host": netloc, **{k.lower(): v for k, v in headers.items()}}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items() if k not in ("content-length", "connection"))
        self._idle: list[_Connection] = []
        self._closed = False

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                _transport, connection = await loop.create_connection(lambda: _Connection(self), self._host, self._port)
        except (OSError, TimeoutError) as exc:
            raise Http1Error(f"cannot connect to {self._host}:{self._port} ({type(exc).__name__})") from exc
        return connection

    def _reusable(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.lost and now - connection.idle_since < IDLE_S:
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        connection.finished()
        if self._closed or connection.lost or len(self._idle) >= MAX_CONNECTIONS:
            connection.close()
            return
        self._idle.append(connection)

    def finished_in_background(self, connection: _Connection) -> None:
        """A response left unread has ended (`_Connection.discard_rest`): the connection is idle again."""
        if connection.headers.get("connection", "").lower() == "close":
            connection.close()
            return
        self._release(connection)

    def head_block(self, method: str, headers: Mapping[str, str]) -> str:
        """The head of a request with `headers` up to its `content-length` line, for `send(block=...)`:
        a caller that sends the same headers again renders them once (issue 12, R-8.3)."""
        extra = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])  # a list: no generator resume per header
        return f"{method} {self._target} HTTP/1.1\r\n{self._fixed}{extra}"

    async def send(
        self,
        method: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        *,
        block: str | None = None,
        written: Callable[[], object] | None = None,
        resend: bool = True,
    ) -> Http1Response:
        """Send one request; its response once its headers arrived (and its body, when it declares a
        length of at most `HELD_BODY_BYTES`). Call `done(response)` afterwards.

        Args:
            block: `head_block(method, headers)`, rendered earlier; None renders it now.
            written: Called once, right after the request is written and before its answer is
                awaited: work the answer needs but the request does not (a log entry) is done while
                the server computes, off the call's critical path (issue 12, R-8.3). Called also when
                the exchange fails before the request could be written, so it runs exactly once.
            resend: Whether the request may go once more on a new connection when a reused one ended
                before any byte of its answer. Only for a request that may run twice: the server may
                have read and run it before the connection ended (R-8.3).
        Raises:
            Http1Error: the exchange failed (the connection is closed).
        """
        if block is None:
            block = self.head_block(method, headers)
        head = f"{block}content-length: {len(body)}\r\n\r\n"
        payload = head.encode("latin-1") + body
        connection = self._reusable()
        try:
            while True:
                if connection is None:
                    connection = await self._connect()
                    reused = False
                else:
                    reused = True
                # `_exchange` and `_Connection.wait` in line: two coroutine frames less on the path of
                # every forwarded call (issue 12, R-8.3).
                try:
                    connection.start(payload)
                    if written is not None:
                        written()
                        written = None
                    while not connection.headers_done:
                        if connection.error is not None:
                            raise connection.error
                        if connection.lost:
                            raise Http1Error("the connection ended before the response", sent=True)
                        waiter = connection.waiter()
                        try:
                            await waiter
                        finally:
                            connection.unwait()
                except Http1Error:
                    connection.close()
                    if reused and not connection.received:
                        if not resend:
                            raise Http1Error(
                                "the server ended a reused connection without answering; the request was"
                                " not sent again: it may have run",
                                sent=True,
                            ) from None
                        connection = None  # most likely closed while idle, before it read this request
                        continue
                    raise
                except BaseException:
                    connection.close()
                    raise
                return Http1Response(connection)
        finally:
            if written is not None:  # failed before the request was written
                written()

    def done(self, response: Http1Response) -> None:
        """The caller is done with `response`: its connection goes back to the pool when the response
        ended (now, or within `DRAIN_S` in the background) and the server keeps it alive; else it is closed."""
        connection = response._connection  # pyright: ignore[reportPrivateUsage] - same module
        if connection.lost or connection.error is not None or response.headers.get("connection", "").lower() == "close":
            connection.close()
        elif connection.complete:
            self._release(connection)
        elif self._closed:
            connection.close()
        else:
            connection.discard_rest()

    def abort(self, response: Http1Response) -> None:
        """Close `response`'s connection now, whatever is left of it (a 2026-07-28 request the
        caller gave up on: the server sees its request end, R-3.8)."""
        response._connection.close()  # pyright: ignore[reportPrivateUsage] - same module

    @asynccontextmanager
    async def request(self, method: str, headers: dict[str, str], body: bytes = b"") -> AsyncGenerator[Http1Response]:
        """`send` as a context: yields the response once its headers arrived, then `done` with it.

        Raises:
            Http1Error: the exchange failed.
        """
        response = await self.send(method, headers, body)
        try:
            yield response
        finally:
            self.done(response)

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when their request ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
