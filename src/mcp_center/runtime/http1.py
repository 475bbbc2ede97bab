"""A minimal HTTP/1.1 client for the lean forwarding path to plain-HTTP servers (R-8.3).

Profiled, `httpx2` was half of the gateway's CPU per forwarded call: its connection pool checks
every idle connection's socket on each request (with 64 connections in flight, 64 `select`
calls), and its HTTP/1.1 layer is pure Python. This client does what forwarding needs and no
more: keep-alive connections reused last-in first-out, only the connection about to be reused is
checked, the response parsed by `httptools` (llhttp, already serve's HTTP parser).

Scope, on purpose: `http://` URLs only (R-1.6 allows them for loopback servers, which is where
per-call overhead shows); `https://` servers and servers with OAuth keep the connection's
`httpx2` client (its TLS and auth flows). No redirects are followed (as `httpx2` is configured).

A request that fails on a reused connection before any byte of its response arrived is sent once
more on a new connection: the server had closed the idle connection (its keep-alive timeout)
before reading the request, so it never ran it. Idle connections older than `IDLE_S` seconds are
not reused at all, which keeps that case rare.
"""

from __future__ import annotations

import select
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httptools

__all__ = ["CONNECT_TIMEOUT_S", "IDLE_S", "MAX_CONNECTIONS", "Http1Client", "Http1Error", "Http1Response"]

IDLE_S = 3.0
"""Seconds an idle connection may be reused (below the 5 s keep-alive timeout of uvicorn and Node)."""
MAX_CONNECTIONS = 100
"""Connections kept idle at most; more requests at once open more connections (closed after use)."""
CONNECT_TIMEOUT_S = 10.0
_READ = 65536


class Http1Error(Exception):
    """The HTTP exchange failed (connection refused or reset, malformed response, body too large).

    An internal signal of runtime/ (tests/test_contracts.py): `forward.py` re-raises it as an
    `httpx2.TransportError`, which error attribution turns into a `CenterError`."""


@dataclass(eq=False)
class _Parsed:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict[str, str])
    chunks: list[bytes] = field(default_factory=list[bytes])
    headers_done: bool = False
    complete: bool = False

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class _Connection:
    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.idle_since = time.monotonic()

    def looks_closed(self) -> bool:
        """True when the server closed it (readable means EOF or junk on an idle connection)."""
        sock = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)  # noqa: S610 - anyio's typed attribute, not Django
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


class Http1Response:
    """A response being read: `status_code`, `headers` (lower-case names), then its body."""

    def __init__(self, parsed: _Parsed, parser: httptools.HttpResponseParser, connection: _Connection) -> None:
        self._parsed = parsed
        self._parser = parser
        self._connection = connection
        self.status_code = parsed.status
        self.headers: Mapping[str, str] = parsed.headers
        self.complete = parsed.complete

    async def aiter_bytes(self, limit: int) -> AsyncIterator[bytes]:
        """The body as it arrives, at most `limit` bytes in all.

        Raises:
            Http1Error: the connection ended before the body did, or the body exceeds `limit`.
        """
        seen = 0
        while True:
            chunks, self._parsed.chunks = self._parsed.chunks, []
            for chunk in chunks:
                seen += len(chunk)
                if seen > limit:
                    raise Http1Error(f"the response is larger than {limit} bytes")
                yield chunk
            if self._parsed.complete:
                self.complete = True
                return
            try:
                data = await self._connection.stream.receive(_READ)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError) as exc:
                raise Http1Error("the connection ended before the response did") from exc
            try:
                self._parser.feed_data(data)
            except httptools.HttpParserError as exc:
                raise Http1Error("the server sent a malformed HTTP response") from exc

    async def aread(self, limit: int) -> bytes:
        """The whole body (at most `limit` bytes)."""
        return b"".join([chunk async for chunk in self.aiter_bytes(limit)])


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
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                return _Connection(await anyio.connect_tcp(self._host, self._port))
        except (OSError, TimeoutError) as exc:
            raise Http1Error(f"cannot connect to {self._host}:{self._port} ({type(exc).__name__})") from exc

    async def _reusable(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.idle_since < IDLE_S and not connection.looks_closed():
                return connection
            await _close(connection)
        return None

    async def _release(self, connection: _Connection) -> None:
        if self._closed or len(self._idle) >= MAX_CONNECTIONS:
            await _close(connection)
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    @asynccontextmanager
    async def request(self, method: str, headers: dict[str, str], body: bytes = b"") -> AsyncGenerator[Http1Response]:
        """Send one request and yield its response once its headers arrived.

        The connection goes back to the pool when the body was read to its end and the server
        keeps it alive; otherwise it is closed when the block ends.

        Raises:
            Http1Error: the exchange failed.
        """
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head = f"{method} {self._target} HTTP/1.1\r\n{self._fixed}{extra}content-length: {len(body)}\r\n\r\n"
        payload = head.encode("latin-1") + body
        connection = await self._reusable()
        reused = connection is not None
        if connection is None:
            connection = await self._connect()
        response: Http1Response | None = None
        try:
            try:
                response = await self._exchange(connection, payload)
            except Http1Error:
                if not reused:
                    raise
                await _close(connection)  # the server closed it while idle: it never read this request
                connection = await self._connect()
                response = await self._exchange(connection, payload)
            yield response
        finally:
            keep = response is not None and response.complete
            if keep and response is not None and response.headers.get("connection", "").lower() != "close":
                await self._release(connection)
            else:
                await _close(connection)

    async def _exchange(self, connection: _Connection, payload: bytes) -> Http1Response:
        parsed = _Parsed()
        parser = httptools.HttpResponseParser(parsed)
        try:
            await connection.stream.send(payload)
            while not parsed.headers_done:
                data = await connection.stream.receive(_READ)
                parser.feed_data(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise Http1Error("the connection ended before the response") from exc
        except httptools.HttpParserError as exc:
            raise Http1Error("the server sent a malformed HTTP response") from exc
        parsed.status = parser.get_status_code()
        return Http1Response(parsed, parser, connection)

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when their request ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await _close(connection)


async def _close(connection: _Connection) -> None:
    with anyio.CancelScope(shield=True):
        await connection.stream.aclose()
