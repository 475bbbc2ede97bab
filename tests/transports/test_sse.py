"""Legacy HTTP+SSE transport: a real SDK server on loopback, scripted fakes for every failure.

The security property under test is R-3.10: a message endpoint on another origin fails the
connection at once and nothing is POSTed there. Every wait is bounded by `anyio.fail_after`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, NoReturn

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client, IncomingMessage
from mcp.shared.exceptions import MCPError

from mcp_center.errors import (
    ConnectionLost,
    ServerProtocolError,
    ServerTimeout,
    ServerUnreachable,
)
from mcp_center.secrets import default_redactor
from mcp_center.transports.sse import EndpointOriginMismatch, SseTransport, same_origin
from tests.servers.sse_fakes import FakeSseServer, echo_sse_app, mcp_replies
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.wire import as_object

pytestmark = pytest.mark.anyio


class StreamExceptions:
    """Exceptions the session handed to its message_handler, with a way to wait for them."""

    def __init__(self) -> None:
        self.items: list[Exception] = []
        self._changed = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self.items.append(message)
            self._changed.set()
            self._changed = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while len(self.items) < count:
            await self._changed.wait()


class RequestLog:
    """Every request the client sends, as seen by an httpx2 `request` event hook."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def __call__(self, request: httpx2.Request) -> None:
        self.requests.append((request.method, str(request.url)))


@asynccontextmanager
async def http_client(**kwargs: Any) -> AsyncGenerator[tuple[httpx2.AsyncClient, RequestLog]]:
    log = RequestLog()
    async with httpx2.AsyncClient(verify=NO_TLS, event_hooks={"request": [log]}, **kwargs) as client:
        yield client, log


@asynccontextmanager
async def connected(
    fake: FakeSseServer, **transport_kwargs: Any
) -> AsyncGenerator[tuple[Client, SseTransport, StreamExceptions]]:
    """Serve `fake`, connect a legacy-mode Client through SseTransport, collect stream exceptions."""
    stream_exceptions = StreamExceptions()
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        transport = SseTransport(base + "/sse", http_client=client, **transport_kwargs)
        with anyio.fail_after(10):  # the whole session; tests bound their own waits tighter
            async with Client(transport, mode="legacy", cache=None, message_handler=stream_exceptions) as mcp:
                yield mcp, transport, stream_exceptions


