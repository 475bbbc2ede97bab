"""Legacy HTTP+SSE client transport (MCP 2024-11-05) that fails fast on a hostile endpoint.

Threats it stops:

- **Credentials sent to another site.** A legacy SSE server tells the client where to POST its
  messages (`event: endpoint`). The `httpx2.AsyncClient` we are given carries the server's
  credentials (an `Authorization` header, an API-key header, an `httpx2.Auth`), so a server that
  announced `https://evil.example/collect` would receive every one of them with every message.
  The announced endpoint must be same-origin with the configured URL (scheme, host and effective
  port; userinfo refused), otherwise nothing is ever POSTed and the connection fails at once with
  `EndpointOriginMismatch` (SPEC R-3.10). Redirects are never followed, for the same reason.
- **A hostile or broken endpoint that hangs the host.** The SDK's `mcp.client.sse.sse_client`
  logs a cross-origin endpoint and then blocks until a 300 s read timeout (see
  docs/sdk-notes.md#legacy-sse). Here every wait is bounded: no endpoint within
  `endpoint_timeout_s` raises `ServerTimeout`, an event larger than `max_event_bytes` closes the
  connection instead of growing a buffer, and when the event stream ends or breaks the read
  stream closes, so the session fails its pending requests promptly.

Wire format (spec 2024-11-05 "HTTP with SSE"): `GET <url>` with `Accept: text/event-stream`; the
first event is `endpoint` whose data is a URI reference resolved against `<url>`; then each
`message` event carries one JSON-RPC message; the client POSTs each of its messages as a JSON
body to the endpoint and expects a 2xx (the SDK server answers 202).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_center.errors import (
    CenterError,
    ConnectionLost,
    ServerProtocolError,
    ServerTimeout,
    ServerUnreachable,
    UpstreamError,
)
from mcp_center.models import ErrorReason
from mcp_center.secrets import default_redactor
from mcp_center.transports.wording import connect_reason, display_url, status_reason, unreachable_message

__all__ = ["EndpointOriginMismatch", "SseTransport", "same_origin"]

logger = logging.getLogger(__name__)

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_SSE_REQUEST_HEADERS: Final = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
_CLOSE_TIMEOUT_S: Final = 2.0
"""Upper bound for closing the GET response or one generator during shutdown (shielded)."""
_MAX_POST_RESPONSE_BYTES: Final = 64 * 1024
"""A POST answer is read up to this many bytes (so the connection can be reused), then dropped."""


class EndpointOriginMismatch(ServerProtocolError):
    """The server announced a message endpoint on another origin than the configured URL (R-3.10).

    Nothing was POSTed to it. `details` is `{"reason": "protocol", "endpoint_origin": ...}` where
    `endpoint_origin` is `scheme://host:port` only: never a path, query or userinfo, which a hostile
    server could fill with anything.

    Args:
        endpoint_origin: The announced endpoint's origin, formatted by `_format_origin`.
        expected_origin: The configured URL's origin, for the message.
    """

    def __init__(self, endpoint_origin: str, *, expected_origin: str) -> None:
        super().__init__(
            f"{expected_origin} announced a message endpoint on another origin ({endpoint_origin}); "
            "refusing to send messages there",
            details={"reason": "protocol", "endpoint_origin": endpoint_origin},
        )
        self.endpoint_origin = endpoint_origin


def same_origin(a: str, b: str) -> bool:
    """Tell whether two absolute http(s) URLs share an origin, as R-3.10 requires of an SSE endpoint.

    The origin is `(scheme, lowercased host, effective port)`, with the default ports 80 (http) and
    443 (https) filled in, and IP literals compared in canonical form (`[::1]` equals
    `[0:0:0:0:0:0:0:1]`). Host names are compared as text: `localhost` is not `127.0.0.1`.

    Args:
        a: An absolute URL.
        b: Another absolute URL.
    Returns:
        True when both have the same origin. False when they differ, when either carries userinfo
        (`user:pw@`), is not http/https, has no host, or does not parse.
    Spec: RFC 6454 §4 (origin of a URI); R-3.10 (legacy SSE endpoint); userinfo refusal is our policy
    (R-1.6 forbids embedded credentials).
    """
    try:
        key_a = _origin_key(httpx2.URL(a))
        key_b = _origin_key(httpx2.URL(b))
    except httpx2.InvalidURL:
        return False
    return key_a is not None and key_a == key_b


@dataclass(eq=False)
class _Announcement:
    """What the reader task hands to `__aenter__`: the endpoint, or why there is none."""

    done: anyio.Event = field(default_factory=anyio.Event)
    endpoint: httpx2.URL | None = None
    error: Exception | None = None


@dataclass(eq=False)
class _Running:
    """Everything an entered transport owns until `__aexit__`."""

    task_group: TaskGroup
    read_send: MemoryObjectSendStream[SessionMessage | Exception]
    read_recv: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_send: MemoryObjectSendStream[SessionMessage]
    write_recv: MemoryObjectReceiveStream[SessionMessage]

    def close_streams(self) -> None:
        """Close all four stream ends (idempotent, never blocks)."""
        self.read_send.close()
        self.read_recv.close()
        self.write_send.close()
        self.write_recv.close()


class SseTransport:
    """An `mcp.client.Transport` for the legacy HTTP+SSE transport (MCP 2024-11-05).

    GETs the SSE stream, waits for `event: endpoint`, resolves its data against `url`, checks that
    the result is same-origin with `url` (R-3.10), then POSTs every client message there. Enter and
    exit it in the same task (it owns an anyio task group); it can be entered once.

    The caller builds `http_client` (headers, auth, timeouts, event hooks) and closes it; the
    transport never closes it, never adds credentials and never follows a redirect. The GET uses
    the client's connect/write/pool timeouts but its own read timeout `sse_read_timeout_s`, because
    a quiet SSE stream is normal (the SDK server pings every 15 s).

    Args:
        url: The SSE URL (`http://host:port/sse`). Absolute http/https without userinfo; the
            configuration layer enforces the rest of R-1.6.
        http_client: Client for the GET and every POST. Not closed here.
        endpoint_timeout_s: Seconds from entering until the endpoint must be announced, covering
            connect, response headers and the first events.
        max_event_bytes: Largest SSE event accepted, in bytes; a larger one fails the connection.
        sse_read_timeout_s: Read timeout of the GET in seconds (longest silence between bytes of
            the event stream); None waits forever.

    Attributes:
        endpoint_url: The resolved POST endpoint once announced, else None.
        stream_error: Why the event stream ended after the endpoint was announced: a `CenterError`
            (or an unexpected exception) when it failed, `ConnectionLost` (reason `closed`) when the
            server ended it; None while it is open. The same error is pushed into the read stream.

    Raises:
        ValueError: `url` is not an absolute http(s) URL, carries userinfo, or a limit is not positive.
    """

    def __init__(
        self,
        url: str,
        *,
        http_client: httpx2.AsyncClient,
        endpoint_timeout_s: float = 30.0,
        max_event_bytes: int = 64 * 1024 * 1024,
        sse_read_timeout_s: float | None = 300.0,
    ) -> None:
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL as exc:
            raise ValueError("url is not a valid URL") from exc
        if parsed.userinfo:
            raise ValueError("url must not embed credentials")
        if _origin_key(parsed) is None:
            raise ValueError("url must be an absolute http or https URL")
        if endpoint_timeout_s <= 0:
            raise ValueError("endpoint_timeout_s must be positive")
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        if sse_read_timeout_s is not None and sse_read_timeout_s <= 0:
            raise ValueError("sse_read_timeout_s must be positive or None")
        self._url = parsed
        self._origin = _format_origin(parsed)
        self._http = http_client
        self._endpoint_timeout_s = endpoint_timeout_s
        self._max_event_bytes = max_event_bytes
        self._sse_read_timeout_s = sse_read_timeout_s
        self._entered = False
        self._running: _Running | None = None
        self.endpoint_url: str | None = None
        self.stream_error: Exception | None = None

    async def __aenter__(self) -> TransportStreams:
        """Open the event stream and return `(read_stream, write_stream)` once the endpoint is known.

        Returns:
            The streams a `ClientSession` reads `SessionMessage | Exception` from and writes
            `SessionMessage` to.
        Raises:
            EndpointOriginMismatch: the announced endpoint is on another origin (R-3.10); raised as
                soon as the event arrives, nothing was POSTed.
            ServerTimeout: no endpoint within `endpoint_timeout_s` (reason `timeout`), or an
                `httpx2` timeout of the GET.
            ServerUnreachable: connecting failed (reason `refused`, `dns`, `tls`, `network`) or the
                GET answered anything but 200 (reason `auth_required` for 401 and 403,
                `step_up_required` for 403 `insufficient_scope`, else `http_status`; `details.status`).
            ServerProtocolError: the GET is not `text/event-stream`, the endpoint is not a URL, an
                event is too large or malformed, a message came first, or the stream ended first
                (reason `protocol`).
            CenterError: whatever typed error the caller's `httpx2.Auth` or event hooks raised.
            RuntimeError: the transport was entered before.
        """
        if self._entered:
            raise RuntimeError("an SseTransport can be entered only once")
        self._entered = True
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        task_group = anyio.create_task_group()
        running = _Running(task_group, read_send, read_recv, write_send, write_recv)
        announcement = _Announcement()
        await task_group.__aenter__()
        ready = False
        try:
            task_group.start_soon(self._read_events, read_send, announcement, name="sse-reader")
            with anyio.move_on_after(self._endpoint_timeout_s):
                await announcement.done.wait()
            endpoint = announcement.endpoint
            if endpoint is None:
                if announcement.error is not None:
                    raise announcement.error
                raise ServerTimeout(
                    f"{self._origin} did not announce a message endpoint within {self._endpoint_timeout_s:g} s",
                    details={"reason": "timeout"},
                )
            task_group.start_soon(self._post_messages, endpoint, write_recv, read_send, name="sse-writer")
            ready = True
            self._running = running
            return read_recv, write_send
        finally:
            if not ready:
                task_group.cancel_scope.cancel()
                try:
                    await task_group.__aexit__(None, None, None)
                finally:
                    running.close_streams()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        """Cancel the GET and the writer, close the streams, and wait for both tasks.

        Cleanup inside the tasks is shielded and bounded by `_CLOSE_TIMEOUT_S` per step, so this
        returns promptly even when the server does not answer. Exceptions are never suppressed.
        """
        running, self._running = self._running, None
        if running is None:
            return
        # Close the session's ends first: the tasks see end-of-stream / a broken stream and stop
        # cleanly; their own ends are closed by the tasks themselves.
        running.read_recv.close()
        running.write_send.close()
        running.task_group.cancel_scope.cancel()
        try:
            await running.task_group.__aexit__(None, None, None)
        finally:
            running.close_streams()

    # --- reader: the GET event stream ---------------------------------------------------------

    async def _read_events(
        self,
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
        announcement: _Announcement,
    ) -> None:
        """Run the GET until it ends; report pre-endpoint failures to `__aenter__`, later ones to the session.

        Never raises (an exception here would cancel the session through the task group), except
        for cancellation. Always closes `read_send`, so the session sees end-of-stream.
        """
        failure: Exception | None = None
        try:
            try:
                await self._consume_stream(read_send, announcement)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the session closed its read stream: nobody is listening any more
            except CenterError as exc:
                failure = exc
            except httpx2.HTTPError as exc:
                failure = self._map_stream_error(exc, connected=announcement.endpoint is not None)
            except Exception as exc:  # logged; must reach __aenter__ or the session, never the task group
                logger.exception("sse.reader_failed", extra={"origin": self._origin})
                failure = exc
            if announcement.endpoint is None:
                announcement.error = failure or ServerProtocolError(
                    f"{self._origin} ended the event stream before announcing a message endpoint",
                    details={"reason": "protocol"},
                )
                announcement.done.set()
                return
            if failure is None:
                self.stream_error = ConnectionLost(
                    f"{self._origin} ended the event stream", details={"reason": "closed"}
                )
                return
            self.stream_error = failure
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await read_send.send(failure)
        finally:
            read_send.close()

    async def _consume_stream(
        self,
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
        announcement: _Announcement,
    ) -> None:
        """GET the event stream and dispatch its events until the server ends it."""
        client_timeout = self._http.timeout
        request = self._http.build_request(
            "GET",
            self._url,
            headers=_SSE_REQUEST_HEADERS,
            timeout=httpx2.Timeout(
                connect=client_timeout.connect,
                read=self._sse_read_timeout_s,
                write=client_timeout.write,
                pool=client_timeout.pool,
            ),
        )
        response = await self._http.send(request, stream=True, follow_redirects=False)
        try:
            if response.status_code != 200:
                raise _status_error(response, what=f"GET {display_url(str(self._url))}")
            content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if content_type != "text/event-stream":
                raise ServerProtocolError(
                    # Redact before cutting: a secret across the cut would leak as a half.
                    f"{self._origin} answered the SSE GET with content type "
                    f"{default_redactor.redact(content_type)[:64]!r}, "
                    "not 'text/event-stream'",
                    details={"reason": "protocol"},
                )
            events = aiter(httpx2.EventSource(response, max_event_size=self._max_event_bytes))
            try:
                async for sse in events:
                    await self._handle_event(sse, read_send, announcement)
            finally:
                await _aclose_bounded(events)
        finally:
            with anyio.move_on_after(_CLOSE_TIMEOUT_S, shield=True):
                await response.aclose()

    async def _handle_event(
        self,
        sse: httpx2.ServerSentEvent,
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
        announcement: _Announcement,
    ) -> None:
        """Act on one SSE event: the endpoint announcement, a JSON-RPC message, or something ignored.

        Raises:
            EndpointOriginMismatch: see `_resolve_endpoint`.
            ServerProtocolError: a message arrived before the endpoint, or the endpoint is not a URL.
        """
        if sse.event == "endpoint":
            if announcement.endpoint is not None:
                # Never switch endpoints mid-session: the checked one stays.
                logger.warning("sse.endpoint_reannounced_ignored", extra={"origin": self._origin})
                return
            endpoint = self._resolve_endpoint(sse.data)
            self.endpoint_url = str(endpoint)
            announcement.endpoint = endpoint
            announcement.done.set()
        elif sse.event == "message":
            if announcement.endpoint is None:
                raise ServerProtocolError(
                    f"{self._origin} sent a message before announcing a message endpoint",
                    details={"reason": "protocol"},
                )
            if not sse.data:
                return  # keep-alive
            item: SessionMessage | Exception
            try:
                item = SessionMessage(types.jsonrpc_message_adapter.validate_json(sse.data, by_name=False))
            except ValidationError as exc:
                # The session hands this to its message_handler; the connection stays up.
                item = ServerProtocolError(
                    f"{self._origin} sent a malformed JSON-RPC message", details={"reason": "protocol"}
                )
                item.__cause__ = exc
            await read_send.send(item)
        else:
            logger.debug(
                "sse.event_ignored", extra={"origin": self._origin, "event": default_redactor.redact(sse.event)[:64]}
            )

    def _resolve_endpoint(self, data: str) -> httpx2.URL:
        """Resolve the announced endpoint against the URL and require the same origin (R-3.10).

        The same parser (`httpx2.URL`) checks the URL and later sends to it, so the check and the
        POST cannot disagree about the host.

        Raises:
            EndpointOriginMismatch: another scheme, host or port, or userinfo in the endpoint.
            ServerProtocolError: the data is empty or not a URI reference.
        """
        if not data:
            raise ServerProtocolError(
                f"{self._origin} announced an empty message endpoint", details={"reason": "protocol"}
            )
        try:
            endpoint = self._url.join(data)
        except httpx2.InvalidURL as exc:
            raise ServerProtocolError(
                f"{self._origin} announced a message endpoint that is not a URL", details={"reason": "protocol"}
            ) from exc
        key = _origin_key(endpoint)
        if key is None or key != _origin_key(self._url):
            raise EndpointOriginMismatch(_format_origin(endpoint), expected_origin=self._origin)
        return endpoint

    def _map_stream_error(self, exc: httpx2.HTTPError, *, connected: bool) -> CenterError:
        """Attribute an `httpx2` failure of the GET (R-3.1); the message names the request (`wording`)."""
        url = str(self._url)
        where = f"GET {display_url(url)}"
        shown = {"url": display_url(url)}
        if isinstance(exc, httpx2.SSEError | httpx2.DecodingError):
            # SSEError here means an over-long event or broken framing (content type is checked first).
            error: CenterError = ServerProtocolError(
                f"{where} sent an invalid event stream (events are limited to {self._max_event_bytes} bytes)",
                details={"reason": "protocol", **shown},
            )
        elif isinstance(exc, httpx2.TimeoutException):
            error = ServerTimeout(
                unreachable_message("GET", url, ErrorReason.TIMEOUT), details={"reason": "timeout", **shown}
            )
        elif isinstance(exc, httpx2.ConnectError):
            reason = connect_reason(exc)
            error = ServerUnreachable(
                unreachable_message("GET", url, reason), details={"reason": reason.value, **shown}
            )
        elif connected:
            error = ConnectionLost(f"the event stream of {where} broke", details={"reason": "network", **shown})
        else:
            error = ServerUnreachable(
                unreachable_message("GET", url, ErrorReason.NETWORK), details={"reason": "network", **shown}
            )
        error.__cause__ = exc
        return error

    # --- writer: one POST per client message --------------------------------------------------

    async def _post_messages(
        self,
        endpoint: httpx2.URL,
        write_recv: MemoryObjectReceiveStream[SessionMessage],
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        """POST each client message in order; turn a failed POST into an error the session sees.

        A failed POST of a request becomes a JSON-RPC error response for its id (code -32603 for an
        HTTP status, -32000 for a broken connection; `data` holds our error code and details), so
        the caller's request fails instead of waiting. Any other failed message is pushed into the
        read stream as the `CenterError` itself (the session hands it to its message_handler).
        """
        async with write_recv:
            async for session_message in write_recv:
                message = session_message.message
                failure = await self._post(endpoint, message)
                if failure is None:
                    continue
                item: SessionMessage | Exception = failure
                if isinstance(message, types.JSONRPCRequest):
                    rpc_code = types.CONNECTION_CLOSED if isinstance(failure, ConnectionLost) else types.INTERNAL_ERROR
                    item = SessionMessage(
                        types.JSONRPCError(
                            jsonrpc="2.0",
                            id=message.id,
                            error=types.ErrorData(
                                code=rpc_code,
                                message=failure.message,
                                data={"code": failure.code, **failure.details},
                            ),
                        )
                    )
                # A closed stream means the event stream already ended; the session fails pending requests.
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await read_send.send(item)

    async def _post(self, endpoint: httpx2.URL, message: types.JSONRPCMessage) -> CenterError | None:
        """POST one message; return None on 2xx, else the attributed failure (never raises, but cancellation)."""
        url = str(endpoint)
        what = f"POST {display_url(url)}"
        shown = {"url": display_url(url)}
        try:
            payload = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            async with self._http.stream("POST", endpoint, json=payload, follow_redirects=False) as response:
                if 200 <= response.status_code < 300:
                    await _drain(response, _MAX_POST_RESPONSE_BYTES)
                    return None
                return _status_error(response, what=what)
        except CenterError as exc:
            return exc
        except httpx2.TimeoutException as exc:
            error: CenterError = ServerTimeout(
                unreachable_message("POST", url, ErrorReason.TIMEOUT), details={"reason": "timeout", **shown}
            )
            error.__cause__ = exc
            return error
        except httpx2.ConnectError as exc:
            reason = connect_reason(exc)
            error = ConnectionLost(unreachable_message("POST", url, reason), details={"reason": reason.value, **shown})
            error.__cause__ = exc
            return error
        except (httpx2.ReadError, httpx2.RemoteProtocolError) as exc:
            # Written, then the connection ended before its answer: the server may have run it (sec37, R-3.1).
            error = ConnectionLost(
                f"{what}: the connection to the server ended before it answered: the request was sent and may have run",
                details={"reason": ErrorReason.CLOSED.value, **shown},
            )
            error.__cause__ = exc
            return error
        except httpx2.HTTPError as exc:
            error = ConnectionLost(
                unreachable_message("POST", url, ErrorReason.NETWORK), details={"reason": "network", **shown}
            )
            error.__cause__ = exc
            return error
        except Exception as exc:  # logged; a failed POST must reach the session, never kill the writer
            logger.exception("sse.post_failed", extra={"origin": self._origin})
            error = ServerProtocolError(f"{what} failed unexpectedly", details={"reason": "protocol"})
            error.__cause__ = exc
            return error


# --- helpers ------------------------------------------------------------------------------------


def _origin_key(url: httpx2.URL) -> tuple[str, str, int] | None:
    """`(scheme, host, effective port)` of an absolute http(s) URL without userinfo, else None."""
    scheme = url.scheme.lower()
    if scheme not in _DEFAULT_PORTS or url.userinfo or not url.host:
        return None
    port = url.port if url.port is not None else _DEFAULT_PORTS[scheme]
    return scheme, _canonical_host(url.host), port


def _canonical_host(host: str) -> str:
    host = host.lower()
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _format_origin(url: httpx2.URL) -> str:
    """`scheme://host:port` for messages and details: never userinfo, path or query."""
    scheme = url.scheme.lower() or "?"
    host = _canonical_host(url.host) if url.host else ""
    if ":" in host:
        host = f"[{host}]"
    port = url.port if url.port is not None else _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}:{port}" if port is not None else f"{scheme}://{host}"


def _status_error(response: httpx2.Response, *, what: str) -> UpstreamError:
    """Attribute a non-success HTTP status (R-3.1) by the rule every transport uses
    (`wording.status_reason`); no header or body text enters the message."""
    status = response.status_code
    reason = status_reason(status, response.headers.get("www-authenticate"))
    details: dict[str, Any] = {"status": status, "reason": reason.value, "url": display_url(str(response.request.url))}
    if reason is ErrorReason.AUTH_REQUIRED:
        message = f"{what} requires authorization (HTTP {status})"
    elif reason is ErrorReason.STEP_UP_REQUIRED:
        scope = extract_field_from_www_auth(response, "scope")
        if scope:
            details["scopes"] = scope.split()
        message = f"{what} requires more scopes (HTTP 403 insufficient_scope)"
    else:
        note = "; redirects are not followed" if 300 <= status < 400 else ""
        message = f"{what} answered HTTP {status}{note}"
    return ServerUnreachable(message, details=details)


async def _drain(response: httpx2.Response, limit_bytes: int) -> None:
    """Read at most `limit_bytes` of a body we do not need (raw: no decompression)."""
    received = 0
    async for chunk in response.aiter_raw():
        received += len(chunk)
        if received > limit_bytes:
            return


async def _aclose_bounded(events: AsyncIterator[httpx2.ServerSentEvent]) -> None:
    """Close the event generator even when cancelled, within `_CLOSE_TIMEOUT_S`."""
    if isinstance(events, AsyncGenerator):
        with anyio.move_on_after(_CLOSE_TIMEOUT_S, shield=True):
            await events.aclose()
