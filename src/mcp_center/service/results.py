"""Typed results of `McpCenter`'s reads and approvals: what a library caller gets back (issue 16).

Each result is a frozen dataclass whose closed sets of strings are `Literal`s; `to_dict()` is the
JSON the REST API answers and the CLI prints, built at those edges, key for key the shape the API
has always sent (the OpenAPI description and the API tests hold it). `ServerView` (`views.py`) is the
result of the server methods; these are the others:

- `ToolExport`: the tools agents may call in one export format, their alias table, the names
  whose calls wait for approval and the enabled servers missing from it (`UnavailableServer`)
  (R-5.1, R-5.3, R-5.6): `agent_tools`.
- `ApprovalView`: one approval of an agent's call (R-5.3): `list_approvals`, `get_approval`,
  `wait_for_approval`, `decide_approval`.
- `ServerTool`: one tool of one server with the user's settings for it (R-5.2, R-5.3): `list_tools`.
- `ServerLogs`: a server's last exchanges and stderr lines (R-3.11): `logs`.
- `CatalogView`: a server's live catalog (R-3.6, R-3.7): `catalog`.
- `InstancesView`: the live `serve` instances on the store and their connection states (R-10.2):
  `instances`.
- `ToolCallResult`: what a tool call answered (R-3.8, R-5.3): `call_tool`, `call_agent_tool`.
- `InteractionCard`: one elicitation card (R-6.1, R-6.3): `list_interactions`, `get_interaction`;
  `InteractionAnswer`: the card after an answer, and a retried call's result: `answer_interaction`.
- `ResourceSearch`: the resources and resource templates an `@` search found (R-5.5):
  `search_resources`. (`list_prompts` answers `registry.PromptEntry`s, and `get_prompt` and
  `read_resource` the untrusted blocks of `untrusted.py`: `PromptBlock`, `ResourceBlock`.)

Entries that are themselves a log's free-form JSON (a logbook exchange, a stderr line, a category's
refresh error) stay JSON mappings inside the typed result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import mcp_types as types

from mcp_center.config import ToolPolicy
from mcp_center.registry import ExportFormat, ResourceEntry, ToolAlias
from mcp_center.runtime import Catalog, Category, Quarantined, ServerStatus
from mcp_center.service.forms import FormField
from mcp_center.store import ApprovalRecord, ApprovalState, CallRef, InteractionState, RetryState
from mcp_center.store.coordination import InstanceInfo, InstanceServerState

__all__ = [
    "ApprovalView",
    "CatalogView",
    "DeclaredCapabilities",
    "InstanceView",
    "InstancesView",
    "InteractionAnswer",
    "InteractionCard",
    "ResourceSearch",
    "ServerLogs",
    "ServerTool",
    "ToolCallResult",
    "ToolExport",
    "UnavailableServer",
]


def _mcp_json(item: types.Tool | types.Prompt | types.Resource | types.ResourceTemplate) -> dict[str, Any]:
    return item.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True, slots=True)
class UnavailableServer:
    """An enabled server whose tools an export lacks, and why (R-3.2, R-5.1).

    Attributes:
        server_id: The server's id.
        code: A stable error code: the failure of its start (`MCP_SERVER_TIMEOUT`: not ready within
            its `startup_timeout_s`; `MCP_SERVER_UNREACHABLE`, ...), or the step it still needs
            (`MCP_SERVER_NOT_TRUSTED`, `MCP_SERVER_NOT_TESTED`, `MCP_SANDBOX_REQUIRED`).
        message: What happened, in words (no secret values).
    """

    server_id: str
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """`{"server_id", "code", "message"}`."""
        return {"server_id": self.server_id, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class ToolExport:
    """The tools agents may call, in one export format (R-5.1, R-5.2, R-5.6).

    Attributes:
        format: `center`, `mcp`, `openai` or `anthropic`.
        tools: The tool objects in that format, ready to hand to the LLM API (input schemas unchanged).
        aliases: `{exposed name: registry.ToolAlias}` (server id, the server's tool name, `verbatim`).
        approval_required: Exposed names whose calls wait for the user's approval (policy `ask`,
            R-5.3): the OpenAI and Anthropic tool objects have no field to say so.
        unavailable: Enabled servers whose tools are missing, sorted by id, each with why
            (`UnavailableServer`); empty when every enabled server is ready.
    """

    format: ExportFormat
    tools: list[dict[str, Any]]
    aliases: Mapping[str, ToolAlias]
    approval_required: tuple[str, ...]
    unavailable: tuple[UnavailableServer, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """`{"format", "tools", "aliases": {name: {"server_id", "tool", "verbatim"}}, "approval_required",
        "unavailable": [{"server_id", "code", "message"}]}`."""
        return {
            "format": self.format,
            "tools": self.tools,
            "aliases": {name: alias.to_dict() for name, alias in self.aliases.items()},
            "approval_required": list(self.approval_required),
            "unavailable": [server.to_dict() for server in self.unavailable],
        }


@dataclass(frozen=True, slots=True)
class ApprovalView:
    """One approval of an agent's call, pending or closed (R-5.3).

    Attributes:
        id: Decide it with `decide_approval(id, "approve" | "deny")`.
        state: `pending`, then `approved` / `denied` (the user), `expired`, `cancelled` or
            `interrupted` (`store.ApprovalState`).
        tool: The exposed name the agent called (`mcp__{serverId}__...`).
        server_id, server_tool: Where the call goes, and the tool's own name.
        arguments: What the agent sent (shown as is).
        hints: The server's tool annotations: self-reported, shown, never trusted (R-5.1).
        effects: Always `write`: every call is treated as one that may change something.
        operation_id: `cancel(operation_id)` ends the approval and its call.
        created_at, expires_at, decided_at: Aware UTC datetimes (`decided_at` None while pending).
        caller: Who asked (`{"via": "gateway" | "rest_api" | "library", ...}`; never a token).
    """

    id: str
    state: ApprovalState
    tool: str
    server_id: str
    server_tool: str
    arguments: Mapping[str, Any]
    hints: Mapping[str, Any]
    operation_id: str
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    caller: Mapping[str, Any]
    effects: Literal["write"] = "write"

    @classmethod
    def of(cls, record: ApprovalRecord) -> ApprovalView:
        """The view of a stored approval."""
        return cls(
            id=record.id,
            state=record.state,
            tool=record.tool,
            server_id=record.server_id,
            server_tool=record.server_tool,
            arguments=record.arguments,
            hints=record.hints,
            operation_id=record.operation_id,
            created_at=record.created_at,
            expires_at=record.expires_at,
            decided_at=record.decided_at,
            caller=record.caller or {"via": "library"},
        )

    def to_dict(self) -> dict[str, Any]:
        """`{"id", "state", "tool", "server_id", "server_tool", "arguments", "hints", "effects",
        "operation_id", "created_at", "expires_at", "decided_at", "caller"}` (ISO 8601 times)."""
        return {
            "id": self.id,
            "state": self.state,
            "tool": self.tool,
            "server_id": self.server_id,
            "server_tool": self.server_tool,
            "arguments": dict(self.arguments),
            "hints": dict(self.hints),
            "effects": self.effects,
            "operation_id": self.operation_id,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
            "caller": dict(self.caller),
        }


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool of one server as its live session lists it, with the user's settings (R-5.2, R-5.3).

    Attributes:
        tool: The MCP `Tool` as the server described it (self-reported, R-5.1).
        enabled: False when the user disabled it (`disabled_tools`).
        policy: The approval policy of agent calls of it (`ask` when none is set).
    """

    tool: types.Tool
    enabled: bool
    policy: ToolPolicy

    @property
    def name(self) -> str:
        """The server's name for the tool."""
        return self.tool.name

    def to_dict(self) -> dict[str, Any]:
        """The MCP `Tool` as JSON, plus `"enabled"` and `"policy"`."""
        return {**_mcp_json(self.tool), "enabled": self.enabled, "policy": self.policy}


