"""Connection manager: one supervised session per enabled server, calls, cancellation (R-3)."""

from mcp_center.runtime.activity import ACTIVITY_ENTRIES, LOG_LEVELS, ActivityEntry, ActivityRecorder
from mcp_center.runtime.attribution import attribute, timeout_error
from mcp_center.runtime.calls import EarlyAnswer
from mcp_center.runtime.catalog import CATEGORIES, Catalog, Category, Quarantined
from mcp_center.runtime.connection import Connection, ProbeResult, ServerStatus
from mcp_center.runtime.deadlines import CallDeadlines, PausableDeadline
from mcp_center.runtime.events import EventBus, Subscription
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.manager import ConnectionManager, RawAnswer, TransportFactory
from mcp_center.runtime.operations import new_operation_id
from mcp_center.runtime.results import DEFAULT_MAX_RESULT_BYTES, TRUNCATION_META_KEY, bound_result
from mcp_center.runtime.session import CLIENT_INFO, OpenSession, SessionHooks, open_session
from mcp_center.runtime.tap import MessageObserver, TappedTransport

__all__ = [
    "ACTIVITY_ENTRIES",
    "CATEGORIES",
    "CLIENT_INFO",
    "DEFAULT_MAX_RESULT_BYTES",
    "LOG_LEVELS",
    "TRUNCATION_META_KEY",
    "ActivityEntry",
    "ActivityRecorder",
    "CallDeadlines",
    "Catalog",
    "Category",
    "Connection",
    "ConnectionManager",
    "EarlyAnswer",
    "EventBus",
    "MessageObserver",
    "OpenSession",
    "PausableDeadline",
    "ProbeResult",
    "Quarantined",
    "RawAnswer",
    "ServerLogbook",
    "ServerStatus",
    "SessionHooks",
    "Subscription",
    "TappedTransport",
    "TransportFactory",
    "attribute",
    "bound_result",
    "new_operation_id",
    "open_session",
    "timeout_error",
]
