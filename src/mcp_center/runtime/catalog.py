"""Catalogs — tools, prompts, resources, resource templates — validated item by item (R-3.6, R-3.7).

Threat: one hostile or buggy server poisoning what agents see, or making its whole catalog
unusable. The SDK validates a list page as a whole against the negotiated protocol version, so one
malformed tool would fail the entire page (and with it the first catalog, the test and the server).
`CatalogSanitizer` sits in the transport tap (before the SDK parses anything): it checks every item
of every list page on its own — against the same protocol-version model the SDK uses, the SDK's own
model, our name rules and, for tools, the JSON Schema rules of `registry.schemas` — removes what
fails (quarantine) or normalises it by a stated rule, and turns a page that is malformed as a whole
into a JSON-RPC error, so a failed refresh keeps the last valid catalog instead of erasing it.

Each page carries its own notes (in its `_meta` under `NOTES_KEY`) to whoever asked for it, so
the sanitizer holds no per-refresh state: two refreshes of one category that overlap each validate
their own answer (issue 14, item 5). `fetch_category` walks the pages of one refresh, collects the
notes, and applies the rules that span pages (duplicates, the item limit).

The sanitizer also repairs what would make the SDK drop a whole tool result (R-3.6, issue 14 item 3):
a `tools/call` result whose `structuredContent` is not an object, or with a malformed content block,
is rewritten so that nothing the server said is lost and the repair is marked in its `_meta`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

import mcp_types as types
from mcp.client import Client
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_center.models import is_object
from mcp_center.registry.schemas import check_tool

__all__ = [
    "CATEGORIES",
    "MAX_CATALOG_ITEMS",
    "MAX_CATALOG_PAGES",
    "NOTES_KEY",
    "REPAIRED_META_KEY",
    "Catalog",
    "CatalogSanitizer",
    "Category",
    "Fetched",
    "Normalized",
    "Quarantined",
    "fetch_category",
]

logger = logging.getLogger(__name__)

Category = Literal["tools", "prompts", "resources", "resource_templates"]
CATEGORIES: tuple[Category, ...] = ("tools", "prompts", "resources", "resource_templates")
MAX_CATALOG_PAGES = 100
"""A paginator that never ends cannot hang a connection: at most this many pages per refresh."""
MAX_CATALOG_ITEMS = 10_000
"""Items kept per category; the rest are quarantined as over the limit."""
MAX_NAME_CHARS = 256
NOTES_KEY: Final = "mcp-center/catalog"
"""`_meta` key of a list page under which the sanitizer hands its notes to `fetch_category`."""
REPAIRED_META_KEY: Final = "mcp-center/repaired"
"""`_meta` key of a tool result the sanitizer had to repair (a list of sentences)."""
_PENDING_LIMIT: Final = 1000
_MAX_REPAIRED_BLOCK_CHARS: Final = 64 * 1024

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
_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


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


@dataclass(frozen=True)
class Normalized:
    """A catalog item that is kept after a stated normalisation (`registry.schemas` rules)."""

    category: Category
    index: int
    name: str | None
    changes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"category": self.category, "index": self.index, "name": self.name, "changes": list(self.changes)}


@dataclass
class Catalog:
    """The last valid content of each category, with its generation (R-3.7).

    Attributes:
        items: Category → validated items (SDK models).
        generation: Category → number of the refresh that produced the content (0: initial).
        started: Category → number given to the newest refresh started; a refresh commits only when
            its number is above `generation`, so an older answer never replaces a newer one.
        quarantined: Category → items dropped by the last committed refresh.
        normalized: Category → items kept after a normalisation, by the last committed refresh.
        errors: Category → the last refresh error (`{"code", "message"}`) when the content is
            older than a failed refresh; None when the last refresh succeeded.
    """

    items: dict[Category, list[Any]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    generation: dict[Category, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    started: dict[Category, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    quarantined: dict[Category, list[Quarantined]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    normalized: dict[Category, list[Normalized]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    errors: dict[Category, dict[str, Any] | None] = field(default_factory=lambda: dict.fromkeys(CATEGORIES))
    _by_name: tuple[list[types.Tool], int, dict[str, types.Tool]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """`tools` by name, with the list (and its length) it was built from."""

    @property
    def tools(self) -> list[types.Tool]:
        """The validated tools."""
        return self.items["tools"]

    def tool(self, name: str) -> types.Tool | None:
        """The tool named `name` (the first, as listed), or None: a lookup, not a scan of the catalog
        (the gateway checks every forwarded result against its tool's outputSchema, R-3.9, R-8.3).
        The index is rebuilt when the tool list was replaced (a refresh commits a new list)."""
        tools = self.items["tools"]
        index = self._by_name
        if index is None or index[0] is not tools or index[1] != len(tools):
            index = self._by_name = (tools, len(tools), {t.name: t for t in reversed(tools)})
        return index[2].get(name)

    def counts(self) -> dict[str, int]:
        """Items per category."""
        return {c: len(self.items[c]) for c in CATEGORIES}

    def begin(self, category: Category) -> int:
        """Number a refresh of `category` that starts now (higher than every earlier one)."""
        self.started[category] = max(self.started[category], self.generation[category]) + 1
        return self.started[category]

    def commit(self, category: Category, generation: int, fetched: Fetched) -> bool:
        """Install a refresh's answer unless a newer refresh already committed. True when installed."""
        if generation <= self.generation[category]:
            return False
        self.items[category] = fetched.items
        self.quarantined[category] = fetched.quarantined
        self.normalized[category] = fetched.normalized
        self.generation[category] = generation
        self.errors[category] = None
        return True

    def fail(self, category: Category, generation: int, error: dict[str, Any]) -> bool:
        """Record a failed refresh (the content stays) unless a newer refresh already committed."""
        if generation <= self.generation[category]:
            return False
        self.errors[category] = error
        return True

    def carry_over(self, previous: Catalog, category: Category) -> None:
        """Keep `previous`'s content for `category` (its first refresh on this connection failed, R-3.7)."""
        self.items[category] = list(previous.items[category])
        self.quarantined[category] = list(previous.quarantined[category])
        self.normalized[category] = list(previous.normalized[category])


def _no_quarantined() -> list[Quarantined]:
    """An empty `Fetched.quarantined` (a typed function: `list[Quarantined]` as the factory would build
    the list through `types.GenericAlias`, which raises and swallows an AttributeError each time)."""
    return []


def _none_normalized() -> list[Normalized]:
    """An empty `Fetched.normalized` (as `_no_quarantined`)."""
    return []


@dataclass(frozen=True)
class Fetched:
    """The outcome of one refresh of one category: items in order, plus what was dropped or normalised."""

    items: list[Any]
    quarantined: list[Quarantined] = field(default_factory=_no_quarantined)
    normalized: list[Normalized] = field(default_factory=_none_normalized)


def _reason(exc: ValidationError, skip: int = 0) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first["loc"][skip:]) or "item"
    return f"{where}: {first['msg']}"[:300]


