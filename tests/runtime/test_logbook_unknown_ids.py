"""ux35: a server's answers under a request id nobody sent are counted per connection, marked in the
request log and written once to the server's output log, redacted (R-3.11, R-1.5)."""

from __future__ import annotations

from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.secrets import Redactor

SECRET = "sk-unknown-id-0123456789abcdef"


def test_answers_under_unknown_ids_are_counted_per_connection_and_logged_once() -> None:
    redactor = Redactor()
    redactor.add(SECRET)
    book = ServerLogbook(redactor)
    book.request("c1", "client→server", "1", "tools/call", 40)
    book.answer("c1", "server→client", "1", 36, None)  # the answer to our request: known
    book.answer("c1", "server→client", f"x-{SECRET}", 36, None)
    book.answer("c1", "server→client", "99", 36, None)
    book.request("c1", "server→client", "s1", "roots/list", 40)
    book.answer("c1", "client→server", "never-asked", 36, None)  # our own answer: not the server's mix-up

    unknown = book.unknown_answers("c1")
    assert unknown is not None
    assert unknown.count == 2
    assert unknown.first_id == "x-[redacted]"
    assert book.unknown_answers("c2") is None
    statuses = [(e["request_id"], e["status"]) for e in book.entries()]
    assert ("1", "ok") in statuses
    assert ("x-[redacted]", "unknown_id") in statuses
    assert ("99", "unknown_id") in statuses
    lines = [line["line"] for line in book.stderr()]
    assert len(lines) == 1
    assert lines[0].startswith("[answer to an unknown request id 'x-[redacted]'")
    assert SECRET not in lines[0]


def test_only_the_newest_connections_keep_their_count() -> None:
    book = ServerLogbook()
    for n in range(20):
        book.answer(f"c{n}", "server→client", "7", 36, None)
    assert book.unknown_answers("c0") is None
    newest = book.unknown_answers("c19")
    assert newest is not None and newest.count == 1 and newest.first_id == "7"


def test_once_a_pending_request_left_the_books_an_unmatched_answer_is_not_called_unknown() -> None:
    book = ServerLogbook()
    for n in range(1001):  # one over the limit: the first request's entry is dropped
        book.request("c1", "client→server", str(n), "tools/call", 40)
    book.answer("c1", "server→client", "0", 36, None)  # the answer to that first request
    assert book.unknown_answers("c1") is None
    assert book.stderr() == []
