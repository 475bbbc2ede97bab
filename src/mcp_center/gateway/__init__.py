"""The aggregated MCP gateway agents connect to (R-8): `/mcp` over Streamable HTTP and a stdio bridge.

Two paths answer an agent (`docs/architecture.md`, "Gateway hot path"): `endpoint.py` checks the
gateway token and the session, parses the body once, and hands the hot methods (`tools/call`,
`tools/list`, prompts, resources, completion) to the lean path (`fastpath.py`: JSON in, JSON out,
forwarded raw over the live session, the same policy code as everywhere) and everything else
(`initialize`, streams, DELETE, notifications, malformed requests) to the SDK's server stack
(`server.py`). `/mcp/{server_id}` serves one server under its own names (R-8.4).
"""

from mcp_center.gateway.bridge import bridge_stdio
from mcp_center.gateway.endpoint import GATEWAY_PATH, GatewayEndpoint
from mcp_center.gateway.server import Gateway, to_mcp_error

__all__ = ["GATEWAY_PATH", "Gateway", "GatewayEndpoint", "bridge_stdio", "to_mcp_error"]
