"""Streamable HTTP with bounded stream retries: the SDK's transport, two of its loops replaced (R-3.10).

The SDK's `StreamableHTTPTransport` speaks the protocol and we keep it for everything but two loops
that a misbehaving server turns into a spin (issue 14, items 8 and 9; docs/sdk-notes.md#streamable-http):

- **Resumption of a POST's event stream.** A POST answered with SSE whose stream ends before the
  result is resumed with `GET` + `Last-Event-ID`. The SDK resumes again after every resumption that
  ends cleanly, even with no event, so a server whose resumption GETs close at once is asked about
  once a second until the call's timeout. Here resumptions that bring no message count: after
  `RESUME_ATTEMPTS` of them in a row (spaced by `RESUME_BACKOFF`, the server's `retry:` honoured as a
  minimum) the request fails at once with `MCP_CONNECTION_LOST` saying the stream closed without
  the result. A resumption that brings messages (progress, say) starts the count again.
- **The optional standalone GET stream.** The SDK reopens a stream that ended cleanly after the
  server's `retry:` (or 1 s), forever — 447 reopenings in 30 s with `retry: 50`. Here a stream that
  lived less than `STREAM_HEALTHY_S` counts as a failure and the next attempt waits `GET_BACKOFF`
  (exponential, floor, cap, jitter; `retry:` a minimum only); a stream that lived long enough
  resets the count. A 4xx or a redirect to the GET means the server offers no stream (405 is the
  spec's way to say so): it is not reopened. Log lines are aggregated: one at the first failure
  and at every power of two, with the count.

`streamable_http_transport()` composes the transport from the SDK's public methods, as the SDK's
own `streamable_http_client` does, with the http client we build (`transports/http.py`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import LAST_EVENT_ID, RequestContext, StreamableHTTPTransport, StreamWriter
from mcp.shared._context_streams import create_context_streams
from mcp.shared._httpx_utils import sse_within_origin
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, ErrorData, JSONRPCError, JSONRPCRequest

from mcp_center.transports.backoff import Backoff
from mcp_center.transports.wording import display_url

__all__ = [
    "ERROR_DATA_KEY",
    "GET_BACKOFF",
    "RESUME_ATTEMPTS",
    "RESUME_BACKOFF",
    "STREAM_HEALTHY_S",
    "BoundedStreamableHTTPTransport",
    "non_answer_error",
    "resumptions_exhausted",
    "streamable_http_transport",
    "unanswered_error",
]

logger = logging.getLogger(__name__)

RESUME_ATTEMPTS: Final = 4
"""Resumptions in a row that bring no message before a request gives up on its stream."""
RESUME_BACKOFF = Backoff(floor_s=0.5, cap_s=8.0)
"""Delays between resumption attempts of one request's stream."""
GET_BACKOFF = Backoff(floor_s=1.0, cap_s=60.0)
"""Delays before reopening the standalone GET stream after it failed or closed early."""
STREAM_HEALTHY_S: Final = 10.0
"""A GET stream that stayed open this many seconds was healthy: its close resets the backoff."""
ERROR_DATA_KEY: Final = "mcp-center/error"
"""Key of a JSON-RPC error's `data` under which a transport hands the runtime a typed error
(`{"code", "message", "details"}`), for `runtime.attribution` to rebuild."""


