"""The host's HTTP/1.1 protocol: uvicorn's httptools protocol with a response's writes coalesced (R-8.3).

uvicorn writes a response's head as soon as the app sends `http.response.start` and its body on
each `http.response.body`: a one-message JSON answer (most gateway answers) left in two `write`
calls, so the agent's client woke twice on loopback, once to parse a head without its body. Under
load the first wake-up also took the CPU from the gateway before it had written the body (profiled
in issue 12 round 4: the head's write was the largest single Python frame of a forwarded call).

`CoalescingHttpToolsProtocol` hands each request's cycle a `CoalescingTransport`: what is written
during one step of the event loop is kept and written in one call when the response is complete
or at the end of that step (`loop.call_soon`), whichever comes first, so a head and a body sent
back to back leave together, and an SSE event sent on its own still leaves at once (one step
later). Order is kept (one buffer per connection, flushed before anything else touches the
connection: `close`, a later write in another step). Everything else of the transport (reading,
flow control, the protocol's own error answers) is uvicorn's own.

**Direct requests** (issue 12). uvicorn's per-request machinery (the ASGI scope, its request cycle
and `asyncio.Event`, the proxy-headers layer, `receive`, and `send` checking every header) cost
about as much CPU as everything else a gateway `ping` does: measured on the bench machine, a bare
httptools protocol answered a JSON POST for 0.17-0.18 ms of CPU, uvicorn with a trivial ASGI app
for 0.32-0.34 ms. An ASGI app given to uvicorn may offer a `direct_route` (`DirectRoute`): a POST
it claims from its URL and headers alone (`wants`) is read whole here (its declared length, which
`wants` bounded), then offered to the route with its body (`take`). A route that takes it answers
through plain `receive` and `send` callables this protocol provides (`DirectExchange`: the same
wire format as uvicorn's, chunked when no length is declared); one that declines gets uvicorn's
own request cycle, built then, with the body already read: everything else is uvicorn's, as
before. A pipelined request behind a direct one waits in uvicorn's queue, as behind any other.
Requests with `Expect: 100-continue`, an upgrade, HTTP/1.0 or no declared length are never direct
(nor any under uvicorn's `limit_concurrency`, which `serve` does not set). The access line of a
direct request, when uvicorn logs them, names the client uvicorn's would: the connection's peer, or
the `X-Forwarded-For` address when the peer is a trusted proxy (`logged_client`, uvicorn's own
proxy-headers layer; the app itself does not read the client address of a gateway request), and
the URL and headers it had when it was claimed, not those of a request pipelined behind it.

**The agent going** (issue 12, R-3.8; docs/decisions.md#disconnect-cancels). The request being
answered (`_active`, direct or uvicorn's) is told when the connection is lost, also when uvicorn's
`cycle` already names a request pipelined behind it, and reading goes on behind up to
`PIPELINE_READ_AHEAD` queued requests so that the loss is seen. An agent's FIN after whole requests
whose answer has not started may be a half-close: the connection stays open, is probed with
interim `100 Continue` answers (`EOF_PROBES_S`; an agent that closed its socket resets the
connection, which cancels), and closes after the answers.

**Slow requests** (sec37, R-7.2). uvicorn bounds no read: an agent that sent half of a request's
head (or of its body) and then nothing held its connection open for ever, so that many of them
(slowloris) took the server's connections. A request's head must be complete within
`request_timeout` seconds of its first byte (the first request's: of the connection), and each
read of its body must follow the one before within as long; then the agent is answered 408 and the
connection closed. A direct request's body is read under the same rule (sec39: it had its own fixed
10 s for the whole body). A request read while one ahead of it is still being answered is not late:
its time starts when the answers ahead of it are complete (HTTP/1.1 answers in order; a 408 then
would have dropped the answer being computed, sec39). A request already answered before its body was
read whole (an early 404) gets no second answer: its connection is closed when the body stalls.
The connection's keep-alive timer does this too (`_keep_alive_check`): no timer per request.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, cast

import httptools
from starlette.types import Message, Receive, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

from mcp_center.gateway._coalescing import MAX_HELD_BYTES, CoalescingTransport

__all__ = [
    "MAX_HELD_BYTES",
    "PIPELINE_READ_AHEAD",
    "REQUEST_TIMEOUT_S",
    "CoalescingHttpToolsProtocol",
    "CoalescingTransport",
    "DirectExchange",
    "DirectHandler",
    "DirectRoute",
]

logger = logging.getLogger(__name__)

DirectHandler = Callable[[Receive, Send], Awaitable[None]]
"""Serves one direct request: `receive` gives only `http.disconnect` (the body was given to `take`)."""


class DirectRoute(Protocol):
    """What an ASGI app offers uvicorn's protocol as its `direct_route` attribute (see the module docstring)."""

    @property
    def response_headers(self) -> Sequence[tuple[bytes, bytes]]:
        """Headers added to every direct response (after the app's own)."""
        ...

    def wants(self, url: bytes, headers: Sequence[tuple[bytes, bytes]]) -> Mapping[bytes, str] | None:
        """Whether to read this POST (`url` as sent, `headers` lower-case names) whole and offer it to
        `take`: not None only for a declared length the route accepts (the body is held in memory).
        What it returns is what the route read of `headers` (its choice), handed back to `take`, so
        that the headers are gone through once per request (issue 12)."""
        ...

    def take(
        self, url: bytes, headers: Sequence[tuple[bytes, bytes]], body: bytes, read: Mapping[bytes, str]
    ) -> DirectHandler | None:
        """The handler of this request (`read`: what `wants` returned for it), or None: uvicorn's
        request cycle serves it (no side effects)."""
        ...


