"""Transports: a server configuration becomes an SDK `mcp.client.Transport`.

stdio and legacy SSE are our own (see docs/sdk-notes.md#transports: the SDK ones hide the pid,
leak grandchildren, or hang on a cross-origin endpoint); Streamable HTTP is the SDK's transport
with our own `httpx2.AsyncClient` and a response hook for diagnostics. `guard` and `reaper` make
sure no stdio server outlives the process that started it (R-9.3). `sandbox` confines a stdio
server with bubblewrap and `warmup` fills its package caches (R-11.1).
"""

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
