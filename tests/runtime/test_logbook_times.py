"""The logbook's times (R-3.11): kept as numbers per exchange, shown as aware UTC ISO 8601 when read
(formatting a timestamp per forwarded call was a measurable share of the gateway's CPU, R-8.3)."""

from __future__ import annotations

import time
from dataclasses import FrozenInstanceError, fields
from datetime import UTC, datetime

import pytest

from mcp_center.runtime.logbook import LogEntry, ServerLogbook, _Pending  # pyright: ignore[reportPrivateUsage]


def _when(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    offset = at.utcoffset()
    assert offset is not None and offset.total_seconds() == 0
    return at


def test_every_kind_of_entry_reads_as_the_utc_time_it_was_recorded() -> None:
    book = ServerLogbook()
    before = datetime.now(UTC)
    book.request("c1", "client→server", "7", "tools/call", 40)
    pending = book.entries()
    book.answer("c1", "server→client", "7", 36, None)
    book.answer("c1", "server→client", "8", 36, {"code": -32601, "message": "nope"})  # nothing pending
    book.notification("c1", "client→server", "notifications/initialized", 40)
    book.received(RuntimeError("stream ended"), "c1")
    book.note("c1", "tools/call", "output_invalid", "'t': bad")
    book.add_stderr("a line")
    after = datetime.now(UTC)
    assert pending[0]["status"] == "pending"
    read = [*pending, *book.entries(), *book.stderr()]
    assert len(read) == 8  # the answer to "8" (sent by nobody) also writes a line to the output log
    for entry in read:
        assert isinstance(entry["at"], str)
        assert before <= _when(entry["at"]) <= after, entry
    answered = book.entries()[0]
    assert answered["status"] == "ok" and answered["at"] == pending[0]["at"]  # when the request was sent


def test_an_answered_entry_is_the_entry_its_constructor_builds() -> None:
    """R-3.11, R-8.3: `_Pending.entry` sets a `LogEntry`'s fields without its `__init__` (issue 12):
    every field, no other, equal to the constructor's entry (a field added later fails here)."""
    entry = _Pending(1.5, 2.5, "tools/call", 40, "client→server").entry(
        "c1", "7", status="error", error={"code": 1, "message": "m"}, response_bytes=9, violation=None
    )
    assert set(vars(entry)) == {item.name for item in fields(LogEntry)}
    assert entry == LogEntry(**vars(entry))
    assert entry.duration_ms is None and entry.status == "error" and entry.request_bytes == 40
    ended = _Pending(1.5, time.monotonic(), "ping", 3, "client→server").entry("c1", "8", status="ok", ended=True)
    assert ended == LogEntry(**vars(ended)) and ended.duration_ms is not None and ended.duration_ms >= 0
    with pytest.raises(FrozenInstanceError):
        ended.status = "changed"  # pyright: ignore[reportAttributeAccessIssue] - the point: it is frozen
