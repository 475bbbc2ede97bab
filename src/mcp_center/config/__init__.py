"""Configuration: host settings and server configuration models with their R-1 rules. No network."""

from mcp_center.config.servers import (
    RESERVED_HEADERS,
    AuthBearer,
    AuthConfig,
    AuthNone,
    AuthOAuth,
    OAuthBinding,
    RemoteServerConfig,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
    ToolPolicy,
    check_header_name,
    check_url,
    is_loopback_host,
    parse_server_config,
    slugify,
)
from mcp_center.config.settings import Profile, Settings

__all__ = [
    "RESERVED_HEADERS",
    "AuthBearer",
    "AuthConfig",
    "AuthNone",
    "AuthOAuth",
    "OAuthBinding",
    "Profile",
    "RemoteServerConfig",
    "ServerConfig",
    "Settings",
    "SseServerConfig",
    "StdioServerConfig",
    "StreamableHttpServerConfig",
    "ToolPolicy",
    "check_header_name",
    "check_url",
    "is_loopback_host",
    "parse_server_config",
    "slugify",
]