def _shown_name(category: Category, item: object) -> str | None:
    name = cast(dict[str, Any], item).get(_IDENTITY[category]) if isinstance(item, dict) else None
    return name[:200] if isinstance(name, str) else None


class CatalogSanitizer:
    """Validates list pages (and repairs tool results) in flight; one instance per connection.

    `outgoing()` remembers which request ids ask for what; `incoming()` returns the message to
    deliver (possibly rewritten). It keeps no state per refresh: each page carries its own notes.
    """

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}
        self.protocol_version = LATEST_HANDSHAKE_VERSION
        """The version the server answered `initialize` with (when we speak it): pages are checked against it."""

    def outgoing(self, message: SessionMessage) -> None:
        """Note the requests whose answers are checked, by id."""
        msg = message.message
        if isinstance(msg, types.JSONRPCRequest) and (
            msg.method in _METHODS or msg.method in ("initialize", "tools/call")
        ):
            self._pending[str(msg.id)] = msg.method
            if len(self._pending) > _PENDING_LIMIT:
                self._pending.pop(next(iter(self._pending)))

    def incoming(self, message: SessionMessage) -> SessionMessage:
        """Return `message`, with list pages validated item by item and tool results repaired."""
        msg = message.message
        if not isinstance(msg, types.JSONRPCResponse):
            if isinstance(msg, types.JSONRPCError):
                self._pending.pop(str(msg.id), None)
            return message
        method = self._pending.pop(str(msg.id), None)
        if method == "initialize":
            version = msg.result.get("protocolVersion")
            if isinstance(version, str) and version in HANDSHAKE_PROTOCOL_VERSIONS:
                self.protocol_version = version
            return message
        if method == "tools/call":
            repaired = _repair_call_result(msg.result, self.protocol_version)
            if repaired is None:
                return message
            return SessionMessage(msg.model_copy(update={"result": repaired}), metadata=message.metadata)
        category = _METHODS.get(method) if method is not None else None
        if category is None:
            return message
        return self._page(message, msg, method or "", category)

    def _page(
        self, message: SessionMessage, msg: types.JSONRPCResponse, method: str, category: Category
    ) -> SessionMessage:
        result = msg.result
        key = _RESULT_KEYS[category]
        items: object = result.get(key)
        cursor = result.get("nextCursor")
        if not isinstance(items, list) or (cursor is not None and not isinstance(cursor, str)):
            problem = f"'{key}' is not a list" if not isinstance(items, list) else "'nextCursor' is not a string"
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"malformed {category} page: {problem}")
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=error))
        kept: list[Any] = []
        quarantined: list[dict[str, Any]] = []
        normalized: list[dict[str, Any]] = []
        for index, item in enumerate(cast(list[object], items)):
            verdict, reason, changes = self._check(method, category, item)
            name = _shown_name(category, item)
            if verdict is None:
                quarantined.append({"index": index, "name": name, "reason": reason})
                continue
            kept.append(verdict)
            if changes:
                normalized.append({"index": index, "name": name, "changes": list(changes)})
        meta: object = result.get("_meta")
        own_meta = (
            {k: v for k, v in cast(dict[str, Any], meta).items() if k != NOTES_KEY} if isinstance(meta, dict) else {}
        )
        own_meta[NOTES_KEY] = {"quarantined": quarantined, "normalized": normalized}
        cleaned = {**result, key: kept, "_meta": own_meta}
        return SessionMessage(
            types.JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=cleaned), metadata=message.metadata
        )

    def _check(self, method: str, category: Category, item: object) -> tuple[Any, str, tuple[str, ...]]:
        """`(item to keep or None, reason, changes)`."""
        changes: tuple[str, ...] = ()
        if category == "tools" and isinstance(item, dict):
            verdict = check_tool(cast(dict[str, Any], item))
            if verdict.tool is None:
                return None, verdict.reason or "the tool is not usable", ()
            item, changes = verdict.tool, verdict.changes
        key = _RESULT_KEYS[category]
        try:
            # The SDK checks the page against the negotiated version's model, then parses it with its
            # own model: an item passes only when both accept it.
            validate_server_result(method, self.protocol_version, {key: [item]})
            _MODELS[category].model_validate(item, by_name=False)
        except ValidationError as exc:
            skip = 2 if exc.errors(include_url=False)[0]["loc"][:1] == (key,) else 0
            return None, _reason(exc, skip), ()
        except (KeyError, ValueError) as exc:  # an unknown version or method: check with the SDK model only
            logger.debug("catalog.surface_unavailable", extra={"method": method, "error": type(exc).__name__})
            try:
                _MODELS[category].model_validate(item, by_name=False)
            except ValidationError as inner:
                return None, _reason(inner), ()
        identity_key = _IDENTITY[category]
        name = cast(dict[str, Any], item).get(identity_key)
        assert isinstance(name, str)
        if not name or len(name) > MAX_NAME_CHARS or _CONTROL.search(name):
            return None, f"{identity_key} must be 1-{MAX_NAME_CHARS} printable characters", ()
        return item, "", changes


