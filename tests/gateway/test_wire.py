"""The host's HTTP/1.1 protocol: a response's writes coalesced per event-loop step (`gateway/wire.py`, R-8.3)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mcp_center.gateway.wire import (
    MAX_HELD_BYTES,
    CoalescingHttpToolsProtocol,
    CoalescingTransport,
    DirectExchange,
    DirectHandler,
)
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


class _Recorder(asyncio.Transport):
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0


async def _next_step() -> None:
    """Until the loop has run what was scheduled with `call_soon` before now (its ready queue is FIFO)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_soon(done.set_result, None)
    await done


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_writes_of_one_step_leave_in_one_write_at_its_end() -> None:
    real = _Recorder()
    transport = CoalescingTransport(real, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"")
    transport.write(b'{"ok":true}')
    assert real.writes == []
    assert transport.get_write_buffer_size() == len(b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}')
    await _next_step()
    assert real.writes == [b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}']
    transport.write(b"event: message\n\n")  # a later step: its own write
    await _next_step()
    assert real.writes[1:] == [b"event: message\n\n"]


async def test_close_writes_what_is_held_first_and_a_closing_connection_gets_nothing() -> None:
    real = _Recorder()
    transport = CoalescingTransport(real, asyncio.get_running_loop())
    transport.write(b"last words")
    transport.close()
    assert real.writes == [b"last words"] and real.closed
    transport.write(b"too late")
    await _next_step()
    assert real.writes == [b"last words"]


async def test_a_large_body_is_handed_on_at_once_for_flow_control() -> None:
    real = _Recorder()
    transport = CoalescingTransport(real, asyncio.get_running_loop())
    transport.write(b"h")
    transport.write(b"x" * MAX_HELD_BYTES)
    assert real.writes == [b"h" + b"x" * MAX_HELD_BYTES]
    await _next_step()
    assert len(real.writes) == 1


def _app(proceed: anyio.Event) -> Starlette:
    async def json(request: Request) -> Response:
        return JSONResponse({"echo": (await request.body()).decode()})

    async def stream(request: Request) -> StreamingResponse:
        async def events() -> AsyncIterator[bytes]:
            yield b"data: one\n\n"
            await proceed.wait()  # the client saw the first event while the response is still open
            yield b"data: two\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/json", json, methods=["POST"]), Route("/stream", stream)])


async def _read_until(stream: anyio.abc.ByteStream, marker: bytes, seen: bytearray) -> bytes:
    while marker not in seen:
        seen += await stream.receive()
    end = seen.index(marker) + len(marker)
    taken = bytes(seen[:end])
    del seen[:end]
    return taken


