"""Hang checks: inputs that super-linear code would never finish (R-7.3)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.synchronize import Event

__all__ = ["HANG_BOUND_S", "START_BOUND_S", "assert_returns"]

HANG_BOUND_S = 20.0
"""How long a hang check waits once its child has started. Not a speed goal: linear code answers
these inputs in well under a second; quadratic code took minutes to hours."""

START_BOUND_S = 120.0
"""How long the spawned child may take to import the check's module before the clock starts: on a
loaded 2-core machine a fresh interpreter importing the host took over 20 s once, which the hang
bound must not count."""


def _run_started(check: Callable[[], None], started: Event) -> None:
    """The child's entry point: say the imports are done, then run `check`."""
    started.set()
    check()


def assert_returns(check: Callable[[], None], timeout_s: float = HANG_BOUND_S) -> None:
    """Run `check` (a module-level function that asserts) and fail if it has not returned in time.

    A hang check, not a timing assertion: `timeout_s` is generous and counts from the moment the
    child has imported `check`'s module (bounded apart by `START_BOUND_S`), so a slow start on a
    loaded machine is not taken for a hang. `check` runs in a spawned child process, not a thread,
    because a regular expression search holds the GIL for its whole run: a thread stuck in one could
    not be waited on with a timeout, nor stopped. The child is killed when the time is up.

    Raises:
        AssertionError: the child did not start within `START_BOUND_S` seconds, `check` is still
            running `timeout_s` seconds after it started, or it failed (its traceback is on the
            captured stderr).
    """
    spawn = multiprocessing.get_context("spawn")
    started = spawn.Event()
    child = spawn.Process(target=_run_started, args=(check, started), daemon=True)
    child.start()
    try:
        if not started.wait(START_BOUND_S):
            raise AssertionError(f"the child running {check.__name__} had not started after {START_BOUND_S} s")
        child.join(timeout_s)
        if child.is_alive():
            raise AssertionError(f"{check.__name__} had not returned after {timeout_s} s: hung")
    finally:
        if child.is_alive():
            child.kill()
        child.join()
    assert child.exitcode == 0, f"{check.__name__} failed in the child process (exit code {child.exitcode})"