def _repair_call_result(result: dict[str, Any], version: str) -> dict[str, Any] | None:
    """A copy of a `tools/call` result the SDK would refuse, repaired without losing what it said; None
    when it is acceptable as it is (or beyond repair: then the SDK reports it)."""
    try:
        validate_server_result("tools/call", version, result)
        types.CallToolResult.model_validate(result, by_name=False)
        return None
    except ValidationError:
        pass
    except (KeyError, ValueError):
        return None
    notes: list[str] = []
    repaired = dict(result)
    content: object = result.get("content", [])
    blocks: list[Any] = []
    if not isinstance(content, list):
        notes.append("content was not a list; its JSON is kept as text")
        blocks.append(_text_block("content", content))
    else:
        for number, block in enumerate(cast(list[object], content)):
            try:
                _CONTENT_BLOCK.validate_python(block, by_name=False)
                blocks.append(block)
            except ValidationError as exc:
                notes.append(f"content[{number}] is not an MCP content block ({_reason(exc)}); kept as text")
                blocks.append(_text_block(f"content[{number}]", block))
    structured: object = result.get("structuredContent")
    if "structuredContent" in result and not isinstance(structured, dict):
        notes.append("structuredContent was not a JSON object; its JSON is kept as text")
        blocks.append(_text_block("structuredContent", structured))
        del repaired["structuredContent"]
    if "isError" in result and not isinstance(result["isError"], bool):
        notes.append("isError was not a boolean; it was read as true")
        repaired["isError"] = True
    repaired["content"] = blocks
    meta: object = result.get("_meta")
    own_meta = dict(cast(dict[str, Any], meta)) if isinstance(meta, dict) else {}
    own_meta[REPAIRED_META_KEY] = notes
    repaired["_meta"] = own_meta
    try:
        validate_server_result("tools/call", version, repaired)
        types.CallToolResult.model_validate(repaired, by_name=False)
    except ValidationError:
        return None
    return repaired


