"""Store work in worker threads, never on the event loop (R-10.1, R-10.2).

The store's data methods are synchronous (`Store.read`, `Store.transaction`, the instance board):
on PostgreSQL each one is a round trip, and a write may wait up to `WRITE_WAIT_S` (5 s) for the
database's write lock `(1, 1)` (`store/pg_locks.py`). Run on the event loop, such a wait froze the
whole instance: no gateway call, no `/healthz`, no page. Every use case therefore runs its store
work through this module, in a worker thread of one of two bounded pools per event loop (per
process):

- **reads** (`in_read_thread`, `read_state`): at most `READ_THREADS`;
- **writes** (`in_write_thread`, `commit`): at most `WRITE_THREADS`.

Two pools, so that writes queued behind a held write lock never take the threads reads need: a
write waits for the lock in its thread, the writes behind it wait here, in memory, without a
thread. One write thread, because every backend serializes writes anyway (the file lock; on
PostgreSQL the advisory lock `(1, 1)`, of which `WriteGate` lets one write per process wait at a
time): a second thread could only wait in the gate, and a write that ran out of budget there would
name "another write of this process" instead of the session that holds the lock. So after a held
lock the writes of a process answer one after the other, the first after its whole budget, the
next after `STUCK_WAIT_S` (0.1 s) each, as before, but the event loop serves everything else
meanwhile. The reads' size follows the PostgreSQL store's pool (`POOL_SIZE` = 10 connections): the
one waiting write holds one, the reads at most 8 more, and one is left for the instance board and
presence checks.

What stays on the loop: `read_if_fresh()` and `stamp()` (a cache hit: memory and at most a few
`stat` calls, never the database), so the gateway's per-call token check and registry key do not
gain a thread hop (`read_state` tries the cache first).

A transaction runs wholly in its thread: `commit(store, change)` calls `change(state)` inside
`store.transaction()` there, so nothing awaits while the transaction (and on PostgreSQL its
connection, or on files the data lock) is held. Once a thread has started, the caller's
cancellation waits for it (anyio's default): a started write always finishes, and its outcome is
known. The caller's context variables (log fields) travel into the thread (anyio copies the context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

from mcp_center.store import Store, StoreState

__all__ = ["READ_THREADS", "WRITE_THREADS", "commit", "in_read_thread", "in_write_thread", "read_state"]

T = TypeVar("T")

READ_THREADS: Final = 8
"""Worker threads for store reads per process (of the PostgreSQL store's 10 pooled connections)."""
WRITE_THREADS: Final = 1
"""Worker threads for store writes per process (writes are serialized by the store's lock anyway)."""

_LIMITERS: RunVar[tuple[CapacityLimiter, CapacityLimiter]] = RunVar("mcp_center_store_threads")


def _limiters() -> tuple[CapacityLimiter, CapacityLimiter]:
    """This event loop's `(reads, writes)` limiters, made on first use (a RunVar: one pair per loop)."""
    try:
        return _LIMITERS.get()
    except LookupError:
        pair = (CapacityLimiter(READ_THREADS), CapacityLimiter(WRITE_THREADS))
        _LIMITERS.set(pair)
        return pair


async def in_read_thread(fn: Callable[[], T]) -> T:
    """`fn()` in a read worker thread (store reads and what they compute). Raises what `fn` raises."""
    return await anyio.to_thread.run_sync(fn, limiter=_limiters()[0])


async def in_write_thread(fn: Callable[[], T]) -> T:
    """`fn()` in a write worker thread (store transactions, board writes). Raises what `fn` raises."""
    return await anyio.to_thread.run_sync(fn, limiter=_limiters()[1])


async def read_state(store: Store) -> StoreState:
    """The store's state: the cached snapshot when it is current (on the loop), else `store.read()`
    in a read thread.

    Raises:
        StorageError, StorageUnavailable: the store could not be read.
    """
    return store.read_if_fresh() or await in_read_thread(store.read)


async def commit(store: Store, change: Callable[[StoreState], T]) -> T:
    """Run `change(state)` in one store transaction, wholly in a write thread; return its result.

    Raises:
        StorageBusy: the write lock was not ours within its budget (nothing committed).
        StorageError, StorageUnavailable: the commit failed (nothing committed).
        Whatever `change` raises (the transaction is abandoned: nothing committed).
    """

    def run() -> T:
        with store.transaction() as state:
            return change(state)

    return await in_write_thread(run)
