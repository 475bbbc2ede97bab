"""The connection manager: one long-lived session per enabled server (R-2.3, R-2.4, R-3).

Shape (see `../shared/notes/sdk-2.3.md` §2):

- Each connection is one task in the manager's task group. That task enters and exits the
  transport and the SDK `Client` (anyio cancel scopes must be exited by the task that entered
  them), announces `ready` after initialize + the first catalog, and waits until it is stopped
  or the server side ends.
- Per server there is a slot holding the desired spec and the current connection. Concurrent
  `connect()` calls share the current attempt (R-3.4); `disconnect()` and `configure()` take
  the slot lock, stop the current connection and wait for it to close before anyone can start a
  new one (the disconnect barrier, R-3.3).
- Every connection has a unique `connection_id` (R-3.5). A candidate re-checks after its
  handshake that it is still the slot's connection for the current spec digest; a drifted
  candidate closes instead of becoming ready (R-3.3).
- Calls run in the caller's task on the shared session; the SDK fails pending requests when
  the session ends, and a call's cancel scope is registered under its operation id so
  `cancel(operation_id)` reaches it (the SDK then sends `notifications/cancelled`, R-3.8).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_center.errors import CallCancelled, CenterError, ConnectionLost, ServerDisabled
from mcp_center.models import ConnectionState
from mcp_center.runtime.attribution import attribute, timeout_error
from mcp_center.runtime.session import OpenSession, SessionHooks, list_all_tools, open_session
from mcp_center.transports import ConnectionSpec, TransportProbe

__all__ = ["Connection", "ConnectionManager", "ProbeResult", "ServerStatus"]

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 15.0
"""Seconds to wait for a connection to close (a stdio close can take ~7 s: grace, TERM, KILL)."""
CANCELLED_OPS_REMEMBERED = 1024
"""Bound on remembered cancel-before-admission operation ids (R-3.8)."""


@dataclass(frozen=True)
class ServerStatus:
    """What the runtime knows about one server right now (R-3.1, R-3.11).

    Attributes:
        state: disconnected / connecting / ready / error.
        connection_id: The current connection's id, or None.
        error: `{"code", "message", "details"}` of the last failure when state is error.
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


class Connection:
    """One client instance for one server. Only the manager creates these."""

    def __init__(self, spec: ConnectionSpec) -> None:
        self.connection_id = uuid.uuid4().hex
        self.spec = spec
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self.session: OpenSession | None = None
        self.tools: list[types.Tool] = []
        self.error: CenterError | None = None
        self.stop_requested = anyio.Event()
        self.cancel_scope = anyio.CancelScope()

    def stop(self) -> None:
        """Ask the connection to close: gracefully when ready, by cancelling the handshake otherwise."""
        self.stop_requested.set()
        if not self.ready.is_set():
            self.cancel_scope.cancel()

    @property
    def is_live(self) -> bool:
        """Ready and not closed."""
        return self.ready.is_set() and not self.closed.is_set()


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
    scope: anyio.CancelScope
    connection_id: str