@contextmanager
def refused_port() -> Generator[int]:
    """A loopback port that refuses connections: bound, never listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
    finally:
        sock.close()


# --- same_origin -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://a.example:80/sse", "http://a.example/messages"),
        ("https://a.example/sse", "https://a.example:443/m?x=1"),
        ("http://A.Example:8080/sse", "http://a.example:8080/messages"),
        ("http://[::1]:8080/sse", "http://[0:0:0:0:0:0:0:1]:8080/messages"),
        ("http://[::1]/sse", "http://[::1]:80/messages"),
        ("http://127.0.0.1:5000/sse", "http://127.0.0.1:5000/messages?session_id=1"),
    ],
)
def test_same_origin_accepts_equal_scheme_host_and_effective_port(a: str, b: str) -> None:
    assert same_origin(a, b)
    assert same_origin(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://a.example/sse", "https://a.example/sse"),
        ("http://a.example/sse", "http://a.example:8080/sse"),
        ("https://a.example/sse", "https://a.example:80/sse"),
        ("http://127.0.0.1:5000/sse", "http://localhost:5000/sse"),
        ("http://[::1]:5000/sse", "http://127.0.0.1:5000/sse"),
        ("http://a.example/sse", "http://b.example/sse"),
        ("http://user:pw@a.example/sse", "http://a.example/sse"),
        ("http://a.example/sse", "http://user@a.example/sse"),
        ("http://user:pw@a.example/sse", "http://user:pw@a.example/sse"),
        ("ftp://a.example/x", "ftp://a.example/x"),
        ("/messages", "/messages"),
        ("http://a.example/sse", "http://[::1/x"),
    ],
)
def test_same_origin_rejects_other_origins_userinfo_and_non_http(a: str, b: str) -> None:
    assert not same_origin(a, b)
    assert not same_origin(b, a)


# --- a real SDK legacy SSE server ------------------------------------------------------------


async def test_real_sdk_server_initialize_list_and_call_echo_with_client_headers() -> None:
    app = echo_sse_app()
    async with serve_loopback(app) as base, http_client(headers={"X-Api-Key": "k-123"}) as (client, log):
        transport = SseTransport(base + "/sse", http_client=client)
        with anyio.fail_after(10):
            async with Client(transport, mode="legacy", cache=None) as mcp:
                assert mcp.server_info is not None
                assert mcp.server_info.name == "t"
                tools = await mcp.list_tools()
                assert [tool.name for tool in tools.tools] == ["echo"]
                result = await mcp.call_tool("echo", {"text": "hi there"})
                assert not result.is_error
                assert isinstance(result.content[0], types.TextContent)
                assert result.content[0].text == "hi there"
                # The SDK server announces a relative endpoint; it resolves onto the same origin.
                assert transport.endpoint_url is not None
                assert transport.endpoint_url.startswith(base + "/messages/?session_id=")

    assert [r.method for r in app.requests][:2] == ["GET", "POST"]
    assert all(r.headers.get("x-api-key") == "k-123" for r in app.requests)
    assert all(url.startswith(base + "/") for _, url in log.requests)


async def test_leaving_the_transport_cancels_the_get_stream() -> None:
    fake = FakeSseServer()
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        with anyio.fail_after(5):
            async with SseTransport(base + "/sse", http_client=client):
                await fake.stream_opened.wait()
                assert not fake.stream_closed.is_set()
        with anyio.fail_after(2):
            await fake.stream_closed.wait()


# --- foreign endpoints fail at once, nothing is POSTed -----------------------------------


ENDPOINTS: dict[str, Callable[[str, str], str]] = {
    "another port": lambda base, other: other + "/messages?session_id=1",
    "localhost for 127.0.0.1": lambda base, other: base.replace("127.0.0.1", "localhost") + "/messages",
    "https for http": lambda base, other: base.replace("http://", "https://") + "/messages",
    "userinfo": lambda base, other: base.replace("http://", "http://user:pw@") + "/messages",
    "another host": lambda base, other: "http://evil.invalid/collect?k=secret",
    "scheme-relative another host": lambda base, other: "//evil.invalid/collect",
}
EXPECTED_ORIGINS: dict[str, Callable[[str, str], str]] = {
    "another port": lambda base, other: other,
    "localhost for 127.0.0.1": lambda base, other: base.replace("127.0.0.1", "localhost"),
    "https for http": lambda base, other: base.replace("http://", "https://"),
    "userinfo": lambda base, other: base,
    "another host": lambda base, other: "http://evil.invalid:80",
    "scheme-relative another host": lambda base, other: "http://evil.invalid:80",
}


@pytest.mark.parametrize("case", list(ENDPOINTS))
async def test_foreign_endpoint_fails_at_once_and_nothing_is_posted(case: str) -> None:
    """R-3.10: the endpoint must share scheme, host and port with the URL; userinfo is refused."""
    other = FakeSseServer(endpoint=None)
    async with serve_loopback(other.app) as other_base:
        fake = FakeSseServer(endpoint=lambda base: ENDPOINTS[case](base, other_base))
        async with (
            serve_loopback(fake.app) as base,
            http_client(headers={"Authorization": "Bearer t"}) as (client, log),
        ):
            transport = SseTransport(base + "/sse", http_client=client)
            with anyio.fail_after(2), pytest.raises(EndpointOriginMismatch) as caught:
                async with Client(transport, mode="legacy", cache=None):
                    pytest.fail("connected to a foreign endpoint")

    error = caught.value
    assert error.code == "MCP_PROTOCOL_ERROR"
    assert error.details == {"reason": "protocol", "endpoint_origin": EXPECTED_ORIGINS[case](base, other_base)}
    assert "pw" not in str(error)
    assert "collect" not in str(error)
    assert "secret" not in str(error)
    assert fake.posts == []
    assert other.requests == []
    assert log.requests == [("GET", base + "/sse")]
    assert transport.endpoint_url is None


def _absolute_path(base: str) -> str:
    del base
    return "/messages?session_id=abc"


def _relative_path(base: str) -> str:
    del base
    return "messages?session_id=abc"


def _same_origin_url(base: str) -> str:
    return base + "/messages?session_id=abc"


def _upper_case_scheme(base: str) -> str:
    return base.replace("http://", "HTTP://") + "/messages"


@pytest.mark.parametrize(
    "endpoint",
    [_absolute_path, _relative_path, _same_origin_url, _upper_case_scheme],
    ids=["absolute path", "relative path", "absolute same-origin URL", "upper-case scheme"],
)
async def test_same_origin_endpoint_connects_and_calls(endpoint: Callable[[str], str]) -> None:
    fake = FakeSseServer(endpoint=endpoint)
    async with connected(fake) as (mcp, transport, _):
        with anyio.fail_after(5):
            result = await mcp.call_tool("echo", {"text": "hello"})
        assert isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == "hello"
        assert transport.endpoint_url is not None
        assert same_origin(transport.endpoint_url, transport.endpoint_url)
    assert {r.path for r in fake.posts} == {"/messages"}


async def test_a_second_endpoint_event_does_not_move_the_endpoint() -> None:
    async def reannounce_then_reply(fake: FakeSseServer, message: dict[str, Any]) -> None:
        if message.get("method") == "initialize":
            await fake.send_event("endpoint", "http://evil.invalid/collect")
        await mcp_replies(fake, message)

    fake = FakeSseServer(on_message=reannounce_then_reply)
    async with connected(fake) as (mcp, transport, _):
        with anyio.fail_after(5):
            await mcp.call_tool("echo", {"text": "x"})
        assert transport.endpoint_url is not None
        assert "evil" not in transport.endpoint_url
    assert len(fake.posts) >= 3


# --- failures before the endpoint ----------------------------------------------------------------


async def test_no_endpoint_event_times_out() -> None:
    fake = FakeSseServer(endpoint=None)
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        transport = SseTransport(base + "/sse", http_client=client, endpoint_timeout_s=0.5)
        with anyio.fail_after(2), pytest.raises(ServerTimeout) as caught:
            async with transport:
                pytest.fail("entered without an endpoint")
        with anyio.fail_after(2):
            await fake.stream_closed.wait()
    assert caught.value.details == {"reason": "timeout"}
    assert caught.value.code == "MCP_SERVER_TIMEOUT"


@pytest.mark.parametrize(
    ("status", "headers", "reason"),
    [
        (401, {"WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/prm"'}, "auth_required"),
        (403, {}, "http_status"),
        (403, {"WWW-Authenticate": 'Bearer error="invalid_token"'}, "auth_required"),
        (403, {"WWW-Authenticate": 'Bearer error="insufficient_scope", scope="a b"'}, "step_up_required"),
        (500, {}, "http_status"),
        (404, {}, "http_status"),
        (302, {"Location": "http://evil.invalid/sse"}, "http_status"),
        (204, {}, "http_status"),
    ],
)
async def test_non_200_get_is_attributed(status: int, headers: dict[str, str], reason: str) -> None:
    fake = FakeSseServer(get_status=status, get_headers=headers)
    async with serve_loopback(fake.app) as base, http_client(headers={"Authorization": "Bearer t"}) as (client, log):
        with anyio.fail_after(2), pytest.raises(ServerUnreachable) as caught:
            async with SseTransport(base + "/sse", http_client=client):
                pytest.fail("entered on an error status")
    assert caught.value.details["reason"] == reason
    assert caught.value.details["status"] == status
    assert caught.value.code == "MCP_SERVER_UNREACHABLE"
    assert "Bearer" not in str(caught.value)
    assert log.requests == [("GET", base + "/sse")]  # a redirect is not followed
    if reason == "step_up_required":
        assert caught.value.details["scopes"] == ["a", "b"]


async def test_refused_connection_is_attributed() -> None:
    async with http_client() as (client, _):
        with refused_port() as port:
            transport = SseTransport(f"http://127.0.0.1:{port}/sse", http_client=client)
            with anyio.fail_after(2), pytest.raises(ServerUnreachable) as caught:
                async with transport:
                    pytest.fail("entered on a refused port")
    assert caught.value.details == {"reason": "refused", "url": f"http://127.0.0.1:{port}/sse"}
    assert str(caught.value).startswith(f"GET http://127.0.0.1:{port}/sse: connection refused")


class RefusingAuth(httpx2.Auth):
    """Stands in for our bearer auth when it has no token: it raises a typed error."""

    def auth_flow(self, request: httpx2.Request) -> NoReturn:
        raise ServerUnreachable("no token for this server", details={"reason": "auth_required"})


async def test_typed_error_from_the_callers_auth_passes_through_unchanged() -> None:
    fake = FakeSseServer()
    async with serve_loopback(fake.app) as base, http_client(auth=RefusingAuth()) as (client, _):
        with anyio.fail_after(2), pytest.raises(ServerUnreachable) as caught:
            async with SseTransport(base + "/sse", http_client=client):
                pytest.fail("entered without auth")
    assert str(caught.value) == "no token for this server"
    assert caught.value.details == {"reason": "auth_required"}
    assert fake.requests == []


async def test_wrong_content_type_is_a_protocol_error() -> None:
    fake = FakeSseServer(content_type="application/json")
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        with anyio.fail_after(2), pytest.raises(ServerProtocolError) as caught:
            async with SseTransport(base + "/sse", http_client=client):
                pytest.fail("entered on a JSON answer")
    assert caught.value.details == {"reason": "protocol"}


@pytest.mark.parametrize("pad", [50, 55, 60])
async def test_a_secret_in_a_wrong_content_type_is_redacted_before_the_message_cuts_it(pad: int) -> None:
    """R-1.5: the message quotes 64 characters of the content type; a secret across that cut leaks no half."""
    secret = "sekrit-leak-55aa77"
    content_type = "application/x-" + "p" * (pad - len("application/x-")) + secret
    default_redactor.add(secret)
    try:
        fake = FakeSseServer(content_type=content_type)
        async with serve_loopback(fake.app) as base, http_client() as (client, _):
            with anyio.fail_after(2), pytest.raises(ServerProtocolError) as caught:
                async with SseTransport(base + "/sse", http_client=client):
                    pytest.fail("entered on a wrong content type")
    finally:
        default_redactor.discard(secret)
    assert "p" * 20 in caught.value.message
    assert not any(secret[i : i + 4] in caught.value.message for i in range(len(secret) - 3)), caught.value.message


async def test_message_before_endpoint_is_a_protocol_error() -> None:
    fake = FakeSseServer(preamble='event: message\ndata: {"jsonrpc": "2.0", "method": "x"}\n\n')
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        with anyio.fail_after(2), pytest.raises(ServerProtocolError) as caught:
            async with SseTransport(base + "/sse", http_client=client):
                pytest.fail("entered after a message came first")
    assert caught.value.details == {"reason": "protocol"}
    assert not isinstance(caught.value, EndpointOriginMismatch)
    assert fake.posts == []


async def test_oversized_endpoint_event_is_refused_without_buffering_it() -> None:
    fake = FakeSseServer(endpoint=lambda base: "/messages?pad=" + "x" * 10_000)
    async with serve_loopback(fake.app) as base, http_client() as (client, _):
        transport = SseTransport(base + "/sse", http_client=client, max_event_bytes=1024)
        with anyio.fail_after(2), pytest.raises(ServerProtocolError) as caught:
            async with transport:
                pytest.fail("entered on an oversized event")
    assert caught.value.details == {"reason": "protocol", "url": base + "/sse"}


async def test_constructor_rejects_urls_the_transport_cannot_check() -> None:
    async with http_client() as (client, _):
        for url in ["http://user:pw@127.0.0.1/sse", "ftp://127.0.0.1/sse", "/sse", "http://[::1/sse"]:
            with pytest.raises(ValueError, match="url"):
                SseTransport(url, http_client=client)


# --- failures after the endpoint -------------------------------------------------------------------


async def test_garbage_message_reaches_the_session_and_the_connection_survives() -> None:
    """Our behaviour: a malformed message becomes a ServerProtocolError for the message_handler."""

    async def garbage_then_reply(fake: FakeSseServer, message: dict[str, Any]) -> None:
        if message.get("method") == "tools/call" and message["params"]["arguments"]["text"] == "still here":
            await fake.send_event("message", "{not json")
            await fake.send_event("message", json.dumps({"jsonrpc": "2.0", "id": "x", "bogus": True}))
        await mcp_replies(fake, message)

    fake = FakeSseServer(on_message=garbage_then_reply)
    async with connected(fake) as (mcp, transport, stream_exceptions):
        with anyio.fail_after(5):
            result = await mcp.call_tool("echo", {"text": "still here"})
            assert isinstance(result.content[0], types.TextContent)
            assert result.content[0].text == "still here"
            second = await mcp.call_tool("echo", {"text": "again"})
            assert isinstance(second.content[0], types.TextContent)
            assert second.content[0].text == "again"
            await stream_exceptions.wait_for(2)
        assert len(stream_exceptions.items) == 2
        for exc in stream_exceptions.items:
            assert isinstance(exc, ServerProtocolError)
            assert exc.details == {"reason": "protocol"}
        assert transport.stream_error is None


async def test_stream_closed_mid_session_fails_the_pending_call_promptly() -> None:
    async def close_on_call(fake: FakeSseServer, message: dict[str, Any]) -> None:
        if message.get("method") == "tools/call":
            fake.end_stream()
            return
        await mcp_replies(fake, message)

    fake = FakeSseServer(on_message=close_on_call)
    async with connected(fake) as (mcp, transport, _):
        with anyio.fail_after(2), pytest.raises(MCPError) as caught:
            await mcp.call_tool("echo", {"text": "lost"})
        assert caught.value.error.code == types.CONNECTION_CLOSED
        assert isinstance(transport.stream_error, ConnectionLost)
        assert transport.stream_error.details == {"reason": "closed"}
        with anyio.fail_after(2), pytest.raises(MCPError):
            await mcp.call_tool("echo", {"text": "after"})


async def test_oversized_message_closes_the_connection_with_a_protocol_error() -> None:
    async def huge_reply(fake: FakeSseServer, message: dict[str, Any]) -> None:
        if message.get("method") == "tools/call":
            await fake.send_raw("event: message\ndata: " + "x" * 8192)  # never terminated
            return
        await mcp_replies(fake, message)

    fake = FakeSseServer(on_message=huge_reply)
    async with connected(fake, max_event_bytes=4096) as (mcp, transport, stream_exceptions):
        with anyio.fail_after(2), pytest.raises(MCPError) as caught:
            await mcp.call_tool("echo", {"text": "big"})
        assert caught.value.error.code == types.CONNECTION_CLOSED
        assert isinstance(transport.stream_error, ServerProtocolError)
        assert transport.stream_error.details["reason"] == "protocol"
        with anyio.fail_after(2):
            await stream_exceptions.wait_for(1)
        assert stream_exceptions.items == [transport.stream_error]


async def test_failed_post_of_a_request_becomes_its_json_rpc_error() -> None:
    fake = FakeSseServer(post_status=lambda message: 500 if message.get("method") == "tools/call" else 202)
    async with connected(fake) as (mcp, _, _):
        with anyio.fail_after(2), pytest.raises(MCPError) as caught:
            await mcp.call_tool("echo", {"text": "x"})
        assert caught.value.error.code == types.INTERNAL_ERROR
        data = as_object(caught.value.error.data, "the error's data")
        assert {k: data[k] for k in ("code", "reason", "status")} == {
            "code": "MCP_SERVER_UNREACHABLE",
            "reason": "http_status",
            "status": 500,
        }
        assert str(data["url"]).startswith("http://127.0.0.1:")
        # The connection is still usable afterwards.
        with anyio.fail_after(2):
            tools = await mcp.list_tools()
        assert [tool.name for tool in tools.tools] == ["echo"]


async def test_failed_post_of_a_notification_reaches_the_message_handler() -> None:
    fake = FakeSseServer(
        post_status=lambda message: 401 if message.get("method", "").startswith("notifications/") else 202
    )
    async with connected(fake) as (mcp, _, stream_exceptions):
        with anyio.fail_after(2):
            await mcp.list_tools()
            await stream_exceptions.wait_for(1)
    [exc] = stream_exceptions.items
    assert isinstance(exc, ServerUnreachable)
    assert {k: exc.details[k] for k in ("reason", "status")} == {"reason": "auth_required", "status": 401}
    assert "/messages" in exc.details["url"]
