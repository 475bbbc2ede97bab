"""The aggregated MCP gateway agents connect to (R-8): `/mcp` over Streamable HTTP and a stdio bridge.

Two paths answer an agent (`docs/architecture.md`, "Gateway hot path"): `endpoint.py` checks the
gateway token and the session, parses the body once, and hands the hot methods (`tools/call`,
`tools/list`, prompts, resources, completion) to the lean path (`fastpath.py`: JSON in, JSON out,
forwarded raw over the live session, the same policy code as everywhere) and everything else
(`initialize`, streams, DELETE, notifications, malformed requests) to the SDK's server stack
(`server.py`). `/mcp/{server_id}` serves one server under its own names (R-8.4).
"""

from typing import TYPE_CHECKING

from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.gateway.bridge import bridge_stdio
    from mcp_center.gateway.endpoint import GATEWAY_PATH, GatewayEndpoint
    from mcp_center.gateway.server import Gateway, to_mcp_error

__all__ = ["GATEWAY_PATH", "Gateway", "GatewayEndpoint", "bridge_stdio", "to_mcp_error"]

_LAZY: dict[str, str] = {
    "bridge_stdio": "mcp_center.gateway.bridge",
    "GATEWAY_PATH": "mcp_center.gateway.endpoint",
    "GatewayEndpoint": "mcp_center.gateway.endpoint",
    "Gateway": "mcp_center.gateway.server",
    "to_mcp_error": "mcp_center.gateway.server",
}
"""Name -> module, imported on first use: the stdio bridge (`mcp-center gateway --stdio`, a process
an MCP client starts) needs only the SDK's client, not the endpoint and server, which load the
service, the runtime and the web stack (about 0.5 s of CPU per bridge start, issue 16). `serve`
imports them all as it starts."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
