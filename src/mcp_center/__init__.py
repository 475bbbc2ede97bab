"""mcp-center: a self-hosted MCP host.

Register Model Context Protocol servers (stdio, Streamable HTTP, legacy SSE), authorize them,
decide which tools may run, and use them through this library, the REST API, the web settings
page and the gateway. The library entry point is `mcp_center.service.McpCenter`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
