"""mcp-center: a self-hosted MCP host.

Register Model Context Protocol servers (stdio, Streamable HTTP, legacy SSE), authorize them,
decide which tools may run, and use them through this library, the REST API, the web settings
page and the gateway. The library entry point is `mcp_center.service.McpCenter`.
"""

import logging

__version__ = "0.1.0"

__all__ = ["__version__"]

# Library logging etiquette: records go to handlers the application configures. Without this,
# Python's last-resort handler prints bare event names ("server.connect_failed") to stderr of a
# script that never configured logging. `mcp-center serve` and the CLI configure their own.
logging.getLogger(__name__).addHandler(logging.NullHandler())
