"""The connection manager: one supervised session per enabled server (R-2.3, R-2.4, R-3).

Shape (see docs/sdk-notes.md#manager-shape and docs/architecture.md#connection-lifecycle):

- Per server there is a slot holding the desired spec and the current `Connection` (its handshake,
  catalog and serving loop are in `runtime/connection.py`). Concurrent `connect()` calls share the
  current attempt (R-3.4); `configure()`, `disconnect()` and `connect()` take the slot lock, and a
  slot removed meanwhile is never written to (a `configure(None)` overlapped by `configure(spec)`
  leaves the second one in force, issue 14 item 6). A changed spec stops the current connection and
  waits for it to close before anyone can start a new one (the disconnect barrier, R-3.3).
- Every connection has a unique `connection_id` (R-3.5). A candidate re-checks after its
  handshake that it is still the slot's connection for the current spec digest; a drifted
  candidate closes instead of becoming ready (R-3.3). Notifications, status changes and
  catalog refreshes of a connection that is no longer the slot's current one are ignored.
- A connection that failed is tried again by itself (issue 14, item 12): after
  `RECONNECT.delay(n)` seconds (exponential with a floor, a cap and jitter; stdio servers that keep
  exiting slow down to `STDIO_RECONNECT`), shown in the status as `next_attempt_at`, unless only a
  user can help (authorization, a command that cannot start; the classification and the policies
  are `runtime/reconnect.py`). Any connect — a call, a catalog refresh, "Refresh catalog" — tries at once.
- Calls run in the caller's task on the shared session (each request is built in `runtime/calls.py`),
  inside an operation admitted before it waits for anything (`runtime/operations.py`), so a cancel
  by operation id also ends a wait for a connection (R-3.8). Tool-call deadlines pause while a
  human answers (R-6.1) and restart on each progress notification, up to `PROGRESS_MAX_FACTOR`
  times the timeout in total (issue 14, item 4). Results are bounded (R-3.9) and checked against
  the tool's outputSchema. A Streamable HTTP 404 on our session id re-initializes once and re-sends
  the request once (R-3.10).
- A connection's notifications (log messages, list_changed) are handled in `runtime/notifications.py`;
  health pings and the serving loop are the connection's own (`runtime/connection.py`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp.client import Transport
from mcp.shared.dispatcher import ProgressFnT

from mcp_center.errors import CenterError, ConnectionLost, ServerDisabled
from mcp_center.models import ConnectionState, ErrorReason
from mcp_center.runtime import calls
from mcp_center.runtime.activity import ActivityRecorder
from mcp_center.runtime.catalog import CATEGORIES, Catalog, Category
from mcp_center.runtime.connection import (
    CLOSE_TIMEOUT_S,
    HEALTH_TIMEOUT_S,
    Connection,
    ProbeResult,
    RefreshOutcome,
    ServerStatus,
    ready_status,
    wait_any,
)
from mcp_center.runtime.console import RawAnswer, check_level, send_level
from mcp_center.runtime.deadlines import CallDeadlines
from mcp_center.runtime.events import EventBus
from mcp_center.runtime.forward import RawForwarder
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.notifications import LogListener, Notifications, ResourceListener
from mcp_center.runtime.operations import Operations
from mcp_center.runtime.probing import probe_connection
from mcp_center.runtime.reconnect import RECONNECT, STDIO_RECONNECT, retried
from mcp_center.runtime.requests import PROGRESS_MAX_FACTOR, SessionExpired, send_once
from mcp_center.runtime.results import DEFAULT_MAX_RESULT_BYTES
from mcp_center.runtime.session import SessionHooks
from mcp_center.runtime.subscriptions import SUBSCRIPTION_METHODS, ResourceSubscriptions
from mcp_center.transports import ConnectionSpec, open_transport

__all__ = [
    "PROGRESS_MAX_FACTOR",
    "RECONNECT",
    "STDIO_RECONNECT",
    "Connection",
    "ConnectionManager",
    "ProbeResult",
    "RawAnswer",
    "ServerStatus",
    "TransportFactory",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

TransportFactory = Callable[..., AbstractAsyncContextManager[Transport]]
"""`open_transport`-compatible factory `(spec, probe, *, on_stderr, on_noise)`; injectable for tests."""


@dataclass
class _Slot:
    server_id: str
    spec: ConnectionSpec | None = None
    conn: Connection | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    status: ServerStatus | None = None
    failures: int = 0
    """Connection attempts that failed in a row (reset when one becomes ready)."""
    retry: anyio.CancelScope | None = None
    """The pending automatic reconnect, if any."""
    catalog: Catalog | None = None
    """The catalog of the last connection that became ready (a reconnect keeps what fails to list)."""
    last_error: CenterError | None = None


class _Owner:
    """A connection's view of its slot (`runtime.connection.ConnectionOwner`)."""

    def __init__(self, manager: ConnectionManager, slot: _Slot) -> None:
        self._manager = manager
        self._slot = slot

    def is_current(self, conn: Connection) -> bool:
        return self._manager._is_current(self._slot, conn)  # pyright: ignore[reportPrivateUsage]

    def became_ready(self, conn: Connection) -> None:
        self._slot.failures = 0
        self._slot.catalog = conn.catalog
        self._manager._set_status(self._slot, ready_status(conn))  # pyright: ignore[reportPrivateUsage]
        self._manager._publish_catalog(self._slot, conn, CATEGORIES)  # pyright: ignore[reportPrivateUsage]
        self._manager._ready_hooks(conn)  # pyright: ignore[reportPrivateUsage]

    def refreshed(self, conn: Connection, category: Category, outcome: RefreshOutcome) -> None:
        if outcome == "committed":
            self._manager._publish_catalog(self._slot, conn, (category,))  # pyright: ignore[reportPrivateUsage]
        if category == "tools" and self.is_current(conn):
            # The tool count (and, after a failure, the catalog's error) may have changed.
            self._manager._set_status(self._slot, ready_status(conn))  # pyright: ignore[reportPrivateUsage]


