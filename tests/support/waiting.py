"""Wait for a condition another process brings about, with a bounded deadline (never a bare sleep).

Another process's commit reaches this one only through the file system, which offers no event to
wait on: these helpers ask again at a short interval until the answer is truthy or the deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["eventually", "eventually_sync", "until"]

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T]], *, timeout_s: float = 10.0, interval_s: float = 0.02) -> T:
    """The first truthy result of `await probe()`.

    Raises:
        TimeoutError: none within `timeout_s` seconds.
    """
    with anyio.fail_after(timeout_s):
        while True:
            result = await probe()
            if result:
                return result
            await anyio.sleep(interval_s)


async def until(predicate: Callable[[], bool], *, timeout_s: float = 10.0, interval_s: float = 0.02) -> None:
    """Return once `predicate()` holds (it is checked on the event loop, so it must be quick).

    Raises:
        TimeoutError: it did not hold within `timeout_s` seconds.
    """
    with anyio.fail_after(timeout_s):
        while True:
            if predicate():
                return
            await anyio.sleep(interval_s)


def eventually_sync(probe: Callable[[], T], *, timeout_s: float = 10.0, interval_s: float = 0.02) -> T:
    """`eventually` for synchronous code (a test driving processes).

    Raises:
        TimeoutError: no truthy result within `timeout_s` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"the condition did not hold within {timeout_s} s")
        time.sleep(interval_s)
