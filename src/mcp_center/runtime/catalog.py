"""Catalogs — tools, prompts, resources, resource templates — validated item by item (R-3.6, R-3.7).

Threat: one hostile or buggy server poisoning what agents see, or making its whole catalog
unusable. The SDK validates a list page as a whole, so one malformed tool would fail the entire
page. `CatalogSanitizer` sits in the transport tap (before the SDK parses anything): it checks
every item of every list page on its own, removes malformed and duplicate items with a recorded
reason (quarantine), and turns a page that is malformed as a whole into a JSON-RPC error, so a
failed refresh keeps the last valid catalog instead of erasing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp.client import Client
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from mcp_center.models import is_array, is_object

__all__ = [
    "CATEGORIES",
    "MAX_CATALOG_ITEMS",
    "MAX_CATALOG_PAGES",
    "Catalog",
    "CatalogSanitizer",
    "Category",
    "Quarantined",
    "fetch_category",
]

Category = Literal["tools", "prompts", "resources", "resource_templates"]
CATEGORIES: tuple[Category, ...] = ("tools", "prompts", "resources", "resource_templates")
MAX_CATALOG_PAGES = 100
"""A paginator that never ends cannot hang a connection: at most this many pages per refresh."""
MAX_CATALOG_ITEMS = 10_000
"""Items kept per category; the rest are quarantined as over the limit."""
MAX_NAME_CHARS = 256

_METHODS: Mapping[str, Category] = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
}
_RESULT_KEYS: Mapping[Category, str] = {
    "tools": "tools",
    "prompts": "prompts",
    "resources": "resources",
    "resource_templates": "resourceTemplates",
}
_MODELS: Mapping[Category, type[BaseModel]] = {
    "tools": types.Tool,
    "prompts": types.Prompt,
    "resources": types.Resource,
    "resource_templates": types.ResourceTemplate,
}
_IDENTITY: Mapping[Category, str] = {
    "tools": "name",
    "prompts": "name",
    "resources": "uri",
    "resource_templates": "uriTemplate",
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Quarantined:
    """A catalog item that was dropped, and why (shown in the UI and the API)."""

    category: Category
    index: int
    name: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"category": self.category, "index": self.index, "name": self.name, "reason": self.reason}


@dataclass
class Catalog:
    """The last valid content of each category, with its generation (R-3.7).

    Attributes:
        items: Category → validated items (SDK models).
        generation: Category → number of the refresh that produced the content (0: initial).
        quarantined: Category → items dropped by the last successful refresh.
        errors: Category → the last refresh error (`{"code", "message"}`) when the content is
            older than a failed refresh; None when the last refresh succeeded.
    """

    items: dict[Category, list[Any]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    generation: dict[Category, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    quarantined: dict[Category, list[Quarantined]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    errors: dict[Category, dict[str, Any] | None] = field(default_factory=lambda: dict.fromkeys(CATEGORIES))

    @property
    def tools(self) -> list[types.Tool]:
        """The validated tools."""
        return self.items["tools"]

    def counts(self) -> dict[str, int]:
        """Items per category."""
        return {c: len(self.items[c]) for c in CATEGORIES}


def _reason(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "item"
    return f"{where}: {first['msg']}"[:300]


class CatalogSanitizer:
    """Validates list pages in flight; one instance per connection.

    `outgoing()` remembers which request ids are list requests; `incoming()` returns the message
    to deliver (possibly rewritten). Quarantine notes accumulate in `quarantine[category]` until
    the fetcher collects them with `take()`.
    """

    def __init__(self) -> None:
        self._pending: dict[str, Category] = {}
        self.quarantine: dict[Category, list[Quarantined]] = {c: [] for c in CATEGORIES}
        self._seen: dict[Category, set[str]] = {c: set() for c in CATEGORIES}
        self._kept: dict[Category, int] = dict.fromkeys(CATEGORIES, 0)

    def begin(self, category: Category) -> None:
        """Start a refresh of `category`: reset its notes and duplicate detection."""
        self.quarantine[category] = []
        self._seen[category] = set()
        self._kept[category] = 0

    def take(self, category: Category) -> list[Quarantined]:
        """The notes of the refresh that just finished."""
        notes, self.quarantine[category] = self.quarantine[category], []
        return notes

    def outgoing(self, message: SessionMessage) -> None:
        """Note list requests by id."""
        msg = message.message
        if isinstance(msg, types.JSONRPCRequest) and msg.method in _METHODS:
            self._pending[str(msg.id)] = _METHODS[msg.method]
            if len(self._pending) > 1000:
                self._pending.pop(next(iter(self._pending)))

    def incoming(self, message: SessionMessage) -> SessionMessage:
        """Return `message`, with list pages validated item by item."""
        msg = message.message
        if not isinstance(msg, types.JSONRPCResponse):
            if isinstance(msg, types.JSONRPCError):
                self._pending.pop(str(msg.id), None)
            return message
        category = self._pending.pop(str(msg.id), None)
        if category is None:
            return message
        result = msg.result
        key = _RESULT_KEYS[category]
        items = result.get(key)
        cursor = result.get("nextCursor")
        if not is_array(items) or (cursor is not None and not isinstance(cursor, str)):
            problem = f"'{key}' is not a list" if not is_array(items) else "'nextCursor' is not a string"
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"malformed {category} page: {problem}")
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=error))
        kept: list[Any] = []
        offset = self._kept[category] + len(self.quarantine[category])
        for i, item in enumerate(items):
            note = self._check(category, offset + i, item)
            if note is None:
                kept.append(item)
            else:
                self.quarantine[category].append(note)
        self._kept[category] += len(kept)
        if len(kept) == len(items):
            return message
        cleaned = {**result, key: kept}
        return SessionMessage(
            types.JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=cleaned), metadata=message.metadata
        )

    def _check(self, category: Category, index: int, item: object) -> Quarantined | None:
        identity_key = _IDENTITY[category]
        name = item.get(identity_key) if is_object(item) else None
        shown = name if isinstance(name, str) else None
        try:
            _MODELS[category].model_validate(item, by_name=False)
        except ValidationError as exc:
            return Quarantined(category, index, shown, _reason(exc))
        assert isinstance(name, str)
        if not name or len(name) > MAX_NAME_CHARS or _CONTROL.search(name):
            return Quarantined(
                category,
                index,
                shown[:80] if shown else None,
                f"{identity_key} must be 1-{MAX_NAME_CHARS} printable characters",
            )
        if name in self._seen[category]:
            return Quarantined(category, index, name, f"duplicate {identity_key}; the first one is kept")
        if len(self._seen[category]) >= MAX_CATALOG_ITEMS:
            return Quarantined(category, index, name, f"over the limit of {MAX_CATALOG_ITEMS} items")
        self._seen[category].add(name)
        return None


def _supported(client: Client, category: Category) -> bool:
    caps = client.server_capabilities
    if category == "tools":
        return caps.tools is not None
    if category == "prompts":
        return caps.prompts is not None
    return caps.resources is not None


async def fetch_category(client: Client, category: Category) -> list[Any]:
    """Follow the pagination of one category (at most `MAX_CATALOG_PAGES` pages) and return its items.

    A category the server does not advertise is empty without a request. A cursor that repeats
    ends the walk (a looping paginator).

    Raises:
        MCPError / transport errors: as the SDK raises them (the caller keeps the last valid content).
    """
    if not _supported(client, category):
        return []
    session = client.session
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_CATALOG_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        if category == "tools":
            page_tools = await session.list_tools(params=params)
            items.extend(page_tools.tools)
            cursor = page_tools.next_cursor
        elif category == "prompts":
            page_prompts = await session.list_prompts(params=params)
            items.extend(page_prompts.prompts)
            cursor = page_prompts.next_cursor
        elif category == "resources":
            page_resources = await session.list_resources(params=params)
            items.extend(page_resources.resources)
            cursor = page_resources.next_cursor
        else:
            page_templates = await session.list_resource_templates(params=params)
            items.extend(page_templates.resource_templates)
            cursor = page_templates.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return items[:MAX_CATALOG_ITEMS]
