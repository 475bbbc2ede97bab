"""Value types shared by every layer.

Only plain data lives here: identifiers, enums and small frozen records that the store, the
runtime, the service and the edges all speak. Validation rules for server configuration live in
`mcp_center.config.servers` (pydantic models at the edge); this module imports nothing of ours but
`errors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TypeGuard

__all__ = ["ConnectionState", "ErrorReason", "TransportKind", "is_array", "is_mapping", "is_object"]


def is_object(value: object) -> TypeGuard[dict[Any, Any]]:
    """True for a `dict`: narrows parsed JSON (or any untyped value) to a dict whose members are `Any`.

    `isinstance(value, dict)` narrows an `object` to `dict[Unknown, Unknown]`, which strict pyright
    (`reportUnknown*`) then reports at every use; this guard says "members not checked yet" instead.
    """
    return isinstance(value, dict)


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """True for any `Mapping` (a library caller's body need not be a dict); see `is_object`."""
    return isinstance(value, Mapping)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """True for a `list`: narrows parsed JSON to a list whose items are `Any` (see `is_object`)."""
    return isinstance(value, list)


def is_request_id(value: object) -> TypeGuard[int | str]:
    """True for a JSON-RPC request id MCP allows: a string or an integer (never null, a boolean, a
    number with a fraction, an array or an object; R-8.1)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


class TransportKind(StrEnum):
    """The three MCP transports a server can use (R-1.1)."""

    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable_http"
    SSE = "sse"


class ConnectionState(StrEnum):
    """Per-server connection state machine (R-3.1): disconnected → connecting → ready → error."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    READY = "ready"
    ERROR = "error"


class ErrorReason(StrEnum):
    """Why a connection or request failed, attributed for the user (R-3.1).

    The value is API (it appears in `details.reason`, in server state and in events).
    """

    DNS = "dns"
    """The host name did not resolve."""
    REFUSED = "refused"
    """Nothing listens at the address (TCP connection refused)."""
    TLS = "tls"
    """The TLS handshake or certificate check failed."""
    HTTP_STATUS = "http_status"
    """The server answered an HTTP status we cannot continue with (`details.status`)."""
    AUTH_REQUIRED = "auth_required"
    """The server wants (new) authorization: 401, or a refresh that failed."""
    STEP_UP_REQUIRED = "step_up_required"
    """The server wants more scopes: 403 insufficient_scope (`details.scopes`)."""
    PROTOCOL = "protocol"
    """The server broke the MCP protocol (garbage, bad handshake, cross-origin SSE endpoint)."""
    TIMEOUT = "timeout"
    """The server did not answer in time (handshake or request)."""
    PROCESS_EXITED = "process_exited"
    """The stdio process exited (`details.exit_code`)."""
    SPAWN_FAILED = "spawn_failed"
    """The stdio command could not be started (not found, not executable)."""
    SANDBOX_REQUIRED = "sandbox_required"
    """The profile runs local processes only sandboxed, and this server has no sandbox policy (R-2.5, R-11.2)."""
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    """The host cannot run sandboxes: bubblewrap, util-linux or user namespaces are missing (R-11.1)."""
    NETWORK = "network"
    """Another network failure (reset, unreachable)."""
    SESSION_EXPIRED = "session_expired"
    """The Streamable HTTP server answered 404 for our session id (R-3.10); the next use re-initializes."""
    CLOSED = "closed"
    """The connection closed without a more specific cause."""
