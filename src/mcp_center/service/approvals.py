"""Approvals: an agent's tool call waits for a human decision before it reaches the server (R-5.3, R-9.2).

Threat: an agent (or a prompt injection steering it) running a tool with side effects the user
never agreed to. Every agent-initiated call of a tool whose policy is `ask` (the default) becomes
a pending approval — tool, server, arguments and the server's annotations shown as hints — and
waits. Only `approve` lets the call go to the server; `deny`, the approval timeout, cancelling
the call by operation id, the caller going away, and the host stopping all end it without the
server ever seeing it.

Approvals are durable and shared (`store/approvals.py`): the waiting process stores the pending
approval, and any process on the data directory lists and decides it — so a library script's
call waits for a decision made in `serve`'s page or API. The decision is a compare-and-set in one
store transaction (only a pending approval changes state; the first of decide / expire / cancel
wins), and it reaches the waiting process through the store's change feed (or at once, when it
is decided in the same process). A pending approval whose process is gone (crash, SIGKILL) is
closed as `interrupted` by whoever finds it (`Store.instance_alive`). Approvals that another
process creates or closes are announced on this process's event bus too (`sync`), so an open
settings page shows them live.

User-initiated calls (the settings page playground, the CLI, `POST /api/mcp/servers/{id}/tools/
{tool}/call`) are the human acting and never create an approval.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

import anyio

from mcp_center.errors import (
    ApprovalClosed,
    ApprovalDenied,
    ApprovalExpired,
    ApprovalNotFound,
    CallCancelled,
    CallInterrupted,
    RequestInvalid,
)
from mcp_center.runtime import EventBus
from mcp_center.service.results import ApprovalView
from mcp_center.service.store_threads import in_read_thread, in_write_thread, read_state
from mcp_center.store import MAX_CLOSED_APPROVALS, ApprovalRecord, ApprovalState, Store, StoreState

__all__ = ["DEFAULT_APPROVAL_TIMEOUT_S", "MAX_CLOSED_APPROVALS", "ApprovalBroker", "ApprovalState"]

logger = logging.getLogger(__name__)

DEFAULT_APPROVAL_TIMEOUT_S = 600.0
"""Seconds a pending approval waits for a decision before the call fails with MCP_APPROVAL_EXPIRED."""

Decision = Literal["approve", "deny"]
T = TypeVar("T")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(eq=False)
class _Waiting:
    """A caller of this process waiting for its approval."""

    record: ApprovalRecord
    wake: anyio.Event = field(default_factory=anyio.Event)
    request: ApprovalState | None = None
    """A close asked for in this process (`cancelled` by operation id); the waiter applies it."""


class ApprovalBroker:
    """Approvals of every process on the store; this process's waiting callers.

    Args:
        store: Where approvals live (shared with every process on the data directory).
        events: Receives `approval.created` and `approval.closed` events (`{"approval": view}`).
        instance: This process run's id (`Store.join_instance`), stored with its approvals.
        timeout_s: Seconds an approval waits before it expires.
    """

    def __init__(
        self, store: Store, events: EventBus, *, instance: str, timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    ) -> None:
        self._store = store
        self._events = events
        self.instance = instance
        self.timeout_s = timeout_s
        self._waiting: dict[str, _Waiting] = {}
        self._seen: dict[str, ApprovalState] = {}
        """The state each approval had when this process last announced it (for `sync`)."""
        self._stopping = False
        """The host began to stop (`begin_stop`): no approval of this process may send its call now."""
        self._sends: dict[str, bool] = {}
        """Approved calls of this process: whether each may be sent (`_may_send`, decided once)."""

    # ----- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> int:
        """Close pending approvals of runs that are gone, and remember what exists (no events for it).

        Returns:
            How many approvals were closed as interrupted.
        """
        closed = await self._close_orphans()
        state = await self._read()
        self._seen = {r.id: r.state for r in state.approvals.values()}
        return len(closed)

    async def sync(self) -> None:
        """Announce approvals that other processes created or closed since the last look, and close
        those of runs that are gone. The host calls this when the store's approvals changed."""
        await self._close_orphans()
        state = await self._read()
        for record in state.approvals.values():
            self._publish("approval.created" if record.state == "pending" else "approval.closed", record)
        for gone in set(self._seen) - set(state.approvals):
            del self._seen[gone]

    # ----- the waiting caller ----------------------------------------------------------------------

    async def wait(
        self,
        *,
        tool: str,
        server_id: str,
        server_tool: str,
        arguments: Mapping[str, Any],
        hints: Mapping[str, Any],
        operation_id: str,
        caller: Mapping[str, Any] | None = None,
    ) -> ApprovalRecord:
        """Create a pending approval and wait for the decision (made in any process).

        `caller` says who asked (shown on the card, see `ApprovalRecord.caller`).

        Returns:
            The approval, approved: the caller may now send the call.
        Raises:
            ApprovalDenied: the user denied it.
            ApprovalExpired: nobody decided within `timeout_s` seconds.
            CallCancelled: the call's operation id was cancelled while it waited, or its server can
                no longer run as approved.
            CallInterrupted: the host is stopping (also when it was approved but the host began to
                stop before the call went out, `begin_stop`; `details.reached_server` false).
            StorageError: the approval could not be stored (the call was not sent).
            (and the caller's own cancellation, which marks the approval cancelled)
        """
        now = _now()
        record = ApprovalRecord(
            id=uuid.uuid4().hex,
            tool=tool,
            server_id=server_id,
            server_tool=server_tool,
            arguments=dict(arguments),
            hints=dict(hints),
            operation_id=operation_id,
            host_instance=self.instance,
            created_at=now,
            expires_at=now + timedelta(seconds=self.timeout_s),
            caller=dict(caller) if caller is not None else None,
        )

        def insert(state: StoreState) -> None:
            state.approvals[record.id] = record

        await self._commit(insert)
        waiting = _Waiting(record)
        self._waiting[record.id] = waiting
        self._publish("approval.created", record)
        try:
            final = await self._await_decision(waiting)
        except BaseException:
            self._sends.pop(record.id, None)
            with anyio.CancelScope(shield=True):  # the caller went away: its cancellation propagates
                await self._close_one(record.id, "cancelled")
            raise
        finally:
            self._waiting.pop(record.id, None)
        details = {"approval_id": record.id, "tool": tool, "operation_id": operation_id}
        if final.state == "approved" and waiting.request is None:
            may_send = self._may_send(record.id)
            self._sends.pop(record.id, None)
            if may_send:
                return final
            await self._close_approved(record.id)
            final = final.model_copy(update={"state": "interrupted"})
        if final.state == "denied":
            raise ApprovalDenied(f"the user denied the call of '{tool}'; it was not sent", details=details)
        if final.state in ("cancelled", "approved"):  # approved, but cancelled here before it went out
            raise CallCancelled(
                f"operation '{operation_id}' was cancelled while it waited for approval; it was not sent",
                details=details,
            )
        if final.state == "interrupted":
            raise CallInterrupted(
                f"mcp-center stopped while the call of '{tool}' waited for approval; it was not sent",
                details={**details, "reached_server": False, "delivered": False},
            )
        raise ApprovalExpired(
            f"nobody approved the call of '{tool}' within {self.timeout_s:g} s; it was not sent",
            details={**details, "timeout_s": self.timeout_s},
        )

    async def _await_decision(self, waiting: _Waiting) -> ApprovalRecord:
        """Wait until the approval is no longer pending (decided anywhere, expired, or closed here)."""
        approval_id = waiting.record.id
        deadline = anyio.current_time() + self.timeout_s
        async with self._store.changes(["approvals"]) as changes:
            while True:
                wake = waiting.wake = anyio.Event()  # before the read: a decision after it sets this one
                current = (await self._read()).approvals.get(approval_id)
                gone = waiting.record.model_copy(update={"state": "cancelled", "decided_at": _now()})
                if current is None:  # removed by hand: nobody can decide it any more
                    return gone
                if current.state != "pending":
                    return current
                remaining = deadline - anyio.current_time()
                if waiting.request is not None or remaining <= 0:  # cancelled here, or timed out
                    return await self._close_one(approval_id, waiting.request or "expired") or gone
                with anyio.move_on_after(remaining):
                    async with anyio.create_task_group() as tg:

                        async def on_change(wake: anyio.Event = wake) -> None:
                            await changes.next()
                            wake.set()

                        tg.start_soon(on_change)
                        await wake.wait()
                        tg.cancel_scope.cancel()

    # ----- the human's side ------------------------------------------------------------------------

    async def decide(self, approval_id: str, decision: object) -> ApprovalView:
        """Approve or deny a pending approval (the human's decision), whichever process waits for it.

        Args:
            decision: `"approve"` or `"deny"`.
        Returns:
            The approval's view after the decision.
        Raises:
            RequestInvalid: `decision` is not approve / deny.
            ApprovalNotFound: no such approval.
            ApprovalClosed: it was already decided, expired, cancelled or interrupted (`details.state`;
                `interrupted` also when its waiting process turned out to be gone, or when this
                process, which waits for it, began to stop before its call was sent: `begin_stop`).
            StorageError: the decision could not be stored (nothing changed).
        """
        if decision not in ("approve", "deny"):
            raise RequestInvalid(
                "decision: must be 'approve' or 'deny'",
                details={"errors": [{"field": "decision", "code": "FIELD_INVALID", "message": "approve or deny"}]},
            )
        wanted: ApprovalState = "approved" if decision == "approve" else "denied"

        def run(state: StoreState) -> tuple[ApprovalRecord | None, ApprovalRecord | None]:
            before = state.approvals.get(approval_id)
            if before is None or before.state != "pending":
                return before, None
            mine = before.host_instance == self.instance
            stopped = not self._alive(before.host_instance) or (mine and self._stopping)
            now: ApprovalState = "interrupted" if stopped else wanted
            after = state.approvals[approval_id] = before.model_copy(update={"state": now, "decided_at": _now()})
            return before, after

        before, after = await self._commit(run)
        if before is None:
            raise ApprovalNotFound(f"no approval with id '{approval_id}'", details={"approval_id": approval_id})
        if after is not None:
            self._closed_here(after)
            # Its waiter here has not sent the call yet, and serve began to stop meanwhile: never sent.
            if after.state == "approved" and after.id in self._waiting and not self._may_send(after.id):
                after = await self._close_approved(after.id) or after.model_copy(update={"state": "interrupted"})
        final = after or before
        if final.state != wanted or after is None:
            stopping = after is not None and final.state == "interrupted" and self._stopping
            raise ApprovalClosed(
                f"mcp-center is stopping: approval '{approval_id}' was closed as interrupted; its call was not sent"
                if stopping
                else f"approval '{approval_id}' is already {final.state}",
                details={"approval_id": approval_id, "state": final.state},
            )
        return ApprovalView.of(final)

    async def get(self, approval_id: str) -> ApprovalView:
        """One approval's view (pending or recently closed).

        Raises:
            ApprovalNotFound; StorageError.
        """
        await self._close_orphans()
        record = (await self._read()).approvals.get(approval_id)
        if record is None:
            raise ApprovalNotFound(f"no approval with id '{approval_id}'", details={"approval_id": approval_id})
        return ApprovalView.of(record)

    async def views(self, *, include_closed: bool = False) -> list[ApprovalView]:
        """Pending approvals of every process, oldest first (then recently closed ones, newest first, if asked).

        Raises:
            StorageError.
        """
        await self._close_orphans()
        records = list((await self._read()).approvals.values())
        views = [
            ApprovalView.of(r) for r in sorted((r for r in records if r.state == "pending"), key=lambda r: r.created_at)
        ]
        if include_closed:
            closed = [r for r in records if r.state != "pending"]
            closed.sort(key=lambda r: r.decided_at or r.created_at, reverse=True)
            views += [ApprovalView.of(r) for r in closed]
        return views

    # ----- ends decided by the host ----------------------------------------------------------------

    def cancel_operation(self, operation_id: str) -> bool:
        """End the pending approval of a call of this process by its operation id (the call is
        cancelled and never sent). True if there was one; the waiting caller stores the end."""
        for waiting in self._waiting.values():
            if waiting.record.operation_id == operation_id and waiting.request is None:
                waiting.request = "cancelled"
                waiting.wake.set()
                return True
        return False

    async def cancel_server(self, server_id: str) -> int:
        """End the pending approvals (of every process) of a server that can no longer run as
        approved (deleted, disabled, or its trust invalidated by a high-risk change, R-1.4): their
        calls fail with CallCancelled, never sent. Returns how many."""
        if not any(r.server_id == server_id and r.state == "pending" for r in (await self._read()).approvals.values()):
            return 0
        closed = await self._close_where(lambda r: r.server_id == server_id, "cancelled")
        return len(closed)

    def begin_stop(self) -> None:
        """The host begins to stop (serve got SIGTERM or SIGINT; synchronous, so a signal handler
        may call it): from now on an approval of this process is never sent. A decision made now is
        refused (`decide` stores `interrupted`: ApprovalClosed), and an approval decided just before
        whose call has not been sent yet is closed as `interrupted` instead (its caller gets
        CallInterrupted, `reached_server` false). Which came first, the stop or the send, is decided
        once per approval, in the event loop (`_may_send`), so both sides see the same order (R-6.3)."""
        self._stopping = True

    async def interrupt_all(self) -> int:
        """The host is stopping: end every pending approval of this process (their calls fail, not
        sent). Returns how many."""
        if not self._waiting:
            return 0
        closed = await self._close_where(lambda r: r.host_instance == self.instance, "interrupted")
        return len(closed)

    # ----- internals -------------------------------------------------------------------------------

    def _may_send(self, approval_id: str) -> bool:
        """Whether the approved call `approval_id` of this process may go to its server: decided the
        first time anyone asks (its waiter about to send it, or `decide` after storing the
        approval), as "the host is not stopping", and the same answer ever after."""
        if approval_id not in self._sends:
            self._sends[approval_id] = not self._stopping
        return self._sends[approval_id]

    async def _close_approved(self, approval_id: str) -> ApprovalRecord | None:
        """An approved call that will not be sent (the host stopping): store it as `interrupted`."""

        def run(state: StoreState) -> ApprovalRecord | None:
            record = state.approvals.get(approval_id)
            if record is None or record.state != "approved":
                return None
            closed = state.approvals[approval_id] = record.model_copy(update={"state": "interrupted"})
            return closed

        record = await self._commit(run)
        if record is not None:
            self._publish("approval.closed", record)
        return record

    def _alive(self, instance: str) -> bool:
        return instance == self.instance or self._store.instance_alive(instance)

    async def _read(self) -> StoreState:
        return await read_state(self._store)

    async def _commit(self, change: Callable[[StoreState], T]) -> T:
        def run() -> T:
            with self._store.transaction() as state:
                return change(state)

        result: list[T] = []
        with anyio.CancelScope(shield=True):  # a started store write always finishes, and is announced
            result.append(await in_write_thread(run))
        return result[0]

    async def _close_one(self, approval_id: str, state: ApprovalState) -> ApprovalRecord | None:
        """Close one approval if it is still pending; return it as it is now (None: it is gone)."""

        def run(current: StoreState) -> ApprovalRecord | None:
            record = current.approvals.get(approval_id)
            if record is not None and record.state == "pending":
                record = current.approvals[approval_id] = record.model_copy(
                    update={"state": state, "decided_at": _now()}
                )
            return record

        record = await self._commit(run)
        if record is not None:
            self._closed_here(record)
        return record

    async def _close_where(self, which: Callable[[ApprovalRecord], bool], state: ApprovalState) -> list[ApprovalRecord]:
        """Close every pending approval `which` selects, in one transaction; announce and wake them."""

        def run(current: StoreState) -> list[ApprovalRecord]:
            closed: list[ApprovalRecord] = []
            for record in list(current.approvals.values()):
                if record.state == "pending" and which(record):
                    updated = record.model_copy(update={"state": state, "decided_at": _now()})
                    current.approvals[record.id] = updated
                    closed.append(updated)
            return closed

        closed = await self._commit(run) if not self._store_is_clean(which) else []
        for record in closed:
            self._closed_here(record)
        return closed

    def _store_is_clean(self, which: Callable[[ApprovalRecord], bool]) -> bool:
        """True when the cached snapshot proves there is nothing to close (no lock taken)."""
        fresh = self._store.read_if_fresh()
        return fresh is not None and not any(r.state == "pending" and which(r) for r in fresh.approvals.values())

    async def _close_orphans(self) -> list[ApprovalRecord]:
        """Close the pending approvals of runs that are gone (crashed or stopped without closing them)."""
        state = await self._read()
        others = {r.host_instance for r in state.approvals.values() if r.state == "pending"} - {self.instance}
        # Presence may need a query (a run the feed does not know): in a read thread, not on the loop.
        dead: set[str] = await in_read_thread(lambda: {i for i in others if not self._alive(i)}) if others else set()
        if not dead:
            return []
        closed = await self._close_where(lambda r: r.host_instance in dead, "interrupted")
        if closed:
            logger.warning("approvals.interrupted_by_gone_process", extra={"count": len(closed)})
        return closed

    def _closed_here(self, record: ApprovalRecord) -> None:
        """This process closed `record`: wake its waiter (if here), announce and log it."""
        waiting = self._waiting.get(record.id)
        if waiting is not None:
            waiting.wake.set()
        self._publish("approval.closed", record)

    def _publish(self, event: str, record: ApprovalRecord) -> None:
        """Announce `record` unless this state of it was announced already (by `sync` or here)."""
        if self._seen.get(record.id) == record.state:
            return
        self._seen[record.id] = record.state
        self._events.publish(event, approval=ApprovalView.of(record).to_dict())
        extra: dict[str, Any] = {"approval_id": record.id, "tool": record.tool, "state": record.state}
        if event == "approval.created":
            extra.update(server_id=record.server_id, operation_id=record.operation_id)
        logger.info(event, extra=extra)
