"""Re-import: which registered server an import entry is, and which of its fields differ (R-1.8).

`NameIndex` finds the server that already has an entry (by name: exactly, else after Unicode
normalization and casefolding; an id alone is no match) and gives the export its keys, so that an
export imported again finds exactly the servers it came from. `differing_fields` compares a planned
create body with that server's stored configuration: secret values are write-only and never
compared, and a plain field with a `${...}` matches a stored value some values of its variables
would give (`variables.could_give`, linear time). `interchange.plan` uses both.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any, cast

from mcp_center.interchange.credentials import bearer_token_of
from mcp_center.interchange.variables import could_give

__all__ = ["NameIndex", "differing_fields", "stored_plain", "stored_text"]


class NameIndex:
    """Existing server names → id, and the key an export gives each server (R-1.8, R-1.9).

    One rule, both directions: `key` is the export's map key for a server and `match(key(sid))`
    is `sid` for every server. Names are compared as `_exact_name` gives them (NFC, trimmed), on
    export as on import. A server whose name no other server has is keyed by its name. Servers
    that share a name ("twins") are keyed by their id, unless that id is another server's own
    name; then by `<name> [<id>]` (the ` [<id>]` repeated until the key is nobody's name).
    `match` resolves a key in that order: a name one server has, a twin's id, a twin's
    `<name> [<id>]`; a key none of those (a file written elsewhere) is the first server with that
    name, exactly, else by `_name_key`, else None.

    Args:
        existing: Existing server id → its editable configuration (with `name`).
    """

    def __init__(self, existing: Mapping[str, Mapping[str, Any]]) -> None:
        self._names: dict[str, str] = {}
        self._exact: dict[str, str] = {}
        self._folded: dict[str, str] = {}
        holders: dict[str, list[str]] = {}
        for sid, current in existing.items():
            name = str(current.get("name", ""))
            self._names[sid] = name
            self._exact.setdefault(_exact_name(name), sid)
            self._folded.setdefault(_name_key(name), sid)
            holders.setdefault(_exact_name(name), []).append(sid)
        self._unique = {name: ids[0] for name, ids in holders.items() if len(ids) == 1}
        self._twins = {sid: name for name, ids in holders.items() if len(ids) > 1 for sid in ids}

    def key(self, server_id: str) -> str:
        """The export's map key for the server `server_id` (one of `existing`); see the class."""
        name = self._names[server_id]
        if server_id not in self._twins:
            return name
        if server_id not in self._unique:
            return server_id
        key = name
        while True:
            key = f"{key} [{server_id}]"
            if _exact_name(key) not in self._unique:
                return key

    def keyed_by_id(self, key: str) -> bool:
        """`key` is the export's key for a twin (its id, or `<name> [<id>]`), not a name: the
        entry's name is then the server's own."""
        return self._twin_by_key(_exact_name(key)) is not None

    def match(self, key: str) -> str | None:
        """The id of the existing server that already has the entry keyed `key` (see the class).
        Otherwise an id alone is no match: ids derive from names (`slugify` folds case, accents
        and punctuation), so `GitHub!` is a new server beside `github`, with a `-2` id."""
        exact = _exact_name(key)
        twin = self._twin_by_key(exact)
        if twin is not None:
            return twin
        return self._exact.get(exact, self._folded.get(_name_key(key)))

    def _twin_by_key(self, exact: str) -> str | None:
        """The twin whose export key is `exact` (already `_exact_name`d), if no server's own name is."""
        if exact in self._unique:
            return None
        if exact in self._twins:
            return exact
        _, bracket, tail = exact.rpartition(" [")
        sid = tail.removesuffix("]")
        if not bracket or not tail.endswith("]") or sid not in self._twins:
            return None
        suffix, rest = f" [{sid}]", exact
        while rest.endswith(suffix):
            rest = rest.removesuffix(suffix)
            if _exact_name(rest) == self._twins[sid]:
                return sid
        return None


def _exact_name(name: str) -> str:
    """A name as text: canonically composed (NFD `Cafe\u0301` is NFC `Café`), trimmed."""
    return unicodedata.normalize("NFC", name.strip())


def _name_key(name: str) -> str:
    """The form two names that are the same to a reader share: compatibility-normalized (NFKC:
    full-width `time` is ASCII `time`), then casefolded (`Time` is `time`)."""
    return unicodedata.normalize("NFKC", name.strip()).casefold()


def differing_fields(planned: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of a planned create body (no id, no secret values) whose value the existing
    configuration does not have. A field the body leaves out keeps whatever the server has, and
    so does one a client file cannot carry (`_not_carried`)."""
    return tuple(
        key
        for key, value in planned.items()
        if key != "id"
        and not _same(value, current.get(key))
        and not _not_carried(key, value, current)
        and not (key == "name" and _exact_name(str(value)) == _exact_name(str(current.get(key, ""))))
    )


def _not_carried(key: str, planned: object, current: Mapping[str, Any]) -> bool:
    """The planned value is what a client file without this setting gives, so it says nothing:
    - `cwd` None: Claude Code, Cursor and Claude Desktop files have no working directory (the
      export lists it as FIELD_NOT_EXPORTED rather than write a key a client may refuse);
    - `auth` none for a stored OAuth server: a client authorizes on its own, its file names no
      OAuth settings (FIELD_NOT_EXPORTED too). A file's bearer token still differs from OAuth."""
    if key == "cwd":
        return planned is None
    if key == "auth":
        stored: object = current.get("auth")
        kind = cast(dict[str, object], stored).get("kind") if isinstance(stored, dict) else None
        return planned == {"kind": "none"} and kind == "oauth"
    return False


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


def stored_text(current: Mapping[str, Any], path: str) -> object:
    """The stored value at an entry's field path (`command`, `args.2`, `env.MODE`, `headers.X-Team`)
    in an existing server's editable configuration, or None when it has none there."""
    head, _, rest = path.partition(".")
    value: object = current.get(head)
    if not rest:
        return value
    if isinstance(value, list):
        items = cast(list[object], value)
        return items[int(rest)] if rest.isdigit() and int(rest) < len(items) else None
    return cast(dict[str, object], value).get(rest) if isinstance(value, dict) else None


def stored_plain(kind: str, field: str, template: str, current: Mapping[str, Any] | None) -> str | None:
    """The plain value an existing server stores where an import makes a secret, when the file's
    text is exactly it (R-1.8: an export of a plain credential re-imports as `unchanged`), else None.

    Args:
        kind: `env`, `header` or `bearer` (the slot's kind).
        field: The slot's entry field, `env.<KEY>` or `headers.<Name>`.
        template: The file's text for the slot (for `bearer`, the token after `Bearer `).
        current: The existing server's editable configuration, or None (no match).
    Returns:
        The stored text (for `bearer`: the whole `Authorization` header of a server without
        managed auth), or None.
    """
    if current is None:
        return None
    value = stored_text(current, field)
    if not isinstance(value, str):
        return None
    if kind == "bearer":
        plain = bearer_token_of(value) == template and current.get("auth") == {"kind": "none"}
        return value if plain else None
    return value if value == template else None