EOF_PROBES_S = (0.02, 0.2, 2.0)
"""Seconds after an agent's end (FIN) arrived behind whole requests at which the connection is
probed, while no answer has started: the same FIN is sent by an agent that half-closed and waits
for its answer and by one that closed its socket to cancel (2026-07-28), and only a write tells
them apart. Each probe writes an interim `100 Continue` (HTTP/1.1 clients skip 1xx answers); an
agent that closed its socket answers it with a reset, which the next write (the next probe or the
answer) meets: `connection_lost`, and the call is cancelled (issue 12, R-3.8)."""

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

REQUEST_TIMEOUT_S = 30.0
"""Seconds a request's head may take to arrive whole (from its first byte; the first request's from
the connection's start), and a read of its body to follow the one before; then 408, and the
connection is closed (`Settings.request_timeout_s`, `MCP_CENTER_REQUEST_TIMEOUT_S`; sec37, R-7.2)."""

PIPELINE_READ_AHEAD = 4
"""Requests pipelined behind the one being answered that are read (queued, as uvicorn queues them)
before reading pauses: while it reads, the connection's end is seen and cancels the request being
answered; past this many it is seen only once that request is answered (as in stock uvicorn)."""


class _Disconnect:
    """Stands in for a request cycle's `message_event` (uvicorn's `connection_lost` sets it), with the
    exchange's disconnect watch (`DirectExchange.watch`): called when it is set before the answer is
    complete. No reference back to the exchange (a cycle would leave every exchange to the collector)."""

    __slots__ = ("_loop", "is_set_", "waiter", "watch")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.is_set_ = False
        self._loop = loop
        self.waiter: asyncio.Future[None] | None = None
        self.watch: Callable[[], object] | None = None

    def set(self) -> None:
        self.is_set_ = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)
        watch = self.watch
        if watch is not None:
            self.watch = None
            self._loop.call_soon(watch)

    async def wait(self) -> None:
        if not self.is_set_:
            if self.waiter is None:
                self.waiter = self._loop.create_future()
            await self.waiter


