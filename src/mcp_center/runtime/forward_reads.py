"""The responses the lean forwarder reads, whatever client carried them (R-8.3, issue 14 item 2).

`runtime/forward.py` reads a server's answer through `Response`: an `Http1Client` answer as it is or
through the connection's read cap (`ClippedResponse`), or an `httpx2` streamed response
(`Httpx2Response`, its transport caps the body); an event stream is split by `SseParser`. Split out of
`forward.py` by responsibility (module size, issue 12).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

import httpx2

from mcp_center.runtime.http1 import Http1Error, Http1Response
from mcp_center.transports import MAX_MESSAGE_BYTES
from mcp_center.transports.clip import ClipReport, ReadLimits
from mcp_center.transports.http import clip_body

__all__ = ["ClippedResponse", "Httpx2Response", "Response", "SseParser", "ignore_clip", "media_type"]

_UNBOUNDED = 1 << 62
"""Bytes of a clipped `Http1Client` answer read from the wire: the clipper bounds what is kept."""


class Response(Protocol):
    """What `RawForwarder._read` needs of a response, from `Http1Client` or `httpx2`."""

    status_code: int
    headers: Mapping[str, str]

    def aiter_bytes(self, limit: int) -> AsyncIterator[bytes]: ...

    async def aread(self, limit: int) -> bytes: ...


class ClippedResponse:
    """An `Http1Client` response read through the connection's read cap (`transports.http.clip_body`).

    The limits of `aiter_bytes` and `aread` then count the bytes handed on, as for `httpx2`, whose
    transport clips: the clipper bounds what is kept of however many bytes the server sends.
    """

    def __init__(self, response: Http1Response, limits: ReadLimits, on_clip: Callable[[ClipReport], None]) -> None:
        self._response = response
        self._limits = limits
        self._on_clip = on_clip
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self._unclipped = (
            0
            if self.headers.get("content-type", "").lower().startswith("text/event-stream")
            else min(limits.max_message_bytes, limits.max_string_bytes, limits.max_tokens)
        )
        """Bytes of a JSON body the clipper cannot cut (no string, message or token count can be over
        the limits); 0 for an event stream, which always goes through the clipper."""

    async def aiter_bytes(self, limit: int) -> AsyncIterator[bytes]:
        content_type = self.headers.get("content-type", "")
        raw = self._response.aiter_bytes(_UNBOUNDED)
        seen = 0
        async for chunk in clip_body(raw, content_type, self._limits, self._on_clip):
            seen += len(chunk)
            if seen > limit:
                raise Http1Error(f"the response is larger than {limit} bytes")
            yield chunk

    async def aread(self, limit: int) -> bytes:
        if self._unclipped:
            # A JSON answer whose declared length is below every limit comes out of the clipper as
            # it went in, with nothing to report: read it without (most answers, R-8.3).
            whole = await self._response.read_declared(min(self._unclipped, limit))
            if whole is not None:
                return whole
        return b"".join([chunk async for chunk in self.aiter_bytes(limit)])


def ignore_clip(report: ClipReport) -> None:
    """An `on_clip` that keeps nothing (the caller did not ask)."""
    del report


class Httpx2Response:
    """An `httpx2` streamed response as a `Response` (its transport bounds non-SSE bodies)."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def aiter_bytes(self, limit: int) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._response.aiter_bytes():
            seen += len(chunk)
            if seen > limit:
                raise httpx2.ReadError(f"the response is larger than {limit} bytes")
            yield chunk

    async def aread(self, limit: int) -> bytes:
        del limit  # the connection's transport caps the body (`transports.http`)
        return await self._response.aread()


class SseParser:
    """Server-sent events from bytes: `(id, retry, data)` per event; `event:` names are not used."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str, int | None, str]]:
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        if len(self._buffer) > MAX_MESSAGE_BYTES:
            raise httpx2.ReadError(f"a server-sent event is larger than {MAX_MESSAGE_BYTES} bytes")
        *blocks, self._buffer = self._buffer.split(b"\n\n")
        events: list[tuple[str, int | None, str]] = []
        for block in blocks:
            event_id = ""
            retry: int | None = None
            data: list[str] = []
            for line in block.decode("utf-8", "replace").split("\n"):
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    data.append(value)
                elif name == "id":
                    event_id = value
                elif name == "retry" and value.isdigit():
                    retry = int(value)
            events.append((event_id, retry, "\n".join(data)))
        return events


def media_type(headers: Mapping[str, str]) -> str:
    """The media type of a response's `content-type` (lower case, no parameters)."""
    return headers.get("content-type", "").partition(";")[0].strip().lower()
