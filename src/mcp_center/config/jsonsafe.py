"""JSON that can be stored and sent on: no lone surrogates, no NaN or infinities (R-7.3).

Threat: Python's JSON parser accepts `"\\ud800"` (a lone surrogate) and `NaN`/`Infinity`, which
then fail later — when servers.json is written as UTF-8 (a 500 after half the work), when a
tool call is serialized for a stdio server (the session dies for every caller), or silently
(`NaN` becomes `null`). Such input is refused at the edge with the path of the bad value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

from mcp_center.models import is_object

__all__ = ["MAX_DEPTH", "first_unsafe_value", "scrub_text"]

MAX_DEPTH = 64


def _bad_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def first_unsafe_value(value: Any, path: str = "body", depth: int = 0) -> tuple[str, str] | None:
    """Return `(path, problem)` of the first value that is not safe JSON, or None.

    Problems: a string (or key) with a lone surrogate, a float that is NaN or infinite, nesting
    deeper than `MAX_DEPTH`.
    """
    if depth > MAX_DEPTH:
        return path, f"nests deeper than {MAX_DEPTH} levels"
    if isinstance(value, str):
        return (path, "contains an unpaired surrogate (not valid Unicode)") if _bad_text(value) else None
    if isinstance(value, float):
        return (
            None
            if math.isfinite(value)
            else (path, "is NaN or infinite (or a number too large, such as 1e400), which JSON cannot carry")
        )
    if is_object(value):
        for key, item in value.items():
            key_text = str(key)
            if _bad_text(key_text):
                return f"{path}.<key>", "contains an unpaired surrogate (not valid Unicode)"
            found = first_unsafe_value(item, f"{path}.{key_text}", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        items: Sequence[Any] = cast(Sequence[Any], value)
        for index, item in enumerate(items):
            found = first_unsafe_value(item, f"{path}.{index}", depth + 1)
            if found:
                return found
    return None


def scrub_text(text: str) -> str:
    """`text` with unpaired surrogates replaced by U+FFFD (for error messages that quote input)."""
    return text.encode("utf-8", "replace").decode("utf-8") if _bad_text(text) else text
