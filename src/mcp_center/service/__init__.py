"""The library API and use cases: `McpCenter` (R-1, R-2, R-5, R-6, calls) and `Importer` (R-1.8 to R-1.10)."""

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
