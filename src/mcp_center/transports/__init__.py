"""Transports: a server configuration becomes an SDK `mcp.client.Transport`.

stdio and legacy SSE are our own (see docs/sdk-notes.md#transports: the SDK ones hide the pid,
leak grandchildren, or hang on a cross-origin endpoint); Streamable HTTP is the SDK's transport
with our own `httpx2.AsyncClient` and a response hook for diagnostics. `guard` and `reaper` make
sure no stdio server outlives the process that started it (R-9.3). `sandbox` confines a stdio
server with bubblewrap and `warmup` fills its package caches (R-11.1).

The names are imported on first use (`_LAZY`): `serve` claims its data directory with `guard`
before anything of the host is imported, and a refused start never loads the SDK (issue 16).
"""

from typing import TYPE_CHECKING

from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.transports.environment import child_environment, host_path, resolve_command
    from mcp_center.transports.factory import (
        MAX_MESSAGE_BYTES,
        STDERR_TAIL_LINES,
        TransportProbe,
        open_transport,
        stdio_environment,
    )
    from mcp_center.transports.guard import PROCESS_GROUPS_FILE, ProcessGuard, TakeOver, process_guard
    from mcp_center.transports.http import HttpDiagnostics, build_http_client, shared_tls_context
    from mcp_center.transports.sandbox import SandboxSpec, SandboxSupport, sandbox_support
    from mcp_center.transports.spec import ConnectionSpec
    from mcp_center.transports.sse import EndpointOriginMismatch, SseTransport, same_origin
    from mcp_center.transports.stdio import StdioTransport
    from mcp_center.transports.warmup import WarmUpResult

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PROCESS_GROUPS_FILE",
    "STDERR_TAIL_LINES",
    "ConnectionSpec",
    "EndpointOriginMismatch",
    "HttpDiagnostics",
    "ProcessGuard",
    "SandboxSpec",
    "SandboxSupport",
    "SseTransport",
    "StdioTransport",
    "TakeOver",
    "TransportProbe",
    "WarmUpResult",
    "build_http_client",
    "child_environment",
    "host_path",
    "open_transport",
    "process_guard",
    "resolve_command",
    "same_origin",
    "sandbox_support",
    "shared_tls_context",
    "stdio_environment",
]

_LAZY: dict[str, str] = {
    "child_environment": "mcp_center.transports.environment",
    "host_path": "mcp_center.transports.environment",
    "resolve_command": "mcp_center.transports.environment",
    "MAX_MESSAGE_BYTES": "mcp_center.transports.factory",
    "STDERR_TAIL_LINES": "mcp_center.transports.factory",
    "TransportProbe": "mcp_center.transports.factory",
    "open_transport": "mcp_center.transports.factory",
    "stdio_environment": "mcp_center.transports.factory",
    "PROCESS_GROUPS_FILE": "mcp_center.transports.guard",
    "ProcessGuard": "mcp_center.transports.guard",
    "TakeOver": "mcp_center.transports.guard",
    "process_guard": "mcp_center.transports.guard",
    "HttpDiagnostics": "mcp_center.transports.http",
    "build_http_client": "mcp_center.transports.http",
    "shared_tls_context": "mcp_center.transports.http",
    "SandboxSpec": "mcp_center.transports.sandbox",
    "SandboxSupport": "mcp_center.transports.sandbox",
    "sandbox_support": "mcp_center.transports.sandbox",
    "ConnectionSpec": "mcp_center.transports.spec",
    "EndpointOriginMismatch": "mcp_center.transports.sse",
    "SseTransport": "mcp_center.transports.sse",
    "same_origin": "mcp_center.transports.sse",
    "StdioTransport": "mcp_center.transports.stdio",
    "WarmUpResult": "mcp_center.transports.warmup",
}
"""Name -> module, imported on first use."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
