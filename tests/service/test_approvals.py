"""The approval broker (R-5.3): approve, deny, timeout, cancel by operation id, caller gone, host stop."""

from __future__ import annotations

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

pytestmark = pytest.mark.anyio

REQUEST: dict[str, Any] = {
    "tool": "mcp__files__delete",
    "server_id": "files",
    "server_tool": "delete",
    "arguments": {"path": "/srv/report.txt"},
    "hints": {"destructiveHint": True},
}


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


async def test_an_approved_call_proceeds_and_the_approval_is_kept_as_approved() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            pending = await _pending(subscription)
            assert pending["arguments"] == {"path": "/srv/report.txt"}
            assert pending["hints"] == {"destructiveHint": True}
            assert pending["effects"] == "write"
            assert pending["state"] == "pending"
            decided = broker.decide(pending["id"], "approve")
            assert decided["state"] == "approved"
    assert not isinstance(outcome[0], Exception)
    assert broker.views() == []
    assert broker.views(include_closed=True)[0]["state"] == "approved"


async def test_a_denied_call_fails_with_a_stable_code() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            broker.decide((await _pending(subscription))["id"], "deny")
    assert isinstance(outcome[0], ApprovalDenied)
    assert outcome[0].code == "MCP_APPROVAL_DENIED"


async def test_an_undecided_approval_expires_after_the_timeout() -> None:
    broker = ApprovalBroker(EventBus(), timeout_s=0.2)
    with anyio.fail_after(5), pytest.raises(ApprovalExpired) as caught:
        await broker.wait(**REQUEST, operation_id="op-1")
    assert caught.value.details["timeout_s"] == 0.2
    [closed] = broker.views(include_closed=True)
    assert closed["state"] == "expired"
    with pytest.raises(ApprovalClosed) as late:
        broker.decide(closed["id"], "approve")
    assert late.value.details["state"] == "expired"


async def test_cancelling_the_operation_ends_the_pending_approval() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-9", outcome)
            await _pending(subscription)
            assert broker.cancel_operation("op-other") is False
            assert broker.cancel_operation("op-9") is True
    assert isinstance(outcome[0], CallCancelled)
    assert broker.views(include_closed=True)[0]["state"] == "cancelled"


async def test_a_caller_that_goes_away_cancels_its_approval() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", [])
            await _pending(subscription)
            tg.cancel_scope.cancel()
    assert broker.views() == []
    assert broker.views(include_closed=True)[0]["state"] == "cancelled"


async def test_stopping_the_host_interrupts_waiting_calls_explicitly() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    outcome: list[object] = []
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", outcome)
            await _pending(subscription)
            assert broker.interrupt_all() == 1
    assert isinstance(outcome[0], CallInterrupted)
    assert outcome[0].details["reached_server"] is False


async def test_a_decision_must_be_approve_or_deny_and_name_a_known_approval() -> None:
    broker = ApprovalBroker(EventBus())
    with pytest.raises(RequestInvalid):
        broker.decide("x", "maybe")
    with pytest.raises(ApprovalNotFound):
        broker.decide("x", "approve")
    with pytest.raises(ApprovalNotFound):
        broker.get("x")


async def test_approvals_are_announced_on_the_event_bus() -> None:
    events = EventBus()
    broker = ApprovalBroker(events)
    with anyio.fail_after(5):
        async with events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(_run, broker, "op-1", [])
            created = await subscription.next()
            assert created["type"] == "approval.created"
            broker.decide(created["approval"]["id"], "deny")
            closed = await subscription.next()
            assert closed["type"] == "approval.closed"
            assert closed["approval"]["state"] == "denied"
