"""An agent that goes away mid-request is one log line, not a traceback (R-3.11).

The SDK's Streamable HTTP transport (`mcp.server.streamable_http`) logs with `logger.exception`
wherever a per-request step fails, and some of those failures only mean the agent is gone:

- it dropped the connection while its POST body was still arriving (`ClientDisconnect`);
- its session ended (its own DELETE, revocation, idle timeout) while one of its requests was
  being handed over, e.g. an SDK client that leaves mid-call sends `notifications/cancelled` and
  DELETE at once (`anyio.ClosedResourceError` / `BrokenResourceError` on the session's streams).

The SDK then also tries to answer the request that already got its 202, which uvicorn refuses
with a `RuntimeError` ("after response already completed") and a second and third traceback.

`quiet_client_disconnects()` turns exactly those records into one INFO line,
`gateway.client_gone` (fields `reason`: the exception type, `during`: the SDK's message). It
only looks at records of that one SDK logger, with one of its per-request messages, whose
exception is (or, for a group, consists only of) those three types; anything else the SDK logs
stays as it is, traceback included. `OneResponse` keeps the late answer off the wire.

`watch_disconnect` cancels a lean call whose agent closed its request (2026-07-28 cancellation).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager

import anyio
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Send

from mcp_center.gateway.wire import DirectExchange
from mcp_center.runtime.attribution import leaves

__all__ = ["SDK_TRANSPORT_LOGGER", "WATCH_AFTER_S", "OneResponse", "quiet_client_disconnects", "watch_disconnect"]

WATCH_AFTER_S = 0.05
"""Seconds a lean `tools/call` of a request that is not direct runs before its agent's disconnect is
watched (a closed POST then cancels it, as an agent's `notifications/cancelled` does at once)."""

SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"
"""The logger of the SDK's server-side Streamable HTTP transport (mcp 2.3.0)."""

_PER_REQUEST_MESSAGES = frozenset(
    {
        "Error handling POST request",
        "SSE response error",
        "Error in SSE writer",
        "Error in standalone SSE writer",
        "Error in standalone SSE response",
        "Error in replay sender",
        "Error in replay response",
    }
)
"""What the SDK logs (mcp 2.3.0, `streamable_http.py`) when one request's exchange fails."""

_GONE = (ClientDisconnect, anyio.ClosedResourceError, anyio.BrokenResourceError)

logger = logging.getLogger("mcp_center.gateway.endpoint")


class _ClientGoneFilter(logging.Filter):
    """Replace the SDK's traceback for an agent that went away by one `gateway.client_gone` line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.msg not in _PER_REQUEST_MESSAGES or exc is None:
            return True
        gone = list(leaves(exc))
        if not all(isinstance(leaf, _GONE) for leaf in gone):
            return True
        logger.info("gateway.client_gone", extra={"reason": type(gone[0]).__name__, "during": record.msg})
        return False


@contextmanager
def quiet_client_disconnects() -> Generator[None]:
    """While entered, the SDK transport logs an agent that went away as one INFO line (R-3.11).

    Installs a filter on the `SDK_TRANSPORT_LOGGER` logger only (records of other loggers and other
    exceptions pass untouched) and removes it on exit.
    """
    sdk = logging.getLogger(SDK_TRANSPORT_LOGGER)
    gone = _ClientGoneFilter()
    sdk.addFilter(gone)
    try:
        yield
    finally:
        sdk.removeFilter(gone)


class OneResponse:
    """An ASGI `send` that passes one response and drops whatever comes after it (one DEBUG line).

    The SDK answers a request whose hand-over failed with a 500 even when it already sent the 202
    (a notification); on the wire that answer can only be an ASGI error, so it is not sent.

    Args:
        send: The server's `send`.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        """True once the response's start (status and headers) went out."""
        self.complete = False
        """True once the last body message of the response went out."""

    async def __call__(self, message: Message) -> None:
        if self.complete:
            logger.debug("gateway.late_message_dropped", extra={"type": message["type"]})
            return
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)

    async def finish(self) -> None:
        """End a response that was started and left open: its last (empty) body message.

        The SDK's SSE responses (sse-starlette) stop streaming when the server is asked to stop and
        return without that message, which uvicorn logged as `ERROR: ASGI callable returned without
        completing response.` and the agent saw as a cut chunked body. Ended here, the stream closes
        as a server ends any SSE stream; a 2025-11-25 agent reconnects or re-initializes elsewhere.
        Does nothing for a response not started or already complete.
        """
        if self.started and not self.complete:
            logger.debug("gateway.open_stream_ended")
            await self({"type": "http.response.body", "body": b"", "more_body": False})


def watch_disconnect(receive: Receive, went: Callable[[], object]) -> Callable[[], None]:
    """Call `went` once when the agent closes the request `receive` belongs to, before its answer is
    complete; returns what stops the watch (call it when the call ends, R-3.8, R-8.3).

    A direct request (`gateway.wire.DirectExchange`) is watched by its protocol, a callback and no
    task (issue 12: a watching task per call cost each call that ran long its start, wake-ups and
    cancellation, most calls at concurrency 64). Any other is watched by a task that waits in
    `receive`, started only once the call has run `WATCH_AFTER_S` (most calls end sooner).
    """
    if isinstance(receive, DirectExchange):
        return receive.watch(went)
    return _watched_by_task(receive, went)


def _watched_by_task(receive: Receive, went: Callable[[], object]) -> Callable[[], None]:
    """`watch_disconnect` of a request uvicorn's cycle serves. Its own function: the closures below
    made `watch_disconnect` create five cells on every call, a direct one too (issue 12)."""
    loop = asyncio.get_running_loop()
    watchers: list[asyncio.Task[None]] = []
    timer = loop.call_later(
        WATCH_AFTER_S, lambda: watchers.append(loop.create_task(_went_on_disconnect(receive, went)))
    )

    def stop() -> None:
        timer.cancel()
        for watcher in watchers:
            watcher.cancel()

    return stop


async def _went_on_disconnect(receive: Receive, went: Callable[[], object]) -> None:
    """Call `went` when `receive` says the agent has gone (`http.disconnect`)."""
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            went()
            return
