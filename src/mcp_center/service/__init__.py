"""The library API and use cases: `McpCenter` (R-1, R-2, R-5, R-6, calls) and `Importer` (R-1.8 to R-1.10).

The names load on first use (`_LAZY`): a CLI verb that needs one noun (`mcp-center gateway token`
builds `GatewayTokens` on the store) imports that module, not the facade, the runtime and the MCP
SDK behind it (about 1.5 s of CPU per process, issue 16). `serve` and a library script that builds
`McpCenter` import them all.
"""

from typing import TYPE_CHECKING

from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.service.agent_registry import CatalogNow
    from mcp_center.service.approvals import ApprovalBroker
    from mcp_center.service.capabilities import Capabilities
    from mcp_center.service.center import SECRET_KINDS, Decision, McpCenter
    from mcp_center.service.debugger import Completion, ConsoleExchange, Debugger, ServerInfo, console_methods
    from mcp_center.service.gateway_tokens import GatewayTokenNotFound, GatewayTokens
    from mcp_center.service.imports import (
        ApplyRequest,
        Importer,
        ImportPreview,
        ImportPreviews,
        bridge_command,
        parse_apply_request,
        parse_preview_request,
        templates,
    )
    from mcp_center.service.interactions import Elicitor, InteractionBroker, RootsLister, Sampler
    from mcp_center.service.oauth import OAuthAuthorized, OAuthForgotten, OAuthService, OAuthStarted
    from mcp_center.service.readiness import Need, Readiness
    from mcp_center.service.results import (
        ApprovalView,
        CatalogView,
        DeclaredCapabilities,
        InstancesView,
        InstanceView,
        InteractionAnswer,
        InteractionCard,
        ResourceSearch,
        ServerLogs,
        ServerTool,
        ToolCallResult,
        ToolExport,
        UnavailableServer,
    )
    from mcp_center.service.summary import connection_summary, digest_of
    from mcp_center.service.untrusted import (
        PromptBlock,
        PromptMessageKind,
        PromptProvenance,
        ResourceBlock,
        ResourceContentInfo,
        ResourceProvenance,
        UntrustedBlock,
    )
    from mcp_center.service.views import ServerView, ViewWarning

__all__ = [
    "SECRET_KINDS",
    "ApplyRequest",
    "ApprovalBroker",
    "ApprovalView",
    "Capabilities",
    "CatalogNow",
    "CatalogView",
    "Completion",
    "ConsoleExchange",
    "Debugger",
    "Decision",
    "DeclaredCapabilities",
    "Elicitor",
    "GatewayTokenNotFound",
    "GatewayTokens",
    "ImportPreview",
    "ImportPreviews",
    "Importer",
    "InstanceView",
    "InstancesView",
    "InteractionAnswer",
    "InteractionBroker",
    "InteractionCard",
    "McpCenter",
    "Need",
    "OAuthAuthorized",
    "OAuthForgotten",
    "OAuthService",
    "OAuthStarted",
    "PromptBlock",
    "PromptMessageKind",
    "PromptProvenance",
    "Readiness",
    "ResourceBlock",
    "ResourceContentInfo",
    "ResourceProvenance",
    "ResourceSearch",
    "RootsLister",
    "Sampler",
    "ServerInfo",
    "ServerLogs",
    "ServerTool",
    "ServerView",
    "ToolCallResult",
    "ToolExport",
    "UnavailableServer",
    "UntrustedBlock",
    "ViewWarning",
    "bridge_command",
    "connection_summary",
    "console_methods",
    "digest_of",
    "parse_apply_request",
    "parse_preview_request",
    "templates",
]

_LAZY: dict[str, str] = {
    "CatalogNow": "mcp_center.service.agent_registry",
    "ApprovalBroker": "mcp_center.service.approvals",
    "Capabilities": "mcp_center.service.capabilities",
    "SECRET_KINDS": "mcp_center.service.center",
    "Decision": "mcp_center.service.center",
    "McpCenter": "mcp_center.service.center",
    "Completion": "mcp_center.service.debugger",
    "ConsoleExchange": "mcp_center.service.debugger",
    "Debugger": "mcp_center.service.debugger",
    "ServerInfo": "mcp_center.service.debugger",
    "console_methods": "mcp_center.service.debugger",
    "GatewayTokenNotFound": "mcp_center.service.gateway_tokens",
    "GatewayTokens": "mcp_center.service.gateway_tokens",
    "ApplyRequest": "mcp_center.service.imports",
    "Importer": "mcp_center.service.imports",
    "ImportPreview": "mcp_center.service.imports",
    "ImportPreviews": "mcp_center.service.imports",
    "bridge_command": "mcp_center.service.imports",
    "parse_apply_request": "mcp_center.service.imports",
    "parse_preview_request": "mcp_center.service.imports",
    "templates": "mcp_center.service.imports",
    "Elicitor": "mcp_center.service.interactions",
    "InteractionBroker": "mcp_center.service.interactions",
    "RootsLister": "mcp_center.service.interactions",
    "Sampler": "mcp_center.service.interactions",
    "OAuthAuthorized": "mcp_center.service.oauth",
    "OAuthForgotten": "mcp_center.service.oauth",
    "OAuthService": "mcp_center.service.oauth",
    "OAuthStarted": "mcp_center.service.oauth",
    "Need": "mcp_center.service.readiness",
    "Readiness": "mcp_center.service.readiness",
    "ApprovalView": "mcp_center.service.results",
    "CatalogView": "mcp_center.service.results",
    "DeclaredCapabilities": "mcp_center.service.results",
    "InstancesView": "mcp_center.service.results",
    "InstanceView": "mcp_center.service.results",
    "InteractionAnswer": "mcp_center.service.results",
    "InteractionCard": "mcp_center.service.results",
    "ResourceSearch": "mcp_center.service.results",
    "ServerLogs": "mcp_center.service.results",
    "ServerTool": "mcp_center.service.results",
    "ToolCallResult": "mcp_center.service.results",
    "ToolExport": "mcp_center.service.results",
    "UnavailableServer": "mcp_center.service.results",
    "connection_summary": "mcp_center.service.summary",
    "digest_of": "mcp_center.service.summary",
    "PromptBlock": "mcp_center.service.untrusted",
    "PromptMessageKind": "mcp_center.service.untrusted",
    "PromptProvenance": "mcp_center.service.untrusted",
    "ResourceBlock": "mcp_center.service.untrusted",
    "ResourceContentInfo": "mcp_center.service.untrusted",
    "ResourceProvenance": "mcp_center.service.untrusted",
    "UntrustedBlock": "mcp_center.service.untrusted",
    "ServerView": "mcp_center.service.views",
    "ViewWarning": "mcp_center.service.views",
}
"""Name -> module, imported on first use (see the module's docstring)."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
