"""Reading a stdio server's output: stdout clipped as it streams, stderr and noise redacted and cut (R-1.5, R-3.6).

- `ClippedLines` splits stdout on newlines and passes every line through a `clip.JsonClipper` while it
  streams (issue 14 item 2): a 400 MiB answer costs no more memory than the read cap.
- `RedactingLines` cuts stderr (and stdout noise) into text lines of at most a byte limit, redacting
  secrets *before* it cuts, so no record holds part of a secret (R-1.5).
- `unreadable_response` and `decoded_with_replacement` turn a response we cannot read, or one with
  invalid UTF-8, into an answer its request gets at once instead of waiting for its timeout
  (R-3.6, R-3.11, issue 14 item 11).

Package-private: `transports/stdio.py` is their only user.
"""

from __future__ import annotations

import codecs
import json
import logging
from collections.abc import Callable
from typing import Any, Final, cast

import mcp_types
from pydantic import ValidationError

from mcp_center.models import is_object, is_request_id
from mcp_center.secrets import REDACTED, Redactor
from mcp_center.transports.clip import ClipReport, JsonClipper, ReadLimits

__all__ = [
    "INVALID_UTF8_META_KEY",
    "TRUNCATED",
    "ClippedLines",
    "RedactingLines",
    "decoded_with_replacement",
    "unreadable_response",
]

logger = logging.getLogger("mcp_center.transports.stdio")
"""The stdio transport's logger: these records belong to it."""


def unreadable_response(
    line: bytes | bytearray, exc: ValueError, *, why: str | None = None
) -> mcp_types.JSONRPCError | None:
    """An error answer for a response we cannot read but whose request we can name, else None.

    A server's response that pydantic refuses (e.g. a tool schema nested deeper than its parser's
    recursion limit) would otherwise be dropped as noise and its request would wait for the whole
    call timeout. When the line is still a JSON-RPC response object with an id, its request fails at
    once with INTERNAL_ERROR saying why (R-3.6, R-3.11: an attributed error, not a timeout).
    """
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not is_object(doc) or doc.get("jsonrpc") != "2.0" or "method" in doc:
        return None
    request_id = doc.get("id")
    if not is_request_id(request_id) or not ("result" in doc or "error" in doc):
        return None
    if why is None:
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        why = str(errors[0].get("msg", "")) if errors else type(exc).__name__
    return mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=mcp_types.ErrorData(
            code=mcp_types.INTERNAL_ERROR,
            message=f"mcp-center could not read the server's response: {why[:200]}",
        ),
    )


INVALID_UTF8_META_KEY: Final = "mcp-center/invalid_utf8"
"""`_meta` key of a result whose line was not valid UTF-8 and was decoded with replacement characters."""


def decoded_with_replacement(line: bytes | bytearray) -> mcp_types.JSONRPCMessage | None:
    """A line that is JSON-RPC once its invalid UTF-8 is replaced by U+FFFD, marked; else None.

    MCP messages are UTF-8 (basic/transports, "stdio"). A server that writes a Latin-1 or cut
    multi-byte character would otherwise have its answer dropped as stdout noise and its request
    wait for the whole timeout (issue 14, item 11). The answer is delivered at once instead: a
    result carries `_meta["mcp-center/invalid_utf8"] = {"first_offset", "replacements"}` (the byte
    offset of the first invalid byte in the line), an error message gets a note; requests and
    notifications are passed on with the replacement characters.
    """
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
    else:
        return None  # valid UTF-8: the line is broken for another reason
    text = line.decode("utf-8", errors="replace")
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return None
    replacements = text.count("\ufffd")
    logger.warning("stdio.invalid_utf8", extra={"offset": offset, "replacements": replacements})
    note = {"first_offset": offset, "replacements": replacements}
    if isinstance(message, mcp_types.JSONRPCResponse):
        meta: object = message.result.get("_meta")
        own = dict(cast(dict[str, Any], meta)) if isinstance(meta, dict) else {}
        own[INVALID_UTF8_META_KEY] = note
        return message.model_copy(update={"result": {**message.result, "_meta": own}})
    if isinstance(message, mcp_types.JSONRPCError):
        text_note = f" [mcp-center: invalid UTF-8 from byte {offset} of the line replaced with U+FFFD]"
        error = message.error.model_copy(update={"message": message.error.message + text_note})
        return message.model_copy(update={"error": error})
    return message


