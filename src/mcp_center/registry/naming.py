"""Qualified tool names for agents: `mcp__{serverId}__{tool}`, valid for LLM providers (R-5.1).

Threat: a server choosing tool names that break an agent's tool list (characters or lengths a
provider rejects) or that shadow another tool (two names that map to the same string, or a
mapped name equal to a real one), so that an agent's call reaches a tool the user did not mean.

Rules, in order:

1. A name `mcp__{serverId}__{tool}` that already matches `^[a-zA-Z0-9_-]{1,64}$` is used as is
   ("verbatim"). Server ids are `[a-z0-9-]{1,32}` (R-1.1), so the prefix never contains `__`
   inside the id and verbatim names of different servers never collide.
2. Otherwise the tool part is mapped — every character outside `[A-Za-z0-9_-]` becomes `_` — cut
   to fit, and followed by `_` and an 8-hex-digit hash of `(serverId, original tool name)`:
   `mcp__{serverId}__{mapped[:n]}_{hash8}`. The hash makes names that map alike differ, and the
   same input always gives the same name.
3. Collisions are impossible, not just unlikely: verbatim names are placed first; a hashed
   name that equals a name already placed (a real tool literally named like a hash result, or
   two hashes that agree) is re-hashed with a counter until it is free. Entries are processed in
   sorted order, so the table is a function of the set of tools, whatever order they came in.

The `AliasTable` maps every exposed name back to `(server id, original tool name)`; names are
only ever reversed through it, never parsed. (SEP-986 allows `[A-Za-z0-9._-]{1,128}`; we use the
narrower set that OpenAI and Anthropic accept.)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "HASH_CHARS",
    "MAX_NAME_CHARS",
    "TOOL_NAME_PATTERN",
    "AliasTable",
    "ToolAlias",
    "map_characters",
    "tool_prefix",
]

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI and Anthropic accept as a function / tool name."""
MAX_NAME_CHARS = 64
HASH_CHARS = 8
"""Hex digits of the hash suffix of a mapped or shortened name (32 bits; collisions are re-hashed)."""

_SERVER_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def tool_prefix(server_id: str) -> str:
    """`mcp__{server_id}__`.

    Raises:
        ValueError: `server_id` is not a valid server id (R-1.1: `[a-z0-9-]`, at most 32 characters).
    """
    if not _SERVER_ID.fullmatch(server_id):
        raise ValueError(f"not a server id: {server_id!r}")
    return f"mcp__{server_id}__"


def map_characters(tool: str) -> str:
    """`tool` with every character outside `[A-Za-z0-9_-]` replaced by `_` (one for one)."""
    return _OUTSIDE.sub("_", tool)


def _hash(server_id: str, tool: str, attempt: int) -> str:
    seed = f"{server_id}\x00{tool}" if attempt == 0 else f"{server_id}\x00{tool}\x00{attempt}"
    return hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]


def _hashed_name(server_id: str, tool: str, attempt: int) -> str:
    prefix = tool_prefix(server_id)
    suffix = "_" + _hash(server_id, tool, attempt)
    stem = map_characters(tool)[: MAX_NAME_CHARS - len(prefix) - len(suffix)]
    return prefix + stem + suffix


@dataclass(frozen=True)
class ToolAlias:
    """One exposed name and what it stands for.

    Attributes:
        name: The exposed name (`mcp__{serverId}__...`, valid for LLM providers).
        server_id: The server that offers the tool.
        tool: The tool's original name on that server (what `tools/call` sends).
        verbatim: True when `name` is exactly `mcp__{serverId}__{tool}`; False when mapped/shortened.
    """

    name: str
    server_id: str
    tool: str
    verbatim: bool

    def to_dict(self) -> dict[str, str | bool]:
        """JSON shape: `{"server_id", "tool", "verbatim"}` (the name is the key of the table)."""
        return {"server_id": self.server_id, "tool": self.tool, "verbatim": self.verbatim}


class AliasTable:
    """Exposed name ↔ (server id, original tool name), collision-free. Build with `AliasTable.build`."""

    def __init__(self, aliases: Iterable[ToolAlias]) -> None:
        by_name: dict[str, ToolAlias] = {}
        by_origin: dict[tuple[str, str], ToolAlias] = {}
        for alias in aliases:
            if alias.name in by_name or (alias.server_id, alias.tool) in by_origin:
                raise ValueError(f"duplicate alias {alias.name!r}")
            by_name[alias.name] = alias
            by_origin[(alias.server_id, alias.tool)] = alias
        self._by_name: Mapping[str, ToolAlias] = MappingProxyType(by_name)
        self._by_origin: Mapping[tuple[str, str], ToolAlias] = MappingProxyType(by_origin)

    @classmethod
    def build(cls, entries: Iterable[tuple[str, str]]) -> AliasTable:
        """Name every `(server_id, tool)` pair (duplicates count once).

        Args:
            entries: `(server id, original tool name)` pairs; order does not matter.
        Returns:
            The table; the same set of entries always gives the same names.
        Raises:
            ValueError: a server id is not valid (R-1.1).
        """
        unique = sorted(set(entries))
        placed: dict[str, ToolAlias] = {}
        hashed: list[tuple[str, str]] = []
        for server_id, tool in unique:
            name = tool_prefix(server_id) + tool
            if TOOL_NAME_PATTERN.fullmatch(name):
                placed[name] = ToolAlias(name, server_id, tool, verbatim=True)
            else:
                hashed.append((server_id, tool))
        for server_id, tool in hashed:
            attempt = 0
            name = _hashed_name(server_id, tool, attempt)
            while name in placed:
                attempt += 1
                name = _hashed_name(server_id, tool, attempt)
            placed[name] = ToolAlias(name, server_id, tool, verbatim=False)
        return cls(placed.values())

    def resolve(self, name: str) -> ToolAlias | None:
        """The alias with this exposed name, or None."""
        return self._by_name.get(name)

    def name_of(self, server_id: str, tool: str) -> str | None:
        """The exposed name of a server's tool, or None if it is not in the table."""
        alias = self._by_origin.get((server_id, tool))
        return alias.name if alias is not None else None

    def to_dict(self) -> dict[str, dict[str, str | bool]]:
        """`{exposed name: {"server_id", "tool", "verbatim"}}`, sorted by name."""
        return {name: self._by_name[name].to_dict() for name in sorted(self._by_name)}

    def __iter__(self) -> Iterator[ToolAlias]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
