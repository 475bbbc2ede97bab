"""Export: each client's format, placeholders instead of secrets, and the gateway snippet (R-1.9)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_center.config import ServerConfig, parse_server_config
from mcp_center.interchange import EXPORT_FORMATS, export_servers, plan_import

GATEWAY = "http://127.0.0.1:8765/mcp"


def configs() -> list[ServerConfig]:
    return [
        parse_server_config(body)
        for body in (
            {
                "id": "github",
                "name": "GitHub",
                "transport": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
                "env": {"LOG_LEVEL": "info"},
                "secret_env": ["GITHUB_PERSONAL_ACCESS_TOKEN"],
            },
            {
                "id": "docs",
                "name": "Docs",
                "transport": "streamable_http",
                "url": "https://docs.example.com/mcp",
                "headers": {"X-Workspace": "acme"},
                "secret_headers": ["X-Api-Key"],
                "auth": {"kind": "bearer"},
            },
            {"id": "wiki", "name": "wiki", "transport": "sse", "url": "https://wiki.example.com/sse"},
        )
    ]


def test_claude_code_export_uses_type_and_dollar_brace_placeholders() -> None:
    doc = export_servers(configs(), "claude-code", GATEWAY)
    assert doc.filename == ".mcp.json"
    assert doc.config == {
        "mcpServers": {
            "GitHub": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
                "env": {
                    "LOG_LEVEL": "info",
                    "GITHUB_PERSONAL_ACCESS_TOKEN": "${MCP_CENTER_SECRET_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}",
                },
            },
            "Docs": {
                "type": "http",
                "url": "https://docs.example.com/mcp",
                "headers": {
                    "X-Workspace": "acme",
                    "X-Api-Key": "${MCP_CENTER_SECRET_DOCS_X_API_KEY}",
                    "Authorization": "Bearer ${MCP_CENTER_SECRET_DOCS_BEARER_TOKEN}",
                },
            },
            "wiki": {"type": "sse", "url": "https://wiki.example.com/sse"},
        }
    }
    assert doc.placeholders == [
        {
            "name": "MCP_CENTER_SECRET_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN",
            "server_id": "github",
            "kind": "env",
            "key": "GITHUB_PERSONAL_ACCESS_TOKEN",
        },
        {"name": "MCP_CENTER_SECRET_DOCS_X_API_KEY", "server_id": "docs", "kind": "header", "key": "X-Api-Key"},
        {"name": "MCP_CENTER_SECRET_DOCS_BEARER_TOKEN", "server_id": "docs", "kind": "bearer", "key": "token"},
    ]
    assert doc.gateway == {
        "url": GATEWAY,
        "config": {
            "mcpServers": {
                "mcp-center": {
                    "type": "http",
                    "url": GATEWAY,
                    "headers": {"Authorization": "Bearer ${MCP_CENTER_GATEWAY_TOKEN}"},
                }
            }
        },
    }
    assert doc.notes == []


def test_cursor_export_has_no_type_except_for_sse_and_uses_env_placeholders() -> None:
    doc = export_servers(configs(), "cursor", GATEWAY)
    servers = doc.config["mcpServers"]
    assert servers["GitHub"] == {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
        "env": {
            "LOG_LEVEL": "info",
            "GITHUB_PERSONAL_ACCESS_TOKEN": "${env:MCP_CENTER_SECRET_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}",
        },
    }
    assert servers["Docs"]["headers"]["Authorization"] == "Bearer ${env:MCP_CENTER_SECRET_DOCS_BEARER_TOKEN}"
    assert "type" not in servers["Docs"]
    assert servers["wiki"] == {"type": "sse", "url": "https://wiki.example.com/sse"}
    assert doc.gateway["config"] == {
        "mcpServers": {
            "mcp-center": {"url": GATEWAY, "headers": {"Authorization": "Bearer ${env:MCP_CENTER_GATEWAY_TOKEN}"}}
        }
    }


def test_vscode_export_declares_a_password_input_for_every_placeholder() -> None:
    doc = export_servers(configs(), "vscode", GATEWAY)
    assert doc.filename == ".vscode/mcp.json"
    assert doc.config["inputs"] == [
        {
            "type": "promptString",
            "id": "MCP_CENTER_SECRET_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN",
            "description": "github: secret env GITHUB_PERSONAL_ACCESS_TOKEN",
            "password": True,
        },
        {
            "type": "promptString",
            "id": "MCP_CENTER_SECRET_DOCS_X_API_KEY",
            "description": "docs: secret header X-Api-Key",
            "password": True,
        },
        {
            "type": "promptString",
            "id": "MCP_CENTER_SECRET_DOCS_BEARER_TOKEN",
            "description": "docs: secret bearer token",
            "password": True,
        },
    ]
    assert doc.config["servers"]["Docs"]["type"] == "http"
    assert doc.config["servers"]["Docs"]["headers"]["X-Api-Key"] == "${input:MCP_CENTER_SECRET_DOCS_X_API_KEY}"
    assert doc.gateway["config"]["servers"]["mcp-center"]["headers"] == {
        "Authorization": "Bearer ${input:MCP_CENTER_GATEWAY_TOKEN}"
    }
    assert doc.gateway["config"]["inputs"][0]["password"] is True


def test_claude_desktop_export_keeps_stdio_servers_and_notes_the_remote_ones() -> None:
    doc = export_servers(configs(), "claude-desktop", GATEWAY, "/opt/venv/bin/mcp-center")
    assert list(doc.config["mcpServers"]) == ["GitHub"]
    assert "type" not in doc.config["mcpServers"]["GitHub"]
    assert [(n["server_id"], n["code"]) for n in doc.notes] == [
        ("docs", "REMOTE_NOT_SUPPORTED"),
        ("wiki", "REMOTE_NOT_SUPPORTED"),
    ]
    # The gateway through this installation's stdio bridge, as the Gateway page and README say.
    bridge = doc.gateway["config"]["mcpServers"]["mcp-center"]
    assert bridge["command"] == "/opt/venv/bin/mcp-center"
    # Always --url: the bridge alone would look for the serve of its own data directory.
    assert bridge["args"] == ["gateway", "--stdio", "--url", GATEWAY]
    assert bridge["env"] == {"MCP_CENTER_GATEWAY_TOKEN": "mcpg_..."}
    other = export_servers(configs(), "claude-desktop", "http://127.0.0.1:9000/mcp")
    bridge = other.gateway["config"]["mcpServers"]["mcp-center"]
    assert bridge["args"] == ["gateway", "--stdio", "--url", "http://127.0.0.1:9000/mcp"]
    assert bridge["command"] == "mcp-center"  # not found: the bare name, looked up on the client's PATH


def test_fields_clients_cannot_express_are_listed_as_notes() -> None:
    config = parse_server_config(
        {
            "id": "x",
            "name": "X",
            "transport": "stdio",
            "command": "x",
            "cwd": "/srv/x",
            "disabled_tools": ["rm"],
            "tool_policies": {"ls": "allow"},
        }
    )
    oauth = parse_server_config(
        {
            "id": "o",
            "name": "O",
            "transport": "streamable_http",
            "url": "https://o.example.com/mcp",
            "auth": {"kind": "oauth", "scopes": ["read"]},
        }
    )
    doc = export_servers([config, oauth], "claude-code", GATEWAY)
    assert [(n["server_id"], n["field"], n["code"]) for n in doc.notes] == [
        ("x", "disabled_tools", "FIELD_NOT_EXPORTED"),
        ("x", "tool_policies", "FIELD_NOT_EXPORTED"),
        ("x", "cwd", "FIELD_NOT_EXPORTED"),
        ("o", "auth", "FIELD_NOT_EXPORTED"),
    ]
    assert doc.config["mcpServers"]["O"] == {"type": "http", "url": "https://o.example.com/mcp"}


def test_two_servers_with_one_name_are_keyed_by_id_and_placeholders_stay_unique() -> None:
    first = parse_server_config(
        {"id": "a-b", "name": "Same", "transport": "stdio", "command": "x", "secret_env": ["C"]}
    )
    second = parse_server_config(
        {"id": "a", "name": "Same", "transport": "stdio", "command": "y", "secret_env": ["B_C"]}
    )
    doc = export_servers([first, second], "claude-code", GATEWAY)
    assert list(doc.config["mcpServers"]) == ["a-b", "a"]
    assert [p["name"] for p in doc.placeholders] == ["MCP_CENTER_SECRET_A_B_C", "MCP_CENTER_SECRET_A_B_C_2"]


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_an_export_reimports_in_its_own_format_with_the_same_secrets_declared(format: str) -> None:
    """The placeholder names contain SECRET, so re-importing keeps every secret a secret."""
    doc = export_servers(configs(), format, GATEWAY)
    result = plan_import(json.dumps(doc.config), format)
    exported: dict[str, Any] = {s.name: s for s in result.servers}
    assert exported["GitHub"].config["secret_env"] == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert exported["GitHub"].config["env"] == {"LOG_LEVEL": "info"}
    if format != "claude-desktop":
        assert exported["Docs"].config["secret_headers"] == ["X-Api-Key"]
        assert exported["Docs"].config["auth"] == {"kind": "bearer"}
        assert exported["wiki"].config["transport"] == "sse"
    assert all(v.secret for v in result.variables)
    assert result.rejected == ()


@pytest.mark.parametrize("format", ["claude-code", "cursor", "vscode"])
def test_a_literal_dollar_brace_in_a_plain_field_is_noted_because_the_client_would_expand_it(format: str) -> None:
    """mcp-center runs `${HOME}` in an argument as those seven characters; Claude Code, Cursor and VS Code
    expand it in their files, so the exported server would run something else: the export says where (R-1.9)."""
    literal = [
        parse_server_config(
            {
                "id": "lit",
                "name": "lit",
                "transport": "stdio",
                "command": "run",
                "args": ["--root", "${HOME}"],
                "env": {"PLAIN": "a${PATH}"},
                "secret_env": ["API_TOKEN"],
            }
        ),
        parse_server_config(
            {
                "id": "web",
                "name": "web",
                "transport": "streamable_http",
                "url": "https://example.com/mcp?v=${V}",
                "headers": {"X-Trace": "${T}"},
            }
        ),
    ]
    doc = export_servers(literal, format, GATEWAY)
    noted = [(n["server_id"], n["field"]) for n in doc.notes if n["code"] == "VALUE_EXPANDED_BY_CLIENT"]
    assert noted == [
        ("lit", "args.1"),
        ("lit", "env.PLAIN"),
        ("web", "url"),
        ("web", "headers.X-Trace"),
    ]


def test_claude_desktop_expands_nothing_so_a_literal_dollar_brace_is_not_noted() -> None:
    literal = parse_server_config(
        {"id": "lit", "name": "lit", "transport": "stdio", "command": "x", "args": ["${HOME}"]}
    )
    assert export_servers([literal], "claude-desktop", GATEWAY).notes == []