async def _echoed(stream: anyio.abc.ByteStream, text: str, seen: bytearray) -> None:
    """POST `text` to `_app`'s `/json` on `stream` and read its 200 answer (what follows stays in `seen`)."""
    await stream.send(b"POST /json HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(text), text.encode()))
    head = await _read_until(stream, b"\r\n\r\n", seen)
    assert head.startswith(b"HTTP/1.1 200")
    body = b'{"echo":"' + text.encode() + b'"}'
    assert await _read_until(stream, body, seen) == body


@asynccontextmanager
async def _connected(proceed: anyio.Event, http: type[asyncio.Protocol]) -> AsyncGenerator[anyio.abc.ByteStream]:
    """One connection to `_app(proceed)` served by uvicorn with the protocol `http` (within 10 s)."""
    async with serve_loopback(_app(proceed), http=http) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                yield stream


async def test_uvicorn_with_the_protocol_answers_keep_alive_requests_and_streams_events_as_sent() -> None:
    proceed = anyio.Event()
    async with _connected(proceed, CoalescingHttpToolsProtocol) as stream:
        seen = bytearray()
        for text in ("first", "second"):  # one connection, two requests
            await _echoed(stream, text, seen)
        await stream.send(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
        assert b"data: one" in await _read_until(stream, b"data: one\n\n", seen)
        proceed.set()
        assert b"data: two" in await _read_until(stream, b"data: two\n\n", seen)


class _ShortKeepAlive(CoalescingHttpToolsProtocol):
    """The host's protocol with a keep-alive timeout of `KEEP_ALIVE_S`."""

    KEEP_ALIVE_S = 0.3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.KEEP_ALIVE_S


async def test_an_idle_connection_is_closed_after_the_keep_alive_timeout_counted_from_its_last_answer() -> None:
    """One keep-alive timer per connection (issue 12): a connection answered again before the timer
    set after its first answer fires is closed `timeout_keep_alive` after its last answer, not earlier."""
    async with _connected(anyio.Event(), _ShortKeepAlive) as stream:
        seen = bytearray()
        await _echoed(stream, "first", seen)
        await anyio.sleep(_ShortKeepAlive.KEEP_ALIVE_S * 2 / 3)  # idle, but for less than the timeout
        await _echoed(stream, "second", seen)
        answered = anyio.current_time()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()  # the server closes the idle connection
        assert anyio.current_time() - answered >= _ShortKeepAlive.KEEP_ALIVE_S - 0.02


_WRITTEN: list[bytes] = []
"""What reached the real transport of `_RecordingProtocol`'s connections."""


class _RecordingProtocol(CoalescingHttpToolsProtocol):
    """The host's protocol, recording what reaches the connection's real transport (asyncio's, in tests)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        real_write = transport.write

        def write(data: bytes | bytearray | memoryview) -> None:
            _WRITTEN.append(bytes(data))
            real_write(data)

        transport.write = write  # pyright: ignore[reportAttributeAccessIssue] - a Python transport
        super().connection_made(transport)


async def test_a_complete_answer_leaves_as_one_write_before_the_app_has_returned() -> None:
    seen_by_app: list[list[bytes]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok", "more_body": False})
        seen_by_app.append(list(_WRITTEN))  # same step: nothing has yielded since

    _WRITTEN.clear()
    async with serve_loopback(app, http=_RecordingProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                await _read_until(stream, b"\r\n\r\nok", bytearray())
    (writes,) = seen_by_app
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\nok")


_PROTOCOLS: list[CoalescingHttpToolsProtocol] = []


class _KeptProtocol(CoalescingHttpToolsProtocol):
    """The host's protocol, each connection's instance kept for the test to look at."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        super().connection_made(transport)
        _PROTOCOLS.append(self)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_the_access_line_is_built_only_when_uvicorn_access_would_log_it() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok", "more_body": False})

    async def one_request(port: int, path: bytes) -> None:
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(b"GET " + path + b" HTTP/1.1\r\nhost: x\r\n\r\n")
            await _read_until(stream, b"\r\n\r\nok", bytearray())

    access = logging.getLogger("uvicorn.access")
    lines = _Lines()
    _PROTOCOLS.clear()
    async with serve_loopback(app, http=_KeptProtocol) as base:  # uvicorn at --log-level warning
        port = int(base.rsplit(":", 1)[1])
        level = access.level
        access.addHandler(lines)
        try:
            with anyio.fail_after(10):
                await one_request(port, b"/quiet")
                access.setLevel(logging.INFO)  # counts from the next connection on
                await one_request(port, b"/logged?x=1")
        finally:
            access.setLevel(level)
            access.removeHandler(lines)
    quiet, logged = _PROTOCOLS
    assert quiet.access_log is False and logged.access_log is True
    assert len(lines.lines) == 1 and "/logged?x=1" in lines.lines[0] and "200" in lines.lines[0]


class _Route:
    """A `DirectRoute` for the tests: POSTs to `/direct` are read whole; a body `decline` is left to
    the ASGI app; `stream` is answered as SSE without a length, `wait` waits for the agent to go,
    `gated` waits for `gate` (watching for the agent to go: `gone`, noted in `went`),
    `fail` raises, `watch` watches for the agent to go (`DirectExchange.watch`, a watch stopped, then one
    kept, noted in `went`) and `watch-complete` answers while watching; anything else is echoed as JSON."""

    response_headers = ((b"x-direct", b"yes"),)

    def __init__(self) -> None:
        self.taken: list[bytes] = []
        self.gone = anyio.Event()
        self.went: list[str] = []
        self.gate = anyio.Event()
        """What a `gated` request (direct or not) waits for before it is answered."""

    def wants(self, url: bytes, headers: Sequence[tuple[bytes, bytes]]) -> Mapping[bytes, str] | None:
        return {b"length": dict(headers)[b"content-length"].decode()} if url == b"/direct" else None

    def take(
        self, url: bytes, headers: Sequence[tuple[bytes, bytes]], body: bytes, read: Mapping[bytes, str]
    ) -> DirectHandler | None:
        assert read == {b"length": str(len(body))}  # what `wants` read of this request's headers
        if body == b"decline":
            return None
        self.taken.append(body)

        async def handler(receive: Receive, send: Send) -> None:
            if body == b"fail":
                raise RuntimeError("a bug in the handler")
            if body.startswith(b"watch"):
                assert isinstance(receive, DirectExchange)
                stop = receive.watch(lambda: self.went.append("stopped"))
                stop()
                receive.watch(lambda: (self.went.append("kept"), self.gone.set()))
                if body == b"watch":
                    await send({"type": "http.response.start", "status": 200, "headers": []})
                    await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
                    await self.gone.wait()  # no task waits in `receive`: the protocol calls the watch
                    return
            if body == b"gated":
                assert isinstance(receive, DirectExchange)
                receive.watch(lambda: (self.went.append("gone"), self.gone.set()))
                await self.gate.wait()
            if body == b"wait":
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
                assert (await receive())["type"] == "http.disconnect"
                self.gone.set()
                return
            if body == b"stream":
                await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"x/y")]})
                await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
                await send({"type": "http.response.body", "body": b"data: two\n\n", "more_body": False})
                return
            echoed = b'{"direct":"' + body + b'"}'
            headers = [(b"content-length", str(len(echoed)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": echoed, "more_body": False})

        return handler


class _WithRoute:
    """An ASGI app (echoing `asgi:<body>`, a body `gated` once `route.gate` is set, keeping each
    request's scope) that offers `route` as its `direct_route`."""

    def __init__(self, route: _Route) -> None:
        self.direct_route = route
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.scopes.append(scope)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        if body == b"gated":
            await self.direct_route.gate.wait()
        answer = b"asgi:" + body
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(answer))]}
        )
        await send({"type": "http.response.body", "body": answer, "more_body": False})


