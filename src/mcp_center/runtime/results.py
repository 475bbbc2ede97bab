"""Tool results as passed on: bounded in size (R-3.9) and checked against the tool's outputSchema.

Threat: a server answering with megabytes (or gigabytes) that would flood an agent's context,
the UI, or the host's memory. The transports bound what can arrive at all (a maximum message
size); this module bounds what is passed on: text is cut at a character boundary, binary blocks
that do not fit are described instead of inlined, oversized `structuredContent` is dropped, and
a final text block plus `_meta["mcp-center/truncated"]` says what happened.

Structured output (issue 14, item 3): a result that is not an error, of a tool that declares an
`outputSchema`, must carry a conforming `structuredContent` (MCP 2025-11-25 server/tools, "Output
Schema"). When it does not, `check_output` keeps everything the server said, adds a text block
naming the problem, marks `_meta["mcp-center/output_schema_mismatch"]` and sets `isError`: an
agent's MCP client validates structured results of successful calls against the schema and would
otherwise throw the whole answer away (our policy: the content is never lost, the mismatch is visible).
"""

from __future__ import annotations

from typing import Any, cast

import mcp_types as types
import orjson

from mcp_center.models import is_object
from mcp_center.registry.schemas import output_problem
from mcp_center.transports.clip import CLIPPED_META_KEY, approx_json_size

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "OUTPUT_MISMATCH_META_KEY",
    "TRUNCATION_META_KEY",
    "bound_raw_result",
    "bound_result",
    "check_output",
    "check_raw_output",
]

DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""Default limit of a tool result passed on, in bytes of JSON."""
TRUNCATION_META_KEY = "mcp-center/truncated"
OUTPUT_MISMATCH_META_KEY = "mcp-center/output_schema_mismatch"


def _json_size(result: types.CallToolResult) -> int:
    """About the result's JSON size, without serializing it (no copy of a long result, issue 14 item 2)."""
    blocks = sum(_block_size(block) for block in result.content)
    structured = approx_json_size(result.structured_content) if result.structured_content is not None else 0
    return 40 + blocks + structured + approx_json_size(result.meta or {})


