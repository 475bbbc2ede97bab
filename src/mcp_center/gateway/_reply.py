"""One lean POST's answer on the agent's connection: a JSON body, or an SSE stream once a message
must precede the result (`gateway.fastpath`, R-8.3). Package-private."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import anyio
import orjson
from starlette.types import Send

__all__ = ["JSON_HEADERS", "SSE_HEADERS", "Flow", "Reply"]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]


class Flow(Protocol):
    """What `Reply` reads of an HTTP cycle's flow control (uvicorn's `FlowControl`)."""

    @property
    def write_paused(self) -> bool: ...


class Reply:
    """One POST's answer: a JSON body, or an SSE stream once a message must precede the result."""

    def __init__(self, send: Send, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        self._send = send
        self._flow: Flow | None = getattr(getattr(send, "__self__", None), "flow", None)
        """The agent connection's flow control when `send` is a known HTTP cycle's (uvicorn's, or the
        direct route's `DirectExchange`): `early` writes only while its writing is not paused."""
        self._extra = extra
        """Headers added to the answer's (the session id in a session)."""
        self._streaming = False
        self._done = False
        self._lock: anyio.Lock | None = None
        """Made by the first `event` (most answers are one JSON body: no lock to build)."""
        self.failure: Exception | None = None
        """What writing the answer raised in `early`, for `LeanPath.serve` to raise."""

    @property
    def done(self) -> bool:
        """The final message was written (or the answer ended without one)."""
        return self._done

    async def early(self, body: bytes) -> None:
        """`finish(body)` from inside the call, before its bookkeeping unwinds (`EarlyAnswer`, issue 12):
        a failure to write is kept in `failure` (the call itself is not failed by it). Not for an SSE
        answer (rare: progress or a question came first): its lock may wait a step inside the call's
        scopes, so it is answered after they unwind, as before. Nor when the write could wait: an
        agent that does not read (its connection's writing paused), or a `send` whose flow is unknown.
        A write waiting inside the call's deadline and admission could be cancelled there with the
        answer half-marked, and the call's scopes would stay held while the agent does not read."""
        if self._lock is not None or self._done:
            return
        flow = self._flow
        if flow is None or flow.write_paused:
            return  # answered by `finish` after the call's bookkeeping unwinds, as before
        self._done = True  # `finish` without a lock, in line
        try:
            await self._last(body, 200)
        except Exception as exc:  # noqa: BLE001 - kept for `serve`, which raises it
            self.failure = exc

    async def event(self, message: Mapping[str, Any]) -> None:
        """Send `message` before the result (switches the answer to SSE)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._done:
                return
            if not self._streaming:
                self._streaming = True
                headers = [*SSE_HEADERS, *self._extra] if self._extra else SSE_HEADERS
                await self._send({"type": "http.response.start", "status": 200, "headers": headers})
            await self._send(
                {
                    "type": "http.response.body",
                    "body": b"event: message\ndata: " + orjson.dumps(message) + b"\n\n",
                    "more_body": True,
                }
            )

    async def finish(self, body: bytes | None, *, status: int = 200) -> None:
        """Send the final JSON-RPC message (`body`; with HTTP `status` when it is the only one), or end
        the answer without one (a cancelled request)."""
        if self._lock is None:
            if not self._done:
                self._done = True
                await self._last(body, status)
            return
        async with self._lock:
            if self._done:
                return
            self._done = True
            await self._last(body, status)

    async def _last(self, body: bytes | None, status: int) -> None:
        """Write the last message of the answer (the lock, if any, is held)."""
        if self._streaming:
            chunk = b"event: message\ndata: " + body + b"\n\n" if body is not None else b""
            await self._send({"type": "http.response.body", "body": chunk, "more_body": False})
            return
        if body is None:
            await self._send({"type": "http.response.start", "status": 202, "headers": [*self._extra]})
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode()), *self._extra]
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
