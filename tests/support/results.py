"""Reading a `CallToolResult` as JSON (`{"content": [...], ...}`) in tests."""

from __future__ import annotations

from typing import Any

__all__ = ["text_of"]


def text_of(result: dict[str, Any]) -> str:
    """The text blocks of a call result's `content`, joined by newlines (other blocks skipped)."""
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