def _post(path: bytes, body: bytes, *extra: bytes) -> bytes:
    return (
        b"POST "
        + path
        + b" HTTP/1.1\r\nhost: x\r\n"
        + b"".join(extra)
        + b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )


async def test_direct_requests_and_asgi_ones_share_a_keep_alive_connection_in_order() -> None:
    route = _Route()
    app = _WithRoute(route)
    async with serve_loopback(app, http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                seen = bytearray()
                await stream.send(_post(b"/direct", b"hello"))
                head = await _read_until(stream, b"\r\n\r\n", seen)
                assert head.startswith(b"HTTP/1.1 200") and b"x-direct: yes\r\n" in head
                assert await _read_until(stream, b'{"direct":"hello"}', seen) == b'{"direct":"hello"}'
                await stream.send(_post(b"/direct", b"decline"))  # the route declines: uvicorn's cycle, body kept
                assert (await _read_until(stream, b"asgi:decline", seen)).endswith(b"asgi:decline")
                await stream.send(_post(b"/direct", b"stream"))  # no length: chunked, as uvicorn writes it
                streamed = await _read_until(stream, b"0\r\n\r\n", seen)
                assert b"transfer-encoding: chunked\r\n" in streamed
                assert streamed.endswith(b"\r\n\r\nb\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n")
                # Pipelined behind a direct request: queued by uvicorn, answered after it.
                await stream.send(_post(b"/direct", b"first") + _post(b"/other", b"second"))
                both = await _read_until(stream, b"asgi:second", seen)
                assert both.index(b'{"direct":"first"}') < both.index(b"asgi:second")
                await stream.send(_post(b"/direct", b"expects", b"expect: 100-continue\r\n"))  # never direct
                assert (await _read_until(stream, b"asgi:expects", seen)).endswith(b"asgi:expects")
    assert route.taken == [b"hello", b"stream", b"first"]
    # uvicorn's scope of each request its cycle served (built only then, issue 12): its own path and headers.
    seen_scopes = [(scope["method"], scope["path"], scope["headers"]) for scope in app.scopes]
    expect = (b"expect", b"100-continue")
    assert seen_scopes == [
        ("POST", "/direct", [(b"host", b"x"), (b"content-length", b"7")]),
        ("POST", "/other", [(b"host", b"x"), (b"content-length", b"6")]),
        ("POST", "/direct", [(b"host", b"x"), expect, (b"content-length", b"7")]),
    ]


async def test_a_direct_handler_sees_its_agent_go_and_a_failing_one_is_answered_500() -> None:
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/direct", b"wait"))
                await _read_until(stream, b"data: one\n\n", bytearray())
            await route.gone.wait()  # the handler's `receive` said http.disconnect
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/direct", b"fail"))
                answer = await _read_until(stream, b"\r\n\r\nInternal Server Error", bytearray())
    assert answer.startswith(b"HTTP/1.1 500") and b"connection: close\r\n" in answer


async def test_a_direct_request_watched_for_its_agent_going_is_told_once_and_only_when_it_goes() -> None:
    """`DirectExchange.watch` (issue 12: no task per call to watch a disconnect): a watch is called when
    the connection is lost before the answer is complete, a stopped one never, a complete answer
    calls none; and a direct request's task leaves the protocol's `tasks` when it ends."""
    route = _Route()
    _PROTOCOLS.clear()
    async with serve_loopback(_WithRoute(route), http=_KeptProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                seen = bytearray()
                await stream.send(_post(b"/direct", b"watch-complete"))
                assert await _read_until(stream, b'{"direct":"watch-complete"}', seen)
                assert route.went == [] and _PROTOCOLS[0].tasks == set()
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/direct", b"watch"))
                await _read_until(stream, b"data: one\n\n", bytearray())
                assert _PROTOCOLS[1].tasks != set()  # the handler waits
            await route.gone.wait()  # set by the kept watch once the connection was lost
            while _PROTOCOLS[1].tasks:  # the handler's last step, right after the watch's
                await _next_step()
    assert route.went == ["kept"]


async def _until_closed(stream: anyio.abc.ByteStream, seen: bytearray) -> bytes:
    """What arrives until the server closes the connection."""
    while True:
        try:
            seen += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return bytes(seen)


@pytest.mark.parametrize("path", [b"/direct", b"/other"])
async def test_an_agent_that_half_closes_after_its_request_gets_its_answer_and_nothing_is_cancelled(
    path: bytes,
) -> None:
    """A FIN after a whole request is a half-close as far as the server can tell (issue 12): the
    connection is probed with an interim `100 Continue` (which shows the server saw the FIN), the
    answer follows, then the connection closes; the direct request's disconnect watch never fires."""
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(path, b"gated"))
                await stream.send_eof()
                seen = bytearray()
                assert (await _read_until(stream, b"\r\n\r\n", seen)) == b"HTTP/1.1 100 Continue\r\n\r\n"
                route.gate.set()
                answer = await _until_closed(stream, seen)
    assert answer.replace(b"HTTP/1.1 100 Continue\r\n\r\n", b"").startswith(b"HTTP/1.1 200")  # a later probe or not
    assert answer.endswith(b'{"direct":"gated"}' if path == b"/direct" else b"asgi:gated")
    assert route.went == []


async def test_an_http_1_0_agent_that_half_closes_is_closed_at_once_and_sent_no_interim_answer() -> None:
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/other", b"gated").replace(b"HTTP/1.1", b"HTTP/1.0"))
                await stream.send_eof()
                assert await _until_closed(stream, bytearray()) == b""
        route.gate.set()


async def test_a_direct_call_with_a_request_pipelined_behind_it_still_sees_its_agent_close() -> None:
    """uvicorn's `cycle` names the pipelined request once it is parsed, and its `connection_lost` told
    only that one: the direct call running ahead of it was never cancelled (issue 12, R-3.8)."""
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/direct", b"gated") + _post(b"/other", b"second"))
                while not route.taken:
                    await _next_step()
            await route.gone.wait()  # the agent closed its socket: its watch fires, queued request or not
    assert route.went == ["gone"]


async def test_a_direct_access_line_names_its_own_request_not_the_one_pipelined_behind_it() -> None:
    access = logging.getLogger("uvicorn.access")
    lines = _Lines()
    async with serve_loopback(_WithRoute(_Route()), http=CoalescingHttpToolsProtocol) as base:
        port = int(base.rsplit(":", 1)[1])
        level = access.level
        access.addHandler(lines)  # after uvicorn configured its loggers (--log-level warning)
        access.setLevel(logging.INFO)
        try:
            with anyio.fail_after(10):
                async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                    await stream.send(_post(b"/direct", b"hi") + _post(b"/second?q=1", b"x"))
                    await _read_until(stream, b"asgi:x", bytearray())
        finally:
            access.setLevel(level)
            access.removeHandler(lines)
    assert [line.split(" - ", 1)[1] for line in lines.lines] == [
        '"POST /direct HTTP/1.1" 200',
        '"POST /second?q=1 HTTP/1.1" 200',
    ]


_SHORT_REQUEST = CoalescingHttpToolsProtocol.with_request_timeout(0.3)
"""The host's protocol with a request timeout of 0.3 s (sec37)."""


async def test_a_direct_body_is_bounded_per_read_by_the_request_timeout() -> None:
    """A direct request's body is read as any other (sec39: it had a fixed 10 s for the whole body,
    whatever `request_timeout`): one that stops arriving is answered 408 and its connection closed
    `request_timeout` after its last read; one whose reads each follow the last in time is served,
    though it takes longer than `request_timeout` in all."""
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=_SHORT_REQUEST) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(5):  # far less than the fixed 10 s it was
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b"POST /direct HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nabc")
                answer = await _until_closed(stream, bytearray())
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:  # a body in parts, each in time
                await stream.send(b"POST /direct HTTP/1.1\r\nhost: x\r\ncontent-length: 6\r\n\r\na")
                for part in (b"b", b"c", b"d", b"e", b"f"):
                    await anyio.sleep(0.1)  # the scenario: 0.5 s in all, each read 0.1 s after the last
                    await stream.send(part)
                assert await _read_until(stream, b'{"direct":"abcdef"}', bytearray())
    assert answer.startswith(b"HTTP/1.1 408 ") and b"connection: close\r\n" in answer
    assert route.taken == [b"abcdef"]


