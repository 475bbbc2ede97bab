"""The connection transport of the host's HTTP/1.1 protocol (`gateway.wire`) that writes what one
event-loop step wrote in one `write` (R-8.3; moved out of `gateway/wire.py` for its module size)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_HELD_BYTES", "CoalescingTransport"]

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
        self.pending: list[bytes] = []
        """What was written and is kept until `flush` (read, never changed, outside this class)."""
        self._held = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Keep `data` until the end of this step (the first write of a step schedules the flush)."""
        if not data:
            return
        if not self.pending:
            self._loop.call_soon(self.flush)
        self.pending.append(bytes(data))
        self._held += len(data)
        if self._held > MAX_HELD_BYTES:
            self.flush()

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def write_now(self, data: bytes) -> None:
        """Write what was kept and `data` at once, without waiting for the end of the step (a
        response's last write: it leaves now in any case, `on_response_complete`)."""
        if self.pending:
            self.pending.append(data)
            self.flush()
        elif data and not self._transport.is_closing():
            self._transport.write(data)

    def flush(self) -> None:
        """Write what was kept, as one `write` (nothing when nothing was kept, or the connection is closing)."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        self._held = 0
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        """Flush, then close the connection (the transport still writes what it holds)."""
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self.pending = []
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
