"""Read caps per message: a huge answer is cut while it streams, never held whole (issue 14, item 2; R-3.9).

Threat: a server answering with a 40 MiB result — or a 400 MiB one, or 40 MiB of tiny content
blocks — making the host hold the raw bytes, then the parsed JSON (about 40 times the bytes for
dense small values), then models and copies: hundreds of MiB for one answer, and gigabytes for the
dense shape, before the result is truncated to `max_result_bytes` anyway.

`JsonClipper` reads one JSON-RPC message as it streams and keeps a bounded, valid JSON prefix of it:

- every string is cut after `ReadLimits.max_string_bytes` bytes (at a UTF-8 and escape boundary),
  ending in `STRING_CUT_MARK` with the number of bytes not read;
- once `ReadLimits.max_message_bytes` bytes or `ReadLimits.max_tokens` JSON tokens are kept, the rest
  of the message is discarded as it arrives: the kept part ends at the last complete value and its
  open arrays and objects are closed. The message's own `id` and `jsonrpc` are kept even when they
  come last (TypeScript servers write `{"result": ..., "jsonrpc": "2.0", "id": 7}`): they are read
  back from the discarded tail.

Memory for one message is therefore at most the kept bytes, one read chunk and a small tail, and what
the parser builds from at most `max_tokens` tokens — whatever the message's size. What was cut is
reported (`ClipReport`); the transports put it in the result's `_meta[CLIPPED_META_KEY]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Final, cast

import mcp_types

__all__ = [
    "CLIPPED_META_KEY",
    "LIST_LIMITS",
    "STRING_CUT_MARK",
    "ClipReport",
    "JsonClipper",
    "ReadLimits",
    "approx_json_size",
    "mark_clipped",
    "read_limits",
]

CLIPPED_META_KEY: Final = "mcp-center/clipped"
"""`_meta` key of a result that was cut while it was read: `ClipReport.to_dict()`."""
STRING_CUT_MARK: Final = "[mcp-center: {n} more bytes of this string were not read]"
"""Appended (after a space) to a string that was cut while it was read."""

_OUTSIDE = re.compile(rb'["\\{}\[\],]')
_TAIL_BYTES: Final = 512
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}$")
_TOP_SLACK_BYTES: Final = 4096
_TOP_SLACK_TOKENS: Final = 32
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,20}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$')
_JSONRPC = b'"jsonrpc":"2.0"'
_MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """What one message may keep, and the cap those limits keep its cost under.

    Attributes:
        read_cap_bytes: The documented read cap: one message, however large, grows the host's
            memory by at most about twice this (`scripts/memcheck` measures it).
        max_message_bytes: Bytes of a message that are kept; the rest is discarded as it streams.
        max_string_bytes: Bytes kept of any one string.
        max_tokens: JSON tokens kept (a token is `{`, `[`, `,` or a string): parsing costs far more
            memory per byte for many tiny values than for long strings.
    """

    read_cap_bytes: int
    max_message_bytes: int
    max_string_bytes: int
    max_tokens: int

    def for_events(self) -> ReadLimits:
        """The limits of one event of an event stream: half the kept bytes (reading an SSE event copies
        its text several times over before it is parsed)."""
        return replace(self, max_message_bytes=max(self.max_message_bytes // 2, self.max_string_bytes + 4096))


def read_limits(max_result_bytes: int) -> ReadLimits:
    """The read cap of a server's answers (everything but catalog pages), from its `max_result_bytes`.

    Strings keep `max(2 MiB, max_result_bytes)` bytes (a result is cut to `max_result_bytes` later
    anyway). The read cap is 16 MiB, or eight times the string limit when that is more; a message
    keeps a quarter of it (an SSE event an eighth) and at most 75,000 tokens (about 23 MiB once
    parsed, for the densest JSON of tiny values). The fractions are what parsing costs: the JSON
    parser holds a long string about four times over at its peak, the SSE reader twice more.
    """
    strings = max(2 * _MIB, max_result_bytes)
    cap = max(16 * _MIB, 8 * strings)
    return ReadLimits(read_cap_bytes=cap, max_message_bytes=cap // 4, max_string_bytes=strings, max_tokens=75_000)


LIST_LIMITS = ReadLimits(
    read_cap_bytes=64 * _MIB, max_message_bytes=64 * _MIB, max_string_bytes=4 * _MIB, max_tokens=2_000_000
)
"""Catalog pages (`tools/list`, ...) may be larger: a server may list thousands of tools in one page,
and the catalog stays in memory anyway."""


def approx_json_size(value: object) -> int:
    """About the size in bytes of `value` as JSON, without building it (no copy of a long string).

    Strings count their characters (more for escapes and non-ASCII characters is not counted), so
    this is a lower bound close to the real size; iterative, so deep values cannot overflow the stack.
    """
    size = 0
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            members = cast(dict[object, object], item)
            size += 2 + max(len(members) - 1, 0)
            for key, member in members.items():
                size += len(str(key)) + 3
                stack.append(member)
        elif isinstance(item, list | tuple):
            elements = cast(list[object], item)
            size += 2 + max(len(elements) - 1, 0)
            stack.extend(elements)
        elif item is None or item is True:
            size += 4
        elif item is False:
            size += 5
        else:
            size += len(repr(item))
    return size


@dataclass
class ClipReport:
    """What a clipper cut from one message."""

    strings_cut: int = 0
    string_bytes_dropped: int = 0
    truncated: bool = False
    """The message's tail was discarded (over `max_message_bytes` or `max_tokens`)."""
    tail_bytes_dropped: int = 0
    kept_bytes: int = 0

    @property
    def clipped(self) -> bool:
        """Anything was cut."""
        return self.truncated or self.strings_cut > 0

    def to_dict(self) -> dict[str, object]:
        """JSON shape for `_meta[CLIPPED_META_KEY]`."""
        return {
            "strings_cut": self.strings_cut,
            "string_bytes_not_read": self.string_bytes_dropped,
            "message_cut": self.truncated,
            "bytes_not_read": self.string_bytes_dropped + self.tail_bytes_dropped,
            "kept_bytes": self.kept_bytes,
        }


