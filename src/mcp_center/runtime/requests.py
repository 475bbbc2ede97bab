"""Requests on a live session: the attribution of a request's failure (R-3.8).

The table of running operations (cancel by operation id) is `runtime/operations.py`.

`send_once` sends one request and turns what went wrong into an attributed error: the SDK's
-32001/-32000 codes are also ordinary server error codes, so only our own deadline and a transport
that really ended count as a timeout or a lost connection. `require_capability` refuses a request
the server's declared capabilities rule out without sending it (issue 14 item 16); `total_timeout`
is the error of a call whose progress kept it alive up to `PROGRESS_MAX_FACTOR` times its timeout.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from mcp_center.errors import (
    CapabilityNotOffered,
    CenterError,
    ConnectionLost,
    ServerRequestFailed,
    ServerUnreachable,
)
from mcp_center.models import ErrorReason, is_object
from mcp_center.runtime.attribution import attribute, may_have_run, timeout_error
from mcp_center.runtime.connection import Connection, settle_exit
from mcp_center.runtime.deadlines import PausableDeadline
from mcp_center.runtime.events import EventBus
from mcp_center.runtime.session import OpenSession
from mcp_center.secrets import default_redactor
from mcp_center.transports.streamable import ERROR_DATA_KEY

__all__ = [
    "PROGRESS_MAX_FACTOR",
    "SessionExpired",
    "progress_relay",
    "require_capability",
    "send_once",
    "total_timeout",
]

T = TypeVar("T")

PROGRESS_MAX_FACTOR = 10
"""A tool call that keeps reporting progress may run at most this many times its timeout in total."""
PROGRESS_MESSAGE_CHARS = 500
"""Characters of a progress message shown in an `operation.progress` event."""
_SDK_CLOSED_PREFIXES = ("Connection closed", "SSE stream")
"""Messages of the CONNECTION_CLOSED errors the SDK (and our SSE transport) synthesize."""


class SessionExpired(Exception):
    """The server answered 404 for our session: it did not run the request (R-3.10)."""

    def __init__(self, error: CenterError) -> None:
        super().__init__(error.message)
        self.error = error


def _transport_ended(exc: MCPError, session: OpenSession) -> bool:
    """True when a CONNECTION_CLOSED error came from our side of the wire, not from the server."""
    if session.tapped.closed.is_set() or session.probe.returncode is not None or session.probe.fatal is not None:
        return True
    if exc.message.startswith(_SDK_CLOSED_PREFIXES):
        return True
    return is_object(exc.data) and ("reason" in exc.data or ERROR_DATA_KEY in exc.data)


def _lost(error: CenterError, what: str) -> CenterError:
    """`error`, or for a server process that exited while the request `what` was open (the attribution
    says MCP_SERVER_UNREACHABLE, `process_exited`), `ConnectionLost` (MCP_CONNECTION_LOST) with the
    same details and the message followed by what the request may have done (`may_have_run`, the
    wording of an HTTP connection lost the same way): the server was reached and the session ended
    with the request open, so it may have run in part (issue 16, R-3.1). The server's own state
    keeps saying unreachable."""
    if isinstance(error, ServerUnreachable) and error.details.get("reason") == ErrorReason.PROCESS_EXITED.value:
        return ConnectionLost(f"{error.message}; {may_have_run(what)}", details=error.details)
    return error


async def send_once(
    conn: Connection, what: str, send: Callable[[Connection, float], Awaitable[T]], timeout_s: float
) -> T:
    """Send one request on `conn` and attribute its failure.

    Raises:
        ServerTimeout: our deadline (`timeout_s`) passed.
        SessionExpired: HTTP 404 for our session; the caller re-initializes once and re-sends once.
        CenterError: the attributed failure (the server's own error answer is `ServerRequestFailed`; a
            server process that exited with the request open is `ConnectionLost`, `process_exited`).
    """
    assert conn.session is not None
    session = conn.session
    probe = session.probe
    conn.inflight += 1
    started = time.monotonic()  # only compared with itself: no event-loop lookup per call
    try:
        return await send(conn, timeout_s)
    except MCPError as exc:
        if exc.code == types.REQUEST_TIMEOUT and time.monotonic() - started >= timeout_s * 0.95:
            raise conn.timed_out(what, timeout_s, since=started) from None
        if exc.code == types.CONNECTION_CLOSED and _transport_ended(exc, session):
            await settle_exit(probe)
            if conn.stop_requested.is_set():
                raise ConnectionLost(
                    f"{what} was interrupted: the server was disconnected (disabled, reconfigured or "
                    "deleted) while it ran",
                    details={"reason": ErrorReason.CLOSED.value, "interrupted_by": "disconnect"},
                ) from None
            raise _lost(attribute(exc, probe, during=what), what) from None
        if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
            raise ServerRequestFailed(
                f"the server answered {what} with error {exc.code}: {default_redactor.redact(exc.message)[:500]}",
                details={"reason": ErrorReason.PROTOCOL.value, "rpc_code": exc.code},
            ) from None
        if exc.code == types.INVALID_REQUEST and probe.http is not None and probe.http.session_expired:
            conn.expired = True
            raise SessionExpired(
                ConnectionLost(
                    f"the server's session expired during {what} (HTTP 404) and re-initializing did not help",
                    details={"reason": ErrorReason.SESSION_EXPIRED.value},
                )
            ) from None
        raise attribute(exc, probe, during=what) from None
    except (RuntimeError, ValueError) as exc:
        raise attribute(exc, probe, during=what) from None
    finally:
        conn.inflight -= 1
        conn.note_inflight_changed()


def require_capability(conn: Connection, capability: str, what: str) -> None:
    """Refuse, without asking the server, a request whose capability it did not declare (issue 14 item 16).

    Raises:
        CapabilityNotOffered: `details.capability` and `details.server_id` say which.
    """
    assert conn.session is not None
    if capability not in conn.session.offers:  # read once per session (`OpenSession.offers`)
        server_id = conn.spec.server_id
        raise CapabilityNotOffered(
            f"server '{server_id}' offers no {capability} (it declared none in initialize); {what} was not sent",
            details={"server_id": server_id, "capability": capability},
        )


def total_timeout(what: str, max_total_s: float, factor: float) -> CenterError:
    """The timeout of a call that kept reporting progress up to its maximum total, `factor` times its
    timeout (issue 14 item 4)."""
    error = timeout_error(what, max_total_s)
    error.message = (
        f"{what} ran for its maximum of {max_total_s:g} s ({factor:g} x call_timeout_s) although it reported progress"
    )
    return error


def progress_relay(
    deadline: PausableDeadline,
    events: EventBus,
    server_id: str,
    operation_id: str,
    tool: object,
    forward: ProgressFnT | None,
    *,
    record: Callable[[float, float | None, str | None], object] | None = None,
) -> ProgressFnT:
    """The progress callback of a tool call (issue 14 item 4).

    Each progress notification restarts the call's deadline (`deadline.extend()`, bounded by its
    maximum total), is published as an `operation.progress` event (message redacted and cut to
    `PROGRESS_MESSAGE_CHARS`), given to `record` (`(progress, total, message)`: the activity feed,
    R-12.1) and passed on to `forward` (the gateway's agent, R-8.1). `record` here rather than a
    callback wrapping `forward`: one frame less per call and per notification (issue 12). A
    `functools.partial` of `_relay_progress`, not a closure: every forwarded call makes one and
    most never report progress; a closure cost seven cells and a function object each (issue 12).
    """
    return functools.partial(_relay_progress, deadline, events, server_id, operation_id, tool, forward, record)


async def _relay_progress(
    deadline: PausableDeadline,
    events: EventBus,
    server_id: str,
    operation_id: str,
    tool: object,
    forward: ProgressFnT | None,
    record: Callable[[float, float | None, str | None], object] | None,
    progress: float,
    total: float | None,
    message: str | None,
) -> None:
    """`progress_relay`'s callback, its first seven arguments bound."""
    deadline.extend()
    shown = default_redactor.redact(message)[:PROGRESS_MESSAGE_CHARS] if message else None
    events.publish(
        "operation.progress",
        server_id=server_id,
        operation_id=operation_id,
        tool=tool,
        progress=progress,
        total=total,
        message=shown,
    )
    if record is not None:
        record(progress, total, message)
    if forward is not None:
        await forward(progress, total, message)
