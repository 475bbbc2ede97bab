"""Cancel scopes and the loop clock for the per-call path, without anyio's event-loop lookup (R-8.3).

`anyio.CancelScope()` and `anyio.current_time()` first ask which async library runs (sniffio:
context variables, `sys.modules`, `asyncio.current_task()`), then dispatch to that back end. A
forwarded gateway call made four scopes and read the clock several times: about 4 µs of that
lookup per scope on the bench machine (one `getpid` system call of ~0.6 µs each inside
`asyncio.current_task()` alone), a measurable share of the gateway's CPU per call (issue 12).

On asyncio these helpers take the asyncio back end's own scope class (learnt once from the
scope anyio made) and the running loop's clock; on any other event loop they are anyio's own
calls. The scopes are anyio's: entering, cancelling and exiting them behave exactly as before.

Which loop runs is asked once per scope only while trio is imported: anyio runs on asyncio or trio,
so in a process that never imported trio any loop is asyncio's, and `asyncio.get_running_loop()`
(a `getpid` system call on Python 3.11, its fork check) is not made for each of the three scopes a
forwarded call enters (issue 12).

`enter_admission_scope` makes and enters the scope of an operation's admission, once per forwarded call
(`runtime.operations.Admission`): on asyncio, anyio's own asyncio scope class whose entry and
ordinary exit are given the task instead of looking it up (`asyncio.current_task()`: a `getpid` each on
Python 3.11) and skip the work anyio's own would find nothing to do for (no deadline to arm, no parent
scope to restart a cancellation in); a scope that was cancelled exits through anyio's own `__exit__`.
It is anyio's object, with anyio's state after each step: `cancel`, `deadline`, `shield`, nested
scopes and task groups see exactly what they see with `anyio.CancelScope()`. Used only when anyio's
asyncio scope is the one this was written against (`_LEAN_READY`: its slots, its task-state table);
otherwise it gives `cancel_scope()`, entered by anyio's `__enter__`.
"""

from __future__ import annotations

import asyncio
import math
import sys
from types import TracebackType
from typing import Any
from weakref import WeakKeyDictionary, ref

import anyio
from anyio._backends import _asyncio as _anyio_asyncio  # the back end's scope, subclassed below

__all__ = ["cancel_scope", "current_time", "enter_admission_scope", "running_loop"]

_asyncio_scope: type[anyio.CancelScope] | None = None
"""anyio's asyncio back-end `CancelScope` class, once a scope was made on an asyncio loop."""