@dataclass
class _State:
    out: bytearray = field(default_factory=bytearray)
    stack: bytearray = field(default_factory=bytearray)
    tokens: int = 0
    in_string: bool = False
    escape: bool = False
    unicode_left: int = 0
    string_kept: int = 0
    string_dropping: bool = False
    string_dropped: int = 0
    expect_key: bool = False
    key_start: int = -1
    top_keys: set[bytes] = field(default_factory=set[bytes])
    safe_array: tuple[int, bytes] = (0, b"")
    """(position, open containers) of the last place between two array elements (or top-level members)."""
    safe_member: tuple[int, bytes] | None = None
    """The same between two members of a nested object (used when it is shallower than `safe_array`)."""
    discarding: bool = False
    tail: bytes = b""


class JsonClipper:
    """Keep a bounded, valid JSON prefix of one message fed in pieces (see the module docstring).

    Use: `feed(chunk)` as bytes arrive, `finish()` at the end of the message for the kept bytes (then
    the clipper is ready for the next message); `report` describes the last finished message.
    Malformed JSON is copied as it is, within the same bounds (the parser then refuses it).
    """

    def __init__(self, limits: ReadLimits) -> None:
        self.limits = limits
        self.report = ClipReport()
        self._s = _State()
        self._pending_report = ClipReport()
        # Where the next `"` and the next backslash of the piece being fed are (`_string_stop`).
        self._quote = self._backslash = -1

    @property
    def kept(self) -> int:
        """Bytes kept so far of the current message."""
        return len(self._s.out)

    def feed(self, data: bytes) -> None:
        """Read the next piece of the current message."""
        s = self._s
        i, n = 0, len(data)
        self._quote = self._backslash = -1  # not looked up yet in this piece
        while i < n:
            if s.discarding:
                self._pending_report.tail_bytes_dropped += n - i
                s.tail = (s.tail + data[i:])[-_TAIL_BYTES:]
                return
            if s.in_string:
                i = self._string(data, i, n)
                continue
            match = _OUTSIDE.search(data, i)
            end = match.start() if match else n
            slack = _TOP_SLACK_BYTES if len(s.stack) <= 1 else 0
            if len(s.out) + (end - i) > self.limits.max_message_bytes + slack:
                self._truncate()  # a number, a literal or whitespace that never ends
                continue
            s.out += data[i:end]
            if match is None:
                return
            self._structural(data[end])
            i = end + 1
            if self._over_budget():
                self._truncate()

    def finish(self) -> bytearray:
        """The kept message (not copied: the caller owns it); resets for the next one. `report` then
        describes this message."""
        s = self._s
        if s.in_string and not s.discarding:
            s.out += b'"'  # an unterminated string: close it so the damage stays local
        if s.discarding:
            self._close(s)
        report = self._pending_report
        report.kept_bytes = len(s.out)
        self.report = report
        kept = s.out
        self._s = _State()
        self._pending_report = ClipReport()
        return kept

    # ----- scanning ------------------------------------------------------------------------------

    def _string(self, data: bytes, i: int, n: int) -> int:
        """Consume string content from `i`; return where scanning continues."""
        s = self._s
        if s.escape:
            s.escape = False
            escaped = data[i : i + 1]
            if s.string_dropping:
                s.string_dropped += 1
            else:
                s.out += escaped
                s.string_kept += 1
                if escaped == b"u":
                    s.unicode_left = 4
            return i + 1
        end = self._string_stop(data, i, n)
        self._keep_run(data, i, end)
        if end == n:
            return n
        if data[end] == 0x5C:  # backslash: it and what follows stay together
            if not s.string_dropping and s.string_kept + 6 > self._string_limit():
                self._start_dropping()
            if s.string_dropping:
                s.string_dropped += 1
            else:
                s.out += b"\\"
                s.string_kept += 1
            s.escape = True
            return end + 1
        self._end_string()
        return end + 1

    def _string_stop(self, data: bytes, i: int, n: int) -> int:
        """Where the string content from `i` stops in this piece: its first `"` or backslash, else `n`.

        Each of the two is found with `bytes.find` (memchr: GB/s, where a regex character class read
        ~50 MB/s, most of the host's CPU on a large result) and remembered for the rest of the piece,
        so every byte is looked at once per character however many strings or escapes follow."""
        if self._quote < i:
            found = data.find(b'"', i, n)
            self._quote = n if found < 0 else found
        if self._backslash < i:
            found = data.find(b"\\", i, n)
            self._backslash = n if found < 0 else found
        return min(self._quote, self._backslash)

    def _string_limit(self) -> int:
        """The top-level members' own strings (`jsonrpc`, keys) get the slack too."""
        limit = self.limits.max_string_bytes
        return limit if len(self._s.stack) >= 2 else max(limit, _TOP_SLACK_BYTES)

    def _keep_run(self, data: bytes, i: int, end: int) -> None:
        s = self._s
        size = end - i
        if size <= 0:
            return
        if s.string_dropping:
            s.string_dropped += size
            return
        room = self._string_limit() - s.string_kept
        if size <= room:
            s.out += data[i:end]
            s.string_kept += size
            s.unicode_left = max(0, s.unicode_left - size)
            return
        if s.unicode_left and room < s.unicode_left:  # never split a \uXXXX escape: drop it whole
            del s.out[len(s.out) - (2 + 4 - s.unicode_left) :]
            s.string_kept -= 2 + 4 - s.unicode_left
            room = 0
        s.out += data[i : i + room]
        s.string_kept += room
        s.unicode_left = 0
        self._start_dropping()
        s.string_dropped += size - room

    def _start_dropping(self) -> None:
        """Cut the current string here: first take back an unfinished UTF-8 sequence or the high half
        of a surrogate pair, which would make the kept string invalid."""
        s = self._s
        kept = s.out[len(s.out) - min(s.string_kept, 6) :]
        dropped = 0
        for back in range(1, min(len(kept), 3) + 1):
            byte = kept[-back]
            if byte >= 0xC0:  # a lead byte: is its sequence complete?
                needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                if back < needed:
                    dropped = back
                break
            if byte < 0x80:
                break
        if not dropped and _HIGH_SURROGATE.search(kept) and _escaped_for_real(s.out, len(s.out) - 6):
            dropped = 6
        if dropped:
            del s.out[len(s.out) - dropped :]
            s.string_kept -= dropped
            s.string_dropped += dropped
        s.string_dropping = True

    def _end_string(self) -> None:
        s = self._s
        if s.string_dropping:
            s.out += b" " + STRING_CUT_MARK.format(n=s.string_dropped).encode()
            self._pending_report.strings_cut += 1
            self._pending_report.string_bytes_dropped += s.string_dropped
        s.out += b'"'
        if s.key_start >= 0:
            s.top_keys.add(bytes(s.out[s.key_start + 1 : -1]))
            s.key_start = -1
        s.in_string = False
        s.string_dropping = False
        s.string_dropped = s.string_kept = s.unicode_left = 0

    def _structural(self, char: int) -> None:
        s = self._s
        s.out.append(char)
        if char == 0x22:  # '"'
            s.in_string = True
            s.tokens += 1
            if s.expect_key and len(s.stack) == 1:
                s.key_start = len(s.out) - 1
            s.expect_key = False
        elif char in (0x7B, 0x5B):  # '{' '['
            s.stack.append(char)
            s.tokens += 1
            s.expect_key = char == 0x7B
            self._safe_point(len(s.out))
        elif char in (0x7D, 0x5D):  # '}' ']'
            if s.stack:
                s.stack.pop()
            if s.safe_member is not None and len(s.safe_member[1]) > len(s.stack):
                s.safe_member = None  # it was inside the container that just closed
            s.expect_key = False
            self._safe_point(len(s.out))
        elif char == 0x2C:  # ','
            s.tokens += 1
            self._safe_point(len(s.out) - 1)
            s.expect_key = bool(s.stack) and s.stack[-1] == 0x7B

    def _safe_point(self, at: int) -> None:
        """Remember `at` as a place to cut. Between the elements of an array (or the message's top-level
        members) a cut loses whole elements only. Between the members of a nested object it may lose a
        member the object needs (a content block without its `text`), so such a point is used only when
        it is shallower than the last array point (a result's `structuredContent` that never ends: cut
        before it, keeping `content`)."""
        s = self._s
        if len(s.stack) <= 1 or s.stack[-1] == 0x5B:
            s.safe_array = (at, bytes(s.stack))
        else:
            s.safe_member = (at, bytes(s.stack))

    def _over_budget(self) -> bool:
        """Over the kept bytes or tokens. The message's own top-level members (`jsonrpc`, `id`, the
        start of `result`) get a little slack, so a cut never loses what routes the answer."""
        s = self._s
        slack_bytes, slack_tokens = (_TOP_SLACK_BYTES, _TOP_SLACK_TOKENS) if len(s.stack) <= 1 else (0, 0)
        return (
            len(s.out) > self.limits.max_message_bytes + slack_bytes or s.tokens > self.limits.max_tokens + slack_tokens
        )

    def _truncate(self) -> None:
        """Stop keeping: cut back to the best safe point and discard the rest as it arrives."""
        s = self._s
        at, stack = s.safe_array
        if s.safe_member is not None and len(s.safe_member[1]) < len(stack):
            at, stack = s.safe_member
        dropped = len(s.out) - at
        del s.out[at:]
        s.stack = bytearray(stack)
        s.discarding = True
        s.in_string = s.escape = False
        self._pending_report.truncated = True
        self._pending_report.tail_bytes_dropped += dropped

    def _close(self, s: _State) -> None:
        """Close what the cut left open; keep the top-level `jsonrpc` and `id` found in the tail."""
        while len(s.stack) > 1:
            s.out.append(0x7D if s.stack.pop() == 0x7B else 0x5D)
        if s.stack and s.stack[0] == 0x7B:
            members: list[bytes] = []
            if b"jsonrpc" not in s.top_keys:
                members.append(_JSONRPC)
            found = _TAIL_ID.search(s.tail)
            if b"id" not in s.top_keys and found is not None:
                members.append(b'"id":' + found.group(1))
            for member in members:
                if bytes(s.out.rstrip()[-1:]) not in (b"{", b""):
                    s.out += b","
                s.out += member
            s.out += b"}"
        elif s.stack:
            s.out += b"]"
        s.stack.clear()


def _escaped_for_real(out: bytearray, at: int) -> bool:
    """Whether the backslash at `at` starts an escape (it is not itself escaped by an odd run before it)."""
    run = 0
    while at - run - 1 >= 0 and out[at - run - 1] == 0x5C:
        run += 1
    return run % 2 == 0


def mark_clipped(message: mcp_types.JSONRPCResponse, report: ClipReport) -> mcp_types.JSONRPCResponse:
    """`message` with `report` in its result's `_meta[CLIPPED_META_KEY]` (the server's own `_meta` kept)."""
    meta: object = message.result.get("_meta")
    own = dict(cast(dict[str, Any], meta)) if isinstance(meta, dict) else {}
    own[CLIPPED_META_KEY] = report.to_dict()
    return message.model_copy(update={"result": {**message.result, "_meta": own}})