class BoundedStreamableHTTPTransport(StreamableHTTPTransport):
    """The SDK transport with bounded resumption and a backed-off GET stream (see the module docstring).

    Args:
        url: The MCP endpoint.
        max_sse_event_size: Largest SSE event in bytes (None: unbounded).
    """

    def __init__(self, url: str, *, max_sse_event_size: int | None) -> None:
        super().__init__(url, max_sse_event_size=max_sse_event_size)
        self.get_stream_failures = 0
        """Standalone GET streams in a row that failed or closed early (for tests and the logs)."""

    async def handle_get_stream(self, client: httpx2.AsyncClient, read_stream_writer: StreamWriter) -> None:
        """Keep the standalone GET stream open, reopening it with backoff; stop when the server has none."""
        last_event_id: str | None = None
        hint_ms: int | None = None
        while self.session_id:
            opened = anyio.current_time()
            headers = self._prepare_headers()
            if last_event_id:
                headers[LAST_EVENT_ID] = last_event_id
            try:
                async with sse_within_origin(
                    client, self.url, headers=headers, max_event_size=self.max_sse_event_size
                ) as events:
                    status = events.response.status_code
                    if 300 <= status < 500:
                        logger.info(
                            "http.get_stream_unavailable",
                            extra={"url": display_url(self.url), "status": status},
                        )
                        return  # 405: the server offers no stream; other 4xx/3xx would only repeat
                    events.response.raise_for_status()
                    async for sse in events:
                        if sse.id:
                            last_event_id = sse.id
                        if sse.retry is not None:
                            hint_ms = sse.retry
                        await self._handle_sse_event(sse, read_stream_writer)
            except Exception as exc:  # noqa: BLE001 - any failure of the optional stream means: try later
                logger.debug(
                    "http.get_stream_failed", extra={"url": display_url(self.url), "error": type(exc).__name__}
                )
            if anyio.current_time() - opened >= STREAM_HEALTHY_S:
                self.get_stream_failures = 0
            self.get_stream_failures += 1
            delay = GET_BACKOFF.delay(self.get_stream_failures, hint_s=hint_ms / 1000 if hint_ms else None)
            count = self.get_stream_failures
            if count & (count - 1) == 0:  # 1, 2, 4, 8, ...: one line per doubling, not one per reopening
                logger.info(
                    "http.get_stream_reopening",
                    extra={"url": display_url(self.url), "closed_in_a_row": count, "next_try_s": round(delay, 1)},
                )
            await anyio.sleep(delay)

    async def _handle_reconnection(
        self,
        ctx: RequestContext,
        last_event_id: str,
        retry_interval_ms: int | None = None,
        attempt: int = 0,
    ) -> None:
        """Resume a request's stream with `Last-Event-ID`, at most `RESUME_ATTEMPTS` empty times in a row."""
        del attempt
        request = ctx.session_message.message
        assert isinstance(request, JSONRPCRequest)
        request_id = request.id
        on_token = ctx.metadata.on_resumption_token_update if ctx.metadata else None
        empty = 0
        hint_ms = retry_interval_ms
        while empty < RESUME_ATTEMPTS:
            await anyio.sleep(RESUME_BACKOFF.delay(empty + 1, hint_s=hint_ms / 1000 if hint_ms else None))
            headers = self._prepare_headers()
            headers[LAST_EVENT_ID] = last_event_id
            brought_message = False
            try:
                async with sse_within_origin(
                    ctx.client, self.url, headers=headers, max_event_size=self.max_sse_event_size
                ) as events:
                    if events.response.status_code >= 300:
                        empty += 1
                        continue
                    async for sse in events:
                        if sse.id:
                            last_event_id = sse.id
                        if sse.retry is not None:
                            hint_ms = sse.retry
                        if sse.event == "message" and sse.data:
                            brought_message = True
                        if await self._handle_sse_event(sse, ctx.read_stream_writer, request_id, on_token):
                            await events.response.aclose()
                            return
            except httpx2.SSEError as exc:
                await self._fail_request(ctx, request_id, f"the server's event stream for this request failed: {exc}")
                return
            except Exception as exc:  # noqa: BLE001 - a failed resumption counts like an empty one
                logger.debug(
                    "http.resumption_failed", extra={"url": display_url(self.url), "error": type(exc).__name__}
                )
            empty = 0 if brought_message else empty + 1
        logger.warning("http.resumption_gave_up", extra={"url": display_url(self.url), "attempts": empty})
        await self._send_error(ctx, request_id, resumptions_exhausted(self.url, empty))

    async def _fail_request(self, ctx: RequestContext, request_id: Any, message: str) -> None:
        """Resolve a request whose answer can never come with a typed error the runtime rebuilds."""
        await self._send_error(ctx, request_id, unanswered_error(self.url, message))

    async def _send_error(self, ctx: RequestContext, request_id: Any, error: ErrorData) -> None:
        reply = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        try:
            await ctx.read_stream_writer.send(SessionMessage(reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.debug("http.request_unresolvable", extra={"url": display_url(self.url)})


def non_answer_error(url: str, message: str, status: int) -> ErrorData:
    """The JSON-RPC error of a request the server answered with HTTP `status` and a body that is no
    JSON-RPC answer (a 204, a 200 with a cut or foreign body), carrying the typed `MCP_PROTOCOL_ERROR`
    the runtime rebuilds from `data[ERROR_DATA_KEY]`, so the agent gets our code, not what would pass
    for the server's own JSON-RPC error (R-8.3, R-7.3)."""
    return _carrying("MCP_PROTOCOL_ERROR", message, {"reason": "protocol", "url": display_url(url), "status": status})


def unanswered_error(url: str, message: str, **details: Any) -> ErrorData:
    """The JSON-RPC error of a request whose answer can never come (`CONNECTION_CLOSED`), carrying the
    typed `MCP_CONNECTION_LOST` error the runtime rebuilds from `data[ERROR_DATA_KEY]`."""
    return _carrying("MCP_CONNECTION_LOST", message, {"reason": "closed", "url": display_url(url), **details})


def _carrying(code: str, message: str, details: dict[str, Any]) -> ErrorData:
    """A `CONNECTION_CLOSED` JSON-RPC error carrying our typed error `{code, message, details}` under
    `ERROR_DATA_KEY`, for `runtime.attribution` to rebuild (`details` must name a `reason`)."""
    error = {"code": code, "message": message, "details": details}
    return ErrorData(code=CONNECTION_CLOSED, message=message, data={ERROR_DATA_KEY: error})


def resumptions_exhausted(url: str, empty: int) -> ErrorData:
    """`unanswered_error` for a request whose stream `empty` resumptions in a row brought nothing (item 8)."""
    return unanswered_error(
        url,
        f"the server's event stream closed without the result; {empty} resumptions (GET "
        f"{display_url(url)} with Last-Event-ID) in a row brought nothing, so mcp-center stopped waiting",
        resumptions=empty,
    )


@asynccontextmanager
async def streamable_http_transport(
    url: str, *, http_client: httpx2.AsyncClient, max_sse_event_size: int | None
) -> AsyncGenerator[TransportStreams]:
    """An `mcp.client.Transport` for Streamable HTTP over `http_client` (not closed here).

    On exit the session is ended with DELETE (R-3.10) and the transport's tasks are cancelled.
    """
    transport = BoundedStreamableHTTPTransport(url, max_sse_event_size=max_sse_event_size)
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    async with read_writer, read_stream, write_stream, write_reader, anyio.create_task_group() as tg:

        def start_get_stream() -> None:
            tg.start_soon(transport.handle_get_stream, http_client, read_writer)

        tg.start_soon(transport.post_writer, http_client, write_reader, read_writer, write_stream, start_get_stream, tg)
        try:
            yield read_stream, write_stream
        finally:
            if transport.session_id:
                await transport.terminate_session(http_client)
            tg.cancel_scope.cancel()
