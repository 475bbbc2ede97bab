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
"""

from __future__ import annotations

import asyncio
import math
import sys

import anyio

__all__ = ["cancel_scope", "current_time", "running_loop"]

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
