"""Long text in a table cell: cut, the cut marked with "…", and said once how to see it whole.

`tools` and `resources` show a server's descriptions one table line each: cut at a word (never
mid-word, never unmarked, trial40 and cli36), with `--full` to show them whole. Both use
`description_cells`, so the two verbs cut and explain alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import typer

__all__ = ["DESCRIPTION_CHARS", "FullOpt", "clip", "clip_words", "description_cells", "full_hint"]

DESCRIPTION_CHARS = 80
"""`tools` and `resources` cut a description longer than this many characters (at a word, "…"
marking it), unless `--full`."""

FullOpt = Annotated[
    bool, typer.Option("--full", help=f"Show each description whole (else cut at {DESCRIPTION_CHARS}).")
]
"""The `--full` option of `tools` and `resources`: descriptions whole instead of `description_cells`' cut."""


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the cut marked with "…" (a cut never looks whole)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_words(text: str, limit: int) -> str:
    """`text` on one line (each run of whitespace one space), and when longer than `limit` characters
    cut at the last space that leaves it at most `limit` with the "…" that marks the cut; a first
    word past half of `limit` is cut inside (trial40: `tools` cut descriptions mid-word, unmarked)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    space = flat.rfind(" ", 0, limit)
    head = flat[:space] if space >= limit // 2 else flat[: limit - 1]
    return head.rstrip(" ,;:") + "…"


def description_cells(
    descriptions: Iterable[str], *, full: bool, limit: int = DESCRIPTION_CHARS
) -> tuple[list[str], bool]:
    """The table cells for `descriptions`, in order: each whole with `full`, else `clip_words` at
    `limit` characters; and whether any was cut (then `full_hint` says once how to see them whole)."""
    cells: list[str] = []
    cut = False
    for text in descriptions:
        cells.append(text if full else clip_words(text, limit))
        cut = cut or (not full and len(" ".join(text.split())) > limit)
    return cells, cut


def full_hint(command: str) -> str:
    """The one line under a table whose descriptions were cut: `command` (the verb as the user ran
    it, with `--full`) shows them whole."""
    return f"descriptions ending in … are cut; '{command}' shows them whole"