def _text_block(what: str, value: object) -> dict[str, Any]:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > _MAX_REPAIRED_BLOCK_CHARS:
        shown = shown[:_MAX_REPAIRED_BLOCK_CHARS] + " [cut by mcp-center]"
    return {"type": "text", "text": f"[mcp-center: {what} as the server sent it]\n{shown}"}


def _supported(client: Client, category: Category) -> bool:
    caps = client.server_capabilities
    if category == "tools":
        return caps.tools is not None
    if category == "prompts":
        return caps.prompts is not None
    return caps.resources is not None


class _Walk:
    """Notes of one refresh across its pages: absolute indexes, duplicates, the item limit."""

    def __init__(self, category: Category) -> None:
        self.category: Category = category
        self.fetched = Fetched(items=[])
        self._seen: set[str] = set()
        self._offset = 0

    def add_page(self, page_items: list[Any], meta: Mapping[str, Any] | None) -> None:
        notes = _page_notes(meta)
        dropped = {int(n["index"]) for n in notes["quarantined"]}
        for note in notes["quarantined"]:
            self.fetched.quarantined.append(
                Quarantined(self.category, self._offset + int(note["index"]), note.get("name"), str(note["reason"]))
            )
        changed = {int(n["index"]): n for n in notes["normalized"]}
        raw_index = 0
        identity = "uri_template" if self.category == "resource_templates" else _IDENTITY[self.category]
        for item in page_items:
            while raw_index in dropped:
                raw_index += 1
            index, raw_index = raw_index, raw_index + 1
            absolute = self._offset + index
            name = str(getattr(item, identity))
            if name in self._seen:
                reason = f"duplicate {_IDENTITY[self.category]}; the first one is kept"
                self.fetched.quarantined.append(Quarantined(self.category, absolute, name, reason))
                continue
            if len(self._seen) >= MAX_CATALOG_ITEMS:
                reason = f"over the limit of {MAX_CATALOG_ITEMS} items"
                self.fetched.quarantined.append(Quarantined(self.category, absolute, name, reason))
                continue
            self._seen.add(name)
            self.fetched.items.append(item)
            note = changed.get(index)
            if note is not None:
                changes = tuple(str(c) for c in note.get("changes", ()))
                self.fetched.normalized.append(Normalized(self.category, absolute, name, changes))
        self._offset += len(page_items) + len(dropped)


def _page_notes(meta: Mapping[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    raw: object = (meta or {}).get(NOTES_KEY)
    notes: dict[str, list[dict[str, Any]]] = {"quarantined": [], "normalized": []}
    if isinstance(raw, dict):
        for kind in notes:
            value: object = cast(dict[str, Any], raw).get(kind)
            if isinstance(value, list):
                notes[kind] = [n for n in cast(list[Any], value) if is_object(n) and isinstance(n.get("index"), int)]
    return notes


async def fetch_category(client: Client, category: Category) -> Fetched:
    """Follow the pagination of one category (at most `MAX_CATALOG_PAGES` pages): one refresh's answer.

    A category the server does not advertise is empty without a request. A cursor that repeats
    ends the walk (a looping paginator). Items the sanitizer dropped or normalised on each page, and
    duplicates or items over `MAX_CATALOG_ITEMS` across pages, are reported with their index in
    the server's listing.

    Raises:
        MCPError / transport errors: as the SDK raises them (the caller keeps the last valid content).
    """
    walk = _Walk(category)
    if not _supported(client, category):
        return walk.fetched
    session = client.session
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_CATALOG_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        if category == "tools":
            page_tools = await session.list_tools(params=params)
            walk.add_page(list(page_tools.tools), page_tools.meta)
            cursor = page_tools.next_cursor
        elif category == "prompts":
            page_prompts = await session.list_prompts(params=params)
            walk.add_page(list(page_prompts.prompts), page_prompts.meta)
            cursor = page_prompts.next_cursor
        elif category == "resources":
            page_resources = await session.list_resources(params=params)
            walk.add_page(list(page_resources.resources), page_resources.meta)
            cursor = page_resources.next_cursor
        else:
            page_templates = await session.list_resource_templates(params=params)
            walk.add_page(list(page_templates.resource_templates), page_templates.meta)
            cursor = page_templates.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return walk.fetched