class _NotingStalls(CoalescingHttpToolsProtocol):
    """The host's protocol with a request timeout of 0.3 s that sets `stalled` (a test's event) each
    time it finds a request late, whatever it does then."""

    request_timeout = 0.3
    stalled: anyio.Event | None = None

    def _request_stalled(self) -> None:
        super()._request_stalled()
        if _NotingStalls.stalled is not None:
            _NotingStalls.stalled.set()


@pytest.mark.parametrize("path", [b"/direct", b"/other"])
@pytest.mark.parametrize(
    "late",
    [b"POST /other HTTP/1.1\r\nhost: x\r\n", b"POST /other HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nab"],
    ids=["head", "body"],
)
async def test_a_late_request_behind_one_being_answered_waits_for_that_answer_then_gets_its_408(
    path: bytes, late: bytes
) -> None:
    """A pipelined request's head (or body) stalls while the one ahead of it is answered: the answer
    being computed is written whenever it is ready (the connection was closed without it, sec39), and
    the late request's time starts then: 408 once it has run out, after that answer, never before."""
    route = _Route()
    stalled = _NotingStalls.stalled = anyio.Event()
    async with serve_loopback(_WithRoute(route), http=_NotingStalls) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(path, b"gated") + late)
                await stalled.wait()  # the second request is late while the first is still being answered
                route.gate.set()
                answer = await _until_closed(stream, bytearray())
    echoed = b'{"direct":"gated"}' if path == b"/direct" else b"asgi:gated"
    assert answer.startswith(b"HTTP/1.1 200 ") and echoed in answer, answer
    assert answer.index(b"HTTP/1.1 408 ") > answer.index(echoed), answer


async def test_a_request_waiting_for_100_continue_is_not_late_while_the_app_has_not_read_it() -> None:
    """The agent waits for the server's `100 Continue` before it sends its body: no deadline runs then
    (sec37); once the app reads, the body arrives and is answered."""
    route = _Route()
    async with serve_loopback(_WithRoute(route), http=_SHORT_REQUEST) as base:
        port = int(base.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(_post(b"/other", b"gated") + _post(b"/other", b"x", b"expect: 100-continue\r\n")[:-1])
                seen = bytearray()
                await anyio.sleep(0.6)  # the scenario: past the request timeout while the app has not read it
                route.gate.set()
                assert (await _read_until(stream, b"asgi:gated", seen)).startswith(b"HTTP/1.1 200")
                assert await _read_until(stream, b"HTTP/1.1 100 Continue\r\n\r\n", seen)
                await stream.send(b"x")
                assert (await _read_until(stream, b"asgi:x", seen)).startswith(b"HTTP/1.1 200")