@dataclass(frozen=True, slots=True)
class ServerLogs:
    """A server's recent traffic as this process saw it (R-3.11); redacted, summaries only.

    Attributes:
        server_id: The server.
        status: Its runtime status in this process.
        requests: The last exchanges, oldest first (`runtime.logbook`: `{"at", "direction", "method",
            "status", ...}`), still-pending requests included.
        stderr: The last stderr lines `{"at", "line"}` (a stdio server), with `"violation"` on a line
            reporting a sandbox refusal (R-11.1).
    """

    server_id: str
    status: ServerStatus
    requests: tuple[Mapping[str, Any], ...]
    stderr: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"server_id", "status", "requests", "stderr"}`."""
        return {
            "server_id": self.server_id,
            "status": self.status.to_dict(),
            "requests": [dict(entry) for entry in self.requests],
            "stderr": [dict(line) for line in self.stderr],
        }


@dataclass(frozen=True, slots=True)
class DeclaredCapabilities:
    """Which catalog categories the server declared in `initialize` (an undeclared one is empty)."""

    tools: bool
    prompts: bool
    resources: bool


@dataclass(frozen=True, slots=True)
class CatalogView:
    """A server's live catalog (R-3.6, R-3.7).

    Attributes:
        server_id: The server.
        capabilities: The categories it declared.
        catalog: The validated items per category, quarantined and normalized items (kept after a
            stated schema fix, `registry.schemas`), generations and per-category refresh errors
            (`runtime.Catalog`).
    """

    server_id: str
    capabilities: DeclaredCapabilities
    catalog: Catalog

    @property
    def tools(self) -> tuple[types.Tool, ...]:
        """The validated tools."""
        return tuple(self.catalog.tools)

    @property
    def quarantined(self) -> tuple[Quarantined, ...]:
        """Items dropped from every category, with the reason (R-3.6)."""
        return tuple(q for notes in self.catalog.quarantined.values() for q in notes)

    @property
    def generation(self) -> Mapping[Category, int]:
        """Per category, how many times it was refreshed successfully in this connection (R-3.7)."""
        return self.catalog.generation

    def error(self, category: Category) -> Mapping[str, Any] | None:
        """The last refresh error of `category` (`{"code", "message", ...}`), or None when it refreshed."""
        return self.catalog.errors[category]

    def to_dict(self) -> dict[str, Any]:
        """`{"server_id", "capabilities": {"tools", "prompts", "resources"}, "tools", "prompts",
        "resources", "resource_templates", "quarantined", "normalized", "generation", "errors"}`."""
        catalog = self.catalog
        return {
            "server_id": self.server_id,
            "capabilities": {
                "tools": self.capabilities.tools,
                "prompts": self.capabilities.prompts,
                "resources": self.capabilities.resources,
            },
            **{category: [_mcp_json(item) for item in items] for category, items in catalog.items.items()},
            "quarantined": [q.to_dict() for notes in catalog.quarantined.values() for q in notes],
            "normalized": [n.to_dict() for notes in catalog.normalized.values() for n in notes],
            "generation": dict(catalog.generation),
            "errors": dict(catalog.errors),
        }


@dataclass(frozen=True, slots=True)
class InstanceView:
    """One live `serve` instance and its connection state of each server (R-10.2).

    Attributes:
        info: Its id, label, URL, host name, pid and start time.
        here: True for the instance that answers.
        servers: `{server_id: state line}` as that instance published it.
    """

    info: InstanceInfo
    here: bool
    servers: Mapping[str, InstanceServerState]

    def to_dict(self) -> dict[str, Any]:
        """`{id, name, url, hostname, pid, started_at, here, servers: {server_id: {state, reason, updated_at}}}`."""
        return {
            **self.info.view(),
            "here": self.here,
            "servers": {
                server_id: {"state": line.state, "reason": line.reason, "updated_at": line.updated_at.isoformat()}
                for server_id, line in self.servers.items()
            },
        }


@dataclass(frozen=True, slots=True)
class InstancesView:
    """The live instances on one store, oldest first, and which one answers (R-10.2)."""

    here: str
    instances: tuple[InstanceView, ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"here": id, "instances": [InstanceView.to_dict()]}`."""
        return {"here": self.here, "instances": [instance.to_dict() for instance in self.instances]}


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """What a tool call answered: the server's MCP `CallToolResult`, bounded and checked (R-3.8, R-5.1).

    The content stays the SDK's typed blocks (`TextContent`, `ImageContent`, `AudioContent`,
    `ResourceLink`, `EmbeddedResource`): a library caller branches on the block's class or `type`
    and reads its fields, and `to_dict()` is the JSON the server sent (as the REST API answers it).
    The content is the server's word: untrusted, never instructions (R-5.1).

    Attributes:
        result: The SDK's `CallToolResult` (`content`, `structured_content`, `is_error`, `meta`).
    """

    result: types.CallToolResult

    @property
    def content(self) -> tuple[types.ContentBlock, ...]:
        """The content blocks, in the server's order."""
        return tuple(self.result.content)

    @property
    def structured_content(self) -> Any:
        """The server's `structuredContent` as parsed JSON (an object when the server follows MCP;
        checked against the tool's `outputSchema` when it has one), or None."""
        return self.result.structured_content

    @property
    def is_error(self) -> bool:
        """True when the tool reported an error (`isError`): the call reached the server and failed there."""
        return bool(self.result.is_error)

    @property
    def text(self) -> str:
        """The text blocks joined with newlines (`""` when there are none); other blocks are left out."""
        return "\n".join(block.text for block in self.result.content if isinstance(block, types.TextContent))

    def to_dict(self) -> dict[str, Any]:
        """The `CallToolResult` as JSON, MCP's names (`content`, `structuredContent`, `isError`, `_meta`)."""
        return self.result.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True, slots=True)
