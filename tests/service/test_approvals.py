"""The approval broker (R-5.3, R-9.2): approve, deny, timeout, cancel by operation id, caller gone, host
stop — and approvals shared through the store: decided by another broker (another process's view of the
same data directory), closed as interrupted when their process is gone, announced by `sync`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from mcp_center.errors import (
    ApprovalClosed,
    ApprovalDenied,
    ApprovalExpired,
    ApprovalNotFound,
    CallCancelled,
    CallInterrupted,
    RequestInvalid,
)
from mcp_center.runtime import EventBus, Subscription
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.results import ApprovalView
from mcp_center.store import ApprovalRecord, Store
from tests.support.waiting import eventually, until

pytestmark = pytest.mark.anyio

REQUEST: dict[str, Any] = {
    "tool": "mcp__files__delete",
    "server_id": "files",
    "server_tool": "delete",
    "arguments": {"path": "/srv/report.txt"},
    "hints": {"destructiveHint": True},
}
RUN = "run-1"


@pytest.fixture
def store(make_store: Callable[[], Store]) -> Iterator[Store]:
    """A store on either backend (files whose change feed polls fast, or PostgreSQL), with this
    test's run announced alive."""
    store = make_store()
    store.join_instance(RUN)
    yield store
    store.leave_instance(RUN)


def _broker(store: Store, events: EventBus | None = None, **kwargs: Any) -> ApprovalBroker:
    return ApprovalBroker(store, events or EventBus(), instance=RUN, **kwargs)


async def _pending(subscription: Subscription) -> dict[str, Any]:
    """The next approval created (announced on the event bus; callers bound the wait)."""
    while True:
        event = await subscription.next()
        if event["type"] == "approval.created":
            approval: dict[str, Any] = event["approval"]
            return approval


async def _run(broker: ApprovalBroker, operation_id: str, outcome: list[object]) -> None:
    try:
        outcome.append(await broker.wait(**REQUEST, operation_id=operation_id))
    except Exception as exc:  # noqa: BLE001 - the test inspects what the caller got
        outcome.append(exc)


@contextmanager
def _two_processes(make_store: Callable[[], Store], waiting: str, deciding: str) -> Generator[tuple[Store, Store]]:
    """Two stores on one directory (or database) standing for two processes, whose instances
    `waiting` and `deciding` are announced alive meanwhile."""
    waiting_store = make_store()
    deciding_store = make_store()
    waiting_store.join_instance(waiting)
    deciding_store.join_instance(deciding)
    try:
        yield waiting_store, deciding_store
    finally:
        waiting_store.leave_instance(waiting)
        deciding_store.leave_instance(deciding)


@asynccontextmanager
async def _one_waiting(
    broker: ApprovalBroker, events: EventBus, outcome: list[object]
) -> AsyncGenerator[dict[str, Any]]:
    """A caller waiting for its approval (its result or error lands in `outcome` on exit): the
    pending approval as announced (bounded: 5 s)."""
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            yield await _pending(subscription)