class ConnectionManager:
    """Own every long-lived server session. Use as `async with ConnectionManager() as manager:`.

    Args:
        on_status: Called (synchronously, must not block) whenever a server's status changes.
        hooks_for: Builds per-connection session hooks (elicitation, sampling); optional.
        events: Receives `server.status`, `server.catalog` and `operation.progress` events (R-3.11).
        transport_factory: Opens transports; defaults to `transports.open_transport`.
        deadlines: Tool-call deadlines, paused per connection while a human answers (R-6.1).
        rng: Random source of the reconnect jitter (tests pass a seeded one).
    """

    def __init__(
        self,
        *,
        on_status: Callable[[ServerStatus], None] | None = None,
        hooks_for: Callable[[ConnectionSpec, str], SessionHooks] | None = None,
        events: EventBus | None = None,
        transport_factory: TransportFactory = open_transport,
        deadlines: CallDeadlines | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._on_status = on_status
        self.deadlines = deadlines or CallDeadlines()
        self._hooks_for = hooks_for
        self.events = events or EventBus()
        self._transport_factory = transport_factory
        self._rng = rng or random.Random()  # noqa: S311 - reconnect jitter, not cryptography
        self._slots: dict[str, _Slot] = {}
        self._logbooks: dict[str, ServerLogbook] = {}
        self.operations = Operations()
        """Running operations by id (`cancel`, `is_running`); the service admits its use cases here."""
        self._tg: anyio.abc.TaskGroup | None = None
        self._status_changed = anyio.Event()
        self._log_levels: dict[str, str] = {}
        """server id → the `logging/setLevel` level the user chose; sent again on each new session."""
        self._subscriptions = ResourceSubscriptions()
        """The resource URIs `forward` subscribed to per server (the gateway's agents, R-8.1)."""
        self.activity = ActivityRecorder(self.events)
        """Log messages, notifications and call progress of every server, for the page (R-12.1)."""
        self._notifications = Notifications(self.activity)
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

        Serialized per server: the last call to take the server's lock decides, and a slot that an
        earlier `configure(None)` removed is never written to. A changed digest or sandbox stops the
        current connection and waits until it has closed before returning (disconnect barrier); the
        next `connect()` uses the new spec. An unchanged digest keeps the running session.
        """
        while True:
            slot = self._slots.setdefault(server_id, _Slot(server_id))
            async with slot.lock:
                if self._slots.get(server_id) is not slot:
                    continue  # removed while we waited for its lock: start over with the current slot
                old = slot.spec
                slot.spec = spec
                changed = spec is None or old is None or old.digest != spec.digest or old.sandbox != spec.sandbox
                if changed:
                    _cancel_retry(slot)
                    slot.failures = 0
                    slot.catalog = None
                if changed and slot.conn is not None:
                    await self._close_locked(slot)
                if spec is None or changed:
                    self._set_status(slot, ServerStatus(server_id, ConnectionState.DISCONNECTED))
                if spec is None and slot.conn is None:
                    del self._slots[server_id]
                return

    def forget(self, server_id: str) -> None:
        """Drop the debugging records of a deleted server."""
        self._logbooks.pop(server_id, None)
        self.activity.forget(server_id)
        self._log_levels.pop(server_id, None)
        self._subscriptions.forget(server_id)

    # ----- connect / disconnect -------------------------------------------------------------

    async def connect(self, server_id: str) -> Connection:
        """Return a ready connection, starting one if needed; concurrent callers share one attempt (R-3.4).

        Raises:
            ServerDisabled: the server has no spec (not enabled or not runnable).
            CenterError: the attempt failed (attributed, R-3.1).
        """
        slot = self._slots.get(server_id)
        if (
            slot is not None
            and (conn := slot.conn) is not None
            and conn.serving
            and (spec := slot.spec) is not None
            and spec.digest == conn.spec.digest  # `_is_current(slot, conn)` in line
        ):
            return conn  # the hot path: a live, current connection not stopping needs no lock
        while True:
            slot = self._slots.get(server_id)
            if slot is None:
                raise ServerDisabled(f"server '{server_id}' is not enabled", details={"server_id": server_id})
            async with slot.lock:
                if self._slots.get(server_id) is not slot:
                    continue
                spec = slot.spec
                if spec is None:
                    raise ServerDisabled(f"server '{server_id}' is not enabled", details={"server_id": server_id})
                conn = slot.conn
                if conn is None or conn.closed.is_set():
                    conn = self._start_locked(slot, spec)
                break
        await wait_any(conn.ready, conn.closed)
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
            _cancel_retry(slot)
            await self._close_locked(slot)
            self._set_status(slot, ServerStatus(server_id, ConnectionState.DISCONNECTED))

    async def close_all(self) -> None:
        """Stop every connection and wait (bounded) until all have closed."""
        for slot in list(self._slots.values()):
            _cancel_retry(slot)
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

    def failing(self, server_id: str) -> CenterError | None:
        """What the server's last attempt failed with while its status is `failing`, else None (cli40)."""
        slot = self._slots.get(server_id)
        return slot.last_error if slot is not None and slot.status is not None and slot.status.failing else None

    def current(self, server_id: str) -> Connection | None:
        """The live connection of a server, or None (never starts one)."""
        slot = self._slots.get(server_id)
        if slot is None or slot.conn is None or not slot.conn.is_live:
            return None
        return slot.conn

    def catalog_key(self) -> tuple[bool, tuple[tuple[str, str | None, int], ...]]:
        """In one pass over the configured servers (`configured()`, sorted by id): whether any of
        them is disconnected (`status(id).state`), and per server `(id, connection id, generation of
        its tool catalog)` of its live connection (`current(id)`), `(id, None, -1)` without one.
        The key changes with every enable, disable, reconnect and tool catalog refresh (R-3.7); one
        call instead of one `status` and one `current` per server, twice per forwarded call (issue 12)."""
        disconnected = False
        key: list[tuple[str, str | None, int]] = []
        slots = self._slots
        for server_id in sorted(slots):
            slot = slots[server_id]
            if slot.spec is None:
                continue
            status = slot.status
            if status is None or status.state is ConnectionState.DISCONNECTED:
                disconnected = True
            conn = slot.conn
            if conn is None or not conn.is_live:
                key.append((server_id, None, -1))
            else:
                key.append((server_id, conn.connection_id, conn.catalog.generation["tools"]))
        return disconnected, tuple(key)

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
        """Refresh categories now on the live session (the same path list_changed takes) and return the catalog.

        A server in error is connected at once (a manual refresh does not wait for the automatic
        reconnect). Each category's refresh is numbered: an answer older than one already committed
        is discarded (R-3.7).
        """
        conn = await self.connect(server_id)
        for category in categories:
            outcome = await conn.refresh(category)
            slot = self._slots.get(server_id)
            if slot is not None and slot.conn is conn:
                _Owner(self, slot).refreshed(conn, category, outcome)
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
        """Call a tool on the server's live session (connecting lazily; `runtime/calls.py` sends it).

        Every call asks the server for progress (a `progressToken`); each progress notification is
        published as an `operation.progress` event, passed to `progress`, and restarts the call's
        timeout clock, up to `PROGRESS_MAX_FACTOR` times the timeout in total.

        Args:
            progress: Also receives the server's progress notifications for this call
                `(progress, total | None, message | None)` (the gateway forwards them, R-8.1).
            operation_id: Lets `cancel(operation_id)` abort this call — while it waits for a
                connection or while it runs (R-3.8).
            timeout_s: Seconds without progress before the call times out; defaults to the server's
                `call_timeout_s`. The clock stops while an elicitation card of the connection is
                pending (R-6.1).
            max_result_bytes: Result size bound; defaults to the spec's (R-3.9).
        Returns:
            The MCP result, truncated and marked if over the bound, marked as an error if its
            structured output breaks the tool's outputSchema (`results.check_output`). An `isError`
            result is a result, not an exception.
        Raises:
            CallCancelled: cancelled by operation id (before admission, while queued or running).
            ServerTimeout: no answer within the timeout (the SDK sends notifications/cancelled).
            CenterError: connection or protocol failure, attributed.
        """
        return await calls.call_tool(
            self,
            server_id,
            name,
            arguments,
            operation_id=operation_id,
            timeout_s=timeout_s,
            max_result_bytes=max_result_bytes,
            progress=progress,
        )

    async def get_prompt(
        self, server_id: str, name: str, arguments: Mapping[str, str] | None = None, *, operation_id: str | None = None
    ) -> types.GetPromptResult:
        """`prompts/get` on the server's live session (R-5.4 builds on this); raises as `call_tool`."""
        return await calls.get_prompt(self, server_id, name, arguments, operation_id=operation_id)

    async def read_resource(
        self, server_id: str, uri: str, *, operation_id: str | None = None
    ) -> types.ReadResourceResult:
        """`resources/read` on the server's live session (R-5.5 builds on this); raises as `call_tool`."""
        return await calls.read_resource(self, server_id, uri, operation_id=operation_id)

    def forward(
        self,
        server_id: str,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        operation_id: str | None = None,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
        answer: calls.EarlyAnswer | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Send one request with its params as they came and return the server's raw result (R-8.1).

        The gateway's lean path: no typed request or result model is built. The session's own
        dispatcher sends it (one JSON-RPC request on the live session, whatever the transport),
        the tap still logs, redacts (R-1.5) and counts it. A `tools/call` gets what `call_tool`
        gives: refused without asking a server that offers no tools (issue 14 item 16), its
        deadline restarted by progress up to `PROGRESS_MAX_FACTOR` times (item 4, progress
        published as `operation.progress`), its structured output checked against the tool's
        outputSchema (item 3) and the result bounded (R-3.9). Resource (un)subscriptions are counted
        per server and URI and sent again on each new session (`runtime.subscriptions`, R-8.1).

        Args:
            method: A client-to-server request method, e.g. `tools/call`, `completion/complete`.
            params: Its params (JSON values); `_meta.progressToken` is replaced by our own when
                `progress` is given.
            operation_id, timeout_s, progress: As for `call_tool`; the deadline pauses while an
                elicitation card of the connection is pending (R-6.1). answer: see `calls.forward`.
        Returns:
            The coroutine giving the JSON-RPC `result` object (await it; no frame of ours per resume, issue 12).
        Raises:
            ServerRequestFailed: the server answered a JSON-RPC error (`rpc_error` holds it, redacted).
            CallCancelled, ServerTimeout, CenterError: as for `call_tool`.
        """
        if method in SUBSCRIPTION_METHODS:  # counted (rare); every other method goes straight on
            # A partial, not a lambda: the lambda's seven cells were made on every call (issue 12).
            send = functools.partial(calls.forward, self, server_id, method, params, operation_id=operation_id)
            send = functools.partial(send, timeout_s=timeout_s, progress=progress)
            return self._subscriptions.forward(server_id, method, params, send)
        return calls.forward(
            self,
            server_id,
            method,
            params,
            operation_id=operation_id,
            timeout_s=timeout_s,
            progress=progress,
            answer=answer,
        )

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

        The JSON-RPC console of the settings page (`runtime.console.send_raw`): a server's malformed
        answer is shown as it came. The request goes through the session like any other: the tap
        records it in the request log (R-3.11), `cancel(operation_id)` sends
        `notifications/cancelled`, and `timeout_s` (default: the server's `call_timeout_s`) bounds it.

        Args:
            method: Any client-to-server request method (the caller refuses `initialize`).
            params: Its params, as JSON values (None: no params).
        Returns:
            `RawAnswer`: the `result` object or the JSON-RPC `error` the server answered, the time
            it took and the connection that carried it.
        Raises:
            CallCancelled, ServerTimeout, and attributed connection errors (as `call_tool`).
        """
        return await calls.request_raw(self, server_id, method, params, operation_id=operation_id, timeout_s=timeout_s)

    async def set_logging_level(self, server_id: str, level: str) -> None:
        """Send `logging/setLevel` on the live session and keep the level for the server's next sessions.

        Raises:
            RequestInvalid: `level` is not one of `LOG_LEVELS`.
            ServerRequestFailed: the server refused it (e.g. it declares no `logging` capability).
            CallCancelled, ServerTimeout, connection errors as `call_tool`.
        """
        check_level(level)
        await calls.set_level(self, server_id, level)
        self._log_levels[server_id] = level

    def logging_level(self, server_id: str) -> str | None:
        """The `logging/setLevel` level chosen for the server (None: never set; the server's default)."""
        return self._log_levels.get(server_id)

    async def _reapply_level(self, conn: Connection, level: str) -> None:
        """A new session starts at the server's default level: send the one the user chose (R-12.1)."""
        try:
            with anyio.fail_after(HEALTH_TIMEOUT_S):
                assert conn.session is not None
                await send_level(conn.session, level, HEALTH_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a server that refuses it keeps its default; the log says so
            logger.warning("server.log_level_not_applied", extra={"server_id": conn.spec.server_id, "level": level})

    def is_running(self, operation_id: str) -> bool:
        """True while a request with this operation id is admitted and not finished."""
        return self.operations.is_running(operation_id)

    def cancel(self, operation_id: str) -> bool:
        """Cancel a request by operation id. Returns True if an admitted request was cancelled.

        A cancel that arrives before the request is admitted is remembered (bounded in number
        and time) and the request is refused when it arrives (R-3.8).
        """
        return self.operations.cancel(operation_id)

    # ----- temporary connection (test) ----------------------------------------------------------

    async def probe(self, spec: ConnectionSpec) -> ProbeResult:
        """Open a temporary connection: initialize + tools/list + close (R-2.2).

        Runs in the caller's task, independent of any long-lived connection of the server; its
        traffic is recorded in the server's logbook.

        Raises:
            ServerTimeout: initialize + tools/list took longer than `spec.startup_timeout_s`.
            CenterError: attributed failure (refused, DNS, process exited with code N, ...); a
                failing `tools/list` is attributed to it, while the server still runs.
        """
        logbook = self.logbook(spec.server_id)
        logbook.sandbox_network = spec.sandbox.policy.network if spec.sandbox is not None else None
        self.handshakes += 1
        return await probe_connection(spec, logbook, self._transport_factory)

    # ----- internals -------------------------------------------------------------------------

    @property
    def progress_max_factor(self) -> float:
        """`PROGRESS_MAX_FACTOR`, read when a call starts (`runtime/calls.py`; tests lower it here)."""
        return PROGRESS_MAX_FACTOR

    def max_result_bytes(self, server_id: str) -> int:
        """The server's current result size bound in bytes (R-3.9; the default when it has no spec)."""
        slot = self._slots.get(server_id)
        return slot.spec.max_result_bytes if slot and slot.spec else DEFAULT_MAX_RESULT_BYTES

    def raw_forwarder(self, server_id: str, conn: Connection) -> RawForwarder | None:
        """The connection's lean forwarder (Streamable HTTP only), built on first use (`runtime/calls.py`)."""
        slot = self._slots.get(server_id)
        if conn.raw is not None or slot is None:
            return conn.raw
        is_current = self._is_current_of(slot, conn)
        return conn.raw_forwarder(
            self._notifications.logging_handler(server_id, conn, is_current),
            self._notifications.list_changed_handler(conn, is_current),
        )

    async def run_request(
        self,
        server_id: str,
        what: str,
        send: Callable[[Connection, float], Awaitable[T]],
        operation_id: str | None,
        timeout_s: float | None,
    ) -> T:
        """Admit `operation_id` (cancelled by id: `CallCancelled`, R-3.8), then `run_admitted`."""
        with self.operations.admit(operation_id):
            return await self.run_admitted(server_id, what, send, timeout_s)
        raise AssertionError("unreachable: admit() raises CallCancelled when it swallowed a cancel")

    async def run_admitted(
        self, server_id: str, what: str, send: Callable[[Connection, float], Awaitable[T]], timeout_s: float | None
    ) -> T:
        """Connect and `send(conn, timeout_s or call_timeout_s)` inside an admission the caller entered
        (no second admission per call, issue 12); once more after a 404 for our session (R-3.10).
        Raises `CenterError`: what `send` or the connection raised, attributed (`requests.send_once`)."""
        conn = await self.connect(server_id)
        timeout = timeout_s
        if timeout is None:  # the server's current `call_timeout_s`: a PATCH of only the timeout
            # keeps the session (same digest, R-3.3) and applies to the next call, not at reconnect
            slot = self._slots.get(server_id)
            spec = slot.spec if slot is not None and slot.spec is not None else conn.spec
            timeout = spec.call_timeout_s
        try:
            return await send_once(conn, what, send, timeout)
        except SessionExpired:
            # the server did not run the request (404 for our session): re-initialize
            # once and re-send once; a second expiry is an error, never a loop.
            await self._replace_expired(server_id, conn)
            conn = await self.connect(server_id)
            try:
                return await send_once(conn, what, send, timeout)
            except SessionExpired as again:
                raise again.error from None

    async def _replace_expired(self, server_id: str, conn: Connection) -> None:
        # The expired connection closes itself once every request in flight on it has seen its own
        # 404 (see `Connection._serve`); closing it now would fail those requests as "connection closed".
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
        _cancel_retry(slot)
        conn = Connection(
            spec,
            self.logbook(slot.server_id),
            previous=slot.catalog,
            subscriptions=self._subscriptions.of(slot.server_id),
        )
        slot.conn = conn
        # A reconnect after failures keeps saying why the server was down until this attempt ends.
        last_error = slot.status.error if slot.failures and slot.status is not None else None
        self._set_status(
            slot,
            ServerStatus(
                slot.server_id, ConnectionState.CONNECTING, conn.connection_id, error=last_error, attempt=slot.failures
            ),
        )
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

    def _ready_hooks(self, conn: Connection) -> None:
        """What a connection that just became ready needs: the log level the user chose (R-12.1)."""
        level = self._log_levels.get(conn.spec.server_id)
        if level is not None and self._tg is not None:
            self._tg.start_soon(self._reapply_level, conn, level)

    def _is_current(self, slot: _Slot, conn: Connection) -> bool:
        return slot.conn is conn and slot.spec is not None and slot.spec.digest == conn.spec.digest

    def _is_current_of(self, slot: _Slot, conn: Connection) -> Callable[[], bool]:
        """`_is_current(slot, conn)` as a question a notification handler asks when it runs."""
        return lambda: self._is_current(slot, conn)

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
        return self._notifications.add_log_listener(listener)

    def add_resource_listener(self, listener: ResourceListener) -> Callable[[], None]:
        """Receive every `notifications/resources/updated` of a current connection as `(server_id, uri)`
        (`Notifications.add_resource_listener`). Returns a function that removes the listener."""
        return self._notifications.add_resource_listener(listener)

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

    async def _run_connection(self, slot: _Slot, conn: Connection) -> None:
        logbook = self.logbook(slot.server_id)
        logbook.sandbox_network = conn.spec.sandbox.policy.network if conn.spec.sandbox is not None else None
        hooks = self._hooks_for(conn.spec, conn.connection_id) if self._hooks_for else SessionHooks()
        hooks.message_handler = self._notifications.message_handler(
            slot.server_id, conn, self._is_current_of(slot, conn)
        )
        hooks.logging_callback = self._notifications.logging_handler(
            slot.server_id, conn, self._is_current_of(slot, conn)
        )
        hooks.observer = conn.filter
        hooks.on_stderr = logbook.add_stderr
        hooks.on_noise = logbook.add_noise
        conn.hooks = hooks
        error: CenterError | None = None
        try:
            error = await conn.run(_Owner(self, slot), hooks, self._transport_factory)
        finally:
            if conn.raw is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
                    await conn.raw.aclose()
            logbook.connection_closed(conn.connection_id)
            conn.error = error
            conn.mark_closed()
            if slot.conn is conn:
                if error is not None:
                    self._failed(slot, conn, error)
                elif not conn.stopped_by_us:
                    self._set_status(slot, ServerStatus(slot.server_id, ConnectionState.DISCONNECTED))

    def _failed(self, slot: _Slot, conn: Connection, error: CenterError) -> None:
        """Record a failed connection and schedule the automatic reconnect, unless only a user can help."""
        slot.failures += 1
        slot.last_error = error
        reason = error.details.get("reason")
        logger.warning(
            "server.connection_failed",
            extra={"server_id": slot.server_id, "code": error.code, "reason": reason, "attempt": slot.failures},
        )
        next_at: datetime | None = None
        if retried(error) and slot.spec is not None and self._tg is not None:
            policy = STDIO_RECONNECT if conn.spec.argv else RECONNECT
            delay = policy.delay(slot.failures, rng=self._rng)
            next_at = datetime.now(UTC) + timedelta(seconds=delay)
            slot.retry = anyio.CancelScope()
            self._tg.start_soon(self._reconnect_later, slot, conn, slot.retry, delay)
        self._set_status(
            slot,
            ServerStatus(
                slot.server_id,
                ConnectionState.ERROR,
                conn.connection_id,
                error=error.to_dict(),
                next_attempt_at=next_at,
                attempt=slot.failures,
            ),
        )

    async def _reconnect_later(self, slot: _Slot, failed: Connection, scope: anyio.CancelScope, delay: float) -> None:
        with scope:
            await anyio.sleep(delay)
        if scope.cancelled_caught or slot.retry is not scope:
            return
        slot.retry = None
        if slot.conn is not failed or self._slots.get(slot.server_id) is not slot or slot.spec is None:
            return  # something else connected, reconfigured or removed the server meanwhile
        logger.info("server.reconnecting", extra={"server_id": slot.server_id, "attempt": slot.failures + 1})
        with contextlib.suppress(CenterError):  # a failed attempt records its error and schedules the next
            await self.connect(slot.server_id)


def _cancel_retry(slot: _Slot) -> None:
    if slot.retry is not None:
        slot.retry.cancel()
        slot.retry = None