def _block_size(block: types.ContentBlock) -> int:
    if isinstance(block, types.TextContent):
        return 40 + len(block.text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        return 60 + len(block.data) + len(block.mime_type)
    return len(block.model_dump_json(by_alias=True, exclude_none=True))


def _cut_utf8(text: str, max_bytes: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[: max(max_bytes, 0)].decode("utf-8", errors="ignore")


def bound_result(result: types.CallToolResult, max_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> types.CallToolResult:
    """Return `result` unchanged if its JSON fits in `max_bytes`, else a truncated, marked copy.

    Args:
        result: The server's result (already validated).
        max_bytes: Limit in bytes of the result's JSON.
    Returns:
        A `CallToolResult` whose JSON is at most about `max_bytes` (plus the small marker).
    """
    original = _json_size(result)
    clipped: object = (result.meta or {}).get(CLIPPED_META_KEY)
    not_read = clipped.get("bytes_not_read", 0) if is_object(clipped) else 0
    if isinstance(not_read, int) and not_read > 0:
        original += not_read  # cut while it was read (transports/clip.py): it was at least this large
    if original <= max_bytes and not not_read:
        return result
    budget = max_bytes
    # structuredContent is machine-readable and usually small: keep it when it fits in half the budget.
    structured = result.structured_content
    dropped_structured = False
    if structured is not None:
        structured_size = approx_json_size(structured) + 40
        if structured_size > max_bytes // 2:
            structured = None
            dropped_structured = True
        else:
            budget -= structured_size
    blocks: list[types.ContentBlock] = []
    omitted = 0
    for block in result.content:
        size = _block_size(block)
        if size <= budget:
            blocks.append(block)
            budget -= size
            continue
        if isinstance(block, types.TextContent) and budget > 64:
            blocks.append(block.model_copy(update={"text": _cut_utf8(block.text, budget - 64)}))
            budget = 0
            continue
        omitted += 1
        if isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            approx = len(block.data) * 3 // 4
            text = f"[{kind} {block.mime_type} of about {approx} bytes omitted: over the result size limit]"
        else:
            text = f"[{block.type} content of {size} bytes omitted: over the result size limit]"
        blocks.append(types.TextContent(type="text", text=text))
    note = f"[truncated by mcp-center: the result was {original} bytes, the limit is {max_bytes} bytes"
    if dropped_structured:
        note += "; structuredContent omitted"
    blocks.append(types.TextContent(type="text", text=note + "]"))
    meta = dict(result.meta or {})
    meta[TRUNCATION_META_KEY] = {
        "original_bytes": original,
        "limit_bytes": max_bytes,
        "omitted_blocks": omitted,
        "structured_content_omitted": dropped_structured,
    }
    return result.model_copy(update={"content": blocks, "structured_content": structured, "meta": meta})


def check_output(result: types.CallToolResult, tool: types.Tool | None) -> tuple[types.CallToolResult, str | None]:
    """Check a result's `structuredContent` against the tool's `outputSchema` (see the module docstring).

    Args:
        result: The server's result.
        tool: The tool as listed in the catalog (its `outputSchema` already checked), or None.
    Returns:
        `(result, None)` when there is nothing to check or it conforms; else `(marked copy, problem)`:
        the same content and structuredContent plus a text block naming the problem,
        `_meta[OUTPUT_MISMATCH_META_KEY] = {"problem", "server_is_error"}` and `isError: true`.
    """
    schema = tool.output_schema if tool is not None else None
    if schema is None or result.is_error:
        return result, None
    problem = output_problem(schema, result.structured_content)
    if problem is None:
        return result, None
    note = types.TextContent(
        type="text",
        text=f"[mcp-center: the result does not match the tool's outputSchema: {problem}]",
    )
    meta = dict(result.meta or {})
    meta[OUTPUT_MISMATCH_META_KEY] = {"problem": problem, "server_is_error": bool(result.is_error)}
    marked = result.model_copy(update={"content": [*result.content, note], "is_error": True, "meta": meta})
    return marked, problem


def bound_raw_result(result: dict[str, Any], max_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> dict[str, Any]:
    """`bound_result` for a raw `tools/call` result (JSON object as the server sent it).

    A result whose JSON fits in `max_bytes` is returned as it is (one C-speed dump measures it);
    only a larger one is validated as a `CallToolResult`, cut and marked, and dumped back.
    """
    meta: object = result.get("_meta")
    clipped = isinstance(meta, dict) and CLIPPED_META_KEY in cast(dict[str, Any], meta)
    if not clipped and len(orjson.dumps(result)) <= max_bytes:
        return result
    model = types.CallToolResult.model_validate(result, by_name=False)
    return bound_result(model, max_bytes).model_dump(mode="json", by_alias=True, exclude_none=True)


def check_raw_output(result: dict[str, Any], tool: types.Tool | None) -> tuple[dict[str, Any], str | None]:
    """`check_output` for a raw `tools/call` result (the gateway's lean path): the same checks and marks.

    Only a result of a tool that declares an `outputSchema`, and is not an error, is looked at.
    """
    if tool is None or tool.output_schema is None or result.get("isError") is True:
        return result, None
    problem = output_problem(tool.output_schema, result.get("structuredContent"))
    if problem is None:
        return result, None
    content: object = result.get("content")
    blocks = list(cast(list[Any], content)) if isinstance(content, list) else []
    blocks.append(
        {"type": "text", "text": f"[mcp-center: the result does not match the tool's outputSchema: {problem}]"}
    )
    meta: object = result.get("_meta")
    own = dict(cast(dict[str, Any], meta)) if isinstance(meta, dict) else {}
    own[OUTPUT_MISMATCH_META_KEY] = {"problem": problem, "server_is_error": bool(result.get("isError"))}
    return {**result, "content": blocks, "isError": True, "_meta": own}, problem