class ConnectionManager:
    """Own every long-lived server session. Use as `async with ConnectionManager() as manager:`.

    Args:
        on_status: Called (synchronously, must not block) whenever a server's status changes.
        hooks_for: Builds per-connection session hooks (elicitation, notifications); optional.
    """

    def __init__(
        self,
        *,
        on_status: Callable[[ServerStatus], None] | None = None,
        hooks_for: Callable[[ConnectionSpec, str], SessionHooks] | None = None,
    ) -> None:
        self._on_status = on_status
        self._hooks_for = hooks_for
        self._slots: dict[str, _Slot] = {}
        self._ops: dict[str, _Operation] = {}
        self._cancelled_early: OrderedDict[str, None] = OrderedDict()
        self._tg: anyio.abc.TaskGroup | None = None
        self._status_changed = anyio.Event()

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
        """Ids of servers that have a spec (enabled servers)."""
        return [sid for sid, slot in self._slots.items() if slot.spec is not None]

    async def configure(self, server_id: str, spec: ConnectionSpec | None) -> None:
        """Set the desired spec of a server (None: not enabled) and reconcile (R-3.3).

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
            if spec is None:
                self._set_status(slot, ServerStatus(server_id, ConnectionState.DISCONNECTED))
        if spec is None and slot.conn is None:
            self._slots.pop(server_id, None)

    # ----- connect / disconnect -------------------------------------------------------------

    async def connect(self, server_id: str) -> Connection:
        """Return a ready connection, starting one if needed; concurrent callers share one attempt (R-3.4).

        Raises:
            ServerDisabled: the server has no spec (not enabled).
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
        raise ConnectionLost(f"server '{server_id}' was disconnected while connecting", details={"reason": "closed"})

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

    # ----- requests ----------------------------------------------------------------------------

    async def list_tools(self, server_id: str) -> list[types.Tool]:
        """The server's tool catalog from its live session (connecting lazily, R-3.2)."""
        conn = await self.connect(server_id)
        return list(conn.tools)

    async def call_tool(
        self,
        server_id: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        operation_id: str | None = None,
        timeout_s: float | None = None,
    ) -> types.CallToolResult:
        """Call a tool on the server's live session.

        Args:
            operation_id: Lets `cancel(operation_id)` abort this call, before or after admission.
            timeout_s: Seconds; defaults to the server's `call_timeout_s` (R-3.8).
        Returns:
            The MCP result (an `isError` result is a result, not an exception).
        Raises:
            CallCancelled: cancelled by operation id.
            ServerTimeout: no answer within the timeout (the SDK sends notifications/cancelled).
            CenterError: connection or protocol failure, attributed.
        """
        conn = await self.connect(server_id)
        timeout = timeout_s if timeout_s is not None else conn.spec.call_timeout_s
        op_id = operation_id or uuid.uuid4().hex
        if op_id in self._cancelled_early:
            del self._cancelled_early[op_id]
            raise CallCancelled(f"operation '{op_id}' was cancelled before it started", details={"operation_id": op_id})
        op = _Operation(op_id, anyio.CancelScope(), conn.connection_id)
        self._ops[op_id] = op
        assert conn.session is not None
        session = conn.session
        result: types.CallToolResult | None = None
        try:
            with op.scope:
                try:
                    answer = await session.client.session.call_tool(
                        name, dict(arguments or {}), read_timeout_seconds=timeout
                    )
                    assert isinstance(answer, types.CallToolResult)
                    result = answer
                except MCPError as exc:
                    if exc.code == types.REQUEST_TIMEOUT:
                        raise timeout_error(f"tools/call '{name}'", timeout) from None
                    raise attribute(exc, session.probe, during=f"tools/call '{name}'") from None
                except RuntimeError as exc:
                    raise attribute(exc, session.probe, during=f"tools/call '{name}'") from None
        finally:
            self._ops.pop(op_id, None)
        if op.scope.cancelled_caught:
            raise CallCancelled(f"operation '{op_id}' was cancelled", details={"operation_id": op_id})
        assert result is not None
        return result

    def is_running(self, operation_id: str) -> bool:
        """True while a call with this operation id is admitted and not finished."""
        return operation_id in self._ops

    def cancel(self, operation_id: str) -> bool:
        """Cancel a call by operation id. Returns True if a running call was cancelled.

        A cancel that arrives before the call is admitted is remembered (bounded) and the call
        is refused when it arrives (R-3.8).
        """
        op = self._ops.get(operation_id)
        if op is not None:
            op.scope.cancel()
            return True
        self._cancelled_early[operation_id] = None
        while len(self._cancelled_early) > CANCELLED_OPS_REMEMBERED:
            self._cancelled_early.popitem(last=False)
        return False

    # ----- temporary connection (test) ----------------------------------------------------------

    async def probe(self, spec: ConnectionSpec) -> ProbeResult:
        """Open a temporary connection: initialize + tools/list + close (R-2.2).

        Runs in the caller's task, independent of any long-lived connection of the server.

        Raises:
            ServerTimeout: initialize + tools/list took longer than `spec.startup_timeout_s`.
            CenterError: attributed failure (refused, DNS, process exited with code N, ...).
        """
        probe = TransportProbe()
        started = anyio.current_time()
        result: ProbeResult | None = None
        deadline = anyio.move_on_after(spec.startup_timeout_s)
        try:
            with deadline:
                async with open_session(spec, probe, SessionHooks()) as session:
                    tools = await list_all_tools(session.client)
                    info = session.client.server_info
                    result = ProbeResult(
                        elapsed_ms=int((anyio.current_time() - started) * 1000),
                        tools=tools,
                        server_name=info.name if info else None,
                        server_version=info.version if info else None,
                        protocol_version=session.client.protocol_version,
                    )
        except Exception as exc:  # noqa: BLE001 - every failure is attributed, none is swallowed
            if result is None:
                raise attribute(exc, probe, during="initialize") from None
            logger.info("server.test.close_failed", extra={"server_id": spec.server_id})
        if result is None:
            if deadline.cancelled_caught:
                raise timeout_error("initialize and tools/list", spec.startup_timeout_s, probe)
            raise attribute(ConnectionLost("closed"), probe, during="initialize")
        return result

    # ----- internals -------------------------------------------------------------------------

    def _start_locked(self, slot: _Slot, spec: ConnectionSpec) -> Connection:
        assert self._tg is not None, "use the manager inside 'async with'"
        conn = Connection(spec)
        slot.conn = conn
        self._set_status(slot, ServerStatus(slot.server_id, ConnectionState.CONNECTING, conn.connection_id))
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
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                logger.exception("runtime.status_listener_failed")

    async def _run_connection(self, slot: _Slot, conn: Connection) -> None:
        spec = conn.spec
        probe = TransportProbe()
        hooks = self._hooks_for(spec, conn.connection_id) if self._hooks_for else SessionHooks()
        error: CenterError | None = None
        stopped_by_us = False
        try:
            with conn.cancel_scope:  # cancelled by stop() while not ready
                with anyio.CancelScope(deadline=anyio.current_time() + spec.startup_timeout_s) as handshake:
                    async with open_session(spec, probe, hooks) as session:
                        tools = await list_all_tools(session.client)
                        handshake.deadline = math.inf
                        if not self._is_current(slot, conn):
                            stopped_by_us = True
                            return
                        info = session.client.server_info
                        conn.session = session
                        conn.tools = tools
                        conn.ready.set()
                        self._set_status(
                            slot,
                            ServerStatus(
                                slot.server_id,
                                ConnectionState.READY,
                                conn.connection_id,
                                tool_count=len(tools),
                                server_name=info.name if info else None,
                                server_version=info.version if info else None,
                                protocol_version=session.client.protocol_version,
                            ),
                        )
                        await _wait_any(conn.stop_requested, session.tapped.closed)
                        stopped_by_us = conn.stop_requested.is_set()
                        if not stopped_by_us:
                            error = attribute(ConnectionLost("closed"), probe, during="the session")
                if handshake.cancelled_caught and not conn.ready.is_set():
                    error = timeout_error("initialize", spec.startup_timeout_s, probe)
            if conn.cancel_scope.cancelled_caught:
                stopped_by_us = True
        except Exception as exc:  # noqa: BLE001 - every failure becomes the connection's attributed error
            if conn.stop_requested.is_set():
                stopped_by_us = True
            else:
                error = attribute(exc, probe, during="the session" if conn.ready.is_set() else "initialize")
        finally:
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
