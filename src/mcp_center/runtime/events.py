"""A small in-process event bus for the live event stream of the UI (R-3.11).

Publishers (the connection manager, the service) call `publish()` synchronously; it never blocks
and never raises. Each subscriber has a bounded buffer: a subscriber that falls behind by more
than `buffer` events loses the oldest ones and gets a `{"type": "events.dropped"}` marker, so a
slow browser tab can never slow down or grow the host.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio

__all__ = ["EventBus", "Subscription"]


class Subscription:
    """One subscriber's bounded queue of events."""

    def __init__(self, buffer: int) -> None:
        self._queue: deque[dict[str, Any]] = deque()
        self._buffer = buffer
        self._dropped = 0
        self._wakeup = anyio.Event()

    def _push(self, event: dict[str, Any]) -> None:
        if len(self._queue) >= self._buffer:
            self._queue.popleft()
            self._dropped += 1
        self._queue.append(event)
        self._wakeup.set()

    async def next(self) -> dict[str, Any]:
        """Wait for and return the next event (a `events.dropped` marker first if events were lost)."""
        while not self._queue:
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
        if self._dropped:
            dropped, self._dropped = self._dropped, 0
            return {"type": "events.dropped", "count": dropped}
        return self._queue.popleft()


class EventBus:
    """Fan-out of JSON-able events to any number of subscribers."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._seq = itertools.count(1)

    def publish(self, event_type: str, **fields: Any) -> None:
        """Send `{"type", "seq", "at", **fields}` to every subscriber (non-blocking)."""
        event = {"type": event_type, "seq": next(self._seq), "at": datetime.now(UTC).isoformat(), **fields}
        for subscriber in list(self._subscribers):
            subscriber._push(event)  # pyright: ignore[reportPrivateUsage]

    @asynccontextmanager
    async def subscribe(self, *, buffer: int = 256) -> AsyncGenerator[Subscription]:
        """Receive events published while the block runs."""
        subscription = Subscription(buffer)
        self._subscribers.add(subscription)
        try:
            yield subscription
        finally:
            self._subscribers.discard(subscription)

    @property
    def subscriber_count(self) -> int:
        """How many subscriptions are open."""
        return len(self._subscribers)
