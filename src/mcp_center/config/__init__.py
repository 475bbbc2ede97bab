"""Configuration: host settings and server configuration models with their R-1 rules. No network."""

from typing import TYPE_CHECKING

from mcp_center.config.settings import Profile, Settings
from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.config.sandbox import SandboxNetwork, SandboxPath, SandboxPolicy
    from mcp_center.config.servers import (
        OAUTH_CLIENT_SECRET_KEYS,
        RESERVED_HEADERS,
        AuthBearer,
        AuthConfig,
        AuthNone,
        AuthOAuth,
        JwtSigningAlgorithm,
        OAuthBinding,
        OAuthGrant,
        RemoteServerConfig,
        ServerConfig,
        SseServerConfig,
        StdioServerConfig,
        StreamableHttpServerConfig,
        TokenEndpointAuthMethod,
        ToolPolicy,
        check_header_name,
        check_url,
        is_loopback_host,
        parse_server_config,
        slugify,
    )

__all__ = [
    "OAUTH_CLIENT_SECRET_KEYS",
    "RESERVED_HEADERS",
    "AuthBearer",
    "AuthConfig",
    "AuthNone",
    "AuthOAuth",
    "JwtSigningAlgorithm",
    "OAuthBinding",
    "OAuthGrant",
    "Profile",
    "RemoteServerConfig",
    "SandboxNetwork",
    "SandboxPath",
    "SandboxPolicy",
    "ServerConfig",
    "Settings",
    "SseServerConfig",
    "StdioServerConfig",
    "StreamableHttpServerConfig",
    "TokenEndpointAuthMethod",
    "ToolPolicy",
    "check_header_name",
    "check_url",
    "is_loopback_host",
    "parse_server_config",
    "slugify",
]

_LAZY: dict[str, str] = {
    "SandboxNetwork": "mcp_center.config.sandbox",
    "SandboxPath": "mcp_center.config.sandbox",
    "SandboxPolicy": "mcp_center.config.sandbox",
    "OAUTH_CLIENT_SECRET_KEYS": "mcp_center.config.servers",
    "RESERVED_HEADERS": "mcp_center.config.servers",
    "AuthBearer": "mcp_center.config.servers",
    "AuthConfig": "mcp_center.config.servers",
    "AuthNone": "mcp_center.config.servers",
    "AuthOAuth": "mcp_center.config.servers",
    "JwtSigningAlgorithm": "mcp_center.config.servers",
    "OAuthBinding": "mcp_center.config.servers",
    "OAuthGrant": "mcp_center.config.servers",
    "RemoteServerConfig": "mcp_center.config.servers",
    "ServerConfig": "mcp_center.config.servers",
    "SseServerConfig": "mcp_center.config.servers",
    "StdioServerConfig": "mcp_center.config.servers",
    "StreamableHttpServerConfig": "mcp_center.config.servers",
    "TokenEndpointAuthMethod": "mcp_center.config.servers",
    "ToolPolicy": "mcp_center.config.servers",
    "check_header_name": "mcp_center.config.servers",
    "check_url": "mcp_center.config.servers",
    "is_loopback_host": "mcp_center.config.servers",
    "parse_server_config": "mcp_center.config.servers",
    "slugify": "mcp_center.config.servers",
}
"""Name -> module of the server configuration models, imported on first use: they build pydantic
schemas (about 0.1 s of CPU), which the CLI's start-up, `--help` and its REST-client verbs never need
(only `Settings`); the host imports them as it starts (issue 16)."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
