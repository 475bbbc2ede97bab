"""The tool registry: every tool of every ready server under its qualified name (R-5.1, R-5.2, R-5.6).

Pure: built from plain snapshots (`ServerTools`: a server's validated catalog and its tool
settings), no I/O. The service rebuilds it when a catalog, a server's state or its configuration
changes.

Policy, not spec: every remote tool is `effects: "write"` and `retry: "never"`. Server
annotations (`readOnlyHint`, `destructiveHint`, ...) are self-reported by the server; they are
shown as `hints` and never lower the approval policy or make a call retryable. Input schemas are
passed through unchanged (the server validates arguments); the exports only rename.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import mcp_types as types

from mcp_center.config import ToolPolicy
from mcp_center.registry.naming import AliasTable, ToolAlias

__all__ = ["EXPORT_FORMATS", "ExportFormat", "RegisteredTool", "ServerTools", "ToolRegistry"]

ExportFormat = Literal["center", "mcp", "openai", "anthropic"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("center", "mcp", "openai", "anthropic")
ORIGIN_META_KEY = "mcp-center/origin"

_EMPTY_POLICIES: Mapping[str, ToolPolicy] = MappingProxyType({})


@dataclass(frozen=True)
class ServerTools:
    """What the registry needs to know about one ready server.

    Attributes:
        server_id: The server's id.
        server_name: Its display name.
        tools: Its validated tool catalog (R-3.6), in the server's order.
        disabled_tools: Original names of tools the user disabled (R-5.2).
        tool_policies: Original name → `ask` / `allow` / `deny`; absent means `ask` (R-5.3).
    """

    server_id: str
    server_name: str
    tools: Sequence[types.Tool]
    disabled_tools: frozenset[str] = frozenset()
    tool_policies: Mapping[str, ToolPolicy] = field(default_factory=lambda: _EMPTY_POLICIES)


@dataclass(frozen=True)
class RegisteredTool:
    """One tool as agents see it.

    Attributes:
        name: The exposed name (`mcp__{serverId}__...`, R-5.1).
        server_id / server_name: Where it runs.
        tool: The server's tool definition, unchanged (original name, schema, annotations).
        enabled: False when the user disabled it (then it is invisible to agents, R-5.2).
        policy: The user's approval policy for agent calls (R-5.3).
    """

    name: str
    server_id: str
    server_name: str
    tool: types.Tool
    enabled: bool
    policy: ToolPolicy

    @property
    def hints(self) -> dict[str, Any]:
        """The server's annotations, shown as hints only (never trusted, R-5.1)."""
        if self.tool.annotations is None:
            return {}
        return self.tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)

    def view(self) -> dict[str, Any]:
        """Our own JSON shape: provenance, policy, hints and the unchanged schema."""
        view: dict[str, Any] = {
            "name": self.name,
            "server_id": self.server_id,
            "server_name": self.server_name,
            "tool": self.tool.name,
            "title": self.tool.title,
            "description": self.tool.description,
            "inputSchema": self.tool.input_schema,
            "hints": self.hints,
            "effects": "write",
            "retry": "never",
            "policy": self.policy,
            "approval_required": self.policy == "ask",
            "enabled": self.enabled,
        }
        if self.tool.output_schema is not None:
            view["outputSchema"] = self.tool.output_schema
        return view

    def to_mcp(self) -> dict[str, Any]:
        """An MCP `Tool` under the exposed name (what the gateway lists), with its origin in `_meta`."""
        dumped = self.tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        dumped["name"] = self.name
        meta = dict(dumped.get("_meta") or {})
        meta[ORIGIN_META_KEY] = {"server_id": self.server_id, "tool": self.tool.name}
        dumped["_meta"] = meta
        return dumped

    def to_openai(self) -> dict[str, Any]:
        """OpenAI function calling (Chat Completions `tools[]`): `{"type": "function", "function": {...}}`."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.tool.input_schema}
        description = self.tool.description or self.tool.title
        if description:
            function["description"] = description
        return {"type": "function", "function": function}

    def to_anthropic(self) -> dict[str, Any]:
        """Anthropic Messages API `tools[]`: `{"name", "description", "input_schema"}`."""
        exported: dict[str, Any] = {"name": self.name, "input_schema": self.tool.input_schema}
        description = self.tool.description or self.tool.title
        if description:
            exported["description"] = description
        return exported

    def export(self, fmt: ExportFormat) -> dict[str, Any]:
        """The tool in one of `EXPORT_FORMATS`."""
        if fmt == "openai":
            return self.to_openai()
        if fmt == "anthropic":
            return self.to_anthropic()
        if fmt == "mcp":
            return self.to_mcp()
        return self.view()


class ToolRegistry:
    """An immutable snapshot: exposed names, the alias table, and the tools behind them."""

    def __init__(self, tools: Sequence[RegisteredTool], aliases: AliasTable) -> None:
        self._tools = tuple(tools)
        self._by_name: Mapping[str, RegisteredTool] = MappingProxyType({t.name: t for t in self._tools})
        self._by_origin: Mapping[tuple[str, str], RegisteredTool] = MappingProxyType(
            {(t.server_id, t.tool.name): t for t in self._tools}
        )
        self.aliases = aliases

    @classmethod
    def build(cls, servers: Iterable[ServerTools]) -> ToolRegistry:
        """Name every tool of `servers` (disabled ones too, so enabling a tool never renames another).

        Returns:
            The registry, tools ordered by server id and then the server's catalog order.
        """
        snapshot = sorted(servers, key=lambda s: s.server_id)
        aliases = AliasTable.build((s.server_id, t.name) for s in snapshot for t in s.tools)
        tools: list[RegisteredTool] = []
        for server in snapshot:
            for tool in server.tools:
                name = aliases.name_of(server.server_id, tool.name)
                assert name is not None
                tools.append(
                    RegisteredTool(
                        name=name,
                        server_id=server.server_id,
                        server_name=server.server_name,
                        tool=tool,
                        enabled=tool.name not in server.disabled_tools,
                        policy=server.tool_policies.get(tool.name, "ask"),
                    )
                )
        return cls(tools, aliases)

    def tools(self, *, include_disabled: bool = False) -> list[RegisteredTool]:
        """The tools agents see (enabled ones), or all of them."""
        return [t for t in self._tools if include_disabled or t.enabled]

    def resolve(self, name: str) -> RegisteredTool | None:
        """The tool behind an exposed name (disabled ones included: callers refuse those), or None."""
        return self._by_name.get(name)

    def resolve_original(self, server_id: str, tool: str) -> RegisteredTool | None:
        """The tool `tool` (the server's own name) of server `server_id` (disabled ones included), or None."""
        return self._by_origin.get((server_id, tool))

    def export(self, fmt: ExportFormat) -> list[dict[str, Any]]:
        """The enabled tools in one of `EXPORT_FORMATS` (R-5.6)."""
        return [t.export(fmt) for t in self.tools()]

    def enabled_aliases(self) -> dict[str, ToolAlias]:
        """The alias table of the enabled tools, `{exposed name: ToolAlias}`, sorted by name."""
        enabled = {t.name for t in self.tools()}
        return {alias.name: alias for alias in sorted(self.aliases, key=lambda a: a.name) if alias.name in enabled}

    def aliases_dict(self) -> dict[str, dict[str, str | bool]]:
        """The alias table of the enabled tools: `{exposed name: {"server_id", "tool", "verbatim"}}`."""
        return {name: alias.to_dict() for name, alias in self.enabled_aliases().items()}

    def approval_required(self) -> list[str]:
        """Exposed names of the enabled tools whose agent calls wait for the user (policy `ask`, R-5.3).

        The OpenAI and Anthropic tool objects have no field for it (those APIs refuse extra keys), so
        an export states it next to the tools (`Capabilities.tools`).
        """
        return [t.name for t in self.tools() if t.policy == "ask"]

    def signature(self) -> bytes:
        """What agents would notice changing: names, origins, definitions, enabled flags, policies,
        as a SHA-256 digest (32 bytes; equal registries give equal digests).

        A digest, not the tuple of definitions it is computed from: the host keeps the last one to
        compare, and for a 1,000-tool catalog that tuple held about 1 MB of JSON (R-8.3: idle RSS).
        """
        digest = hashlib.sha256()
        for t in self._tools:
            head = json.dumps([t.name, t.server_id, t.enabled, t.policy])
            body = t.tool.model_dump_json(by_alias=True, exclude_none=True)
            digest.update(f"{len(head)}:{head}{len(body)}:{body}".encode())
        return digest.digest()

    def __len__(self) -> int:
        return len(self._tools)
