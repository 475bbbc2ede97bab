"""Call deadlines pause while a human answers (R-3.8 with R-6.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_center.runtime import CallDeadlines, PausableDeadline
from mcp_center.runtime.operations import Operations

pytestmark = pytest.mark.anyio


async def test_a_deadline_expires_after_its_budget_of_running_time() -> None:
    board = CallDeadlines()
    started = anyio.current_time()
    with anyio.fail_after(5):
        with board.deadline("conn", 0.2) as deadline:
            await anyio.sleep(10)
    assert deadline.expired
    assert 0.15 <= anyio.current_time() - started < 2


async def test_time_spent_under_a_hold_does_not_count() -> None:
    """The call runs 0.6 s in total but only 0.1 s of it outside the hold: a 0.3 s budget suffices."""
    board = CallDeadlines()
    entered, finished = anyio.Event(), anyio.Event()

    async def call() -> None:
        with board.deadline("conn", 0.3) as deadline:
            entered.set()
            await finished.wait()
        assert not deadline.expired
        assert deadline.paused_s >= 0.45

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await entered.wait()
            await anyio.sleep(0.05)  # running time, counted
            with board.hold("conn"):  # a human answering: not counted
                await anyio.sleep(0.5)
            await anyio.sleep(0.05)
            finished.set()


async def test_a_deadline_that_starts_during_a_hold_starts_paused_and_other_connections_run() -> None:
    board = CallDeadlines()
    with anyio.fail_after(5), board.hold("held"):
        with board.deadline("held", 0.1) as paused:
            assert paused.paused
            await anyio.sleep(0.3)
        assert not paused.expired
        with board.deadline("other", 0.1) as running:
            assert not running.paused
            await anyio.sleep(3)
        assert running.expired


async def test_nested_holds_resume_only_when_the_last_one_ends() -> None:
    board = CallDeadlines()
    with board.deadline("conn", 5) as deadline:
        with board.hold("conn"):
            with board.hold("conn"):
                assert deadline.paused
            assert deadline.paused
            assert board.held("conn")
        assert not deadline.paused
        assert not board.held("conn")


async def test_after_the_hold_the_rest_of_the_budget_still_expires() -> None:
    board = CallDeadlines()
    with anyio.fail_after(5):
        with board.deadline("conn", 0.3) as deadline:
            with board.hold("conn"):
                await anyio.sleep(0.4)
            await anyio.sleep(3)
    assert deadline.expired
    assert deadline.paused_s >= 0.35


async def test_extend_restarts_the_clock_but_not_beyond_the_maximum_total() -> None:
    """Progress (issue 14 item 4): each extend() gives the full timeout again, capped by max_total_s."""
    board = CallDeadlines()
    started = anyio.current_time()
    extends = 0
    with board.deadline("conn", 0.3, max_total_s=1.0) as deadline:
        while True:
            await anyio.sleep(0.2)
            deadline.extend()
            extends += 1
    elapsed = anyio.current_time() - started
    assert deadline.expired and deadline.total_reached
    assert 0.95 <= elapsed < 3.0
    assert extends >= 4


async def test_without_extend_the_deadline_expires_at_its_timeout_and_not_by_the_total() -> None:
    board = CallDeadlines()
    with board.deadline("conn", 0.2, max_total_s=5.0) as deadline:
        await anyio.sleep_forever()
    assert deadline.expired and not deadline.total_reached


async def test_a_riding_deadline_ends_with_its_block_and_expires_through_the_admission() -> None:
    """Issue 12: a deadline riding an admission's scope is a timer of the loop that cancels that
    scope. Its block ending stops the timer, so the rest of the admission's block runs unbounded;
    expiring inside the block ends the admission with the deadline's own error."""
    board = CallDeadlines()
    operations = Operations()

    def timed_out(deadline: PausableDeadline) -> BaseException:
        return TimeoutError(f"expired after {deadline.timeout_s} s")

    with anyio.fail_after(5):
        admission = operations.admit(None)
        with admission:
            with board.deadline("conn", 0.1, riding=admission, expiry=timed_out):
                await anyio.lowlevel.checkpoint()
            await anyio.sleep(0.3)  # past the deadline: its timer was stopped with its block
        admission = operations.admit(None)
        started = anyio.current_time()
        with (
            pytest.raises(TimeoutError, match=r"expired after 0\.1 s"),
            admission,
            board.deadline("conn", 0.1, riding=admission, expiry=timed_out) as deadline,
        ):
            await anyio.sleep(10)
    assert deadline.expired
    assert 0.08 <= anyio.current_time() - started < 2


async def test_the_deadlines_of_a_board_share_one_timer_of_the_loop() -> None:
    """Issue 12, R-8.3: calls one after another set the loop's timer once (a timer made and cancelled
    per call cost uvloop an event-loop iteration each); a deadline earlier than the one the timer
    waits for sets it again, and still expires on time."""
    board = CallDeadlines()
    loop = asyncio.get_running_loop()
    set_at: list[float] = []
    real_call_at = loop.call_at

    def counting_call_at(
        when: float, callback: Callable[..., object], *args: object, **kwargs: Any
    ) -> asyncio.TimerHandle:
        if getattr(callback, "__qualname__", "") == "_SharedTimer._fire":  # not the test's own sleeps
            set_at.append(when)
        return real_call_at(when, callback, *args, **kwargs)

    loop.call_at = counting_call_at  # pyright: ignore[reportAttributeAccessIssue] - an instance attribute, removed below
    try:
        for _ in range(20):
            with board.deadline("conn", 5.0) as deadline:
                await anyio.lowlevel.checkpoint()
            assert not deadline.expired
        assert len(set_at) == 1
        started = anyio.current_time()
        with anyio.fail_after(5), board.deadline("other", 0.1) as short:
            await anyio.sleep(10)
        assert short.expired
        assert 0.08 <= anyio.current_time() - started < 2
        assert len(set_at) == 2
    finally:
        del loop.call_at  # pyright: ignore[reportAttributeAccessIssue]


async def test_a_deadline_expires_on_time_after_the_one_the_timer_was_set_for_ended() -> None:
    """The shared timer fires for a call that ended, finds nothing due and waits for the next deadline."""
    board = CallDeadlines()
    with board.deadline("conn", 0.1):
        await anyio.lowlevel.checkpoint()
    started = anyio.current_time()
    with anyio.fail_after(5), board.deadline("conn", 0.4) as later:
        await anyio.sleep(10)
    assert later.expired
    assert 0.35 <= anyio.current_time() - started < 2.5


async def test_deadlines_due_together_all_expire() -> None:
    """One firing of the shared timer ends every deadline that is due, each call its own."""
    board = CallDeadlines()
    ended: list[PausableDeadline] = []

    async def call(key: str) -> None:
        with board.deadline(key, 0.1) as deadline:
            await anyio.sleep(10)
        ended.append(deadline)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in ("a", "b", "c"):
                tg.start_soon(call, key)
    assert len(ended) == 3 and all(deadline.expired for deadline in ended)
