"""The read cap per message (issue 14 item 2, R-3.9): `JsonClipper` keeps a bounded, valid JSON prefix.

Properties over random JSON documents and random chunkings: under roomy limits the clipper is the
identity; under tight limits its output is valid JSON within the limits, its strings are prefixes of
the originals, and a JSON-RPC message keeps its `id` and `jsonrpc` wherever they were written.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_center.transports.clip import STRING_CUT_MARK, JsonClipper, ReadLimits, approx_json_size, read_limits
from tests.support.wire import is_array, is_object

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROOMY = ReadLimits(read_cap_bytes=1 << 40, max_message_bytes=1 << 40, max_string_bytes=1 << 40, max_tokens=1 << 40)
MARK = STRING_CUT_MARK.split("{n}")[0].strip()

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=60),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6),
    max_leaves=40,
)


def clip(data: bytes, limits: ReadLimits, chunks: list[int] | None = None) -> tuple[bytes, Any]:
    clipper = JsonClipper(limits)
    sizes = iter(chunks or [])
    i = 0
    while i < len(data):
        step = max(1, next(sizes, 7))
        clipper.feed(data[i : i + step])
        i += step
    return bytes(clipper.finish()), clipper.report


@PROPERTY_SETTINGS
@given(
    value=JSON_VALUES, chunks=st.lists(st.integers(min_value=1, max_value=40), max_size=30), ascii_only=st.booleans()
)
def test_under_roomy_limits_the_clipper_changes_nothing(value: Any, chunks: list[int], ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    kept, report = clip(data, ROOMY, chunks)
    assert kept == data
    assert not report.clipped


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if is_array(value):
        return [s for item in value for s in _strings(item)]
    if is_object(value):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    return []


@PROPERTY_SETTINGS
@given(
    result=JSON_VALUES,
    chunks=st.lists(st.integers(min_value=1, max_value=64), max_size=30),
    message_bytes=st.integers(min_value=40, max_value=600),
    string_bytes=st.integers(min_value=6, max_value=80),
    tokens=st.integers(min_value=3, max_value=60),
    id_last=st.booleans(),
    ascii_only=st.booleans(),
)
def test_under_tight_limits_the_output_is_valid_json_within_them_and_keeps_the_id(
    result: Any,
    chunks: list[int],
    message_bytes: int,
    string_bytes: int,
    tokens: int,
    id_last: bool,
    ascii_only: bool,
) -> None:
    wrapped = {"value": result}  # below the top level, where the string limit applies without slack
    message = (
        {"result": wrapped, "jsonrpc": "2.0", "id": 7} if id_last else {"jsonrpc": "2.0", "id": 7, "result": wrapped}
    )
    data = json.dumps(message, ensure_ascii=ascii_only).encode()
    limits = ReadLimits(
        read_cap_bytes=message_bytes, max_message_bytes=message_bytes, max_string_bytes=string_bytes, max_tokens=tokens
    )
    kept, report = clip(data, limits, chunks)
    parsed = json.loads(kept)
    assert parsed["id"] == 7 and parsed["jsonrpc"] == "2.0"
    mark_room = len(STRING_CUT_MARK) + 20
    assert len(kept) <= message_bytes + (string_bytes + mark_room) + 4096 + 64  # + the top-level slack
    originals = _strings(message)
    for kept_string in _strings(parsed):
        base = kept_string.split(" " + MARK)[0] if MARK in kept_string else kept_string
        assert any(original.startswith(base) for original in originals), kept_string
        if kept_string not in ("jsonrpc", "2.0", "id", "result"):
            assert len(base.encode()) <= string_bytes  # cut on a character boundary, never past the limit
    if not report.clipped:
        assert parsed == message


def test_a_long_string_is_cut_at_a_character_boundary_and_says_how_much_was_not_read() -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "é" * 1000}}, ensure_ascii=False).encode()
    kept, report = clip(data, ReadLimits(10**6, 10**6, 101, 10**6), [5] * 1000)
    text = json.loads(kept)["result"]["text"]
    assert text.startswith("é" * 50) and "é" * 52 not in text
    assert report.strings_cut == 1
    assert f"{report.string_bytes_dropped} more bytes" in text


def test_an_escape_is_never_split() -> None:
    data = json.dumps({"t": "\u00e9" * 40}).encode()  # ASCII-escaped: \u00e9, six bytes each
    for cut in range(6, 30):
        kept, _ = clip(data, ReadLimits(10**6, 10**6, cut, 10**6))
        assert json.loads(kept)["t"].startswith("é")


def test_elements_are_dropped_whole_never_cut_inside_an_object() -> None:
    blocks = [{"type": "text", "text": f"item {n}"} for n in range(500)]
    data = json.dumps({"result": {"content": blocks}, "jsonrpc": "2.0", "id": "x"}).encode()
    kept, report = clip(data, ReadLimits(10**6, 700, 100, 10**6))
    parsed = json.loads(kept)
    assert report.truncated
    assert 0 < len(parsed["result"]["content"]) < 500
    assert all(set(block) == {"type", "text"} for block in parsed["result"]["content"])
    assert parsed["id"] == "x"


def test_a_structured_content_that_never_ends_is_dropped_before_the_content_is() -> None:
    data = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"rows": list(range(10**4))}},
        }
    ).encode()
    kept, report = clip(data, ReadLimits(10**6, 400, 100, 10**6))
    parsed = json.loads(kept)
    assert report.truncated
    assert parsed["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_memory_stays_bounded_whatever_the_size_of_the_message() -> None:
    """400 MiB fed in 64 KiB pieces: the clipper holds the kept bytes and a small tail, nothing more."""
    limits = read_limits(1024 * 1024)
    clipper = JsonClipper(limits)
    clipper.feed(b'{"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "')
    piece = b"x" * 65536
    for _ in range(400 * 16):
        clipper.feed(piece)
        assert clipper.kept <= limits.max_string_bytes + 200
    clipper.feed(b'"}]}}')
    kept = clipper.finish()
    assert json.loads(kept)["id"] == 9
    assert clipper.report.string_bytes_dropped == 400 * 1024 * 1024 - limits.max_string_bytes


@PROPERTY_SETTINGS
@given(value=JSON_VALUES)
def test_the_approximate_size_is_close_to_the_real_one(value: Any) -> None:
    """A lower bound (escapes are not counted), never far from the real size."""
    real = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    approx = approx_json_size(value)
    assert approx <= real + 8
    assert real <= 6 * approx + 16
