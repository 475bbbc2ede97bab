"""Live activity of each server: its log messages, its notifications, and the progress of calls (R-12.1).

What the Inspector shows beside a session, kept by the host: `notifications/message` (the server's
own log, at the level chosen with `logging/setLevel`), every other notification it sends
(`notifications/*/list_changed`, `notifications/resources/updated`, `notifications/cancelled`, ...)
and the `notifications/progress` of calls made through the connection manager, each tied to the
call's operation id so the playground can draw a progress bar for its own call.

Threat: a debugging view that becomes a leak or a memory sink. Everything a server sends has been
redacted by the transport tap already (`runtime/manager.py`, R-1.5); it is redacted again here, so a
secret registered after the message arrived is not kept either. Each server keeps at most
`ACTIVITY_ENTRIES` entries, each at most `MAX_DATA_BYTES` of data (longer data is cut and marked),
and a chatty server cannot flood the event stream: entries are published as `server.activity`
events through a per-server token bucket (`PUBLISH_BURST` at once, `PUBLISH_PER_S` a second after
that). An entry that was not published is still kept; its `seq` leaves a gap that tells a page to
read the list again (`entries(after=...)`).
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from mcp_center.runtime.events import EventBus
from mcp_center.secrets import Redactor, default_redactor

__all__ = [
    "ACTIVITY_ENTRIES",
    "LOG_LEVELS",
    "MAX_DATA_BYTES",
    "PUBLISH_BURST",
    "PUBLISH_PER_S",
    "ActivityEntry",
    "ActivityKind",
    "ActivityRecorder",
]

ACTIVITY_ENTRIES = 200
"""Activity entries kept per server (oldest dropped first)."""
MAX_DATA_BYTES = 4096
"""Largest log `data` or notification `params` kept per entry, in bytes of JSON; longer is cut and marked."""
PUBLISH_BURST = 50
"""Entries of one server published at once before the rate limit applies."""
PUBLISH_PER_S = 20.0
"""Entries of one server published per second once the burst is spent."""
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The MCP logging levels (RFC 5424 severities), lowest first."""

ActivityKind = Literal["log", "notification", "progress"]


@dataclass(frozen=True)
class ActivityEntry:
    """One thing a server did, as the page shows it.

    Attributes:
        seq: Increasing per server (a gap means entries were not published live).
        at: When it arrived (aware UTC, ISO 8601).
        kind: `log` (`notifications/message`), `notification` (any other), `progress`.
        method: The notification's JSON-RPC method.
        connection_id: The client instance it arrived on (R-3.5).
        level / logger / data: For `log`: the level, the logger name, the data (redacted).
        params: For `notification`: its params (redacted, bounded).
        operation_id / progress / total / message: For `progress`: the call and how far it is.
        truncated: The data or params were longer than `MAX_DATA_BYTES` and were cut.
    """

    seq: int
    at: str
    kind: ActivityKind
    method: str
    connection_id: str | None = None
    level: str | None = None
    logger: str | None = None
    data: Any = None
    params: Any = None
    operation_id: str | None = None
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API and the `server.activity` event (absent fields left out)."""
        out: dict[str, Any] = {"seq": self.seq, "at": self.at, "kind": self.kind, "method": self.method}
        for key in ("connection_id", "level", "logger", "operation_id", "progress", "total", "message"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.kind == "log":
            out["data"] = self.data
        if self.kind == "notification":
            out["params"] = self.params
        if self.truncated:
            out["truncated"] = True
        return out


class _Bucket:
    """A token bucket: `take()` is True while the server stays under the publish rate."""

    def __init__(self) -> None:
        self.tokens = float(PUBLISH_BURST)
        self.stamp = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(float(PUBLISH_BURST), self.tokens + (now - self.stamp) * PUBLISH_PER_S)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def _bounded(value: Any, redactor: Redactor) -> tuple[Any, bool]:
    """`value` redacted; when its JSON is over `MAX_DATA_BYTES`, the start of that JSON as text and True."""
    value = redactor.redact_values(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = redactor.redact(repr(value))
        value = text
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= MAX_DATA_BYTES:
        return value, False
    return encoded[:MAX_DATA_BYTES].decode("utf-8", "ignore") + "…", True


class ActivityRecorder:
    """Activity rings of every server, published on `events` as `server.activity` (R-12.1).

    Calls are synchronous and never block or raise on what a server sent (must-not-block
    callbacks of the connection manager call them).

    Args:
        events: The host's event bus (`{"type": "server.activity", "server_id", "entry"}`).
        redactor: Removes known secret values (R-1.5).
    """

    def __init__(self, events: EventBus, redactor: Redactor = default_redactor) -> None:
        self._events = events
        self._redactor = redactor
        self._rings: dict[str, deque[ActivityEntry]] = {}
        self._buckets: dict[str, _Bucket] = {}
        self._seq: dict[str, itertools.count[int]] = {}

    def log(
        self, server_id: str, connection_id: str | None, *, level: str, logger: str | None, data: Any
    ) -> ActivityEntry:
        """Record a `notifications/message` (the server's log line) and publish it."""
        bounded, cut = _bounded(data, self._redactor)
        name = self._redactor.redact(logger)[:200] if logger else None
        return self._add(
            server_id,
            kind="log",
            method="notifications/message",
            connection_id=connection_id,
            level=level,
            logger=name,
            data=bounded,
            truncated=cut,
        )

    def notification(self, server_id: str, connection_id: str | None, method: str, params: Any) -> ActivityEntry:
        """Record any other notification the server sent (list_changed, resources/updated, cancelled, ...)."""
        bounded, cut = _bounded(params, self._redactor)
        return self._add(
            server_id,
            kind="notification",
            method=self._redactor.redact(method)[:200],
            connection_id=connection_id,
            params=bounded,
            truncated=cut,
        )

    def progress(
        self,
        server_id: str,
        connection_id: str | None,
        operation_id: str,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> ActivityEntry:
        """Record a `notifications/progress` of the call `operation_id` (R-12.1)."""
        text = self._redactor.redact(message)[:1000] if message else None
        return self._add(
            server_id,
            kind="progress",
            method="notifications/progress",
            connection_id=connection_id,
            operation_id=operation_id,
            progress=progress,
            total=total,
            message=text,
        )

    def entries(self, server_id: str, *, after: int | None = None) -> list[ActivityEntry]:
        """The server's kept entries, oldest first (only those with `seq > after` when given)."""
        ring = self._rings.get(server_id)
        if ring is None:
            return []
        return [entry for entry in ring if after is None or entry.seq > after]

    def clear(self, server_id: str) -> None:
        """Forget a server's entries (the page's "Clear"; also when the server is deleted)."""
        self._rings.pop(server_id, None)

    def forget(self, server_id: str) -> None:
        """Drop everything kept for a deleted server."""
        self._rings.pop(server_id, None)
        self._buckets.pop(server_id, None)
        self._seq.pop(server_id, None)

    def _add(self, server_id: str, **fields: Any) -> ActivityEntry:
        seq = next(self._seq.setdefault(server_id, itertools.count(1)))
        entry = ActivityEntry(seq=seq, at=datetime.now(UTC).isoformat(), **fields)
        self._rings.setdefault(server_id, deque(maxlen=ACTIVITY_ENTRIES)).append(entry)
        if self._buckets.setdefault(server_id, _Bucket()).take():
            self._events.publish("server.activity", server_id=server_id, entry=entry.to_dict())
        return entry
