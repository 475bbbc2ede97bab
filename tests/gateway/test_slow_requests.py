"""A real `mcp-center serve` bounds how long a request may take to arrive (sec37, R-7.2): an agent that
sends half of a request's head, or of its body, and then nothing (slowloris) is answered 408 and its
connection closed `MCP_CENTER_REQUEST_TIMEOUT_S` seconds later, on the gateway, the API and the page
alike; a keep-alive connection idle between requests is not (that is the keep-alive timeout's).

Raw sockets: what the server writes is read until it closes the connection, within a bound.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Generator

import pytest

from tests.support.serve import ADMIN_TOKEN, Host, running_host

TIMEOUT_S = 0.5
"""The serve's request timeout (`MCP_CENTER_REQUEST_TIMEOUT_S`)."""
BOUND_S = 10.0
"""How long a test waits for the server to close a connection (far above `TIMEOUT_S`)."""
GATEWAY_TOKEN = "sec37-gateway-token-0123456789"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Generator[Host]:
    with running_host(
        tmp_path_factory.mktemp("slow"),
        env={"MCP_CENTER_REQUEST_TIMEOUT_S": str(TIMEOUT_S), "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY_TOKEN},
    ) as host:
        yield host


def _connect(host: Host) -> socket.socket:
    address = host.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((address[0], int(address[1])), timeout=BOUND_S)
    sock.settimeout(BOUND_S)  # every read below fails after this long, the server never closing
    return sock


def _until_closed(sock: socket.socket) -> bytes:
    """What the server writes until it closes the connection (`TimeoutError` after `BOUND_S` of silence)."""
    seen = bytearray()
    while chunk := sock.recv(65536):
        seen += chunk
    return bytes(seen)


def _answer(sock: socket.socket, marker: bytes) -> bytes:
    """What the server writes up to and including `marker`."""
    seen = bytearray()
    while marker not in seen:
        chunk = sock.recv(65536)
        assert chunk, bytes(seen)
        seen += chunk
    return bytes(seen)


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connected, nothing sent
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n",  # the gateway
        b"GET /api/servers HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",  # the API
        b"GET / HTTP/1.1\r\nHo",  # the page
    ],
    ids=["nothing", "gateway-head", "api-head", "page-head"],
)
def test_a_request_head_not_complete_in_time_is_answered_408_and_its_connection_closed(host: Host, sent: bytes) -> None:
    with _connect(host) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        answer = _until_closed(sock)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"connection: close\r\n" in answer.lower()
    assert waited >= TIMEOUT_S - 0.1  # not closed before its time


@pytest.mark.parametrize(
    ("path", "token"),
    [(b"/mcp", GATEWAY_TOKEN), (b"/api/resources/read", ADMIN_TOKEN)],
    ids=["gateway-body", "api-body"],
)
def test_a_body_that_stops_arriving_is_answered_408_and_its_connection_closed(
    host: Host, path: bytes, token: str
) -> None:
    with _connect(host) as sock:
        sock.sendall(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, "
            b'text/event-stream\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{"jsonrpc"'
            % (path, token.encode())
        )
        answer = _until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer


@pytest.mark.parametrize(
    ("path", "token", "extra"),
    [
        (b"/mcp", GATEWAY_TOKEN, b"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\n"),
        (b"/api/resources/read", ADMIN_TOKEN, b""),
    ],
    ids=["gateway-body", "api-body"],
)
def test_a_body_read_in_parts_each_in_time_and_an_idle_keep_alive_connection_are_served(
    host: Host, path: bytes, token: str, extra: bytes
) -> None:
    """The body's bound is between its reads, not on the whole body, on the gateway's direct path as
    on the API (sec39: the gateway's had its own fixed bound on the whole body); between requests the
    connection is idle (the keep-alive timeout's, 75 s), not late."""
    body = b'{"name": "x"}'
    with _connect(host) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _answer(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 200 ")
        time.sleep(TIMEOUT_S * 2)  # the scenario (idle longer than a request may take), not a wait for an event
        sock.sendall(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, "
            b"text/event-stream\r\n%sAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
            % (path, extra, token.encode(), len(body))
        )
        for part in (body[:4], body[4:8], body[8:]):
            time.sleep(TIMEOUT_S * 0.5)  # the scenario: parts slower together than one timeout
            sock.sendall(part)
        head = _answer(sock, b"\r\n\r\n")
    assert not head.startswith(b"HTTP/1.1 408 "), head
    assert head.startswith(b"HTTP/1.1 "), head


def test_a_request_answered_before_its_body_arrived_gets_no_second_answer_when_the_body_stalls(host: Host) -> None:
    """An unknown path is answered 404 before its declared body is read; when the body then stops
    arriving the connection is closed without a 408 (sec39: an unrequested second answer followed)."""
    with _connect(host) as sock:
        sock.sendall(
            b"POST /api/no-such-thing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Authorization: Bearer %s\r\nContent-Length: 120\r\n\r\n{"nam' % ADMIN_TOKEN.encode()
        )
        answer = _until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 404 "), answer
    assert answer.count(b"HTTP/1.1 ") == 1, answer
