"""Not found (404): a server, tool, secret, prompt, resource, approval, card or token that does not exist (R-7.3).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from mcp_center.errors._base import NotFound

__all__ = [
    "ApprovalNotFound",
    "CapabilityNotOffered",
    "GatewayTokenNotFound",
    "ImportFileNotFound",
    "InteractionNotFound",
    "PromptNotFound",
    "ResourceNotFound",
    "SecretNotFound",
    "ServerNotFound",
    "ToolNotFound",
]


class ServerNotFound(NotFound):
    code = "MCP_SERVER_NOT_FOUND"


class ToolNotFound(NotFound):
    code = "MCP_TOOL_NOT_FOUND"


class SecretNotFound(NotFound):
    code = "MCP_SECRET_NOT_FOUND"


class ImportFileNotFound(NotFound):
    """The file given to `mcp-center import` does not exist (R-1.8): its message names it as given and
    as resolved. `details`: `file` (as given), `path` (absolute)."""

    code = "IMPORT_FILE_NOT_FOUND"


class PromptNotFound(NotFound):
    """No ready server offers this prompt (`/server:prompt`, R-5.4)."""

    code = "MCP_PROMPT_NOT_FOUND"


class ResourceNotFound(NotFound):
    """R-5.5: the server answered `resources/read` with "resource not found" (JSON-RPC -32002, or
    -32602 invalid params, which SDK servers send for an unknown URI); `details`: server_id, uri, rpc_code."""

    code = "MCP_RESOURCE_NOT_FOUND"


class GatewayTokenNotFound(NotFound):
    """R-7.1: no gateway token with that id or name (a revoked one is found, and said to be revoked)."""

    code = "GATEWAY_TOKEN_NOT_FOUND"


class CapabilityNotOffered(NotFound):
    """The server did not declare the capability a request needs (`resources`, `prompts`, `tools`) in
    `initialize`; the request was not sent (MCP 2025-11-25 lifecycle, "Capability Negotiation").
    `details.capability` names it."""

    code = "MCP_CAPABILITY_NOT_OFFERED"


class ApprovalNotFound(NotFound):
    """No approval with this id (never created, or forgotten after it ended; R-5.3)."""

    code = "MCP_APPROVAL_NOT_FOUND"


class InteractionNotFound(NotFound):
    """No interaction card with this id (R-6.1)."""

    code = "MCP_INTERACTION_NOT_FOUND"
