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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["MAX_HELD_BYTES", "CoalescingHttpToolsProtocol", "CoalescingTransport"]

MAX_HELD_BYTES = 64 * 1024
"""Bytes kept before they are written at once, step or not: a body streamed without pausing between
chunks then still reaches the real transport, whose flow control (`pause_writing`) bounds it."""


class CoalescingTransport(asyncio.Transport):
    """A stream transport whose writes within one event-loop step leave in one `write` (see the module docstring).

    Args:
        transport: The connection's real transport; everything but writing and closing is passed to it.
        loop: The loop whose next step flushes what was written.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._held = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Keep `data` until the end of this step (the first write of a step schedules the flush)."""
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))
        self._held += len(data)
        if self._held > MAX_HELD_BYTES:
            self.flush()

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Write what was kept, as one `write` (nothing when nothing was kept, or the connection is closing)."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self._held = 0
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        """Flush, then close the connection (the transport still writes what it holds)."""
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._held = 0
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request cycles write through one `CoalescingTransport` per connection.

    Its request cycles also skip the access log's line when `uvicorn.access` would drop it (`serve
    --log-level warning` or above): uvicorn decides by the logger having handlers only, and so built
    the line's client address and quoted path for every response before `logging` dropped it (issue 12).
    """

    _coalescing: CoalescingTransport | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._coalescing = CoalescingTransport(transport, self.loop)
        # Per connection, as uvicorn's own `hasHandlers` check: a level lowered later counts from the next connection.
        self.access_log = self.access_log and self.access_logger.isEnabledFor(logging.INFO)

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        # A new cycle (not an upgrade, which keeps the old one): it has not run yet (its task
        # starts on a later step), so its writes all go through the connection's coalescing buffer.
        if cycle is not before and self._coalescing is not None:
            cycle.transport = self._coalescing

    def on_response_complete(self) -> None:
        """A response is complete (uvicorn calls this right after its last `write`): it leaves now,
        not at the end of the step, which still unwinds the app first."""
        if self._coalescing is not None:
            self._coalescing.flush()
        super().on_response_complete()

    def shutdown(self) -> None:
        """The server stops: what a finished response still holds is written before uvicorn closes the connection."""
        if self._coalescing is not None:
            self._coalescing.flush()
        super().shutdown()
