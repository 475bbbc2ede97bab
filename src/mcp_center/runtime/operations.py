"""Cancellable operations: the running requests by operation id, and cancels that came first (R-3.8).

`Operations` is the table of running operations by id. An operation is admitted *before* anything
waits on its behalf — a lazy connection, a server that is still connecting, the catalog — so a
cancel by operation id ends the wait at once and the caller gets `CallCancelled` (issue 14, item 7);
a cancel that arrives before the operation is admitted is remembered (bounded in number and time)
and refuses it when it arrives. The service may admit an operation around a whole use case and the
runtime admits it again for the request itself: in the same task that is the same operation.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio

from mcp_center.errors import CallCancelled, OperationInUse
from mcp_center.runtime.scopes import enter_admission_scope

__all__ = ["CANCELLED_OPS_REMEMBERED", "CANCELLED_OPS_TTL_S", "Admission", "Operations", "new_operation_id"]

CANCELLED_OPS_REMEMBERED = 1024
"""Bound on remembered cancel-before-admission operation ids (R-3.8)."""
CANCELLED_OPS_TTL_S = 300.0
"""Seconds a cancel-before-admission record is kept."""

_running_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = (
    getattr(asyncio.tasks, "_current_tasks", None) if sys.version_info < (3, 12) else None
)
"""On Python 3.11, asyncio's running task by loop (the table its C `_enter_task` keeps), read as
`asyncio.current_task(loop)` reads it, without that Python function's frame (issue 12); later
Pythons: None (their `current_task` is C)."""


class _OperationIds:
    """Fresh operation ids: 16 random hex digits drawn once per process, then a 16-digit counter."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.prefix = secrets.token_hex(8)
        self.counter = itertools.count(1)


_IDS = _OperationIds()
os.register_at_fork(after_in_child=_IDS.reset)  # a forked child draws its own prefix


def new_operation_id() -> str:
    """A fresh operation id: 32 hex digits, as `uuid4().hex` (R-3.8).

    Unique across processes and instances (64 random bits per process, redrawn after a fork) and
    within one (a counter): what an operation id must be. No system call and no `UUID` object per
    call, as `uuid4()` has (the gateway made one per forwarded call, R-8.3). Not a secret: nothing
    is granted by knowing an operation id (cancelling by id is the admin's API).
    """
    return f"{_IDS.prefix}{next(_IDS.counter):016x}"


@dataclass
class _Operation:
    operation_id: str
    scope: anyio.CancelScope
    task_id: int
    by_id: bool = False
    """Cancelled by `Operations.cancel` (not by a deadline riding its scope)."""


class Operations:
    """Running operations by id, and cancels that came first (R-3.8)."""

    def __init__(self) -> None:
        self._ops: dict[str, _Operation] = {}
        self._cancelled_early: OrderedDict[str, float] = OrderedDict()

    def is_running(self, operation_id: str) -> bool:
        """True while an operation with this id is admitted and not finished."""
        return operation_id in self._ops

    def cancel(self, operation_id: str) -> bool:
        """Cancel an operation by id. True if an admitted one was cancelled; else the cancel is remembered."""
        op = self._ops.get(operation_id)
        if op is not None:
            op.by_id = True
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

    def admit(self, operation_id: str | None) -> Admission:
        """Run the block as operation `operation_id` (a fresh id when None); `with` yields the id.

        Raises:
            CallCancelled: cancelled before it was admitted, or while the block ran.
            OperationInUse: another task runs an operation with this id.
        """
        return Admission(self, operation_id or new_operation_id())


class Admission:
    """The `with` block of `Operations.admit` (see there): a small class rather than a
    `contextlib.contextmanager` generator, which a forwarded call entered twice per call, its
    frames a measurable share of the gateway's CPU (issue 12). Same behaviour: the operation runs
    inside its own cancel scope; a cancel that scope caught is raised as `CallCancelled` when
    the block ends; an operation this task already runs is entered again without a second scope.

    A call deadline may ride the admission's scope instead of entering a scope of its own
    (`PausableDeadline` with `riding`, issue 12: one cancel scope less per forwarded call): it
    sets `scope`'s deadline and, while its expiry is in flight, `expiring`; a cancel the scope
    caught is then raised as `expiring()` (the deadline's own timeout error) unless the operation
    was cancelled by id, which stays `CallCancelled`.

    Attributes:
        scope: The cancel scope this block entered, while it runs; None for a block that entered the
            operation again (the outer block's scope is not the innermost one) or before `with`.
        loop: The running asyncio loop, looked up once on entry (None on another event loop, or
            before `with`); a riding deadline takes it from here instead of asking again (on Python
            3.11 each `asyncio.get_running_loop()` is a `getpid` system call, issue 12).
        expiring: The riding deadline's error, set while its expiry unwinds the block; else None.
    """

    __slots__ = ("_op", "_op_id", "_operations", "expiring", "loop", "scope")

    def __init__(self, operations: Operations, operation_id: str) -> None:
        self._operations = operations
        self._op_id = operation_id
        self._op: _Operation | None = None
        self.scope: anyio.CancelScope | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.expiring: Callable[[], BaseException] | None = None

    def __enter__(self) -> str:
        op_id = self._op_id
        # The running loop and task, looked up here once (no helper frames, issue 12): the task id as
        # `anyio.get_current_task().id` gives it, without the `TaskInfo` anyio builds for it.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio
            loop = None
        self.loop = loop
        if loop is None:
            task = None
        elif _running_tasks is not None:
            task = _running_tasks.get(loop)
        else:
            task = asyncio.current_task(loop)
        task_id = id(task) if task is not None else anyio.get_current_task().id
        running = self._operations._ops  # pyright: ignore[reportPrivateUsage]
        existing = running.get(op_id)
        if existing is not None:
            if existing.task_id != task_id:
                raise OperationInUse(
                    f"operation '{op_id}' is already running; use a new operation id per call",
                    details={"operation_id": op_id},
                )
            return op_id  # the same operation, admitted by an outer block of this task
        if self._operations._cancelled_early.pop(op_id, None) is not None:  # pyright: ignore[reportPrivateUsage]
            raise CallCancelled(f"operation '{op_id}' was cancelled before it started", details={"operation_id": op_id})
        scope = self.scope = enter_admission_scope(task)
        self._op = running[op_id] = _Operation(op_id, scope, task_id)
        return op_id

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        op = self._op
        if op is None:
            return
        self._op = self.scope = None
        try:
            # The scope swallows only the cancel it caught (it returns True exactly when it sets
            # `cancelled_caught`, or raises what it does not swallow), raised below.
            caught = op.scope.__exit__(exc_type, exc, tb)
        finally:
            running = self._operations._ops  # pyright: ignore[reportPrivateUsage]
            if running.get(op.operation_id) is op:
                del running[op.operation_id]
        if caught:
            expiring = self.expiring
            if expiring is not None and not op.by_id:  # the riding deadline's expiry, as its own block raises it
                self.expiring = None
                raise expiring() from None
            raise CallCancelled(
                f"operation '{op.operation_id}' was cancelled", details={"operation_id": op.operation_id}
            )