async def test_an_approved_call_proceeds_and_the_approval_is_kept_as_approved(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            pending = await _pending(subscription)
            assert pending["arguments"] == {"path": "/srv/report.txt"}
            assert pending["hints"] == {"destructiveHint": True}
            assert pending["effects"] == "write"
            assert pending["state"] == "pending"
            decided = await broker.decide(pending["id"], "approve")
            assert decided.state == "approved"
    assert isinstance(outcome[0], ApprovalRecord)
    assert await broker.views() == []
    assert (await broker.views(include_closed=True))[0].state == "approved"


async def test_a_denied_call_fails_with_a_stable_code(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            await broker.decide((await _pending(subscription))["id"], "deny")
    assert isinstance(outcome[0], ApprovalDenied)
    assert outcome[0].code == "MCP_APPROVAL_DENIED"


async def test_an_undecided_approval_expires_after_the_timeout(store: Store) -> None:
    broker = _broker(store, timeout_s=0.2)
    with anyio.fail_after(5), pytest.raises(ApprovalExpired) as caught:
        await broker.wait(**REQUEST, operation_id="op-1")
    assert caught.value.details["timeout_s"] == 0.2
    [closed] = await broker.views(include_closed=True)
    assert closed.state == "expired"
    with pytest.raises(ApprovalClosed) as late:
        await broker.decide(closed.id, "approve")
    assert late.value.details["state"] == "expired"


async def test_cancelling_the_operation_ends_the_pending_approval(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-9", outcome)
            await _pending(subscription)
            assert broker.cancel_operation("op-other") is False
            assert broker.cancel_operation("op-9") is True
    assert isinstance(outcome[0], CallCancelled)
    assert (await broker.views(include_closed=True))[0].state == "cancelled"


async def test_a_caller_that_goes_away_cancels_its_approval(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", list[object]())
            await _pending(subscription)
            tg.cancel_scope.cancel()
    assert await broker.views() == []
    assert (await broker.views(include_closed=True))[0].state == "cancelled"


async def test_stopping_the_host_interrupts_waiting_calls_explicitly(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            await _pending(subscription)
            assert await broker.interrupt_all() == 1
    assert isinstance(outcome[0], CallInterrupted)
    assert outcome[0].details["reached_server"] is False
    assert (await broker.views(include_closed=True))[0].state == "interrupted"


async def test_once_the_stop_began_an_approval_is_refused_and_its_call_never_sent(store: Store) -> None:
    """break31b F1: an approve that came just after SIGTERM ran the call (and the caller was told to retry)."""
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    async with _one_waiting(broker, events, outcome) as pending:
        broker.begin_stop()
        with pytest.raises(ApprovalClosed) as refused:
            await broker.decide(pending["id"], "approve")
        assert refused.value.details["state"] == "interrupted"
        assert "its call was not sent" in str(refused.value)
    assert isinstance(outcome[0], CallInterrupted)
    assert outcome[0].details["reached_server"] is False
    assert (await broker.views(include_closed=True))[0].state == "interrupted"


async def test_an_approval_stored_as_approved_after_the_stop_began_is_not_sent(
    make_store: Callable[[], Store],
) -> None:
    """Another process approves it after this one began to stop (it cannot know): the waiting
    caller does not send the call, stores the approval as interrupted and says it was not sent."""
    with _two_processes(make_store, "serve", "cli") as (waiting_store, deciding_store):
        waiting = ApprovalBroker(waiting_store, EventBus(), instance="serve")
        deciding = ApprovalBroker(deciding_store, EventBus(), instance="cli")
        outcome: list[object] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_run, waiting, "op-1", outcome)
                listed: list[ApprovalView] = await eventually(deciding.views)
                waiting.begin_stop()
                await deciding.decide(listed[0].id, "approve")
        assert isinstance(outcome[0], CallInterrupted), outcome
        assert outcome[0].details["reached_server"] is False
        assert (await waiting.get(outcome[0].details["approval_id"])).state == "interrupted"


async def test_an_approval_decided_before_the_stop_began_goes_out_as_the_human_was_told(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    outcome: list[object] = []
    async with _one_waiting(broker, events, outcome) as pending:
        view = await broker.decide(pending["id"], "approve")
        broker.begin_stop()  # before the waiting caller ran again: it was approved first
        assert view.state == "approved"
    assert isinstance(outcome[0], ApprovalRecord)
    assert outcome[0].state == "approved"


async def test_a_decision_must_be_approve_or_deny_and_name_a_known_approval(store: Store) -> None:
    broker = _broker(store)
    with pytest.raises(RequestInvalid):
        await broker.decide("x", "maybe")
    with pytest.raises(ApprovalNotFound):
        await broker.decide("x", "approve")
    with pytest.raises(ApprovalNotFound):
        await broker.get("x")


async def test_approvals_are_announced_on_the_event_bus(store: Store) -> None:
    events = EventBus()
    broker = _broker(store, events)
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", list[object]())
            created = await subscription.next()
            assert created["type"] == "approval.created"
            await broker.decide(created["approval"]["id"], "deny")
            closed = await subscription.next()
            assert closed["type"] == "approval.closed"
            assert closed["approval"]["state"] == "denied"


# ----- shared through the store (R-9.2) -----------------------------------------------------------


async def test_an_approval_waiting_in_one_process_is_listed_and_decided_in_another(
    make_store: Callable[[], Store],
) -> None:
    """Two stores on one directory (or database) stand for two processes (instances): the decision
    reaches the waiting caller through the store's change feed, and the deciding side announces
    what it saw."""
    waiting_store = make_store()
    deciding_store = make_store()
    waiting_store.join_instance("script")
    deciding_store.join_instance("serve")
    try:
        waiting = ApprovalBroker(waiting_store, EventBus(), instance="script")
        serve_events = EventBus()
        deciding = ApprovalBroker(deciding_store, serve_events, instance="serve")
        await deciding.start()
        outcome: list[object] = []
        with anyio.fail_after(5):
            async with serve_events.subscribe() as seen, anyio.create_task_group() as tg:
                tg.start_soon(_run, waiting, "op-1", outcome)
                listed = await eventually(deciding.views)
                await deciding.sync()
                announced = await seen.next()
                assert (announced["type"], announced["approval"]["id"]) == ("approval.created", listed[0].id)
                assert listed[0].arguments == REQUEST["arguments"]
                assert (await deciding.decide(listed[0].id, "approve")).state == "approved"
        assert isinstance(outcome[0], ApprovalRecord)
        assert outcome[0].state == "approved"
        with pytest.raises(ApprovalClosed):
            await waiting.decide(outcome[0].id, "deny")
    finally:
        waiting_store.leave_instance("script")
        deciding_store.leave_instance("serve")


async def test_a_pending_approval_of_a_process_that_is_gone_is_closed_as_interrupted(store: Store) -> None:
    now = datetime.now(UTC)
    with store.transaction() as state:
        state.approvals["orphan"] = ApprovalRecord(
            id="orphan",
            tool="mcp__files__delete",
            server_id="files",
            server_tool="delete",
            operation_id="op",
            host_instance="a-run-that-died",
            created_at=now,
            expires_at=now + timedelta(minutes=10),
        )
    events = EventBus()
    broker = _broker(store, events)
    async with events.subscribe() as subscription:
        assert await broker.views() == []
        with anyio.fail_after(5):
            closed = await subscription.next()
    assert (closed["type"], closed["approval"]["state"]) == ("approval.closed", "interrupted")
    with pytest.raises(ApprovalClosed) as late:
        await broker.decide("orphan", "approve")
    assert late.value.details["state"] == "interrupted"


async def test_deciding_an_approval_whose_process_just_died_says_interrupted(
    store: Store, make_store: Callable[[], Store]
) -> None:
    """Found dead at decision time (after it was listed): not approved, closed as interrupted."""
    other = make_store()
    other.join_instance("short-lived")
    now = datetime.now(UTC)
    with store.transaction() as state:
        state.approvals["a1"] = ApprovalRecord(
            id="a1",
            tool="t",
            server_id="files",
            server_tool="t",
            operation_id="op",
            host_instance="short-lived",
            created_at=now,
            expires_at=now + timedelta(minutes=10),
        )
    broker = _broker(store)
    assert [a.id for a in await broker.views()] == ["a1"]
    other.leave_instance("short-lived")
    await until(lambda: not store.instance_alive("short-lived"))  # another instance learns it (PostgreSQL: ms)
    with pytest.raises(ApprovalClosed) as caught:
        await broker.decide("a1", "approve")
    assert caught.value.details["state"] == "interrupted"


async def test_cancel_server_ends_the_pending_approvals_of_every_process(
    store: Store, make_store: Callable[[], Store]
) -> None:
    other = make_store()
    other.join_instance("script")
    try:
        waiting = ApprovalBroker(other, EventBus(), instance="script")
        outcome: list[object] = []
        broker = _broker(store)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_run, waiting, "op-1", outcome)
                await eventually(broker.views)
                assert await broker.cancel_server("files") == 1
        assert isinstance(outcome[0], CallCancelled)
    finally:
        other.leave_instance("script")
