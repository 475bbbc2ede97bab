"""Resources and resource templates across servers, searchable like an `@` mention (R-5.5).

Pure. A search matches the query (case-insensitive) against name, title, URI (or URI template)
and description, ranks name matches above URI matches above description matches, and includes
resource templates with the variables of their RFC 6570 URI template.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types

__all__ = ["ResourceEntry", "build_resources", "search_resources", "uri_template_variables"]

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_OPERATORS = "+#./;?&=,!@|"
_VARNAME = re.compile(r"^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$")


def uri_template_variables(template: str) -> list[str]:
    """The variable names of an RFC 6570 URI template, in order of first use.

    `"file:///{+path}{?q,lang}"` → `["path", "q", "lang"]`. Modifiers (`:3`, `*`) are stripped;
    malformed expressions are skipped.
    """
    names: list[str] = []
    for expression in _EXPRESSION.findall(template):
        body = expression[1:] if expression[:1] in _OPERATORS else expression
        for spec in body.split(","):
            name = spec.strip().rstrip("*").split(":", 1)[0]
            if _VARNAME.fullmatch(name) and name not in names:
                names.append(name)
    return names


@dataclass(frozen=True)
class ResourceEntry:
    """A resource or resource template of one ready server."""

    server_id: str
    server_name: str
    item: types.Resource | types.ResourceTemplate

    @property
    def kind(self) -> Literal["resource", "template"]:
        """`resource` (readable as is) or `template` (fill its variables first)."""
        return "resource" if isinstance(self.item, types.Resource) else "template"

    @property
    def uri(self) -> str:
        """The URI, or the URI template of a template."""
        return self.item.uri if isinstance(self.item, types.Resource) else self.item.uri_template

    @property
    def mention(self) -> str:
        """`@{serverId}:{uri}`: how a chat UI inserts it."""
        return f"@{self.server_id}:{self.uri}"

    def to_dict(self) -> dict[str, Any]:
        """`{"kind", "server_id", "server_name", "name", "title", "description", "mime_type", "mention"}`
        plus `"uri"` and `"size"` (a resource) or `"uri_template"` and `"variables"` (a template)."""
        view: dict[str, Any] = {
            "kind": self.kind,
            "server_id": self.server_id,
            "server_name": self.server_name,
            "name": self.item.name,
            "title": self.item.title,
            "description": self.item.description,
            "mime_type": self.item.mime_type,
            "mention": self.mention,
        }
        if isinstance(self.item, types.Resource):
            view["uri"] = self.item.uri
            view["size"] = self.item.size
        else:
            view["uri_template"] = self.item.uri_template
            view["variables"] = uri_template_variables(self.item.uri_template)
        return view

    def score(self, query: str) -> int:
        """How well `query` (lower-cased) matches: 0 means no match; higher is better."""
        if not query:
            return 1
        name = self.item.name.lower()
        title = (self.item.title or "").lower()
        if name == query or title == query:
            return 60
        if name.startswith(query) or title.startswith(query):
            return 50
        if query in name or query in title:
            return 40
        if query in self.uri.lower():
            return 30
        if query in (self.item.description or "").lower():
            return 20
        return 0


def build_resources(
    servers: Iterable[tuple[str, str, Sequence[types.Resource], Sequence[types.ResourceTemplate]]],
) -> list[ResourceEntry]:
    """Entries for `(server id, server name, resources, templates)`: resources first, then templates."""
    entries: list[ResourceEntry] = []
    for server_id, server_name, resources, templates in servers:
        entries += [ResourceEntry(server_id, server_name, r) for r in resources]
        entries += [ResourceEntry(server_id, server_name, t) for t in templates]
    return entries


def search_resources(entries: Iterable[ResourceEntry], query: str, *, limit: int) -> list[ResourceEntry]:
    """The entries matching `query` (blank: all), best first, at most `limit`.

    Ties keep a stable order: server id, then resources before templates, then URI.
    """
    needle = query.strip().lower()
    scored = [(entry.score(needle), entry) for entry in entries]
    matched = [(s, e) for s, e in scored if s > 0]
    matched.sort(key=lambda se: (-se[0], se[1].server_id, se[1].kind != "resource", se[1].uri))
    return [entry for _, entry in matched[: max(limit, 0)]]
