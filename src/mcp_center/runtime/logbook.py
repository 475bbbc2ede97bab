"""Per-server debugging records: the last requests/responses and the last stderr lines (R-3.11).

Threat: a debugging view that becomes a leak. Entries hold only method, id, direction, timing,
status, sizes and (redacted) error text — never params, results or headers — and every text
field passes through the redactor before it is stored.

For a sandboxed server (`sandbox_network` set), stderr lines, JSON-RPC errors and `isError` tool results that
report what the sandbox refused (EACCES, ENETUNREACH, ...) carry `violation: {"kind", "errno"}`
(`transports/violations.py`, R-11.1): only the classification is kept, never the result's text.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from mcp_center.secrets import Redactor, default_redactor
from mcp_center.transports.clip import approx_json_size
from mcp_center.transports.violations import Violation, classify_violation

__all__ = ["LOG_ENTRIES", "STDERR_LINES", "LogEntry", "ServerLogbook", "UnknownAnswers"]

logger = logging.getLogger(__name__)

LOG_ENTRIES = 50
"""Request/response summaries kept per server (R-3.11)."""
STDERR_LINES = 200
"""stderr lines kept per stdio server."""
_PENDING_LIMIT = 1000
_UNKNOWN_CONNECTIONS = 16
"""Connections whose answers to unknown request ids are counted (the newest; the error of a failed one
is built after its books are closed)."""
_UNKNOWN_ID_CHARS = 80


@dataclass(frozen=True, kw_only=True)
class LogEntry:
    """One request/response (or notification) summary.

    Attributes:
        at: When the exchange started, in seconds since the epoch (`time.time()`); aware UTC,
            ISO 8601 in JSON (formatted when the entries are read, not per exchange: R-8.3).
        direction: "client→server" (we sent it) or "server→client".
        kind: "request", "notification", "error" (a transport-level error item) or "check" (a
            finding about an exchange, e.g. a result that breaks its tool's outputSchema).
        method: JSON-RPC method, e.g. "tools/call"; None for a bare error item.
        request_id: The JSON-RPC id as text, for requests.
        duration_ms: Time to the response, for requests that got one.
        status: "ok", "error", "pending", "sent", "unknown_id" (a server's answer whose id matches no
            request of ours), or a check's finding ("output_invalid").
        request_bytes / response_bytes: About the JSON sizes in bytes (computed without serializing).
        error: `{"code", "message"}` of a JSON-RPC error (redacted), or None.
        connection_id: The client instance that carried it (R-3.5).
        violation: For a sandboxed server, `{"kind", "errno"}` when the error or `isError` result
            reports something the sandbox refused (R-11.1), else None.

    Keyword-only; what an entry does not know stays None (the JSON keeps every key, in this order).
    """

    at: float
    direction: str
    kind: str
    method: str | None = None
    request_id: str | None = None
    duration_ms: float | None = None
    status: str
    request_bytes: int | None = None
    response_bytes: int | None = None
    error: dict[str, Any] | None = None
    connection_id: str | None = None
    violation: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API."""
        shaped = asdict(self)
        shaped["at"] = _iso(self.at)
        return shaped


@dataclass
class UnknownAnswers:
    """A server's answers whose JSON-RPC id matches no request of ours on one connection (ux35).

    The SDK drops such an answer without a word, so the request it was meant for waits for its whole
    timeout; the timeout's message names them (`attribution.add_output_hints`).

    Attributes:
        count: How many answers came with an unknown id.
        first_id: The first such id as text, redacted and cut to 80 characters.
    """

    count: int
    first_id: str


@dataclass
class _Pending:
    at: float
    started: float
    method: str
    size: int
    direction: str

    def entry(
        self,
        connection_id: str,
        request_id: str,
        *,
        status: str,
        ended: bool = False,
        error: dict[str, Any] | None = None,
        response_bytes: int | None = None,
        violation: dict[str, str] | None = None,
    ) -> LogEntry:
        """The entry of this request: still `pending`, or `ended` now (its duration measured).

        Built as `LogEntry(...)` would build it, its fields set at once (`_built_entry`): every
        forwarded call ends one request here, and the frozen, keyword-only constructor cost a
        dictionary of its twelve arguments, their unpacking and twelve `object.__setattr__` calls,
        about 1.8 µs per call (issue 12, R-8.3)."""
        entry = _built_entry(LogEntry)
        _set_fields(
            entry,
            "__dict__",
            {
                "at": self.at,
                "direction": self.direction,
                "kind": "request",
                "method": self.method,
                "request_id": request_id,
                "duration_ms": round((time.monotonic() - self.started) * 1000, 2) if ended else None,
                "status": status,
                "request_bytes": self.size,
                "response_bytes": response_bytes,
                "error": error,
                "connection_id": connection_id,
                "violation": violation,
            },
        )
        return entry


_built_entry = object.__new__
"""A `LogEntry` without its `__init__`: `_Pending.entry` sets every field (the dataclass's own
`__init__` runs no more than that; `tests/runtime/test_logbook_times.py` holds them equal)."""
_set_fields = object.__setattr__
"""What a frozen dataclass's own `__init__` sets its fields with (its `__setattr__` refuses)."""


def _size(message: SessionMessage) -> int:
    """About the JSON size of a message, without serializing it (a copy of a long result would
    cost as much memory as the result itself, issue 14 item 2)."""
    msg = message.message
    if isinstance(msg, types.JSONRPCResponse):
        return 36 + approx_json_size(msg.result)
    if isinstance(msg, types.JSONRPCError):
        return 60 + len(msg.error.message) + approx_json_size(msg.error.data)
    return 40 + len(msg.method) + approx_json_size(msg.params)


class ServerLogbook:
    """Ring buffers for one server; survives reconnects (entries carry the connection id)."""

    def __init__(self, redactor: Redactor = default_redactor) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=LOG_ENTRIES)
        self._stderr: deque[dict[str, Any]] = deque(maxlen=STDERR_LINES)
        self._pending: OrderedDict[tuple[str, str, str], _Pending] = OrderedDict()
        self._unknown: OrderedDict[str, UnknownAnswers] = OrderedDict()
        self._evicted = False
        """A pending request left the books (over `_PENDING_LIMIT`): an answer without one may be its."""
        self._redactor = redactor
        self.sandbox_network: str | None = None
        """The network policy while the server runs sandboxed (its errors and stderr are checked
        for violations), None while it runs unconfined."""

    def entries(self) -> list[dict[str, Any]]:
        """The last `LOG_ENTRIES` summaries, oldest first, plus still-pending requests."""
        done = [e.to_dict() for e in self._entries]
        pending = [p.entry(key[0], key[2], status="pending").to_dict() for key, p in self._pending.items()]
        return done + pending

    def stderr(self) -> list[dict[str, Any]]:
        """The last `STDERR_LINES` stderr lines `{"at", "line"}` (redacted), plus `"violation":
        {"kind", "errno"}` on a sandboxed server's line that reports a sandbox refusal (R-11.1)."""
        return list(self._stderr)

    def add_stderr(self, line: str) -> None:
        """Record one stderr line (redacted now)."""
        record: dict[str, Any] = {"at": _iso(time.time()), "line": self._redactor.redact(line)}
        violation = self._classify(line)
        if violation is not None:
            record["violation"] = violation.to_dict()
        self._stderr.append(record)

    def add_noise(self, line: str) -> None:
        """Record a non-protocol stdout line as a stderr-like line with a marker."""
        self._stderr.append({"at": _iso(time.time()), "line": "[stdout, not JSON-RPC] " + self._redactor.redact(line)})

    def unknown_answers(self, connection_id: str) -> UnknownAnswers | None:
        """The answers with a request id we never sent on `connection_id` (one of the last 16
        connections), or None when there were none."""
        return self._unknown.get(connection_id)

    def sent(self, message: SessionMessage, connection_id: str) -> None:
        """Record a message we sent to the server."""
        self._record(message, connection_id, "client→server")

    def received(self, item: SessionMessage | Exception, connection_id: str) -> None:
        """Record a message (or transport error item) the server sent us."""
        if isinstance(item, Exception):
            error = self._error(None, str(item))
            self._entries.append(
                LogEntry(
                    at=time.time(),
                    direction="server→client",
                    kind="error",
                    status="error",
                    error=error,
                    connection_id=connection_id,
                )
            )
            return
        self._record(item, connection_id, "server→client")

    def note(self, connection_id: str, method: str, status: str, message: str) -> None:
        """Record a finding about an exchange that succeeded on the wire (e.g. status "output_invalid":
        a result that breaks its tool's outputSchema), as its own entry, redacted."""
        error = self._error(None, message)
        self._entries.append(
            LogEntry(
                at=time.time(),
                direction="server→client",
                kind="check",
                method=method,
                status=status,
                error=error,
                connection_id=connection_id,
            )
        )

    def connection_closed(self, connection_id: str) -> None:
        """Close the books of a connection that ended: its unanswered requests become errors.

        Nothing can answer them any more; left pending they would look in flight forever.
        """
        for key in [k for k in self._pending if k[0] == connection_id]:
            pending = self._pending.pop(key)
            error = {"code": None, "message": "no answer: the connection closed"}
            self._entries.append(pending.entry(connection_id, key[2], status="error", ended=True, error=error))

    def _record(self, message: SessionMessage, connection_id: str, direction: str) -> None:
        msg = message.message
        if isinstance(msg, types.JSONRPCRequest):
            self.request(connection_id, direction, str(msg.id), msg.method, _size(message))
            return
        if isinstance(msg, types.JSONRPCNotification):
            self.notification(connection_id, direction, msg.method, _size(message))
            return
        error = None
        if isinstance(msg, types.JSONRPCError):
            error = {"code": msg.error.code, "message": msg.error.message}
        self.answer(connection_id, direction, str(msg.id), _size(message), error, result=_result_of(msg))

    def request(self, connection_id: str, direction: str, request_id: str, method: str, size: int) -> None:
        """Record a request sent in `direction` ("client→server": by us) of `size` bytes; pending until answered."""
        key = (connection_id, direction, request_id)
        self._pending[key] = _Pending(time.time(), time.monotonic(), method, size, direction)
        while len(self._pending) > _PENDING_LIMIT:
            self._pending.popitem(last=False)
            self._evicted = True

    def notification(self, connection_id: str, direction: str, method: str, size: int) -> None:
        """Record a notification sent in `direction`, `size` bytes of JSON."""
        self._entries.append(
            LogEntry(
                at=time.time(),
                direction=direction,
                kind="notification",
                method=method,
                request_id=None,
                duration_ms=None,
                status="sent",
                request_bytes=size,
                response_bytes=None,
                error=None,
                connection_id=connection_id,
            )
        )

    def answer(
        self,
        connection_id: str,
        direction: str,
        request_id: str,
        size: int,
        error: dict[str, Any] | None,
        *,
        result: dict[str, Any] | None = None,
    ) -> None:
        """Record the answer sent in `direction` to request `request_id` (`error`: its `{"code", "message"}`).

        `result` (optional) is the answer's result; only an `isError` tool result of a sandboxed
        server is read, to classify a sandbox violation (R-11.1), and none of it is kept.
        """
        # A response or error answers a request that went the other way.
        request_direction = "server→client" if direction == "client→server" else "client→server"
        key = (connection_id, request_direction, request_id)
        pending = self._pending.pop(key, None)
        violation: dict[str, str] | None = None
        if error is not None:
            violation = self._violation(str(error.get("message")))
            error = self._error(error.get("code"), str(error.get("message")))
        elif self.sandbox_network is not None and result is not None and result.get("isError") is True:
            violation = self._violation(_result_text(result))
        status = "error" if error else "ok"
        if pending is None and request_direction == "client→server" and not self._evicted:
            status = "unknown_id"
            request_id = self._note_unknown(connection_id, request_id)
        if pending is not None:
            entry = pending.entry(
                connection_id,
                request_id,
                status=status,
                ended=True,
                error=error,
                response_bytes=size,
                violation=violation,
            )
        else:
            entry = LogEntry(
                at=time.time(),
                direction=request_direction,
                kind="request",
                request_id=request_id,
                status=status,
                response_bytes=size,
                error=error,
                connection_id=connection_id,
                violation=violation,
            )
        self._entries.append(entry)

    def _note_unknown(self, connection_id: str, request_id: str) -> str:
        """Count a server's answer to a request id we never sent (not asked once a pending request left
        the books, over `_PENDING_LIMIT` pending); the first of each connection gets a log line and a line in
        the server's output log, which `mcp-center logs` shows. Returns the id as shown (redacted, cut)."""
        shown = self._redactor.redact(request_id)[:_UNKNOWN_ID_CHARS]
        known = self._unknown.get(connection_id)
        if known is not None:
            known.count += 1
            return shown
        self._unknown[connection_id] = UnknownAnswers(1, shown)
        while len(self._unknown) > _UNKNOWN_CONNECTIONS:
            self._unknown.popitem(last=False)
        logger.warning("server.answer_unknown_id", extra={"connection_id": connection_id, "request_id": shown})
        self._stderr.append(
            {
                "at": _iso(time.time()),
                "line": f"[answer to an unknown request id {shown!r}: mcp-center sent no request with this id; "
                "the request it was meant for waits for its timeout]",
            }
        )
        return shown

    def _error(self, code: Any, message: str) -> dict[str, Any]:
        """An entry's `{"code", "message"}`: the message redacted and cut to 500 characters."""
        return {"code": code, "message": self._redactor.redact(message)[:500]}

    def _classify(self, text: str) -> Violation | None:
        if self.sandbox_network is None:
            return None
        return classify_violation(text, network=self.sandbox_network)

    def _violation(self, text: str) -> dict[str, str] | None:
        found = self._classify(text)
        return found.to_dict() if found is not None else None


def _result_of(message: types.JSONRPCResponse | types.JSONRPCError) -> dict[str, Any] | None:
    """The result of a response (None for an error)."""
    return message.result if isinstance(message, types.JSONRPCResponse) else None


def _result_text(result: dict[str, Any]) -> str:
    """The text items of a tool result's content, joined (at most about 4 KiB are classified)."""
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for item in content:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, dict) and isinstance(item.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
            texts.append(item["text"][:4096])  # pyright: ignore[reportUnknownArgumentType]
        if sum(len(t) for t in texts) >= 4096:
            break
    return "\n".join(texts)


def _iso(at: float) -> str:
    """`at` (seconds since the epoch) as aware UTC ISO 8601, as `datetime.now(UTC).isoformat()` writes it."""
    return datetime.fromtimestamp(at, UTC).isoformat()
