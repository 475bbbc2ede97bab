"""`runtime/scopes.py` (issue 12): the scopes it makes without asking which loop runs are anyio's own,
and behave as anyio's (deadline, cancel, shield) on the host's loops (asyncio and uvloop); so does an
admission's scope, entered for a known task (R-3.8: cancels by id, outer and native cancels kept)."""

from __future__ import annotations

import asyncio
import sys

import anyio
import anyio.lowlevel
import pytest

from mcp_center.errors import CallCancelled
from mcp_center.runtime.operations import Operations
from mcp_center.runtime.scopes import (
    _LEAN_READY,  # pyright: ignore[reportPrivateUsage]
    cancel_scope,
    current_time,
    enter_admission_scope,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    return ("asyncio", {"use_uvloop": request.param == "uvloop"})


async def test_a_scope_made_without_the_lookup_is_anyios_and_keeps_its_deadline_cancel_and_shield() -> None:
    assert "trio" not in sys.modules  # the case the shortcut serves: any loop is asyncio's
    cancel_scope()  # the first one learns the class
    made = cancel_scope()
    assert type(made) is type(anyio.CancelScope())
    with cancel_scope(deadline=current_time() + 0.02) as timed:
        await anyio.sleep(5)
    assert timed.cancelled_caught
    with cancel_scope() as cancelled:
        cancelled.cancel()
        await anyio.sleep(5)
    assert cancelled.cancelled_caught
    with anyio.CancelScope() as outer:
        outer.cancel()
        with cancel_scope(shield=True) as shielded:
            await anyio.sleep(0.01)  # not cancelled: shielded
        assert not shielded.cancelled_caught
        await anyio.sleep(5)
    assert outer.cancelled_caught


def _anyio_scope_class() -> type[anyio.CancelScope]:
    return type(anyio.CancelScope())


async def test_an_admission_scope_is_anyios_and_swallows_only_its_own_cancel() -> None:
    task = asyncio.current_task()
    assert task is not None and _LEAN_READY  # the anyio this host pins: the lean entry is the one tested
    scope = enter_admission_scope(task)
    assert isinstance(scope, _anyio_scope_class())
    with pytest.raises(RuntimeError, match="single 'with' block"):
        scope.__enter__()  # while it runs, as anyio's
    try:
        scope.cancel()
        await anyio.sleep(5)
    except asyncio.CancelledError:
        assert scope.__exit__(*sys.exc_info()) is True
    assert scope.cancelled_caught and task.cancelling() == 0
    # An outer anyio scope's cancel goes through it, is not swallowed, and the outer one catches it.
    inner: list[anyio.CancelScope] = []
    with anyio.CancelScope() as outer:
        inner.append(enter_admission_scope(task))
        try:
            outer.cancel()
            await anyio.sleep(5)
        except asyncio.CancelledError:
            assert inner[0].__exit__(*sys.exc_info()) is False
            raise
    assert outer.cancelled_caught and not inner[0].cancelled_caught
    # A scope entered after it sees it as its parent, and the parent is the task's scope again after.
    with anyio.CancelScope() as outer:
        scope = enter_admission_scope(task)
        with anyio.CancelScope(shield=True) as shielded:
            scope.cancel()
            await anyio.sleep(0.01)  # shielded from the admission scope's cancel
        assert not shielded.cancelled_caught
        try:
            await anyio.sleep(5)
        except asyncio.CancelledError:
            assert scope.__exit__(*sys.exc_info()) is True
        outer.cancel()
        await anyio.sleep(5)
    assert outer.cancelled_caught and scope.cancelled_caught


async def test_an_admission_scope_cancels_a_task_group_inside_it_and_keeps_a_native_cancel() -> None:
    task = asyncio.current_task()
    assert task is not None
    children_cancelled: list[bool] = []

    async def child() -> None:
        try:
            await anyio.sleep(5)
        except asyncio.CancelledError:
            children_cancelled.append(True)
            raise

    scope = enter_admission_scope(task)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(child)
            group.start_soon(child)
            await anyio.lowlevel.checkpoint()
            scope.cancel()
            await anyio.sleep(5)
    except asyncio.CancelledError:
        assert scope.__exit__(*sys.exc_info()) is True
    assert children_cancelled == [True, True] and scope.cancelled_caught
    # A native cancel of the task (e.g. its connection dropped) while inside is not swallowed.
    waiting = asyncio.Event()

    async def admitted() -> None:
        me = asyncio.current_task()
        assert me is not None
        inner = enter_admission_scope(me)
        try:
            waiting.set()
            await anyio.sleep(5)
        except asyncio.CancelledError:
            assert inner.__exit__(*sys.exc_info()) is False
            raise

    runner = asyncio.ensure_future(admitted())
    await waiting.wait()
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner


async def test_an_admission_scope_keeps_a_deadline_set_while_it_runs() -> None:
    for task in (asyncio.current_task(), None):  # None: not known, anyio's own scope and entry
        scope = enter_admission_scope(task)
        assert task is not None or type(scope) is _anyio_scope_class()
        try:
            scope.deadline = current_time() + 0.02
            await anyio.sleep(5)
        except asyncio.CancelledError:
            assert scope.__exit__(*sys.exc_info()) is True
        assert scope.cancelled_caught


async def test_an_admission_raises_call_cancelled_for_its_cancel_and_lets_an_outer_one_through() -> None:
    operations = Operations()
    with pytest.raises(CallCancelled), operations.admit("op-1") as op_id:
        assert operations.cancel(op_id)
        await anyio.sleep(5)
    assert not operations.is_running("op-1")
    with anyio.CancelScope() as outer:
        with operations.admit("op-2"):
            outer.cancel()
            await anyio.sleep(5)
    assert outer.cancelled_caught and not operations.is_running("op-2")