class ResourceSearch:
    """What an `@` search over the ready servers' resources and resource templates found (R-5.5).

    Attributes:
        query: The search text as given (blank: everything).
        resources: The matches, best first (name matches rank first), at most the limit asked for:
            `registry.ResourceEntry`s (`kind` `resource` or `template`, `server_id`, `uri`, `mention`,
            and the MCP `Resource` / `ResourceTemplate` as `item`).
    """

    query: str
    resources: tuple[ResourceEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"query", "resources": [ResourceEntry.to_dict()]}`."""
        return {"query": self.query, "resources": [entry.to_dict() for entry in self.resources]}


CardAction = Literal["accept", "decline", "cancel", "retry"]
"""What the user may do with a card now: answer a pending one, or re-send an interrupted call."""


@dataclass(frozen=True, slots=True)
class InteractionCard:
    """One interaction card: a server's elicitation waiting for the user, or its outcome (R-6.1, R-6.3).

    The message, schema, defaults and field titles are the server's words: untrusted, shown as data.

    Attributes:
        id: Answer it with `answer_interaction(id, action, content)`.
        kind: Always `elicitation`.
        mode: `form` (fields to fill in) or `url` (a page to visit; only its origin is shown).
        state: `pending`, then `accepted` / `declined` / `cancelled` (the user), `expired`,
            `withdrawn` (the call ended) or `interrupted` (the host stopped, R-6.3).
        server_id: The server that asked.
        message: The server's question.
        requested_schema: The form's JSON Schema as the server sent it (None for `url`).
        fields: The parsed form fields, in the schema's order (empty when the schema is unsupported).
        defaults: `{field: value}` the schema declares (SEP-1034); an accepted answer that leaves a
            field out gets its default.
        url_origin: The origin of a `url` card's page, or None.
        calls: The tool calls the server asked during (`store.CallRef`: server id, tool, caller, ...).
        created_at, expires_at, closed_at: Aware UTC datetimes (`closed_at` None while pending).
        reason: Why it closed, when the user did not close it, or None.
        answer_fields: The names of the fields an accepted answer filled in (never their values).
        delivered: True when the answer reached the server.
        retry: Whether re-sending an interrupted call is offered and was done (`store.RetryState`).
        actions: What the user may do now (`accept`, `decline`, `cancel` or `retry`; empty when none).
    """

    id: str
    kind: Literal["elicitation"]
    mode: Literal["form", "url"]
    state: InteractionState
    server_id: str
    message: str
    requested_schema: Mapping[str, Any] | None
    fields: tuple[FormField, ...]
    defaults: Mapping[str, Any]
    url_origin: str | None
    calls: tuple[CallRef, ...]
    created_at: datetime
    expires_at: datetime
    closed_at: datetime | None
    reason: str | None
    answer_fields: tuple[str, ...]
    delivered: bool
    retry: RetryState
    actions: tuple[CardAction, ...]

    def to_dict(self) -> dict[str, Any]:
        """`{"id", "kind", "mode", "state", "server_id", "message", "requested_schema", "fields", "defaults",
        "url_origin", "calls", "created_at", "expires_at", "closed_at", "reason", "answer_fields",
        "delivered", "retry": {"offered", "done", "at", "outcome"}, "actions"}` (ISO 8601 times)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "mode": self.mode,
            "state": self.state,
            "server_id": self.server_id,
            "message": self.message,
            "requested_schema": dict(self.requested_schema) if self.requested_schema is not None else None,
            "fields": [f.view() for f in self.fields],
            "defaults": dict(self.defaults),
            "url_origin": self.url_origin,
            "calls": [c.model_dump(mode="json") for c in self.calls],
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "closed_at": self.closed_at.isoformat() if self.closed_at else None,
            "reason": self.reason,
            "answer_fields": list(self.answer_fields),
            "delivered": self.delivered,
            "retry": self.retry.model_dump(mode="json"),
            "actions": list(self.actions),
        }


@dataclass(frozen=True, slots=True)
class InteractionAnswer:
    """What answering a card did (R-6.1, R-6.3).

    Attributes:
        interaction: The card after the answer (closed), or after the retry (`retry.outcome` set).
        result: For `retry`, the re-sent call's result; None for accept, decline and cancel.
    """

    interaction: InteractionCard
    result: ToolCallResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """`{"interaction": card}`, and `"result"` (the call's `CallToolResult`) after a retry."""
        answer: dict[str, Any] = {"interaction": self.interaction.to_dict()}
        if self.result is not None:
            answer["result"] = self.result.to_dict()
        return answer
