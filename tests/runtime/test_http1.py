"""The lean forwarder's HTTP/1.1 client (`runtime/http1.py`, R-8.3) against real loopback servers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp_center.runtime.http1 import HELD_BODY_BYTES, Http1Client, Http1Error, Http1Response, _Connection  # pyright: ignore[reportPrivateUsage]
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


def _app(ports: list[int]) -> Starlette:
    async def echo(request: Request) -> Response:
        assert request.client is not None
        ports.append(request.client.port)
        body = await request.body()
        return Response(body, headers={"x-seen-auth": request.headers.get("x-api-key", "")})

    async def stream(request: Request) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            for i in range(3):
                yield f"data: {i}\n\n".encode()

        return StreamingResponse(chunks(), media_type="text/event-stream")

    async def close(request: Request) -> Response:
        assert request.client is not None
        ports.append(request.client.port)
        return Response(b"bye", headers={"connection": "close"})

    return Starlette(
        routes=[
            Route("/echo", echo, methods=["POST"]),
            Route("/stream", stream, methods=["GET"]),
            Route("/close", close, methods=["POST"]),
        ]
    )


async def test_requests_reuse_one_keep_alive_connection_and_carry_the_configured_headers() -> None:
    ports: list[int] = []
    async with serve_loopback(_app(ports)) as base:
        client = Http1Client(f"{base}/echo", {"X-Api-Key": "k1"})
        for text in ("one", "two", "three"):
            with anyio.fail_after(10):
                async with client.request("POST", {"content-type": "text/plain"}, text.encode()) as response:
                    assert response.status_code == 200
                    assert await response.aread(1024) == text.encode()
                    assert response.headers["x-seen-auth"] == "k1"
        await client.aclose()
    assert len(set(ports)) == 1  # one TCP connection for all three


async def test_a_streamed_body_arrives_in_pieces_and_is_bounded() -> None:
    async with serve_loopback(_app([])) as base:
        client = Http1Client(f"{base}/stream", {})
        with anyio.fail_after(10):
            async with client.request("GET", {}) as response:
                body = await response.aread(1024)
            async with client.request("GET", {}) as response:
                with pytest.raises(Http1Error):
                    await response.aread(5)
        await client.aclose()
    assert body == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"


async def test_a_body_of_a_declared_length_within_the_bound_is_read_at_once() -> None:
    async with serve_loopback(_app([])) as base:
        client = Http1Client(f"{base}/echo", {})
        with anyio.fail_after(10):
            async with client.request("POST", {}, b"0123456789") as response:
                assert response.headers["content-length"] == "10"
                assert await response.read_declared(9) is None  # over the bound: nothing read
                assert await response.read_declared(10) == b"0123456789"
                assert await response.aread(1024) == b""  # nothing left
            async with client.request("POST", {}, b"abcdef") as response:
                # Held until whole (`HELD_BODY_BYTES`): there at once, without a wait (issue 12).
                assert response.whole_body(5) is None  # over the bound: nothing read
                assert response.whole_body(6) == b"abcdef"
                assert await response.aread(1024) == b""
        await client.aclose()


async def test_a_body_of_no_declared_length_is_left_to_the_reader() -> None:
    async with serve_loopback(_app([])) as base:
        client = Http1Client(f"{base}/stream", {})
        with anyio.fail_after(10):
            async with client.request("GET", {}) as response:
                assert "content-length" not in response.headers  # streamed (chunked)
                assert response.whole_body(1 << 20) is None  # nothing whole to take at once
                assert await response.read_declared(1024) is None
                assert await response.aread(1024) == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
        await client.aclose()


async def test_a_connection_the_server_closes_is_not_reused() -> None:
    ports: list[int] = []
    async with serve_loopback(_app(ports)) as base:
        closing = Http1Client(f"{base}/close", {})
        for _ in range(2):
            with anyio.fail_after(10):
                async with closing.request("POST", {}) as response:
                    assert await response.aread(64) == b"bye"
        await closing.aclose()
    assert len(set(ports)) == 2  # a new connection for the second request


async def test_a_refused_connection_is_an_error_not_a_hang() -> None:
    client = Http1Client("http://127.0.0.1:9/mcp", {})  # the discard port: nothing listens on loopback
    with anyio.fail_after(15), pytest.raises(Http1Error):
        async with client.request("POST", {}, b"{}"):
            pass

    calls: list[str] = []
    with anyio.fail_after(15), pytest.raises(Http1Error):
        await client.send("POST", {}, b"{}", written=lambda: calls.append("written"))
    assert calls == ["written"]  # a request that could not be written still has its `written` once


async def test_written_runs_once_the_request_is_written_while_its_answer_is_awaited() -> None:
    """`written` (the forwarder's log record) runs after the write and before the answer: the server
    here answers only once it ran, so a `written` left until after the answer would never come."""
    ran = asyncio.Event()
    order: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(2)
        order.append("server read")
        await ran.wait()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    def written() -> None:
        order.append("written")
        ran.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = Http1Client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", {})
    try:
        with anyio.fail_after(10):
            response = await client.send("POST", {}, b"{}", written=written)
            order.append("answer")
            assert await response.aread(16) == b"ok"
            client.done(response)
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()
    assert order.count("written") == 1 and order[-1] == "answer"


def test_only_plain_http_urls_are_served() -> None:
    with pytest.raises(ValueError, match="http://"):
        Http1Client("https://example.com/mcp", {})


def _sse_app(ports: list[int], second: anyio.Event) -> Starlette:
    async def events(request: Request) -> StreamingResponse:
        assert request.client is not None
        ports.append(request.client.port)

        async def chunks() -> AsyncIterator[bytes]:
            yield b"data: answer\n\n"
            with anyio.fail_after(10):
                await second.wait()  # the stream ends only after the client stopped reading it
            yield b"data: tail\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream")

    return Starlette(routes=[Route("/events", events, methods=["POST"])])


async def test_a_stream_left_unread_ends_in_the_background_and_its_connection_is_reused() -> None:
    ports: list[int] = []
    ended = anyio.Event()
    async with serve_loopback(_sse_app(ports, ended)) as base:
        client = Http1Client(f"{base}/events", {})
        with anyio.fail_after(10):
            response = await client.send("POST", {}, b"{}")
            first = await anext(aiter(response.aiter_bytes(1024)))
            assert first == b"data: answer\n\n"
            assert not response.complete
            client.done(response)  # the caller has its answer: the rest is read in the background
            ended.set()
            connection = response._connection  # pyright: ignore[reportPrivateUsage] - to wait on its events
            while not response.complete:  # bounded by the fail_after above
                await connection.wait()
            assert client._idle == [connection]  # pyright: ignore[reportPrivateUsage]
            async with client.request("POST", {}, b"{}") as again:
                assert await again.aread(1024) == b"data: answer\n\ndata: tail\n\n"
        await client.aclose()
    assert len(set(ports)) == 1  # the second request went over the first one's connection


class _Wire(asyncio.Transport):
    """The connection's transport, as far as a parsed response needs one (nothing is sent anywhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return False


@pytest.mark.parametrize(
    ("head", "rest", "woken_by_head"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n", b"{}", False),  # declared and small: held
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", b"2\r\n{}\r\n0\r\n\r\n", True),  # streamed
        (b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (HELD_BODY_BYTES + 1), b"x", True),  # too large
    ],
)
async def test_a_reader_waiting_on_a_head_is_woken_once_a_small_declared_body_is_whole(
    head: bytes, rest: bytes, woken_by_head: bool
) -> None:
    """A server on uvicorn writes a response's head and its body apart (issue 12): the reader of a
    body of declared length up to `HELD_BODY_BYTES` is woken once, with the whole body; a streamed
    or larger body wakes it at the head, as each chunk does."""
    connection = _Connection(Http1Client("http://127.0.0.1:9/mcp", {}))
    connection.connection_made(_Wire())
    connection.start(b"POST /mcp HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
    waiting = connection.wait()
    waiter = waiting.send(None)  # the future the reader waits on (asyncio's `await` yields it)
    try:
        connection.data_received(head)
        assert connection.headers_done
        assert waiter.done() is woken_by_head
        connection.data_received(rest)
        assert waiter.done()
        assert connection.complete is (not woken_by_head or b"chunked" in head)
    finally:
        waiting.close()


async def test_one_parser_per_connection_reads_each_framing_in_turn_and_a_prepared_head_is_the_same_request() -> None:
    """Issue 12: a connection parses its responses with one parser (made when it connects), so a
    chunked answer followed by one of declared length, and the reverse, on the same connection are
    each read whole; `send(block=head_block(...))` sends what `send` with the headers sends."""
    ports: list[int] = []

    async def answer(request: Request) -> Response:
        assert request.client is not None
        ports.append(request.client.port)
        body = await request.body()
        seen = request.headers.get("x-api-key", "") + "/" + request.headers.get("x-kind", "")
        if body.startswith(b"chunked"):

            async def pieces() -> AsyncIterator[bytes]:
                for piece in (body, b"|", seen.encode()):
                    yield piece

            return StreamingResponse(pieces(), media_type="text/plain")
        return Response(body + b"|" + seen.encode())

    app = Starlette(routes=[Route("/answer", answer, methods=["POST"])])
    async with serve_loopback(app) as base:
        client = Http1Client(f"{base}/answer", {"X-Api-Key": "k1"})
        headers = {"x-kind": "prepared"}
        block = client.head_block("POST", headers)
        read: list[bytes] = []
        for n, body in enumerate((b"chunked-1", b"sized-2", b"chunked-3", b"sized-4")):
            with anyio.fail_after(10):
                response = await client.send("POST", headers, body, block=block if n % 2 else None)
                try:
                    assert response.status_code == 200
                    read.append(await response.aread(1024))
                finally:
                    client.done(response)
        await client.aclose()
    assert read == [body + b"|k1/prepared" for body in (b"chunked-1", b"sized-2", b"chunked-3", b"sized-4")]
    assert len(set(ports)) == 1  # one TCP connection (one parser) for all four


@asynccontextmanager
async def _dropping_once(drop: bytes) -> AsyncGenerator[tuple[Http1Client, list[tuple[int, bytes]]]]:
    """A client of a raw keep-alive echo server that, the first time it reads the body `drop`, ends
    that connection without answering; and the `(connection number, body)` of each request it read."""
    served: list[tuple[int, bytes]] = []
    connections = itertools.count()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = next(connections)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                body = await reader.readexactly(length)
                served.append((number, body))
                if body == drop and [b for _n, b in served].count(drop) == 1:
                    return  # read (and, for all the client knows, ran), then the connection ends unanswered
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = Http1Client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", {})
    try:
        yield client, served
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()


async def test_a_request_a_reused_connection_drops_unanswered_is_sent_once_more_on_a_new_one() -> None:
    """A keep-alive connection the server closes before reading the next request (its idle timeout
    racing our reuse) most likely never ran it: a request that may run twice goes once more on a new
    connection."""
    answers: list[bytes] = []
    written: list[bytes] = []
    async with _dropping_once(b"two") as (client, served):
        for text in (b"one", b"two", b"three"):
            with anyio.fail_after(10):
                response = await client.send("POST", {}, text, written=lambda text=text: written.append(text))
                try:
                    answers.append(await response.aread(1024))
                finally:
                    client.done(response)
    assert answers == [b"one", b"two", b"three"]
    assert written == [b"one", b"two", b"three"]  # once each, "two" too although it went twice
    assert served == [(0, b"one"), (0, b"two"), (1, b"two"), (1, b"three")]  # "two" dropped, then served anew


async def test_a_request_that_must_not_run_twice_is_not_sent_again_when_a_reused_connection_drops_it() -> None:
    """R-8.3: with `resend=False` (a forwarded tools/call), a request a reused keep-alive connection
    ended without answering fails (the server may have read and run it) instead of going once more;
    the next request goes on a new connection."""
    answers: list[bytes | str] = []
    async with _dropping_once(b"two") as (client, served):
        for text in (b"one", b"two", b"three"):
            with anyio.fail_after(10):
                try:
                    response = await client.send("POST", {}, text, resend=False)
                except Http1Error as exc:
                    answers.append(str(exc))
                    continue
                try:
                    answers.append(await response.aread(1024))
                finally:
                    client.done(response)
    assert answers[0] == b"one" and answers[2] == b"three"
    assert isinstance(answers[1], str) and "may have run" in answers[1]
    assert served == [(0, b"one"), (0, b"two"), (1, b"three")]  # "two" went once


async def test_what_arrives_while_the_reader_holds_a_chunk_is_read_before_the_end() -> None:
    """elic40 (R-3.10, R-8.3): the forwarder holds an event-stream chunk while it answers the
    server request it carries (an elicitation card, a sampling); the rest of the stream and its
    end arrive meanwhile. The reader must get that rest before the end: it used to stop at the
    end with the rest unread, losing the call's answer."""
    connection = _Connection(Http1Client("http://127.0.0.1:9/mcp", {}))
    connection.connection_made(_Wire())
    connection.start(b"POST /mcp HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
    connection.data_received(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nasked\n\r\n")
    chunks = aiter(Http1Response(connection).aiter_bytes(1024))
    with anyio.fail_after(10):
        assert await anext(chunks) == b"asked\n"
        connection.data_received(b"7\r\nanswer\n\r\n0\r\n\r\n")  # while the reader holds "asked"
        assert connection.complete
        rest = [chunk async for chunk in chunks]
    assert rest == [b"answer\n"]
