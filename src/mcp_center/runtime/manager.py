"""The connection manager: one supervised session per enabled server (R-2.3, R-2.4, R-3).

Shape (see docs/sdk-notes.md#manager-shape and docs/architecture.md#connection-lifecycle):

- Each connection is one task in the manager's task group. That task enters and exits the
  transport and the SDK `Client` (anyio cancel scopes must be exited by the task that entered
  them), announces `ready` after initialize + the first catalog, runs the catalog refresher,
  and waits until it is stopped, the server side ends, or the HTTP session expires.
- Per server there is a slot holding the desired spec and the current connection. Concurrent
  `connect()` calls share the current attempt (R-3.4); `disconnect()` and `configure()` take
  the slot lock, stop the current connection and wait for it to close before anyone can start a
  new one (the disconnect barrier, R-3.3).
- Every connection has a unique `connection_id` (R-3.5). A candidate re-checks after its
  handshake that it is still the slot's connection for the current spec digest; a drifted
  candidate closes instead of becoming ready (R-3.3). Notifications, status changes and
  catalog refreshes of a connection that is no longer the slot's current one are ignored.
- Catalogs are validated item by item in the transport tap (R-3.6); `list_changed`
  notifications schedule a refresh on a single per-connection worker with a generation number
  and a bounded rate; a failed refresh keeps the category's last valid content (R-3.7).
- Calls run in the caller's task on the shared session, inside a cancel scope registered under
  the call's operation id before it is admitted (so a cancel while it waits for a connection
  also counts); the SDK sends `notifications/cancelled` (R-3.8). Results are bounded (R-3.9).
  A Streamable HTTP 404 on our session id re-initializes once and re-sends the request once
  (the server did not run it) (R-3.10).
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client import Transport
from mcp.client.session import ClientRequestContext, IncomingMessage, LoggingFnT, MessageHandlerFnT
from mcp.shared.dispatcher import CallOptions, ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcp_center.errors import (
    CallCancelled,
    CenterError,
    ConnectionLost,
    OperationInUse,
    RequestInvalid,
    ServerDisabled,
    ServerRequestFailed,
)
from mcp_center.models import ConnectionState, ErrorReason, TransportKind
from mcp_center.runtime.activity import LOG_LEVELS, ActivityRecorder
from mcp_center.runtime.attribution import SessionEnded, attribute, timeout_error
from mcp_center.runtime.catalog import CATEGORIES, Catalog, CatalogSanitizer, Category, fetch_category
from mcp_center.runtime.deadlines import CallDeadlines
from mcp_center.runtime.events import EventBus
from mcp_center.runtime.forward import RawForwarder
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.results import DEFAULT_MAX_RESULT_BYTES, bound_raw_result, bound_result
from mcp_center.runtime.session import OpenSession, SessionHooks, open_session
from mcp_center.secrets import default_redactor
from mcp_center.transports import ConnectionSpec, TransportProbe, open_transport

__all__ = ["Connection", "ConnectionManager", "ProbeResult", "RawAnswer", "ServerStatus", "TransportFactory"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

CLOSE_TIMEOUT_S = 15.0
"""Seconds to wait for a connection to close (a stdio close can take ~7 s: grace, TERM, KILL)."""
CANCELLED_OPS_REMEMBERED = 1024
"""Bound on remembered cancel-before-admission operation ids (R-3.8)."""
CANCELLED_OPS_TTL_S = 300.0
"""Seconds a cancel-before-admission record is kept."""
REFRESH_MIN_INTERVAL_S = 0.5
"""Seconds between two catalog refreshes of one connection (a list_changed storm is coalesced)."""
REFRESH_STORM_WINDOW_S = 60.0
REFRESH_STORM_LIMIT = 30
"""More refreshes than this within the window count as a storm (or a list→notify loop): the interval doubles."""
REFRESH_MAX_INTERVAL_S = 60.0
SESSION_END_EXIT_WAIT_S = 1.0
HEALTH_INTERVAL_S = 30.0
"""Seconds between health pings of a ready remote connection (R-3.11)."""
HEALTH_TIMEOUT_S = 10.0
"""Seconds a health ping may take before the connection counts as gone."""
EARLY_PING_MIN_INTERVAL_S = 2.0
"""Seconds between two pings made early because the GET stream ended (a server that closes its
stream again and again gets at most one ping per this many seconds)."""
"""When a stdio connection closes, seconds to wait for the process exit so the error carries its exit code."""

LogListener = Callable[[str, types.LoggingMessageNotificationParams], None]
"""`(server_id, params)` for every `notifications/message` a current connection receives."""

TransportFactory = Callable[..., AbstractAsyncContextManager[Transport]]
"""`open_transport`-compatible factory `(spec, probe, *, on_stderr, on_noise)`; injectable for tests."""

RAW_REQUEST_ID_PREFIX = "console-"
"""JSON-RPC ids of requests sent by `request_raw` (the console): the request log shows where they came from."""

_SEEN_ELSEWHERE = frozenset({"notifications/message", "notifications/progress"})
"""Notifications the activity feed records through their own callbacks (log level, call's operation id)."""

_CHANGED_CATEGORIES: Mapping[str, tuple[Category, ...]] = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resource_templates"),
}


@dataclass(frozen=True)
class ServerStatus:
    """What the runtime knows about one server right now (R-3.1, R-3.11).

    Attributes:
        state: disconnected / connecting / ready / error.
        connection_id: The current connection's id, or None.
        error: `{"code", "message", "details"}` of the last failure when state is error;
            `details.reason` is an `ErrorReason` value.
        tool_count: Tools in the current catalog (ready only).
        since: When the state last changed (aware UTC).
    """

    server_id: str
    state: ConnectionState
    connection_id: str | None = None
    error: dict[str, Any] | None = None
    tool_count: int | None = None
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    since: datetime = field(default_factory=lambda: datetime.now(UTC))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape used by the API and events."""
        return {
            "state": self.state.value,
            "connection_id": self.connection_id,
            "error": self.error,
            "tool_count": self.tool_count,
            "server_name": self.server_name,
            "server_version": self.server_version,
            "protocol_version": self.protocol_version,
            "since": self.since.isoformat(),
        }


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of a temporary connection (R-2.2): what initialize and tools/list returned."""

    elapsed_ms: int
    tools: list[types.Tool]
    server_name: str | None
    server_version: str | None
    protocol_version: str | None
    quarantined: int = 0


