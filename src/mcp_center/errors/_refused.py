"""Refusals (403, 401): policy, sandbox, host/origin checks and admin authentication (R-7.1, R-7.2, R-5.3).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from mcp_center.errors._base import Forbidden, Unauthorized

__all__ = [
    "AdminAuthRequired",
    "ApprovalDenied",
    "CsrfTokenInvalid",
    "GatewayAuthRequired",
    "HostNotAllowed",
    "OriginNotAllowed",
    "SandboxRequired",
    "ToolDenied",
    "ToolDisabled",
    "ToolQuarantined",
]


class SandboxRequired(Forbidden):
    """The `production` profile starts a stdio server only with a sandbox policy (R-2.5, R-11.2)."""

    code = "MCP_SANDBOX_REQUIRED"


class ToolDisabled(Forbidden):
    """The user disabled this tool; it is invisible to agents and refused when called (R-5.2)."""

    code = "MCP_TOOL_DISABLED"


class ToolQuarantined(Forbidden):
    """The server lists this tool, but its definition failed validation and was quarantined: it is not
    offered to agents and a call to it is refused, never sent (R-3.6). `details`: `tool`, `server_id`,
    `server_tool`, `reason` (what is wrong) and `catalog` (where the quarantined items are listed)."""

    code = "MCP_TOOL_QUARANTINED"


class ToolDenied(Forbidden):
    """The user's policy for this tool is `deny`: agents may not call it (R-5.3)."""

    code = "MCP_TOOL_DENIED"


class ApprovalDenied(Forbidden):
    """The user denied this call; the server never saw it (R-5.3)."""

    code = "MCP_APPROVAL_DENIED"


class HostNotAllowed(Forbidden):
    """The request's Host header is not on the allow-list (DNS rebinding defence, R-7.2)."""

    code = "HOST_NOT_ALLOWED"


class OriginNotAllowed(Forbidden):
    """A browser request came from another origin (CSRF defence, R-7.2)."""

    code = "ORIGIN_NOT_ALLOWED"


class CsrfTokenInvalid(Forbidden):
    """A state-changing request authenticated by the browser session cookie lacks its CSRF token (R-7.2)."""

    code = "CSRF_TOKEN_INVALID"


class AdminAuthRequired(Unauthorized):
    """The admin token is missing or wrong (R-7.1)."""

    code = "ADMIN_AUTH_REQUIRED"


class GatewayAuthRequired(Unauthorized):
    """No gateway token to send: `mcp-center gateway --stdio` started without MCP_CENTER_GATEWAY_TOKEN,
    so every request would be refused; nothing is sent (exit 6, `details.setting`: the variable's
    name). The gateway answers a request without an accepted token with the same code, as a JSON-RPC
    error (-32001) whose message starts `GATEWAY_AUTH_REQUIRED:` (R-7.1, R-8.1)."""

    code = "GATEWAY_AUTH_REQUIRED"
