"""The library API and use cases: `McpCenter` (R-1, R-2, calls)."""

from mcp_center.service.center import SECRET_KINDS, McpCenter
from mcp_center.service.summary import connection_summary, digest_of

__all__ = ["SECRET_KINDS", "McpCenter", "connection_summary", "digest_of"]