class DirectExchange:
    """One direct request's answer, in uvicorn's place: its ASGI `receive` (the exchange itself, called)
    and `send`, the attributes uvicorn's protocol reads from its current cycle (`response_complete`,
    `disconnected`, `keep_alive`, `message_event`), and `watch` for the agent going (issue 12).

    Args:
        protocol: The connection's protocol.
        keep_alive: The connection stays open after the answer.
    """

    def __init__(self, protocol: CoalescingHttpToolsProtocol, keep_alive: bool) -> None:
        self._protocol = protocol
        transport = protocol.coalescing
        assert transport is not None  # there is one from `connection_made` on, before any request is parsed
        self._transport = transport
        self.keep_alive = keep_alive
        self.disconnected = False
        self.response_started = False
        self.response_complete = False
        self.message_event = _Disconnect(protocol.loop)
        self._chunked = False
        self._expected = 0
        self._head: bytes | None = None
        """The response's head, written with its first body chunk (one write, no flush scheduled)."""
        self.task: asyncio.Task[None] | None = None
        """The task that runs it (`run`), in the protocol's `tasks` until `run` ends."""
        self._logged: tuple[bytes, list[tuple[bytes, bytes]]] | None = (
            (protocol.url, protocol.headers) if protocol.access_log else None
        )
        """The request's URL and headers for its access line, kept when it is claimed: by the time
        it is answered, the protocol's own belong to a request pipelined behind it."""

    @property
    def flow(self) -> FlowControl:
        """The agent connection's flow control (uvicorn's, as its cycle has `flow`): an answer written
        while its writing is paused waits in `send` until the agent reads."""
        return self._protocol.flow

    def watch(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call `callback` once, on the event loop (`call_soon`), when the agent's connection is lost
        before the answer is complete (at once when it already was), instead of a task waiting in
        `receive` (issue 12, R-8.3: a task per call only to watch cost each call that ran long a
        task's start, wake-ups and cancellation). One watch at a time (a direct request carries one
        call): a second replaces the first. Returns what stops the watch. A connection whose
        reading was paused (requests queued behind this one) reads again, as `receive` makes it,
        or its end would go unseen; the protocol tells this exchange of it even when requests are
        queued behind it (`CoalescingHttpToolsProtocol.connection_lost`)."""
        if self.disconnected:
            self._protocol.loop.call_soon(callback)
            return _nothing_to_stop
        flow = self._protocol.flow
        if flow.read_paused:
            flow.resume_reading()
        event = self.message_event
        event.watch = callback
        return functools.partial(setattr, event, "watch", None)  # stops it without a frame of its own

    async def __call__(self) -> Message:
        """ASGI `receive`: waits until the agent has gone (or the answer is complete): `http.disconnect`."""
        if not self.disconnected and not self.response_complete:
            self._protocol.flow.resume_reading()
            await self.message_event.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        """Write `http.response.start` and `http.response.body` messages as uvicorn's cycle does
        (no content-length: chunked); nothing once the agent has gone. The head leaves with the first
        body chunk, in one write; the last chunk is written at once (issue 12: no flush left scheduled).

        Raises:
            RuntimeError: messages out of order, or a body that does not match its declared length.
        """
        flow = self._protocol.flow
        if flow.write_paused and not self.disconnected:
            await flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
            self.response_started = True
            status: int = message["status"]
            logged = self._logged
            if logged is not None:
                protocol = self._protocol
                protocol.access_logger.info(
                    '%s - "%s %s HTTP/%s" %d',
                    await protocol.logged_client(logged[1]),
                    "POST",
                    logged[0].decode("latin-1"),
                    "1.1",
                    status,
                )
            content = [STATUS_LINE[status]]
            length: int | None = None
            for name, value in (
                *self._protocol.server_state.default_headers,
                *message.get("headers", ()),
                *self._protocol.direct_headers,
            ):
                if name == b"content-length":
                    length = int(value)
                content.extend((name, b": ", value, b"\r\n"))
            if length is None:
                if status not in (204, 304):
                    self._chunked = True
                    content.append(b"transfer-encoding: chunked\r\n")
            else:
                self._expected = length
            if not self.keep_alive:
                content.append(b"connection: close\r\n")
            content.append(b"\r\n")
            self._head = b"".join(content)
            return
        if self.response_complete or message["type"] != "http.response.body":
            raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent.")
        body: bytes = message.get("body", b"")
        more_body: bool = message.get("more_body", False)
        if self._chunked:
            chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
            data = chunk if more_body else chunk + b"0\r\n\r\n"
        else:
            self._expected -= len(body)
            if self._expected < 0:
                raise RuntimeError("Response content longer than Content-Length")
            data = body
        head = self._head
        if head is not None:
            self._head = None
            data = head + data
        if more_body:
            self._transport.write(data)  # leaves at the end of this step (an SSE event: at once)
        else:
            self._transport.write_now(data)  # (a call, not its lines: the profiler marks the answer written by it)
        if not more_body:
            if self._expected != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response_complete = True
            event = self.message_event
            event.watch = None  # the answer is complete: its agent going is no news
            if event.waiter is None:  # `set` without its call (no watch, nobody waits), issue 12
                event.is_set_ = True
            else:
                event.set()
            # As uvicorn's cycle ends one (its lines here: a frame less per request).
            protocol = self._protocol
            if not self.keep_alive:
                protocol.transport_for_cycles.close()
            protocol.on_response_complete()

    async def run(self, handler: DirectHandler) -> None:
        """Serve the request with `handler`; a failure is answered as uvicorn answers a failing app.
        Its task leaves the protocol's `tasks` when this returns (no done callback: one event-loop
        step less per request, issue 12)."""
        try:
            try:
                await handler(self, self.send)
            except BaseException:  # as uvicorn's cycle: logged and answered, never re-raised into the loop
                logger.exception("Exception in direct request handler")
                await self._failed()
            else:
                if not self.response_complete and not self.disconnected:
                    logger.error("direct request handler returned without completing its response")
                    await self._failed()
        finally:
            if self.task is not None:
                self._protocol.tasks.discard(self.task)

    async def _failed(self) -> None:
        """The handler failed: a 500 when nothing was sent yet, else the connection is closed."""
        if not self.response_started:
            await self._server_error()
        else:
            self._protocol.transport_for_cycles.close()

    async def _server_error(self) -> None:
        self.keep_alive = False
        await self.send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"21")],
            }
        )
        await self.send({"type": "http.response.body", "body": b"Internal Server Error", "more_body": False})


def _nothing_to_stop() -> None:
    """What stops a watch that has nothing left to watch."""


async def _nothing(*_args: Any) -> Any:
    """The app behind `_proxy_layer` (only the scope it is given matters), and its `receive`/`send`."""
    return None


@functools.lru_cache(maxsize=8)
def _proxy_layer(trusted: str | tuple[str, ...]) -> ProxyHeadersMiddleware:
    """uvicorn's proxy-headers layer for the `trusted` hosts (`forwarded_allow_ips`), built once."""
    return ProxyHeadersMiddleware(_nothing, trusted_hosts=list(trusted) if isinstance(trusted, tuple) else trusted)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request cycles write through one `CoalescingTransport` per connection.

    Its request cycles also skip the access log's line when `uvicorn.access` would drop it (`serve
    --log-level warning` or above): uvicorn decides by the logger having handlers only, and so built
    the line's client address and quoted path for every response before `logging` dropped it (issue 12).
    """

    coalescing: CoalescingTransport | None = None
    """The connection's coalescing transport, from `connection_made` on."""
    _direct: DirectRoute | None = None
    _direct_body: list[bytes] | None = None
    """The body of a request offered to the direct route, while it is read."""
    _direct_read: Mapping[bytes, str] = {}
    """What the direct route's `wants` read of that request's headers, for its `take`."""
    direct_headers: Sequence[tuple[bytes, bytes]] = ()
    """The direct route's `response_headers`."""
    _active: RequestResponseCycle | DirectExchange | None = None
    """The request being answered now (uvicorn's `cycle` names the last one parsed: one pipelined
    behind it, once there is one, so its `connection_lost` would tell only that one)."""
    _in_message = False
    """A request's head or body is being read (its end is not parsed yet)."""
    _eof = False
    """The agent half-closed (sent its end) after whole requests: closed once they are answered."""
    request_timeout: float = REQUEST_TIMEOUT_S
    """`REQUEST_TIMEOUT_S`, or serve's setting (`with_request_timeout`)."""
    _in_head = False
    """A request's head is being read (its end is not parsed yet)."""
    _step: float = REQUEST_TIMEOUT_S
    """The longest the keep-alive timer is set for (the shorter of the two timeouts): it is then never
    due after what it watches, whichever that is, and so is never set anew for a request (sec37)."""
    _read_by: float | None = None
    """Loop time by which the request being read must be whole (its head) or read again (its body),
    while one is being read (and from the connection's start until its first request is read)."""
    _idle_since: float | None = None
    """Loop time the connection became idle (its last response complete, nothing read since); None while not."""

    @classmethod
    def with_request_timeout(cls, seconds: float) -> type[CoalescingHttpToolsProtocol]:
        """This protocol with `request_timeout` set to `seconds` (> 0), for uvicorn's `http` (R-7.2)."""
        return type(cls.__name__, (cls,), {"request_timeout": seconds})

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self.coalescing = CoalescingTransport(transport, self.loop)
        # The first request's head is due `request_timeout` from now: the keep-alive timer watches it.
        self._read_by = self.loop.time() + self.request_timeout
        self._step = min(self.request_timeout, self.timeout_keep_alive)
        self.timeout_keep_alive_task = self.loop.call_later(self._step, self._keep_alive_check)
        # Per connection, as uvicorn's own `hasHandlers` check: a level lowered later counts from the next connection.
        self.access_log = self.access_log and self.access_logger.isEnabledFor(logging.INFO)
        route: DirectRoute | None = getattr(self.config.app, "direct_route", None)
        if route is not None:
            self._direct = route
            self.direct_headers = tuple(route.response_headers)

    async def logged_client(self, headers: list[tuple[bytes, bytes]]) -> str:
        """The client address an access line names ("host:port", "" when unknown), as uvicorn's cycle
        would log it: the connection's peer, or, when `serve` trusts proxy headers from that peer
        (uvicorn's `proxy_headers` and `forwarded_allow_ips`), the address the `X-Forwarded-For` of
        `headers` (the request's, lower-case names) names, found by uvicorn's own `ProxyHeadersMiddleware`."""
        client = self.client
        config = self.config
        if config.proxy_headers and client:
            trusted = config.forwarded_allow_ips
            scope: dict[str, Any] = {"type": "http", "client": client, "headers": headers, "scheme": "http"}
            layer = _proxy_layer(tuple(trusted) if isinstance(trusted, list) else trusted)
            await layer(cast("Any", scope), _nothing, _nothing)
            client = scope["client"]
        return "%s:%d" % client if client else ""  # noqa: UP031 - uvicorn's own format

    @property
    def transport_for_cycles(self) -> asyncio.Transport:
        """The transport responses are written to (the coalescing one)."""
        return self.coalescing or self.transport

    def on_message_begin(self) -> None:
        """A request begins: its URL and headers are collected as uvicorn collects them; uvicorn's ASGI
        scope (a dict of nine entries and a copy of the app's state) is built only for a request its
        own cycle serves (`_start_cycle`), never for a direct one (issue 12, R-8.3)."""
        self._in_message = self._in_head = True
        self.url = b""
        self.expect_100_continue = False
        self.headers = []

    def on_headers_complete(self) -> None:
        self._in_head = False
        route = self._direct
        parser = self.parser
        cycle = self.cycle  # None before the first request (uvicorn's own type says otherwise)
        if (
            route is not None
            and parser is not None
            and self.limit_concurrency is None
            and not self.expect_100_continue
            and (cycle is None or cycle.response_complete)  # pyright: ignore[reportUnnecessaryComparison]
            and parser.get_method() == b"POST"
            and parser.get_http_version() == "1.1"
            and not parser.should_upgrade()
            and (read := route.wants(self.url, self.headers)) is not None
        ):
            self._direct_read = read
            self._direct_body = []
            return
        self._direct_body = None
        self._start_cycle()

    def on_body(self, body: bytes) -> None:
        if self._direct_body is not None:
            self._direct_body.append(body)  # bounded: `wants` accepted its declared length
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_message = False
        self._read_by = None
        if self._direct_body is None:
            super().on_message_complete()
            return
        body = b"".join(self._direct_body)
        self._direct_body = None
        assert self._direct is not None
        handler = self._direct.take(self.url, self.headers, body, self._direct_read)
        self._direct_read = {}
        if handler is None:  # uvicorn's own cycle, with the body already read
            self._start_cycle()
            self.cycle.body = bytearray(body)
            self.cycle.more_body = False
            self.cycle.message_event.set()
            return
        parser = self.parser
        exchange = DirectExchange(self, parser is not None and parser.should_keep_alive())  # keep_alive
        self.cycle = exchange  # pyright: ignore[reportAttributeAccessIssue] - what uvicorn reads of a cycle
        self._active = exchange
        task = exchange.task = self.loop.create_task(exchange.run(handler))
        self.tasks.add(task)  # until `run` ends (its own `finally`, not a done callback)

    def _start_cycle(self) -> None:
        url, headers, expect_100_continue = self.url, self.headers, self.expect_100_continue
        super().on_message_begin()  # the request's scope, as uvicorn builds it when a request begins
        self.url, self.headers, self.expect_100_continue = url, headers, expect_100_continue
        self.scope["headers"] = headers
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        # A new cycle (not an upgrade, which keeps the old one): it has not run yet (its task
        # starts on a later step), so its writes all go through the connection's coalescing buffer.
        if cycle is not before and self.coalescing is not None:
            cycle.transport = self.coalescing
        pipeline = self.pipeline
        if pipeline and pipeline[0][0] is cycle and len(pipeline) <= PIPELINE_READ_AHEAD:
            # Queued behind the request being answered: uvicorn paused reading, so the agent closing
            # its connection would go unseen and its running request uncancelled (issue 12).
            self.flow.resume_reading()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        """uvicorn starts the request its cycle answers now (`_active`)."""
        self._active = cycle
        super()._start_asgi_task(cycle, app)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, its lines here (two frames less per read, issue 12): the connection is not idle
        (`_keep_alive_check`), `data` is parsed, a parse error answered 400; then a request left
        incomplete is given `request_timeout`: its head is due that long after its first byte, its
        body's next read that long after this one (`_read_by`), watched by the keep-alive timer (set
        here when it is not: it is never due later than that, `_step`; sec37, R-7.2), a direct
        request's body as any other (sec39)."""
        self._idle_since = None
        try:
            self.parser.feed_data(data)  # pyright: ignore[reportOptionalMemberAccess] - None once lost, as uvicorn's
        except httptools.HttpParserError:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self._read_by = None  # the connection is the upgraded protocol's from now
                self.handle_websocket_upgrade()
                return
            self._unsupported_upgrade_warning()
        if self._in_message:  # in line: no frame when a head and its body come in two reads (issue 12)
            if not self._in_head or self._read_by is None:
                self._read_by = self.loop.time() + self.request_timeout
            if self.timeout_keep_alive_task is None:
                self.timeout_keep_alive_task = self.loop.call_later(self._step, self._keep_alive_check)

    def _request_stalled(self) -> None:
        """A request was not read whole in time (`_read_by`): 408, and the connection is closed; closed
        without one when the late body is that of a request whose answer has started or is complete
        (an early 404: a second answer would answer nothing, sec39). Not while reading is paused (the
        agent waits for the server then) or an agent waits for its `100 Continue`: its time starts
        again (sec37, R-7.2). Not while a request ahead of it is still being answered: its time
        starts when that answer is complete (`on_response_complete`; closing then dropped that
        answer, sec39)."""
        cycle = self.cycle  # None before the first request; a `DirectExchange` never waits for one
        if self.flow.read_paused or getattr(cycle, "waiting_for_100_continue", False):
            self._read_by = self.loop.time() + self.request_timeout
            self.timeout_keep_alive_task = self.loop.call_later(self._step, self._keep_alive_check)
            return
        self._read_by = None
        active = self._active
        if active is not None and not active.response_complete and (self._in_head or active is not cycle):
            return  # behind a request being answered: its time starts once that answer is complete
        if (
            self._direct_body is None
            and not self._in_head
            and active is not None
            and active is cycle
            and active.response_started
        ):
            self.transport_for_cycles.close()  # its own body is late, its answer started or sent: no second one
            return
        self._answer_408(f"Request not received within {self.request_timeout:g} s.")

    def _due_from_now(self) -> None:
        """An answer is complete while a request behind it is being read (its head, or the body of one
        started now): that request's time starts now (its `_read_by`, watched by the keep-alive timer;
        `_request_stalled` left it unwatched while the answer was not complete, sec39)."""
        self._read_by = self.loop.time() + self.request_timeout
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(self._step, self._keep_alive_check)

    def _answer_408(self, warning: str) -> None:
        """Log `warning`, answer 408 and close the connection (what was being read is dropped)."""
        self._direct_body = None
        self.logger.warning(warning)
        message = b"Request not received in time."
        content = [STATUS_LINE[408]]
        for name, value in self.server_state.default_headers:
            content.extend((name, b": ", value, b"\r\n"))
        content.extend(
            (
                b"content-type: text/plain; charset=utf-8\r\n",
                b"content-length: %d\r\n" % len(message),
                b"connection: close\r\n\r\n",
                message,
            )
        )
        transport = self.transport_for_cycles
        transport.write(b"".join(content))
        transport.close()

    def eof_received(self) -> bool | None:  # pyright: ignore[reportIncompatibleMethodOverride] - asyncio's own type
        """The agent's end (FIN) arrived. After whole requests whose answer has not started, it may
        have half-closed (`shutdown(SHUT_WR)`) and be waiting for them: the connection stays open
        for writing (True), is probed (`EOF_PROBES_S`: an agent that closed its socket is told from
        one that half-closed only by a write) and closed once they are answered. Mid-request, idle,
        or once an answer has started (a stream, whose own writes would not be seen for a while),
        the connection is closed at once as uvicorn does (`connection_lost`: what is being answered
        is cancelled) (issue 12, R-3.8)."""
        active = self._active
        if (
            self._in_message
            or active is None
            or active.response_started
            or self.scheme != "http"
            or (isinstance(active, RequestResponseCycle) and active.scope["http_version"] != "1.1")
        ):
            return None  # no 1xx to an HTTP/1.0 agent (RFC 9110, 15.2)
        self._eof = True
        self._probe(0)
        return True

    def _probe(self, done: int) -> None:
        """Write the interim answer that tells a closed agent from a half-closed one (`EOF_PROBES_S`:
        at once, then after each delay), unless the answer has started (its own writes probe then)
        or the connection is gone."""
        active = self._active
        transport = self.coalescing
        if (
            active is None
            or active.response_started
            or active.response_complete
            or transport is None
            or transport.is_closing()
        ):
            return
        transport.write_now(_CONTINUE)
        if done < len(EOF_PROBES_S):
            self.loop.call_later(EOF_PROBES_S[done], self._probe, done + 1)

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's, and the request being answered is told too when it is not uvicorn's `cycle` (one
        is pipelined behind it): its disconnect watch fires (issue 12, R-3.8)."""
        active = self._active
        if active is not None and active is not self.cycle and not active.response_complete:
            active.disconnected = True
            active.message_event.set()
        self._unset_keepalive_if_required()  # uvicorn's only when `exc` is None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        """A response is complete (uvicorn calls this right after its last `write`): it leaves now,
        not at the end of the step, which still unwinds the app first. Then uvicorn's lines: the
        next pipelined request starts, or the connection is idle from now, and closed when it still
        is after `timeout_keep_alive` seconds (`_keep_alive_check`: one timer per connection while
        requests keep coming, not one made and cancelled per request, issue 12)."""
        coalescing = self.coalescing
        if coalescing is not None and coalescing.pending:
            coalescing.flush()
        pipeline = self.pipeline
        last = self._eof and not pipeline
        self.server_state.total_requests += 1
        if not self.transport.is_closing():
            flow = self.flow
            if flow.read_paused:
                flow.resume_reading()
            if pipeline:
                cycle, app = pipeline.pop()
                self._start_asgi_task(cycle, app)
                if self._in_message:  # (its body, or a head behind it)
                    self._due_from_now()
            elif self._in_message:
                self._due_from_now()
            else:
                self._idle_since = self.loop.time()
                if self.timeout_keep_alive_task is None:  # else it is due within `_step`: soon enough
                    self.timeout_keep_alive_task = self.loop.call_later(self._step, self._keep_alive_check)
        if last:  # the agent half-closed: nothing more will come (`eof_received`)
            self.transport_for_cycles.close()

    def _keep_alive_check(self) -> None:
        """The keep-alive timer: the connection is closed when it has been idle (no byte read since
        its last response was complete) for `timeout_keep_alive` seconds, as uvicorn's own timer
        closes it, or a request being read is late (`_read_by`: `_request_stalled`); when neither is
        due yet, the timer is set for the rest; when neither applies, the next response or
        incomplete read sets it."""
        self.timeout_keep_alive_task = None
        idle_since = self._idle_since
        if self._read_by is not None and not self.transport.is_closing():  # also when answered before read whole
            due, expired = self._read_by, self._request_stalled
        elif idle_since is not None:
            due, expired = idle_since + self.timeout_keep_alive, self.timeout_keep_alive_handler
        else:
            return
        left = due - self.loop.time()
        if left > 0:
            self.timeout_keep_alive_task = self.loop.call_later(min(left, self._step), self._keep_alive_check)
        else:
            expired()

    def shutdown(self) -> None:
        """The server stops: what a finished response still holds is written before uvicorn closes the connection."""
        if self.coalescing is not None:
            self.coalescing.flush()
        super().shutdown()
