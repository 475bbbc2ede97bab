"""Export servers in a client's own format, without secret values, plus a gateway snippet (R-1.9).

Threat: an export (often pasted into a repository or a chat) carrying a token. Nothing here sees
a secret value: the input is the configuration only, and every secret slot is written as a
placeholder variable in the client's syntax — `${NAME}` (Claude Code, Claude Desktop),
`${env:NAME}` (Cursor), `${input:NAME}` with a `password` input (VS Code). NAME is
`MCP_CENTER_SECRET_<SERVER_ID>_<KEY>` in upper snake case (`X-Api-Key` → `X_API_KEY`, the bearer
token → `BEARER_TOKEN`), unique per export. It contains SECRET, so importing the export again makes
the same fields secrets (the round trip keeps secrets secret) and asks for their values.

Per format (our choices, where clients differ):
- `claude-code` (`.mcp.json`): `type` stdio / http / sse.
- `cursor` (`.cursor/mcp.json`): no `type` except `"sse"` for legacy SSE servers.
- `vscode` (`.vscode/mcp.json`): `servers` + `inputs`, `type` stdio / http / sse.
- `claude-desktop` (`claude_desktop_config.json`): stdio servers only (its file has no remote
  servers; those are listed in `notes` as REMOTE_NOT_SUPPORTED). Claude Desktop does not expand
  variables: replace the placeholders by hand.
A plain value holding `${` as text (an argument `${HOME}`, which mcp-center passes as it is) is
exported as it is, but Claude Code, Cursor and VS Code expand `${...}` in their files and have no
escape for it: each such field is listed in `notes` as VALUE_EXPANDED_BY_CLIENT, so the user checks
it instead of running something other than what they confirmed.
Not exported (each listed in `notes` as FIELD_NOT_EXPORTED): `cwd` (Claude Code, Cursor and
Claude Desktop files have none; a key a client does not know may make it refuse the file), OAuth
settings (the client authorizes on its own), disabled tools and tool policies; nor timeouts and the
sandbox. Keys of the map are display names; servers that share a name (after NFC and trimming)
are keyed by id, or by `<name> [<id>]` when that id is another server's name
(`interchange.reimport.NameIndex`, the rule the import resolves keys by). Importing an
export again over the same servers is a no-op: the re-import comparison keeps what the file cannot
carry (`interchange.reimport`, `interchange.plan._as_stored`).

The gateway snippet points the client at `<base URL>/mcp` with
`Authorization: Bearer ${MCP_CENTER_GATEWAY_TOKEN}`; Claude Desktop, which only starts processes,
gets this installation's stdio bridge (`mcp-center gateway --stdio`, R-8.1) with the token in
its `env` — the same snippet as the Gateway page and README.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_center.config import AuthBearer, AuthOAuth, ServerConfig, StdioServerConfig
from mcp_center.interchange.reimport import NameIndex

__all__ = [
    "GATEWAY_SERVER_NAME",
    "GATEWAY_TOKEN_PLACEHOLDER",
    "GATEWAY_TOKEN_VARIABLE",
    "ExportDocument",
    "export_servers",
    "gateway_snippet",
]

GATEWAY_SERVER_NAME = "mcp-center"
GATEWAY_TOKEN_VARIABLE = "MCP_CENTER_GATEWAY_TOKEN"  # noqa: S105 - a variable name, not a token
GATEWAY_TOKEN_PLACEHOLDER = "mcpg_..."  # noqa: S105 - what a process-only client's env shows until a token is pasted
"""Stands for the gateway token where a client's file cannot refer to a variable (Claude Desktop's `env`);
the same on the Gateway page and in README.md."""


_FILENAMES = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "claude-desktop": "claude_desktop_config.json",
}
_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class ExportDocument:
    """An export: the client file content, the gateway snippet, the placeholders and what was left out."""

    format: str
    filename: str
    config: dict[str, Any]
    gateway: dict[str, Any]
    placeholders: list[dict[str, str]]
    notes: list[dict[str, str]]

    def to_dict(self) -> dict[str, Any]:
        """`{"format", "filename", "config", "gateway": {"url", "config"}, "placeholders": [{name,
        server_id, kind, key}], "notes": [{server_id, field, code, message}]}`."""
        return {
            "format": self.format,
            "filename": self.filename,
            "config": self.config,
            "gateway": self.gateway,
            "placeholders": self.placeholders,
            "notes": self.notes,
        }


def _reference(format: str, name: str) -> str:
    if format == "cursor":
        return f"${{env:{name}}}"
    if format == "vscode":
        return f"${{input:{name}}}"
    return f"${{{name}}}"


class _Placeholders:
    def __init__(self, format: str) -> None:
        self.format = format
        self.items: list[dict[str, str]] = []
        self._used: set[str] = set()

    def reference(self, server_id: str, kind: str, key: str) -> str:
        label = "bearer_token" if kind == "bearer" else key
        base = "MCP_CENTER_SECRET_" + _NOT_WORD.sub("_", f"{server_id}_{label}").strip("_").upper()
        name, n = base, 2
        while name in self._used:
            name, n = f"{base}_{n}", n + 1
        self._used.add(name)
        self.items.append({"name": name, "server_id": server_id, "kind": kind, "key": key})
        return _reference(self.format, name)


def export_servers(
    configs: Sequence[ServerConfig], format: str, gateway_url: str, bridge_command: str | None = None
) -> ExportDocument:
    """Render `configs` (sorted by the caller) as a `format` client file.

    Args:
        configs: Server configurations; they hold no secret values.
        format: One of `dialects.EXPORT_FORMATS` (the caller validated it).
        gateway_url: `<base URL>/mcp` of this host.
        bridge_command: The absolute path of this installation's `mcp-center` program, for the
            stdio bridge of clients that only start processes; None writes the bare `mcp-center`.
            The caller finds it (`mcp_center.service.bridge_command`): this package does no I/O.
    Returns:
        The `ExportDocument`.
    """
    placeholders = _Placeholders(format)
    notes: list[dict[str, str]] = []
    entries: dict[str, dict[str, Any]] = {}
    keys = NameIndex({c.id: {"name": c.name} for c in configs})
    for config in configs:
        key = keys.key(config.id)
        entry = _entry(config, format, placeholders, notes)
        if entry is not None:
            entries[key] = entry
    if format == "vscode":
        inputs = [
            {
                "type": "promptString",
                "id": p["name"],
                "description": f"{p['server_id']}: secret {p['kind']} {p['key']}",
                "password": True,
            }
            for p in placeholders.items
        ]
        document: dict[str, Any] = {"inputs": inputs, "servers": entries}
    else:
        document = {"mcpServers": entries}
    return ExportDocument(
        format=format,
        filename=_FILENAMES[format],
        config=document,
        gateway={"url": gateway_url, "config": gateway_snippet(format, gateway_url, bridge_command)},
        placeholders=placeholders.items,
        notes=notes,
    )


def _note(notes: list[dict[str, str]], config: ServerConfig, field: str, code: str, message: str) -> None:
    notes.append({"server_id": config.id, "field": field, "code": code, "message": message})


def _entry(
    config: ServerConfig, format: str, placeholders: _Placeholders, notes: list[dict[str, str]]
) -> dict[str, Any] | None:
    if config.disabled_tools:
        _note(
            notes, config, "disabled_tools", "FIELD_NOT_EXPORTED", "not exported: client files have no disabled tools"
        )
    if config.tool_policies:
        _note(notes, config, "tool_policies", "FIELD_NOT_EXPORTED", "not exported: client files have no tool policies")
    if format in _EXPANDING_FORMATS:
        for field, value in _plain_fields(config):
            if "${" in value:
                _note(
                    notes,
                    config,
                    field,
                    "VALUE_EXPANDED_BY_CLIENT",
                    "exported as it is, but holds '${' as text, which the client expands as a variable "
                    "(mcp-center does not): the client would use another value; check this field",
                )
    if isinstance(config, StdioServerConfig):
        env = dict(config.env)
        for key in config.secret_env:
            env[key] = placeholders.reference(config.id, "env", key)
        if config.cwd is not None:
            _note(notes, config, "cwd", "FIELD_NOT_EXPORTED", "not exported: client files have no working directory")
        entry: dict[str, Any] = {"type": "stdio"} if format in {"claude-code", "vscode"} else {}
        entry.update(command=config.command, args=list(config.args))
        if env:
            entry["env"] = env
        return entry
    if format == "claude-desktop":
        _note(
            notes,
            config,
            "transport",
            "REMOTE_NOT_SUPPORTED",
            "not exported: Claude Desktop's config file has only local servers; add it as a connector or use "
            "the gateway",
        )
        return None
    headers = dict(config.headers)
    for key in config.secret_headers:
        headers[key] = placeholders.reference(config.id, "header", key)
    if isinstance(config.auth, AuthBearer):
        headers["Authorization"] = "Bearer " + placeholders.reference(config.id, "bearer", "token")
    elif isinstance(config.auth, AuthOAuth):
        _note(notes, config, "auth", "FIELD_NOT_EXPORTED", "not exported (OAuth): the client authorizes on its own")
    entry = {}
    if format in {"claude-code", "vscode"}:
        entry["type"] = "http" if config.transport == "streamable_http" else "sse"
    elif config.transport == "sse":
        entry["type"] = "sse"
    entry["url"] = config.url
    if headers:
        entry["headers"] = headers
    return entry


_EXPANDING_FORMATS = frozenset({"claude-code", "cursor", "vscode"})
"""Clients that expand `${...}` in every string of their file."""


def _plain_fields(config: ServerConfig) -> list[tuple[str, str]]:
    """(field path, value) of the values written as they are (no placeholders), in export order."""
    if isinstance(config, StdioServerConfig):
        return [
            ("command", config.command),
            *((f"args.{i}", arg) for i, arg in enumerate(config.args)),
            *((f"env.{key}", value) for key, value in config.env.items()),
        ]
    return [("url", config.url), *((f"headers.{key}", value) for key, value in config.headers.items())]


def gateway_snippet(format: str, gateway_url: str, bridge_command: str | None = None) -> dict[str, Any]:
    """A `format` client file with one server, `mcp-center`, that points at this host's gateway.

    The token is the placeholder `MCP_CENTER_GATEWAY_TOKEN` in the client's syntax; `bridge_command`
    is the program a process-only client starts (None: the bare `mcp-center`, found on its PATH).
    """
    header = "Bearer " + _reference(format, GATEWAY_TOKEN_VARIABLE)
    if format == "vscode":
        return {
            "inputs": [
                {
                    "type": "promptString",
                    "id": GATEWAY_TOKEN_VARIABLE,
                    "description": "mcp-center gateway token",
                    "password": True,
                }
            ],
            "servers": {
                GATEWAY_SERVER_NAME: {"type": "http", "url": gateway_url, "headers": {"Authorization": header}}
            },
        }
    if format == "claude-desktop":
        # Always --url: without it the bridge talks to the serve of *its* data directory (the
        # default one, for Claude Desktop), which need not be the serve this snippet came from.
        args = ["gateway", "--stdio", "--url", gateway_url]
        return {
            "mcpServers": {
                GATEWAY_SERVER_NAME: {
                    "command": bridge_command or "mcp-center",
                    "args": args,
                    "env": {GATEWAY_TOKEN_VARIABLE: GATEWAY_TOKEN_PLACEHOLDER},
                }
            }
        }
    entry: dict[str, Any] = {"type": "http"} if format == "claude-code" else {}
    entry.update(url=gateway_url, headers={"Authorization": header})
    return {"mcpServers": {GATEWAY_SERVER_NAME: entry}}
