"""The aggregated MCP gateway agents connect to (R-8): `/mcp` over Streamable HTTP and a stdio bridge."""

from mcp_center.gateway.bridge import bridge_stdio
from mcp_center.gateway.endpoint import GATEWAY_PATH, GatewayEndpoint
from mcp_center.gateway.server import Gateway, to_mcp_error

__all__ = ["GATEWAY_PATH", "Gateway", "GatewayEndpoint", "bridge_stdio", "to_mcp_error"]
