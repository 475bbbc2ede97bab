"""Bounded tool results (R-3.9)."""

from __future__ import annotations

import base64

import mcp_types as types

from mcp_center.runtime import TRUNCATION_META_KEY, bound_result


def size(result: types.CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def test_a_result_under_the_limit_is_returned_unchanged() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="small")])
    assert bound_result(result, 1024) is result


def test_a_large_text_is_cut_at_a_character_boundary_and_marked() -> None:
    text = "é" * 300_000  # two bytes each: a cut in the middle of a character must not break UTF-8
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    bounded = bound_result(result, 64 * 1024)
    assert size(bounded) <= 64 * 1024 + 512
    first = bounded.content[0]
    assert isinstance(first, types.TextContent)
    assert set(first.text) == {"é"}
    marker = bounded.meta[TRUNCATION_META_KEY] if bounded.meta else None
    assert marker is not None
    assert abs(marker["original_bytes"] - size(result)) <= 16  # computed without serializing: about the size
    last = bounded.content[-1]
    assert isinstance(last, types.TextContent)
    assert last.text.startswith("[truncated by mcp-center")


def test_binary_blocks_that_do_not_fit_are_described_not_inlined() -> None:
    data = base64.b64encode(b"\x89PNG" + b"\x00" * 200_000).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="caption"),
            types.ImageContent(type="image", data=data, mime_type="image/png"),
        ]
    )
    bounded = bound_result(result, 10_000)
    kinds = [block.type for block in bounded.content]
    assert kinds == ["text", "text", "text"]
    described = bounded.content[1]
    assert isinstance(described, types.TextContent)
    assert "image image/png" in described.text
    assert bounded.meta is not None
    assert bounded.meta[TRUNCATION_META_KEY]["omitted_blocks"] == 1


def test_small_structured_content_is_kept_and_large_structured_content_dropped() -> None:
    keep = types.CallToolResult(
        content=[types.TextContent(type="text", text="x" * 50_000)], structured_content={"ok": True}
    )
    assert bound_result(keep, 10_000).structured_content == {"ok": True}
    drop = types.CallToolResult(content=[], structured_content={"blob": "y" * 50_000})
    bounded = bound_result(drop, 10_000)
    assert bounded.structured_content is None
    assert bounded.meta is not None
    assert bounded.meta[TRUNCATION_META_KEY]["structured_content_omitted"] is True