def cancel_scope(*, deadline: float = math.inf, shield: bool = False) -> anyio.CancelScope:
    """`anyio.CancelScope(deadline=deadline, shield=shield)`, made without the back-end lookup on asyncio.

    Args:
        deadline: The loop-clock time (seconds, `current_time()`) at which the scope cancels itself.
        shield: Shield the block from outer cancellation.
    Raises:
        anyio.NoEventLoopError: no event loop runs in this thread (as anyio) and none was seen yet,
            or trio is imported; else entering the scope without a loop raises `RuntimeError`.
    """
    global _asyncio_scope
    scope_class = _asyncio_scope
    if scope_class is not None and "trio" not in sys.modules:  # no trio: the loop is asyncio's
        return scope_class(deadline=deadline, shield=shield)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (or no loop at all): anyio decides
        return anyio.CancelScope(deadline=deadline, shield=shield)
    scope_class = _asyncio_scope
    if scope_class is None:
        scope = anyio.CancelScope(deadline=deadline, shield=shield)
        _asyncio_scope = type(scope)
        return scope
    return scope_class(deadline=deadline, shield=shield)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None (no loop, or another event loop than asyncio's)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def current_time() -> float:
    """`anyio.current_time()`: the running loop's clock in seconds (asyncio: `loop.time()` directly)."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return anyio.current_time()


_KNOWN_SLOTS = frozenset(
    {
        "_active",
        "_cancel_called",
        "_cancel_handle",
        "_cancel_reason",
        "_cancelled_caught",
        "_cancelling_at_enter",
        "_child_scopes",
        "_deadline",
        "_host_task",
        "_parent_scope",
        "_pending_uncancellations",
        "_shield",
        "_tasks",
        "_timeout_handle",
    }
)
"""The slots of anyio's asyncio `CancelScope` (anyio 4.16) that `_AdmissionScope` sets as anyio does."""

_AsyncioScope = _anyio_asyncio.CancelScope
_task_states: Any = getattr(_anyio_asyncio, "_task_states", None)  # anyio's table of task states
_TaskState: Any = _anyio_asyncio.TaskState


def _lean_ready(table: object) -> bool:
    """anyio's asyncio scope and its task-state table (`table`) are those `_AdmissionScope` was written against."""
    return (
        frozenset(_AsyncioScope.__slots__) == _KNOWN_SLOTS
        and type(table) is WeakKeyDictionary
        and frozenset(_TaskState.__slots__) == frozenset({"__weakref__", "cancel_scope", "parent_id"})
    )


_LEAN_READY = _lean_ready(_task_states)
"""anyio's asyncio scope and task states are those `_AdmissionScope` was written against (else it is not used)."""
_states: dict[Any, Any] = getattr(_task_states, "data", {}) if _LEAN_READY else {}
"""anyio's task states by weak reference to the task (`WeakKeyDictionary.data`), read without its method frames."""
_forget: Any = getattr(_task_states, "_remove", None) if _LEAN_READY else None
"""The table's own callback that drops a task's entry when the task is collected."""


class _AdmissionScope(_AsyncioScope):
    """anyio's asyncio cancel scope, entered for a known task (`enter_admission_scope`) and exited
    without anyio's lookups when nothing cancelled it (see the module docstring). Its methods read
    and set anyio's own (private, loosely typed) state, hence `me: Any`."""

    __slots__ = ("_state",)

    def __enter__(self) -> _AdmissionScope:
        task = asyncio.current_task()
        if task is None:
            return super().__enter__()  # anyio's own error
        self.enter_for(task)
        return self

    def enter_for(self, task: asyncio.Task[Any]) -> None:
        """anyio's `__enter__` for `task`, the running task (the caller knows it)."""
        me: Any = self
        if me._active:
            raise RuntimeError("Each CancelScope may only be used for a single 'with' block")
        me._host_task = task
        me._tasks.add(task)
        state = _states.get(ref(task))
        if state is None:
            state = _TaskState(None, self)
            _states[ref(task, _forget)] = state
        else:
            parent = me._parent_scope = state.cancel_scope
            state.cancel_scope = self
            if parent is not None:
                parent._child_scopes.add(self)
                parent._tasks.discard(task)
        me._state = state
        if me._deadline != math.inf:
            me._timeout()
        me._active = True
        me._cancelling_at_enter = task.cancelling()
        if me._cancel_called:
            me._deliver_cancellation(self)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool:
        """anyio's `__exit__`; when the scope was not cancelled (nothing to swallow), without its
        task lookup: the `with` block of an admission ends in the task it began in."""
        me: Any = self
        task = me._host_task
        if me._cancel_called or not me._active or task is None or me._state.cancel_scope is not self:
            return super().__exit__(exc_type, exc_val, exc_tb)  # anyio's own checks and errors
        try:
            me._active = False
            if me._timeout_handle:
                me._timeout_handle.cancel()
                me._timeout_handle = None
            me._tasks.remove(task)
            parent = me._parent_scope
            me._state.cancel_scope = parent
            if parent is not None:
                parent._child_scopes.remove(self)
                parent._tasks.add(task)
                me._restart_cancellation_in_parent()
                if me._pending_uncancellations:
                    parent._pending_uncancellations += me._pending_uncancellations
                    me._pending_uncancellations = 0
            return False
        finally:
            me._host_task = None


_new_scope = object.__new__
_init_scope = _AsyncioScope.__init__


def enter_admission_scope(task: asyncio.Task[Any] | None) -> anyio.CancelScope:
    """A fresh `anyio.CancelScope()` (no deadline, not shielded), entered, for an operation's
    admission in `task`, the running task (R-3.8, R-8.3); the caller exits it (`__exit__`).

    Args:
        task: The running asyncio task, None on another event loop (or unknown): then anyio's own
            scope, entered by anyio's `__enter__`.
    Raises:
        RuntimeError: no task runs (as anyio's `__enter__`).
    """
    if task is None or not _LEAN_READY:
        scope = cancel_scope()
        scope.__enter__()
        return scope
    scope = _new_scope(_AdmissionScope)
    _init_scope(scope)
    scope.enter_for(task)
    return scope