@dataclass(frozen=True)
class RawAnswer:
    """What the server answered to a raw request (R-12.1): exactly one of `result` and `error`.

    Attributes:
        result: The JSON-RPC `result` object.
        error: The JSON-RPC `error` object (`code`, `message`, optional `data`), redacted.
        elapsed_ms: From sending the request to its answer, in milliseconds.
        connection_id: The client instance that carried it (R-3.5).
    """

    result: dict[str, Any] | None
    error: dict[str, Any] | None
    elapsed_ms: float
    connection_id: str


class _Filter:
    """The tap observer of one connection: request log + catalog validation."""

    def __init__(self, logbook: ServerLogbook, connection_id: str) -> None:
        self.logbook = logbook
        self.connection_id = connection_id
        self.sanitizer = CatalogSanitizer()

    def outgoing(self, message: SessionMessage) -> None:
        msg = message.message
        # A console request is shown as the server answered it: its list pages are not validated (and
        # must not count as the catalog's own pages, whose duplicate detection they would trip).
        if not (isinstance(msg, types.JSONRPCRequest) and str(msg.id).startswith(RAW_REQUEST_ID_PREFIX)):
            self.sanitizer.outgoing(message)
        self.logbook.sent(message, self.connection_id)

    def incoming(self, message: SessionMessage | Exception) -> SessionMessage | Exception:
        if isinstance(message, SessionMessage):
            message = _redact_message(message)
            message = self.sanitizer.incoming(message)
        self.logbook.received(message, self.connection_id)
        return message


def _redact_message(message: SessionMessage) -> SessionMessage:
    """Remove known secret values from everything a server sends (R-1.5).

    A server may echo what it was given (its secret env, a secret header) in its name, a tool
    description, an error or a result; nothing it sends reaches the catalog, the logs, an API
    response or an agent with a secret in it.
    """
    if not default_redactor.active:
        return message
    msg = message.message
    if isinstance(msg, types.JSONRPCResponse):
        result = default_redactor.redact_values(msg.result)
        if result is msg.result:
            return message
        return SessionMessage(msg.model_copy(update={"result": result}), metadata=message.metadata)
    if isinstance(msg, types.JSONRPCError):
        data = default_redactor.redact_values(msg.error.data)
        text = default_redactor.redact(msg.error.message)
        if data is msg.error.data and text is msg.error.message:
            return message
        error = msg.error.model_copy(update={"message": text, "data": data})
        return SessionMessage(msg.model_copy(update={"error": error}), metadata=message.metadata)
    params = default_redactor.redact_values(msg.params)
    method = default_redactor.redact(msg.method)
    if params is msg.params and method is msg.method:
        return message
    return SessionMessage(msg.model_copy(update={"params": params, "method": method}), metadata=message.metadata)


class Connection:
    """One client instance for one server. Only the manager creates these."""

    def __init__(self, spec: ConnectionSpec, logbook: ServerLogbook) -> None:
        self.connection_id = uuid.uuid4().hex
        self.spec = spec
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self.session: OpenSession | None = None
        self.catalog = Catalog()
        self.error: CenterError | None = None
        self.stop_requested = anyio.Event()
        self.cancel_scope = anyio.CancelScope()
        self.filter = _Filter(logbook, self.connection_id)
        self.expired = False
        self.health_error: CenterError | None = None
        """Why the health ping gave up on this connection, if it did."""
        self.inflight = 0
        """Requests sent on this connection and not yet answered."""
        self.inflight_changed = anyio.Event()
        self.hooks = SessionHooks()
        """The session's callbacks (elicitation, sampling, roots), for the lean forwarder."""
        self.raw: RawForwarder | None = None
        """The lean forwarder of a Streamable HTTP connection, once built (`ConnectionManager.forward`)."""
        self._refresh_wanted = anyio.Event()
        self._requested: set[Category] = set()
        self._refresh_times: deque[float] = deque()
        self._interval = REFRESH_MIN_INTERVAL_S

    @property
    def tools(self) -> list[types.Tool]:
        """The current validated tool catalog."""
        return self.catalog.tools

    def stop(self) -> None:
        """Ask the connection to close: gracefully when ready, by cancelling the handshake otherwise."""
        self.stop_requested.set()
        if not self.ready.is_set():
            self.cancel_scope.cancel()

    @property
    def is_live(self) -> bool:
        """Ready and not closed."""
        return self.ready.is_set() and not self.closed.is_set()

    def request_refresh(self, categories: tuple[Category, ...]) -> None:
        """Schedule a refresh of `categories` on the connection's refresh worker (coalesced)."""
        self._requested.update(categories)
        self._refresh_wanted.set()

    async def next_refresh(self) -> set[Category]:
        """Wait for requested categories, respecting the (storm-adaptive) minimum interval."""
        await self._refresh_wanted.wait()
        now = anyio.current_time()
        while self._refresh_times and now - self._refresh_times[0] > REFRESH_STORM_WINDOW_S:
            self._refresh_times.popleft()
        if len(self._refresh_times) >= REFRESH_STORM_LIMIT:
            self._interval = min(self._interval * 2, REFRESH_MAX_INTERVAL_S)
        else:
            self._interval = REFRESH_MIN_INTERVAL_S
        if self._refresh_times:
            wait = self._refresh_times[-1] + self._interval - now
            if wait > 0:
                await anyio.sleep(wait)
        self._refresh_wanted = anyio.Event()
        categories, self._requested = self._requested, set()
        self._refresh_times.append(anyio.current_time())
        return categories


@dataclass
class _Slot:
    server_id: str
    spec: ConnectionSpec | None = None
    conn: Connection | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    status: ServerStatus | None = None


@dataclass
class _Operation:
    operation_id: str
    server_id: str
    scope: anyio.CancelScope


