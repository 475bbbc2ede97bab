"""Re-import: which registered server an import entry is, and which of its fields differ (R-1.8).

`NameIndex` finds the server that already has an entry (by name: exactly, else after Unicode
normalization and casefolding; an id alone is no match). `differing_fields` compares a planned
create body with that server's stored configuration: secret values are write-only and never
compared, and a plain field with a `${...}` matches a stored value some values of its variables
would give (`variables.could_give`, linear time). `interchange.plan` uses both.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any, cast

from mcp_center.interchange.variables import could_give

__all__ = ["NameIndex", "differing_fields"]


class NameIndex:
    """Existing server names → id, exact and folded (the first server with each form).

    Args:
        existing: Existing server id → its editable configuration (with `name`).
    """

    def __init__(self, existing: Mapping[str, Mapping[str, Any]]) -> None:
        self._exact: dict[str, str] = {}
        self._folded: dict[str, str] = {}
        for sid, current in existing.items():
            name = str(current.get("name", ""))
            self._exact.setdefault(_exact_name(name), sid)
            self._folded.setdefault(_name_key(name), sid)

    def match(self, name: str) -> str | None:
        """The id of the existing server that already has an entry named `name`: the same name
        (exactly, else by `_name_key`), or None. An id alone is no match: ids derive from names
        (`slugify` folds case, accents and punctuation), so `GitHub!` is a new server beside
        `github`, with a `-2` id."""
        return self._exact.get(_exact_name(name), self._folded.get(_name_key(name)))


def _exact_name(name: str) -> str:
    """A name as text: canonically composed (NFD `Cafe\u0301` is NFC `Café`), trimmed."""
    return unicodedata.normalize("NFC", name.strip())


def _name_key(name: str) -> str:
    """The form two names that are the same to a reader share: compatibility-normalized (NFKC:
    full-width `time` is ASCII `time`), then casefolded (`Time` is `time`)."""
    return unicodedata.normalize("NFKC", name.strip()).casefold()


def differing_fields(planned: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of a planned create body (no id, no secret values) whose value the existing
    configuration does not have; a field the body leaves out keeps whatever the server has."""
    return tuple(
        key
        for key, value in planned.items()
        if key != "id"
        and not _same(value, current.get(key))
        and not (key == "name" and _exact_name(str(value)) == _exact_name(str(current.get(key, ""))))
    )


def _same(planned: object, current: object) -> bool:
    """`current` is what `planned` gives: equal, or, for a text with `${...}`, what some values of
    its variables would make of it (`--root ${ROOT:-/srv}` is the stored `--root /data`)."""
    if isinstance(planned, str) and isinstance(current, str):
        return could_give(planned, current)
    if isinstance(planned, list) and isinstance(current, list):
        pairs = zip(cast(list[object], planned), cast(list[object], current), strict=False)
        return len(cast(list[object], planned)) == len(cast(list[object], current)) and all(
            _same(a, b) for a, b in pairs
        )
    if isinstance(planned, dict) and isinstance(current, dict):
        mine, theirs = cast(dict[str, object], planned), cast(dict[str, object], current)
        return mine.keys() == theirs.keys() and all(_same(v, theirs[k]) for k, v in mine.items())
    return planned == current
