"""Transports: a server configuration becomes an SDK `mcp.client.Transport`.

stdio and legacy SSE are our own (see docs/sdk-notes.md#transports: the SDK ones hide the pid,
leak grandchildren, or hang on a cross-origin endpoint); Streamable HTTP is the SDK's transport
with our own `httpx2.AsyncClient` and a response hook for diagnostics.
"""

from mcp_center.transports.factory import STDERR_TAIL_LINES, TransportProbe, open_transport
from mcp_center.transports.http import HttpDiagnostics, build_http_client
from mcp_center.transports.spec import ConnectionSpec
from mcp_center.transports.sse import EndpointOriginMismatch, SseTransport, same_origin
from mcp_center.transports.stdio import StdioTransport, child_environment, host_path, resolve_command

__all__ = [
    "STDERR_TAIL_LINES",
    "ConnectionSpec",
    "EndpointOriginMismatch",
    "HttpDiagnostics",
    "SseTransport",
    "StdioTransport",
    "TransportProbe",
    "build_http_client",
    "child_environment",
    "host_path",
    "open_transport",
    "resolve_command",
    "same_origin",
]
