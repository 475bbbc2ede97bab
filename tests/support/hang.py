"""Hang checks: inputs that super-linear code would never finish (R-7.3)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable

__all__ = ["HANG_BOUND_S", "assert_returns"]

HANG_BOUND_S = 20.0
"""How long a hang check waits. Not a speed goal: linear code answers these inputs in well under a
second; quadratic code took minutes to hours."""


def assert_returns(check: Callable[[], None], timeout_s: float = HANG_BOUND_S) -> None:
    """Run `check` (a module-level function that asserts) and fail if it has not returned in time.

    A hang check, not a timing assertion: `timeout_s` is generous. `check` runs in a spawned child
    process, not a thread, because a regular expression search holds the GIL for its whole run: a
    thread stuck in one could not be waited on with a timeout, nor stopped. The child is killed when
    the time is up.

    Raises:
        AssertionError: `check` is still running after `timeout_s` seconds, or it failed (its
            traceback is on the captured stderr).
    """
    child = multiprocessing.get_context("spawn").Process(target=check, daemon=True)
    child.start()
    child.join(timeout_s)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError(f"{check.__name__} had not returned after {timeout_s} s: hung")
    assert child.exitcode == 0, f"{check.__name__} failed in the child process (exit code {child.exitcode})"
