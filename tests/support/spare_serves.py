"""Serves of their own for the browser tests that need one, each started one turn ahead (issue 16).

A browser test marked `own_serve` leaves a card or an approval (durable history the API does not
delete) or more than is quick to remove (100 gateway tokens), so it does not take the worker's
shared serve and gets one of its own. Starting a serve is mostly waiting (a Python process
importing the host, ~2 s on an idle 2-core machine, 10-40 s on a loaded one), and it was paid at
the start of each such test. `SpareServes` hands each of them a serve
spawned while the worker's previous own-serve test ran, and spawns the next one at once: the test
finds it started (or nearly), and its own run hides the next one's start.

Each serve runs in its own directory under the pool's root (`own-N/data`, `own-N/serve.log`), is
used by one test only, and is stopped and checked (a graceful shutdown, no logging error) by
`tests/support/serve.py`'s `serving` when that test ends, as `running_host` does. The one spawned
after the worker's last such test is stopped, with the same checks, by `close`.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import Process
from tests.support.serve import Host, serving, spawn_serve

__all__ = ["SpareServes"]


@dataclass(frozen=True)
class _Spawned:
    """A serve spawned (not yet waited for) in `place`: data directory `place/data`, log `place/serve.log`."""

    place: Path
    proc: Process


class SpareServes:
    """Serves of their own, one kept spawned ahead: `take()` for each test, `close()` at the end.

    Not thread-safe: one pytest process, one test at a time.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._spawned = 0
        self._next: _Spawned | None = None

    @property
    def spawned(self) -> int:
        """How many serves this pool has spawned (the tests served plus the spare, if any)."""
        return self._spawned

    @contextmanager
    def take(self) -> Generator[Host]:
        """A started serve for one test (the spare when there is one), stopped and checked on exit; the
        next test's spare is spawned first, so it starts while this test runs.

        Raises:
            RuntimeError, TimeoutError: the serve did not start. AssertionError: its shutdown was not
                graceful or it logged a logging error (`serving`).
        """
        mine = self._next if self._next is not None else self._spawn()
        self._next = self._spawn()
        with serving(mine.proc, mine.place / "data", mine.place / "serve.log") as host:
            yield host

    def close(self) -> None:
        """Stop the spare nobody took, once it has started (so its shutdown is checked like the others')."""
        spare, self._next = self._next, None
        if spare is not None:
            with serving(spare.proc, spare.place / "data", spare.place / "serve.log"):
                pass

    def _spawn(self) -> _Spawned:
        self._spawned += 1
        place = self._root / f"own-{self._spawned}"
        place.mkdir()
        return _Spawned(place, spawn_serve(place / "data", 0, place / "serve.log"))
