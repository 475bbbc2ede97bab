"""The server templates (R-1.10): starting points for a create body.

- `stdio-uvx`: a Python server from PyPI, run as `uvx --isolated --from <package>==<version>
  <command>`: a pinned version, in a throw-away environment, without a shell (R-2.6).
- `stdio-npx`: a Node.js server from npm, run as `npx -y <package>@<version>`: pinned the same way
  (an exact version, never `@latest`, so what the user confirms is what runs); needs Node.js.
- `streamable-http`: a remote server over Streamable HTTP (the current MCP transport).
- `legacy-sse`: a remote server over the 2024-11-05 HTTP+SSE transport, for old servers only.

Each template has `parameters` (name, description, example), a `body` whose strings hold
`<parameter>` markers, and an `example` body (the markers filled with the examples) that can be
POSTed to `/api/mcp/servers` as is. `render_template` fills the markers after checking each value.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from mcp_center.errors import FieldError, RequestInvalid
from mcp_center.models import is_array, is_object

__all__ = ["TEMPLATES", "list_templates", "render_template"]

_MARKER = re.compile(r"<([a-z_]+)>")
_PARAMETER_RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "name": (re.compile(r"[^\x00-\x1f\x7f]{1,100}"), "1-100 printable characters"),
    "package": (re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"), "a PyPI project name"),
    "npm_package": (
        re.compile(r"(?:@[a-z0-9][a-z0-9._-]{0,99}/)?[a-z0-9][a-z0-9._-]{0,99}"),
        "an npm package name such as @scope/name",
    ),
    "version": (re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}"), "an exact version such as 1.2.3"),
    "command": (re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"), "the program the package installs"),
    "url": (re.compile(r"https?://[^\s\x00-\x1f\x7f]{1,2040}"), "an http(s) URL"),
}

TEMPLATES: tuple[dict[str, Any], ...] = (
    {
        "id": "stdio-uvx",
        "title": "Local Python server from PyPI (stdio, uvx)",
        "description": (
            "Runs `uvx --isolated --from <package>==<version> <command>`: an exact version in a throw-away "
            "environment, started without a shell in its own process group."
        ),
        "transport": "stdio",
        "legacy": False,
        "parameters": [
            {"name": "name", "description": "Display name", "example": "Time"},
            {"name": "package", "description": "PyPI project", "example": "mcp-server-time"},
            {"name": "version", "description": "Exact version to pin", "example": "2026.10.19"},
            {"name": "command", "description": "Program the package installs", "example": "mcp-server-time"},
        ],
        "body": {
            "name": "<name>",
            "transport": "stdio",
            "command": "uvx",
            "args": ["--isolated", "--from", "<package>==<version>", "<command>"],
            "env": {},
        },
    },
    {
        "id": "stdio-npx",
        "title": "Local Node.js server from npm (stdio, npx)",
        "description": (
            "Runs `npx -y <npm_package>@<version>`: an exact version (never @latest, so what you confirm is "
            "what runs), started without a shell in its own process group. Needs Node.js (npx) on the host."
        ),
        "transport": "stdio",
        "legacy": False,
        "parameters": [
            {"name": "name", "description": "Display name", "example": "Everything"},
            {"name": "npm_package", "description": "npm package", "example": "@modelcontextprotocol/server-everything"},
            {"name": "version", "description": "Exact version to pin", "example": "2026.8.31"},
        ],
        "body": {
            "name": "<name>",
            "transport": "stdio",
            "command": "npx",
            "args": ["-y", "<npm_package>@<version>"],
            "env": {},
        },
    },
    {
        "id": "streamable-http",
        "title": "Remote server (Streamable HTTP)",
        "description": (
            "A remote MCP server over Streamable HTTP. https is required except for localhost; put credentials "
            "in secret headers or bearer auth, never in the URL."
        ),
        "transport": "streamable_http",
        "legacy": False,
        "parameters": [
            {"name": "name", "description": "Display name", "example": "Docs"},
            {"name": "url", "description": "MCP endpoint URL", "example": "https://mcp.example.com/mcp"},
        ],
        "body": {
            "name": "<name>",
            "transport": "streamable_http",
            "url": "<url>",
            "headers": {},
            "auth": {"kind": "none"},
        },
    },
    {
        "id": "legacy-sse",
        "title": "Legacy remote server (HTTP+SSE, old servers only)",
        "description": (
            "The 2024-11-05 HTTP+SSE transport, for old servers that do not speak Streamable HTTP yet. "
            "Prefer Streamable HTTP whenever the server offers it."
        ),
        "transport": "sse",
        "legacy": True,
        "parameters": [
            {"name": "name", "description": "Display name", "example": "Old docs"},
            {"name": "url", "description": "SSE endpoint URL", "example": "https://mcp.example.com/sse"},
        ],
        "body": {"name": "<name>", "transport": "sse", "url": "<url>", "headers": {}, "auth": {"kind": "none"}},
    },
)


def list_templates() -> list[dict[str, Any]]:
    """The templates as JSON, each with its filled `example` body."""
    return [
        {
            **copy.deepcopy(template),
            "example": _fill(template["body"], {p["name"]: p["example"] for p in template["parameters"]}),
        }
        for template in TEMPLATES
    ]


def render_template(template_id: str, parameters: Mapping[str, object]) -> dict[str, Any]:
    """Fill a template's markers and return a create body.

    Raises:
        RequestInvalid: unknown template, a missing or unknown parameter, or a malformed value
            (`details.errors`: `parameters.<name>` with FIELD_REQUIRED, FIELD_UNKNOWN or FIELD_INVALID).
    """
    template = next((t for t in TEMPLATES if t["id"] == template_id), None)
    if template is None:
        error = FieldError("template", "FIELD_INVALID", "must be one of: " + ", ".join(t["id"] for t in TEMPLATES))
        raise RequestInvalid(f"template: {error.message}", details={"errors": [error.to_dict()]})
    names = [p["name"] for p in template["parameters"]]
    errors: list[FieldError] = []
    values: dict[str, str] = {}
    for name in names:
        value = parameters.get(name)
        pattern, what = _PARAMETER_RULES[name]
        if value is None:
            errors.append(FieldError(f"parameters.{name}", "FIELD_REQUIRED", "is required"))
        elif not isinstance(value, str) or not pattern.fullmatch(value):
            errors.append(FieldError(f"parameters.{name}", "FIELD_INVALID", f"must be {what}"))
        else:
            values[name] = value
    errors += [
        FieldError(f"parameters.{k}", "FIELD_UNKNOWN", "is not a parameter of this template")
        for k in parameters
        if k not in names
    ]
    if errors:
        raise RequestInvalid(
            f"{errors[0].field}: {errors[0].message}", details={"errors": [e.to_dict() for e in errors]}
        )
    return _fill(template["body"], values)


def _fill(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _MARKER.sub(lambda m: values[m.group(1)], value)
    if is_array(value):
        return [_fill(v, values) for v in value]
    if is_object(value):
        return {k: _fill(v, values) for k, v in value.items()}
    return value