class ConnectionManager:
    """Own every long-lived server session. Use as `async with ConnectionManager() as manager:`.

    Args:
        on_status: Called (synchronously, must not block) whenever a server's status changes.
        hooks_for: Builds per-connection session hooks (elicitation, sampling); optional.
        events: Receives `server.status` and `server.catalog` events for the UI (R-3.11).
        transport_factory: Opens transports; defaults to `transports.open_transport`.
        deadlines: Tool-call deadlines, paused per connection while a human answers (R-6.1).
    """

    def __init__(
        self,
        *,
        on_status: Callable[[ServerStatus], None] | None = None,
        hooks_for: Callable[[ConnectionSpec, str], SessionHooks] | None = None,
        events: EventBus | None = None,
        transport_factory: TransportFactory = open_transport,
        deadlines: CallDeadlines | None = None,
    ) -> None:
        self._on_status = on_status
        self.deadlines = deadlines or CallDeadlines()
        self._hooks_for = hooks_for
        self.events = events or EventBus()
        self._transport_factory = transport_factory
        self._slots: dict[str, _Slot] = {}
        self._logbooks: dict[str, ServerLogbook] = {}
        self._ops: dict[str, _Operation] = {}
        self._cancelled_early: OrderedDict[str, float] = OrderedDict()
        self._tg: anyio.abc.TaskGroup | None = None
        self._status_changed = anyio.Event()
        self._log_listeners: list[LogListener] = []
        self._log_levels: dict[str, str] = {}
        """server id → the `logging/setLevel` level the user chose; sent again on each new session."""
        self.activity = ActivityRecorder(self.events)
        """Log messages, notifications and call progress of every server, for the page (R-12.1)."""
        self.handshakes = 0
        """Handshakes started since the manager opened (a cheap counter for tests and metrics)."""

    async def __aenter__(self) -> ConnectionManager:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            await self.close_all()
        self._tg.cancel_scope.cancel()
        tg, self._tg = self._tg, None
        await tg.__aexit__(None, None, None)
        return None

    # ----- configuration -------------------------------------------------------------------

    def configured(self) -> list[str]:
        """Ids of servers that have a spec (enabled and runnable servers)."""
        return [sid for sid, slot in self._slots.items() if slot.spec is not None]

    async def configure(self, server_id: str, spec: ConnectionSpec | None) -> None:
        """Set the desired spec of a server (None: must not run) and reconcile (R-3.3).

        A changed digest stops the current connection and waits until it has closed before
        returning (disconnect barrier); the next `connect()` uses the new spec. An unchanged
        digest keeps the running session.
        """
        slot = self._slots.setdefault(server_id, _Slot(server_id))
        async with slot.lock:
            old = slot.spec
            slot.spec = spec
            changed = spec is None or old is None or old.digest != spec.digest
            if changed and slot.conn is not None:
                await self._close_locked(slot)
            if spec is None or changed:
                self._set_status(slot, ServerStatus(server_id, ConnectionState.DISCONNECTED))
        if spec is None and slot.conn is None:
            self._slots.pop(server_id, None)

    def forget(self, server_id: str) -> None:
        """Drop the debugging records of a deleted server."""
        self._logbooks.pop(server_id, None)
        self.activity.forget(server_id)
        self._log_levels.pop(server_id, None)

    # ----- connect / disconnect -------------------------------------------------------------

    async def connect(self, server_id: str) -> Connection:
        """Return a ready connection, starting one if needed; concurrent callers share one attempt (R-3.4).

        Raises:
            ServerDisabled: the server has no spec (not enabled or not runnable).
            CenterError: the attempt failed (attributed, R-3.1).
        """
        slot = self._slots.get(server_id)
        if slot is None:
            raise ServerDisabled(f"server '{server_id}' is not enabled", details={"server_id": server_id})
        async with slot.lock:
            spec = slot.spec
            if spec is None:
                raise ServerDisabled(f"server '{server_id}' is not enabled", details={"server_id": server_id})
            conn = slot.conn
            if conn is None or conn.closed.is_set():
                conn = self._start_locked(slot, spec)
        await _wait_any(conn.ready, conn.closed)
        if conn.is_live:
            return conn
        if conn.error is not None:
            raise conn.error
        raise ConnectionLost(
            f"server '{server_id}' was disconnected while connecting", details={"reason": ErrorReason.CLOSED.value}
        )

    async def disconnect(self, server_id: str) -> None:
        """Close the server's connection and wait for it (a barrier: later connects start fresh)."""
        slot = self._slots.get(server_id)
        if slot is None:
            return
        async with slot.lock:
            await self._close_locked(slot)
            self._set_status(slot, ServerStatus(server_id, ConnectionState.DISCONNECTED))

    async def close_all(self) -> None:
        """Stop every connection and wait (bounded) until all have closed."""
        for slot in list(self._slots.values()):
            if slot.conn is not None:
                slot.conn.stop()
        with anyio.move_on_after(CLOSE_TIMEOUT_S):
            for slot in list(self._slots.values()):
                if slot.conn is not None:
                    await slot.conn.closed.wait()

    def status(self, server_id: str) -> ServerStatus:
        """The server's current status (disconnected when unknown)."""
        slot = self._slots.get(server_id)
        if slot is None or slot.status is None:
            return ServerStatus(server_id, ConnectionState.DISCONNECTED)
        return slot.status

    async def wait_for_status(self, server_id: str, predicate: Callable[[ServerStatus], bool]) -> ServerStatus:
        """Wait until the server's status satisfies `predicate` and return it (callers bound the wait)."""
        while True:
            changed = self._status_changed
            status = self.status(server_id)
            if predicate(status):
                return status
            await changed.wait()

    def current(self, server_id: str) -> Connection | None:
        """The live connection of a server, or None (never starts one)."""
        slot = self._slots.get(server_id)
        if slot is None or slot.conn is None or not slot.conn.is_live:
            return None
        return slot.conn

    def logbook(self, server_id: str) -> ServerLogbook:
        """The server's request/response and stderr records (created on first use)."""
        return self._logbooks.setdefault(server_id, ServerLogbook())

    # ----- catalogs ------------------------------------------------------------------------------

    async def catalog(self, server_id: str) -> Catalog:
        """The server's current catalog (connecting lazily, R-3.2)."""
        return (await self.connect(server_id)).catalog

    async def list_tools(self, server_id: str) -> list[types.Tool]:
        """The server's validated tools (connecting lazily, R-3.2)."""
        return list((await self.connect(server_id)).catalog.tools)

    async def refresh(self, server_id: str, categories: tuple[Category, ...] = CATEGORIES) -> Catalog:
        """Refresh categories now on the live session (the same path list_changed takes) and return the catalog."""
        conn = await self.connect(server_id)
        for category in categories:
            await self._refresh_category(conn, category)
        return conn.catalog

    # ----- requests ----------------------------------------------------------------------------

    async def call_tool(
        self,
        server_id: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        operation_id: str | None = None,
        timeout_s: float | None = None,
        max_result_bytes: int | None = None,
        progress: ProgressFnT | None = None,
    ) -> types.CallToolResult:
        """Call a tool on the server's live session (connecting lazily).

        Args:
            progress: Receives the server's progress notifications for this call
                `(progress, total | None, message | None)` (the gateway forwards them, R-8.1).
            operation_id: Lets `cancel(operation_id)` abort this call — while it waits for a
                connection or while it runs (R-3.8).
            timeout_s: Seconds for the call itself; defaults to the server's `call_timeout_s`. The
                clock stops while an elicitation card of the connection is pending (R-6.1).
            max_result_bytes: Result size bound; defaults to the spec's (R-3.9).
        Returns:
            The MCP result, truncated and marked if over the bound. An `isError` result is a
            result, not an exception.
        Raises:
            CallCancelled: cancelled by operation id (before admission, while queued or running).
            ServerTimeout: no answer within the timeout (the SDK sends notifications/cancelled).
            CenterError: connection or protocol failure, attributed.
        """
        arguments_dict = dict(arguments or {})
        op_id = operation_id or uuid.uuid4().hex

        async def send(conn: Connection, timeout_s: float) -> types.CallToolResult:
            assert conn.session is not None
            # No SDK timeout: our deadline pauses while an elicitation card of this connection is
            # pending (runtime/deadlines.py); its expiry cancels the call (notifications/cancelled).
            with self.deadlines.deadline(conn.connection_id, timeout_s):
                answer = await conn.session.client.session.call_tool(
                    name,
                    arguments_dict,
                    read_timeout_seconds=None,
                    progress_callback=self._recording_progress(server_id, conn, op_id, progress),
                )
                assert isinstance(answer, types.CallToolResult)
                return answer
            raise timeout_error(f"tools/call '{name}'", timeout_s)

        result = await self._request(server_id, f"tools/call '{name}'", send, op_id, timeout_s)
        limit = max_result_bytes
        if limit is None:
            slot = self._slots.get(server_id)
            limit = slot.spec.max_result_bytes if slot and slot.spec else DEFAULT_MAX_RESULT_BYTES
        return bound_result(result, limit)

    async def get_prompt(
        self, server_id: str, name: str, arguments: Mapping[str, str] | None = None, *, operation_id: str | None = None
    ) -> types.GetPromptResult:
        """`prompts/get` on the server's live session (R-5.4 builds on this).

        Raises:
            CallCancelled, ServerTimeout, CenterError as for `call_tool`.
        """

        async def send(conn: Connection, timeout_s: float) -> types.GetPromptResult:
            assert conn.session is not None
            result = await conn.session.client.session.send_request(
                types.GetPromptRequest(params=types.GetPromptRequestParams(name=name, arguments=dict(arguments or {}))),
                types.GetPromptResult,
                request_read_timeout_seconds=timeout_s,
            )
            return result

        return await self._request(server_id, f"prompts/get '{name}'", send, operation_id, None)

    async def read_resource(
        self, server_id: str, uri: str, *, operation_id: str | None = None
    ) -> types.ReadResourceResult:
        """`resources/read` on the server's live session (R-5.5 builds on this).

        Raises:
            CallCancelled, ServerTimeout, CenterError as for `call_tool`.
        """

        async def send(conn: Connection, timeout_s: float) -> types.ReadResourceResult:
            assert conn.session is not None
            result = await conn.session.client.session.send_request(
                types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri)),
                types.ReadResourceResult,
                request_read_timeout_seconds=timeout_s,
            )
            return result

        return await self._request(server_id, "resources/read", send, operation_id, None)

    async def forward(
        self,
        server_id: str,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        operation_id: str | None = None,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        """Send one request with its params as they came and return the server's raw result (R-8.1).

        The gateway's lean path: no typed request or result model is built. The session's own
        dispatcher sends it (one JSON-RPC request on the live session, whatever the transport),
        the tap still logs, redacts (R-1.5) and counts it, and a `tools/call` result over the
        spec's size bound is truncated as in `call_tool` (R-3.9).

        Args:
            method: A client-to-server request method, e.g. `tools/call`, `completion/complete`.
            params: Its params (JSON values); `_meta.progressToken` is replaced by our own when
                `progress` is given.
            operation_id, timeout_s, progress: As for `call_tool`; the deadline pauses while an
                elicitation card of the connection is pending (R-6.1).
        Returns:
            The JSON-RPC `result` object.
        Raises:
            ServerRequestFailed: the server answered a JSON-RPC error (`rpc_error` holds it, redacted).
            CallCancelled, ServerTimeout, CenterError: as for `call_tool`.
        """

        op_id = operation_id or uuid.uuid4().hex

        async def send(conn: Connection, timeout_s: float) -> dict[str, Any]:
            assert conn.session is not None
            # The activity feed records the progress the agent asked for; a call that asked
            # for none stays on the leanest path (no progress token is added on its behalf).
            report = self._recording_progress(server_id, conn, op_id, progress) if progress is not None else None
            raw = self._raw_forwarder(server_id, conn)
            with self.deadlines.deadline(conn.connection_id, timeout_s):
                if raw is not None:
                    try:
                        return await raw.request(method, params, progress=report)
                    except httpx2.HTTPError as exc:
                        raise attribute(exc, conn.session.probe, during=what) from None
                # stdio and legacy SSE: the session's own dispatcher, still without typed models.
                dispatcher = conn.session.client.session._dispatcher  # pyright: ignore[reportPrivateUsage]
                opts: CallOptions = {}
                if report is not None:
                    opts["on_progress"] = report
                return await dispatcher.send_raw_request(method, params, opts)
            raise timeout_error(f"{method}", timeout_s)

        what = f"tools/call '{(params or {}).get('name')}'" if method == "tools/call" else method
        result = await self._request(server_id, what, send, op_id, timeout_s)
        if method == "tools/call":
            slot = self._slots.get(server_id)
            limit = slot.spec.max_result_bytes if slot and slot.spec else DEFAULT_MAX_RESULT_BYTES
            result = bound_raw_result(result, limit)
        return result

    def _raw_forwarder(self, server_id: str, conn: Connection) -> RawForwarder | None:
        """The connection's lean forwarder (Streamable HTTP only), built on first use."""
        session = conn.session
        if conn.raw is not None or session is None or conn.spec.transport is not TransportKind.STREAMABLE_HTTP:
            return conn.raw
        probe = session.probe
        http, client, url = probe.http, probe.http_client, conn.spec.url
        slot = self._slots.get(server_id)
        if http is None or client is None or url is None or slot is None:
            return None

        def list_changed(method: str) -> None:
            categories = _CHANGED_CATEGORIES.get(method)
            if categories is not None and conn.is_live and self._is_current(slot, conn):
                conn.request_refresh(categories)

        conn.raw = RawForwarder(
            client=client,
            url=url,
            session_id=lambda: http.session_id,
            protocol_version=session.client.protocol_version or LATEST_HANDSHAKE_VERSION,
            session=session.client.session,
            hooks=conn.hooks,
            logbook=conn.filter.logbook,
            connection_id=conn.connection_id,
            on_log=self._logging_handler(slot, conn),
            on_list_changed=list_changed,
            diagnostics=http,
            # Plain-HTTP servers without OAuth: our own HTTP/1.1 connections (runtime/http1.py).
            lite_headers=dict(conn.spec.headers) if url.startswith("http://") and conn.spec.auth is None else None,
        )
        return conn.raw

    def is_running(self, operation_id: str) -> bool:
        """True while a request with this operation id is admitted and not finished."""
        return operation_id in self._ops

    def cancel(self, operation_id: str) -> bool:
        """Cancel a request by operation id. Returns True if an admitted request was cancelled.

        A cancel that arrives before the request is admitted is remembered (bounded in number
        and time) and the request is refused when it arrives (R-3.8).
        """
        op = self._ops.get(operation_id)
        if op is not None:
            op.scope.cancel()
            return True
        now = time.monotonic()
        self._cancelled_early[operation_id] = now
        self._cancelled_early.move_to_end(operation_id)
        while self._cancelled_early and (
            len(self._cancelled_early) > CANCELLED_OPS_REMEMBERED
            or now - next(iter(self._cancelled_early.values())) > CANCELLED_OPS_TTL_S
        ):
            self._cancelled_early.popitem(last=False)
        return False

    # ----- debugging (R-12.1) -------------------------------------------------------------------

    async def request_raw(
        self,
        server_id: str,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        operation_id: str | None = None,
        timeout_s: float | None = None,
    ) -> RawAnswer:
        """Send one JSON-RPC request as given on the live session and return the server's answer (R-12.1).

        The JSON-RPC console of the settings page: no typed request or result model is built, so a
        server's malformed answer is shown as it came (redacted by the tap, R-1.5). The request
        goes through the session like any other: the tap records it in the request log (R-3.11),
        `cancel(operation_id)` sends `notifications/cancelled`, and `timeout_s` (default: the
        server's `call_timeout_s`) bounds the wait.

        Args:
            method: Any client-to-server request method (the caller refuses `initialize`).
            params: Its params, as JSON values (None: no params).
        Returns:
            `RawAnswer`: the `result` object or the JSON-RPC `error` the server answered, the time
            it took and the connection that carried it.
        Raises:
            CallCancelled, ServerTimeout, and attributed connection errors (as `call_tool`).
        """

        async def send(conn: Connection, timeout_s: float) -> RawAnswer:
            assert conn.session is not None
            dispatcher = conn.session.client.session._dispatcher  # pyright: ignore[reportPrivateUsage]
            started = anyio.current_time()
            try:
                request_id = f"{RAW_REQUEST_ID_PREFIX}{uuid.uuid4().hex[:12]}"
                result = await dispatcher.send_raw_request(
                    method,
                    dict(params) if params is not None else None,
                    {"timeout": timeout_s, "request_id": request_id},
                )
            except MCPError as exc:
                if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                    raise  # ours to attribute: a lost connection or our deadline
                error: dict[str, Any] = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                return RawAnswer(None, error, _elapsed_ms(started), conn.connection_id)
            return RawAnswer(result, None, _elapsed_ms(started), conn.connection_id)

        return await self._request(server_id, method, send, operation_id, timeout_s)

    async def set_logging_level(self, server_id: str, level: str) -> None:
        """Send `logging/setLevel` on the live session and keep the level for the server's next sessions.

        Raises:
            RequestInvalid: `level` is not one of `LOG_LEVELS`.
            ServerRequestFailed: the server refused it (e.g. it declares no `logging` capability).
            CallCancelled, ServerTimeout, connection errors as `call_tool`.
        """
        if level not in LOG_LEVELS:
            raise RequestInvalid(
                f"level: must be one of {', '.join(LOG_LEVELS)}",
                details={
                    "errors": [{"field": "level", "code": "FIELD_INVALID", "message": "not an MCP logging level"}]
                },
            )

        async def send(conn: Connection, timeout_s: float) -> bool:
            assert conn.session is not None
            await _send_level(conn.session, level, timeout_s)
            return True

        await self._request(server_id, "logging/setLevel", send, None, None)
        self._log_levels[server_id] = level

    def logging_level(self, server_id: str) -> str | None:
        """The `logging/setLevel` level chosen for the server (None: never set; the server's default)."""
        return self._log_levels.get(server_id)

    def _recording_progress(
        self, server_id: str, conn: Connection, operation_id: str, forward: ProgressFnT | None
    ) -> ProgressFnT:
        """A progress callback that records the call's progress in the activity feed, then calls `forward`."""

        async def report(progress: float, total: float | None, message: str | None) -> None:
            self.activity.progress(server_id, conn.connection_id, operation_id, progress, total, message)
            if forward is not None:
                await forward(progress, total, message)

        return report

    # ----- temporary connection (test) ----------------------------------------------------------

    async def probe(self, spec: ConnectionSpec) -> ProbeResult:
        """Open a temporary connection: initialize + tools/list + close (R-2.2).

        Runs in the caller's task, independent of any long-lived connection of the server; its
        traffic is recorded in the server's logbook.

        Raises:
            ServerTimeout: initialize + tools/list took longer than `spec.startup_timeout_s`.
            CenterError: attributed failure (refused, DNS, process exited with code N, ...).
        """
        probe = TransportProbe()
        logbook = self.logbook(spec.server_id)
        logbook.sandbox_network = spec.sandbox.policy.network if spec.sandbox is not None else None
        filt = _Filter(logbook, f"test-{uuid.uuid4().hex[:12]}")
        hooks = SessionHooks(on_stderr=logbook.add_stderr, on_noise=logbook.add_noise, observer=filt)
        # Advertise what serve's live sessions advertise (form elicitation, sampling, roots), whichever
        # process runs the test — serve, or a one-shot CLI that has no agent and shows no forms:
        # servers (server-everything among them) list tools by the client's capabilities, so every
        # test's count matches serve's. Asked during a test, each is declined or refused.
        hooks.elicitation_callback = _decline_during_test
        hooks.sampling_callback = _refuse_sampling_during_test
        hooks.list_roots_callback = _refuse_roots_during_test
        started = anyio.current_time()
        result: ProbeResult | None = None
        deadline = anyio.move_on_after(spec.startup_timeout_s)
        self.handshakes += 1
        try:
            with deadline:
                async with open_session(spec, probe, hooks, transport_factory=self._transport_factory) as session:
                    filt.sanitizer.begin("tools")
                    tools = await fetch_category(session.client, "tools")
                    quarantined = filt.sanitizer.take("tools")
                    info = session.client.server_info
                    result = ProbeResult(
                        elapsed_ms=int((anyio.current_time() - started) * 1000),
                        tools=tools,
                        server_name=info.name if info else None,
                        server_version=info.version if info else None,
                        protocol_version=session.client.protocol_version,
                        quarantined=len(quarantined),
                    )
        except Exception as exc:  # noqa: BLE001 - every failure is attributed, none is swallowed
            if result is None:
                raise attribute(exc, probe, during="initialize") from None
            logger.info("server.test.close_failed", extra={"server_id": spec.server_id})
        finally:
            logbook.connection_closed(filt.connection_id)
        if result is None:
            if deadline.cancelled_caught:
                error = timeout_error("initialize and tools/list", spec.startup_timeout_s, probe)
                _add_noise_hint(error, probe)
                raise error
            raise attribute(SessionEnded(), probe, during="initialize")
        return result

    # ----- internals -------------------------------------------------------------------------

    def _call_timeout_s(self, server_id: str, conn: Connection) -> float:
        """The server's current `call_timeout_s` (seconds, R-3.8): a PATCH that changed only the
        timeout keeps the session (same digest, R-3.3) and applies to the next call, not at reconnect."""
        slot = self._slots.get(server_id)
        return slot.spec.call_timeout_s if slot is not None and slot.spec is not None else conn.spec.call_timeout_s

    async def _request(
        self,
        server_id: str,
        what: str,
        send: Callable[[Connection, float], Awaitable[T]],
        operation_id: str | None,
        timeout_s: float | None,
    ) -> T:
        op_id = operation_id or uuid.uuid4().hex
        if self._cancelled_early.pop(op_id, None) is not None:
            raise CallCancelled(f"operation '{op_id}' was cancelled before it started", details={"operation_id": op_id})
        if op_id in self._ops:
            raise OperationInUse(
                f"operation '{op_id}' is already running; use a new operation id per call",
                details={"operation_id": op_id},
            )
        op = _Operation(op_id, server_id, anyio.CancelScope())
        self._ops[op_id] = op
        result: T | None = None
        try:
            with op.scope:
                conn = await self.connect(server_id)
                timeout = timeout_s if timeout_s is not None else self._call_timeout_s(server_id, conn)
                try:
                    result = await self._send_once(conn, what, send, timeout)
                except _SessionExpired:
                    # the server did not run the request (404 for our session): re-initialize
                    # once and re-send once; a second expiry is an error, never a loop.
                    await self._replace_expired(server_id, conn)
                    conn = await self.connect(server_id)
                    try:
                        result = await self._send_once(conn, what, send, timeout)
                    except _SessionExpired as again:
                        raise again.error from None
        finally:
            self._ops.pop(op_id, None)
        if op.scope.cancelled_caught:
            raise CallCancelled(f"operation '{op_id}' was cancelled", details={"operation_id": op_id})
        assert result is not None
        return result

    async def _send_once(
        self, conn: Connection, what: str, send: Callable[[Connection, float], Awaitable[T]], timeout_s: float
    ) -> T:
        assert conn.session is not None
        session = conn.session
        probe = session.probe
        conn.inflight += 1
        started = anyio.current_time()
        try:
            return await send(conn, timeout_s)
        except MCPError as exc:
            # -32001 and -32000 are also ordinary server error codes: only our own deadline and a
            # transport that really ended are timeouts and lost connections (anything else is the
            # server's answer, shown with its message).
            if exc.code == types.REQUEST_TIMEOUT and anyio.current_time() - started >= timeout_s * 0.95:
                raise timeout_error(what, timeout_s) from None
            if exc.code == types.CONNECTION_CLOSED and _transport_ended(exc, session):
                await _settle_exit(probe)
                if conn.stop_requested.is_set():
                    raise ConnectionLost(
                        f"{what} was interrupted: the server was disconnected (disabled, reconfigured or "
                        "deleted) while it ran",
                        details={"reason": ErrorReason.CLOSED.value, "interrupted_by": "disconnect"},
                    ) from None
                raise attribute(exc, probe, during=what) from None
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                raise ServerRequestFailed(
                    f"the server answered {what} with error {exc.code}: {default_redactor.redact(exc.message)[:500]}",
                    details={"reason": ErrorReason.PROTOCOL.value, "rpc_code": exc.code},
                ) from None
            if exc.code == types.INVALID_REQUEST and probe.http is not None and probe.http.session_expired:
                conn.expired = True
                raise _SessionExpired(
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
            changed, conn.inflight_changed = conn.inflight_changed, anyio.Event()
            changed.set()

    async def _replace_expired(self, server_id: str, conn: Connection) -> None:
        # The expired connection closes itself once every request in flight on it has seen its own
        # 404 (see `_serve`); closing it now would fail those requests as "connection closed".
        with anyio.move_on_after(CLOSE_TIMEOUT_S):
            await conn.closed.wait()
        slot = self._slots.get(server_id)
        if slot is None:
            return
        async with slot.lock:
            if slot.conn is conn:
                await self._close_locked(slot)

    def _start_locked(self, slot: _Slot, spec: ConnectionSpec) -> Connection:
        assert self._tg is not None, "use the manager inside 'async with'"
        conn = Connection(spec, self.logbook(slot.server_id))
        slot.conn = conn
        self._set_status(slot, ServerStatus(slot.server_id, ConnectionState.CONNECTING, conn.connection_id))
        self.handshakes += 1
        self._tg.start_soon(self._run_connection, slot, conn)
        return conn

    async def _close_locked(self, slot: _Slot) -> None:
        conn, slot.conn = slot.conn, None
        if conn is None:
            return
        conn.stop()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
            await conn.closed.wait()

    def _is_current(self, slot: _Slot, conn: Connection) -> bool:
        return slot.conn is conn and slot.spec is not None and slot.spec.digest == conn.spec.digest

    def _set_status(self, slot: _Slot, status: ServerStatus) -> None:
        slot.status = status
        changed, self._status_changed = self._status_changed, anyio.Event()
        changed.set()
        self.events.publish("server.status", server_id=slot.server_id, status=status.to_dict())
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                logger.exception("runtime.status_listener_failed")

    def add_log_listener(self, listener: LogListener) -> Callable[[], None]:
        """Receive every server log message (`notifications/message`) as `(server_id, params)`.

        The listener is called synchronously and must not block (the gateway forwards them, R-8.1).
        Returns a function that removes the listener.
        """
        self._log_listeners.append(listener)

        def remove() -> None:
            if listener in self._log_listeners:
                self._log_listeners.remove(listener)

        return remove

    def _logging_handler(self, slot: _Slot, conn: Connection) -> LoggingFnT:
        async def handle(params: types.LoggingMessageNotificationParams) -> None:
            if not self._is_current(slot, conn):
                return
            self.activity.log(
                slot.server_id, conn.connection_id, level=params.level, logger=params.logger, data=params.data
            )
            for listener in list(self._log_listeners):
                try:
                    listener(slot.server_id, params)
                except Exception:
                    logger.exception("runtime.log_listener_failed")

        return handle

    def _message_handler(self, slot: _Slot, conn: Connection) -> MessageHandlerFnT:
        async def handle(message: IncomingMessage) -> None:
            # an old instance's notifications never touch the current session's catalog.
            if not isinstance(message, types.ServerNotification) or not self._is_current(slot, conn):
                return
            if message.method not in _SEEN_ELSEWHERE:
                params = (
                    message.params.model_dump(mode="json", by_alias=True, exclude_none=True) if message.params else None
                )
                self.activity.notification(slot.server_id, conn.connection_id, message.method, params)
            categories = _CHANGED_CATEGORIES.get(message.method)
            if categories is not None and conn.is_live:
                conn.request_refresh(categories)

        return handle

    async def _refresh_category(self, conn: Connection, category: Category) -> bool:
        """Refresh one category with a new generation; commit only if it succeeds (R-3.7)."""
        assert conn.session is not None
        generation = conn.catalog.generation[category] + 1
        conn.filter.sanitizer.begin(category)
        try:
            items = await fetch_category(conn.session.client, category)
        except Exception as exc:  # noqa: BLE001 - a failed refresh keeps the last valid content
            error = attribute(exc, conn.session.probe, during=f"{category} refresh")
            conn.filter.sanitizer.take(category)
            conn.catalog.errors[category] = {"code": error.code, "message": error.message}
            logger.warning(
                "server.catalog_refresh_failed",
                extra={"server_id": conn.spec.server_id, "category": category, "code": error.code},
            )
            return False
        conn.catalog.items[category] = items
        conn.catalog.generation[category] = generation
        conn.catalog.quarantined[category] = conn.filter.sanitizer.take(category)
        conn.catalog.errors[category] = None
        for note in conn.catalog.quarantined[category]:
            logger.warning(
                "server.catalog_item_quarantined",
                extra={"server_id": conn.spec.server_id, "category": category, "reason": note.reason},
            )
        return True

    async def _refresh_worker(self, slot: _Slot, conn: Connection) -> None:
        while True:
            categories = await conn.next_refresh()
            for category in CATEGORIES:
                if category in categories and self._is_current(slot, conn):
                    if await self._refresh_category(conn, category):
                        self._publish_catalog(slot, conn, (category,))
                    if category == "tools":
                        self._set_ready_status(slot, conn)

    def _publish_catalog(self, slot: _Slot, conn: Connection, categories: tuple[Category, ...]) -> None:
        self.events.publish(
            "server.catalog",
            server_id=slot.server_id,
            connection_id=conn.connection_id,
            categories=list(categories),
            counts=conn.catalog.counts(),
            generation={c: conn.catalog.generation[c] for c in categories},
            quarantined=sum(len(q) for q in conn.catalog.quarantined.values()),
        )

    def _set_ready_status(self, slot: _Slot, conn: Connection) -> None:
        assert conn.session is not None
        info = conn.session.client.server_info
        self._set_status(
            slot,
            ServerStatus(
                slot.server_id,
                ConnectionState.READY,
                conn.connection_id,
                tool_count=len(conn.catalog.tools),
                server_name=info.name if info else None,
                server_version=info.version if info else None,
                protocol_version=conn.session.client.protocol_version,
            ),
        )

    async def _run_connection(self, slot: _Slot, conn: Connection) -> None:
        spec = conn.spec
        probe = TransportProbe()
        logbook = self.logbook(slot.server_id)
        logbook.sandbox_network = spec.sandbox.policy.network if spec.sandbox is not None else None
        hooks = self._hooks_for(spec, conn.connection_id) if self._hooks_for else SessionHooks()
        hooks.message_handler = self._message_handler(slot, conn)
        hooks.logging_callback = self._logging_handler(slot, conn)
        hooks.observer = conn.filter
        hooks.on_stderr = logbook.add_stderr
        hooks.on_noise = logbook.add_noise
        conn.hooks = hooks
        error: CenterError | None = None
        stopped_by_us = False
        try:
            with conn.cancel_scope:  # cancelled by stop() while not ready
                with anyio.CancelScope(deadline=anyio.current_time() + spec.startup_timeout_s) as handshake:
                    async with open_session(spec, probe, hooks, transport_factory=self._transport_factory) as session:
                        conn.session = session
                        if not await self._refresh_category(conn, "tools"):
                            tools_error = conn.catalog.errors["tools"] or {}
                            expired = probe.http is not None and probe.http.session_expired
                            reason = ErrorReason.SESSION_EXPIRED if expired else ErrorReason.PROTOCOL
                            raise ConnectionLost(
                                f"the first tools/list failed: {tools_error.get('message', 'unknown error')}",
                                details={"reason": reason.value},
                            )
                        for category in ("prompts", "resources", "resource_templates"):
                            await self._refresh_category(conn, category)
                        handshake.deadline = math.inf
                        if not self._is_current(slot, conn):
                            stopped_by_us = True
                            return
                        conn.ready.set()
                        self._set_ready_status(slot, conn)
                        self._publish_catalog(slot, conn, CATEGORIES)
                        ended = await self._serve(slot, conn, session)
                        if ended == "stopped":
                            stopped_by_us = True
                        elif ended == "unhealthy" and conn.health_error is not None:
                            error = conn.health_error
                        elif ended == "expired":
                            error = ConnectionLost(
                                "the server's session expired (HTTP 404); the next use re-initializes",
                                details={"reason": ErrorReason.SESSION_EXPIRED.value},
                            )
                        else:
                            await _settle_exit(probe)
                            error = attribute(SessionEnded(), probe, during="the session")
                if handshake.cancelled_caught and not conn.ready.is_set():
                    error = timeout_error("initialize", spec.startup_timeout_s, probe)
                    _add_noise_hint(error, probe)
            if conn.cancel_scope.cancelled_caught:
                stopped_by_us = True
        except Exception as exc:  # noqa: BLE001 - every failure becomes the connection's attributed error
            if conn.stop_requested.is_set():
                stopped_by_us = True
            elif conn.expired:
                error = ConnectionLost(
                    "the server's session expired (HTTP 404); the next use re-initializes",
                    details={"reason": ErrorReason.SESSION_EXPIRED.value},
                )
            else:
                error = attribute(exc, probe, during="the session" if conn.ready.is_set() else "initialize")
        finally:
            if conn.raw is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
                    await conn.raw.aclose()
            logbook.connection_closed(conn.connection_id)
            conn.error = error
            conn.closed.set()
            if slot.conn is conn:
                if error is not None:
                    logger.warning(
                        "server.connection_failed",
                        extra={"server_id": slot.server_id, "code": error.code, "reason": error.details.get("reason")},
                    )
                    self._set_status(
                        slot,
                        ServerStatus(slot.server_id, ConnectionState.ERROR, conn.connection_id, error=error.to_dict()),
                    )
                elif not stopped_by_us:
                    self._set_status(slot, ServerStatus(slot.server_id, ConnectionState.DISCONNECTED))

    async def _serve(self, slot: _Slot, conn: Connection, session: OpenSession) -> str:
        """Run the ready connection until it ends; return "stopped", "expired" or "closed"."""
        expired = session.probe.http.expired if session.probe.http is not None else None
        unhealthy = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresh_worker, slot, conn)
            level = self._log_levels.get(slot.server_id)
            if level is not None:
                tg.start_soon(self._reapply_level, conn, session, level)
            if session.probe.stdio is None:
                tg.start_soon(self._health_worker, conn, session, unhealthy)
            waits = [conn.stop_requested, session.tapped.closed, unhealthy]
            waits += [expired] if expired is not None else []
            await _wait_any(*waits)
            if expired is not None and expired.is_set() and not conn.stop_requested.is_set():
                # Requests already sent on the expired session each get their own 404: let them
                # see it (and re-send once on the new session) before this one closes.
                with anyio.move_on_after(CLOSE_TIMEOUT_S):
                    while conn.inflight and not conn.stop_requested.is_set():
                        await _wait_any(conn.inflight_changed, conn.stop_requested)
            tg.cancel_scope.cancel()
        if conn.stop_requested.is_set():
            return "stopped"
        if expired is not None and expired.is_set():
            conn.expired = True
            return "expired"
        return "unhealthy" if unhealthy.is_set() and not session.tapped.closed.is_set() else "closed"

    async def _reapply_level(self, conn: Connection, session: OpenSession, level: str) -> None:
        """A new session starts at the server's default level: send the one the user chose (R-12.1)."""
        try:
            with anyio.fail_after(HEALTH_TIMEOUT_S):
                await _send_level(session, level, HEALTH_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a server that refuses it keeps its default; the log says so
            logger.warning("server.log_level_not_applied", extra={"server_id": conn.spec.server_id, "level": level})

    async def _health_worker(self, conn: Connection, session: OpenSession, unhealthy: anyio.Event) -> None:
        """Ping a remote server every `HEALTH_INTERVAL_S` seconds (R-3.11).

        An HTTP server that went away is otherwise "ready" until the next request fails, and the
        SDK's GET stream gives up silently. A ping the server answers — even with an error (it
        may not implement ping) — means alive; no answer in `HEALTH_TIMEOUT_S` seconds or a
        broken transport ends the connection with an attributed error; the next use reconnects.
        A Streamable HTTP server's GET stream that ends or cannot reopen (`stream_lost`) makes
        the next ping come at once (at most one per `EARLY_PING_MIN_INTERVAL_S`), so a server
        that died is seen in about a second, not at the next interval.
        """
        http = session.probe.http
        last_ping = anyio.current_time()
        while True:
            if http is None:
                await anyio.sleep(HEALTH_INTERVAL_S)
            else:
                with anyio.move_on_after(HEALTH_INTERVAL_S) as interval:
                    await http.stream_lost.wait()
                if not interval.cancelled_caught:
                    http.stream_lost = anyio.Event()
                    await anyio.sleep(max(0.0, last_ping + EARLY_PING_MIN_INTERVAL_S - anyio.current_time()))
            last_ping = anyio.current_time()
            try:
                with anyio.fail_after(HEALTH_TIMEOUT_S):
                    await session.client.session.send_ping()  # pyright: ignore[reportDeprecated]
                continue
            except MCPError as exc:
                if exc.code != types.CONNECTION_CLOSED and not session.tapped.closed.is_set():
                    continue  # the server answered: it is there
                conn.health_error = attribute(exc, session.probe, during="a health ping")
            except TimeoutError:
                conn.health_error = timeout_error("a health ping", HEALTH_TIMEOUT_S, session.probe)
            except Exception as exc:  # noqa: BLE001 - any other failure of the ping is the connection's
                conn.health_error = attribute(exc, session.probe, during="a health ping")
            unhealthy.set()
            return


async def _decline_during_test(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """A test connection calls no tool, so nobody could answer a question asked during it."""
    del context, params
    return types.ElicitResult(action="decline")


async def _refuse_sampling_during_test(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
    """No agent is behind a test connection to sample for (R-8.5)."""
    del context, params
    return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is not available during a test connection")


async def _refuse_roots_during_test(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
    """No agent is behind a test connection to list roots for (R-8.5)."""
    del context
    return types.ErrorData(code=types.INVALID_REQUEST, message="roots are not available during a test connection")


class _SessionExpired(Exception):
    def __init__(self, error: CenterError) -> None:
        super().__init__(error.message)
        self.error = error


_SDK_CLOSED_PREFIXES = ("Connection closed", "SSE stream")
"""Messages of the CONNECTION_CLOSED errors the SDK (and our SSE transport) synthesize."""


def _transport_ended(exc: MCPError, session: OpenSession) -> bool:
    """True when a CONNECTION_CLOSED error came from our side of the wire, not from the server."""
    if session.tapped.closed.is_set() or session.probe.returncode is not None or session.probe.fatal is not None:
        return True
    if exc.message.startswith(_SDK_CLOSED_PREFIXES):
        return True
    return isinstance(exc.data, dict) and "reason" in exc.data


async def _settle_exit(probe: TransportProbe) -> None:
    """When a stdio session ends, give the process a moment to be reaped so its exit code is known."""
    if probe.stdio is not None and probe.stdio.returncode is None:
        with anyio.move_on_after(SESSION_END_EXIT_WAIT_S):
            await probe.stdio.exited.wait()


def _add_noise_hint(error: CenterError, probe: TransportProbe) -> None:
    """A stdio server that printed non-protocol lines and never answered gets a clearer message."""
    if probe.noise_count:
        first = default_redactor.redact(probe.first_noise or "")
        error.message += (
            f"; the server printed {probe.noise_count} line(s) on stdout that are not JSON-RPC "
            f"(first: {first[:120]!r}) — it may log to stdout instead of stderr"
        )
        error.details.update(noise_lines=probe.noise_count, first_noise=first[:200])


async def _wait_any(*events: anyio.Event) -> None:
    """Return as soon as one of `events` is set."""
    if any(e.is_set() for e in events):
        return
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


def _elapsed_ms(started: float) -> float:
    return round((anyio.current_time() - started) * 1000, 1)


async def _send_level(session: OpenSession, level: str, timeout_s: float) -> None:
    """`logging/setLevel` without the SDK's deprecated helper (the capability is deprecated from 2026-07-28 on)."""
    await session.client.session.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),  # pyright: ignore[reportArgumentType]
        types.EmptyResult,
        request_read_timeout_seconds=timeout_s,
    )
