"""The logbook's times (R-3.11): kept as numbers per exchange, shown as aware UTC ISO 8601 when read
(formatting a timestamp per forwarded call was a measurable share of the gateway's CPU, R-8.3)."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp_center.runtime.logbook import ServerLogbook


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