class ClippedLines:
    """Split stdout on b"\\n" and pass every line through a `JsonClipper` as it streams.

    Memory: one line's kept bytes (at most the read cap), one read chunk and the clipper's small tail,
    however long a line is. `limits()` is asked at the start of each line.
    """

    def __init__(self, limits: Callable[[], ReadLimits]) -> None:
        self._limits = limits
        self._clipper: JsonClipper | None = None

    def feed(self, data: bytes) -> list[tuple[bytearray, ClipReport]]:
        out: list[tuple[bytearray, ClipReport]] = []
        start, size = 0, len(data)
        while start < size:
            newline = data.find(b"\n", start)
            end = size if newline < 0 else newline
            if self._clipper is None:
                self._clipper = JsonClipper(self._limits())
            if end > start:
                self._clipper.feed(data[start:end])
            if newline < 0:
                break
            out.append((self._clipper.finish(), self._clipper.report))
            self._clipper = None
            start = newline + 1
        return out

    def finish(self) -> list[tuple[bytearray, ClipReport]]:
        """At EOF: the unterminated last line, if any."""
        clipper, self._clipper = self._clipper, None
        if clipper is None:
            return []
        line = clipper.finish()
        return [(line, clipper.report)] if line or clipper.report.truncated else []


TRUNCATED: Final = " [truncated]"
"""Marks a noise line cut to the limit."""
_REDACTED_BYTES: Final = REDACTED.encode()


class RedactingLines:
    """Cut a byte stream into redacted text lines of at most `limit` UTF-8 bytes (stderr, noise).

    A longer line is yielded in pieces of at most `limit` bytes as soon as they are full. The
    bytes are decoded incrementally (invalid ones replaced) and redacted *before* they are cut:
    `Redactor.redact_prefix` holds back the text a secret could still be completing, so a cut
    never falls inside a secret and no piece holds part of one (R-1.5). A cut avoids splitting a
    UTF-8 sequence or a `[redacted]` marker. Memory: one piece, the redactor's carry-over (shorter
    than twice the longest secret) and one read chunk. Only non-empty lines are yielded, without
    their line ending.
    """

    def __init__(self, limit: int, redactor: Redactor | None) -> None:
        self._limit = limit
        self._redactor = redactor
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""
        """Decoded text the redactor held back (not redacted yet)."""
        self._pending = bytearray()
        """Redacted text of the current line not yielded yet, UTF-8 encoded."""

    def feed(self, data: bytes) -> list[str]:
        out: list[str] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            self._take(data[start : len(data) if newline < 0 else newline], newline >= 0, out)
            if newline < 0:
                return out
            start = newline + 1

    def finish(self) -> list[str]:
        """At EOF: the unterminated last line, if any."""
        out: list[str] = []
        self._take(b"", True, out)
        return out

    def _take(self, data: bytes, line_end: bool, out: list[str]) -> None:
        text = self._carry + self._decoder.decode(data, final=line_end)
        if self._redactor is not None:
            safe, self._carry = self._redactor.redact_prefix(text, final=line_end)
        else:
            safe, self._carry = text, ""
        self._pending += safe.encode()
        while len(self._pending) > self._limit:
            cut = _piece_cut(self._pending, self._limit)
            out.append(self._pending[:cut].decode(errors="replace"))
            del self._pending[:cut]
        if line_end:
            last = self._pending.decode(errors="replace").rstrip("\r")
            self._pending.clear()
            self._decoder.reset()
            if last:
                out.append(last)


def _piece_cut(buffer: bytearray, limit: int) -> int:
    """Where to cut a piece of at most `limit` bytes: not inside a UTF-8 sequence or a marker."""
    cut = _utf8_cut(buffer, limit)
    size = len(_REDACTED_BYTES)
    marker = buffer.rfind(_REDACTED_BYTES, max(cut - size + 1, 0), cut + size - 1)
    return marker if 0 < marker < cut else cut


def _utf8_cut(buffer: bytearray, limit: int) -> int:
    """Largest index <= limit that does not split a UTF-8 sequence (limit if none is found)."""
    for cut in range(limit, max(limit - 4, 0), -1):
        if buffer[cut] & 0xC0 != 0x80:
            return cut
    return limit
