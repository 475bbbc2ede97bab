"""Connection manager: one supervised session per enabled server, calls, cancellation (R-3)."""

from mcp_center.runtime.attribution import attribute, timeout_error
from mcp_center.runtime.manager import Connection, ConnectionManager, ProbeResult, ServerStatus
from mcp_center.runtime.session import CLIENT_INFO, OpenSession, SessionHooks, list_all_tools, open_session
from mcp_center.runtime.tap import MessageObserver, TappedTransport

__all__ = [
    "CLIENT_INFO",
    "Connection",
    "ConnectionManager",
    "MessageObserver",
    "OpenSession",
    "ProbeResult",
    "ServerStatus",
    "SessionHooks",
    "TappedTransport",
    "attribute",
    "list_all_tools",
    "open_session",
    "timeout_error",
]
