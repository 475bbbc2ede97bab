"""The PostgreSQL store's locks, bounded so that one slow holder cannot stall a process (R-10.1, R-10.2).

- **The write lock** `(1, 1)`, a transaction-scoped advisory lock every write takes first
  (`store/pg_store.py`). A process lets one of its writes wait for it at a time (`WriteGate`: the
  others wait in memory, not on a pooled connection, so reads keep their connections), and that
  one waits at most what is left of `WRITE_WAIT_S` (PostgreSQL's `lock_timeout`). Past it the write
  fails with `StorageBusy` (`STORAGE_BUSY`, 503, retry), logged as `store.write_lock_busy` with the
  holder's pid, application and state as PostgreSQL reports them (`lock_holder`). After such a
  wait, later writes wait `STUCK_WAIT_S` only until one gets the lock (`WriteGate`). A write
  transaction of ours that stops between statements (a frozen process) is ended by PostgreSQL after
  `IDLE_IN_TRANSACTION_S` (`idle_in_transaction_session_timeout`), which frees the lock.
- **Keyed locks** `(2, key)`, session advisory locks held across a block (an OAuth token renewal,
  which calls a token endpoint for up to 15 s). They all live on one connection of their own
  (`KeyedLocks`), never on the pool's: any number of renewals waiting or running holds no pooled
  connection. Two blocks of this process on one key are kept apart in memory (a session lock is
  re-entrant for its own session).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any, Final

import psycopg
from psycopg.rows import TupleRow

__all__ = [
    "IDLE_IN_TRANSACTION_S",
    "SERVER_KEEPALIVE_S",
    "STUCK_WAIT_S",
    "WRITE_WAIT_S",
    "KeyedLocks",
    "WriteGate",
    "configure_session",
    "lock_holder",
]

logger = logging.getLogger(__name__)

WRITE_WAIT_S: Final = 5.0
"""Seconds a write waits at most for the write lock (in this process, then in PostgreSQL)."""
STUCK_WAIT_S: Final = 0.1
"""Seconds a write waits for the write lock while the last one waited its whole budget in vain."""
IDLE_IN_TRANSACTION_S: Final = 15.0
"""Seconds PostgreSQL lets a write transaction of ours sit between statements before it ends it."""

SERVER_KEEPALIVE_S: Final = (10, 5, 3)
"""PostgreSQL's TCP keepalives for our sessions (idle s, interval s, count): the server drops the
session of a host that vanished (power, network) after about 25 s, and with it every lock it held.
(A frozen process's kernel still answers keepalives: `IDLE_IN_TRANSACTION_S` ends its write.)"""

_HOLDER: Final = """
SELECT a.pid, a.application_name, a.state, extract(epoch FROM now() - a.xact_start)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 2
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
LIMIT 1
"""


def configure_session(conn: psycopg.Connection[TupleRow]) -> None:
    """Set this session's server-side TCP keepalives (`SERVER_KEEPALIVE_S`; ignored over a Unix socket)."""
    idle, interval, count = SERVER_KEEPALIVE_S
    conn.execute(
        "SELECT set_config('tcp_keepalives_idle', %s, false), set_config('tcp_keepalives_interval', %s, false),"
        " set_config('tcp_keepalives_count', %s, false)",
        (str(idle), str(interval), str(count)),
    )


def lock_holder(conn: psycopg.Connection[TupleRow], lock: tuple[int, int]) -> dict[str, Any]:
    """Who holds advisory lock `lock` as PostgreSQL tells it: {holder_pid, holder_application,
    holder_state, holder_for_s} (empty when nobody, or when the query itself fails). Run outside a
    failed transaction (autocommit)."""
    try:
        row = conn.execute(_HOLDER, lock).fetchone()
    except psycopg.Error:
        return {}
    if row is None:
        return {}
    pid, application, state, seconds = row
    return {
        "holder_pid": int(pid),
        "holder_application": str(application or "")[:64],
        "holder_state": str(state or ""),
        "holder_for_s": round(float(seconds), 1) if seconds is not None else None,
    }


class WriteGate:
    """One write of this process at a time may wait for the write lock (see the module docstring).

    Once a write waited its whole budget (`stuck()`), the lock is known held past reason: later
    writes wait only `STUCK_WAIT_S`, until one gets the lock (`got()`). The service runs writes in
    one worker thread per process (`service/store_threads.py`: the event loop goes on serving), so
    writes queue behind each other: a held lock costs one full wait, then a short one per write,
    not a full one each."""

    def __init__(self, wait_s: float = WRITE_WAIT_S) -> None:
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._stuck = False

    def enter(self) -> float | None:
        """Wait for this process's turn; return the seconds left of the budget (`wait_s`, or
        `STUCK_WAIT_S` while stuck) for PostgreSQL's lock wait, or None when the turn did not come."""
        budget = min(self.wait_s, STUCK_WAIT_S) if self._stuck else self.wait_s
        started = time.monotonic()
        if not self._lock.acquire(timeout=budget):
            return None
        return max(0.05, budget - (time.monotonic() - started))

    def stuck(self) -> None:
        """A write waited its whole budget: the next ones wait `STUCK_WAIT_S` only."""
        self._stuck = True

    def got(self) -> None:
        """A write got the lock: the next ones wait their whole budget again."""
        self._stuck = False

    def leave(self) -> None:
        """End this write's turn (after its commit or rollback)."""
        self._lock.release()


class KeyedLocks:
    """Session advisory locks `(lock_class, key)` on one connection of their own (module docstring).

    Args:
        conninfo: The libpq URL; kwargs: the connection parameters (timeouts, keepalives).
    """

    def __init__(self, conninfo: str, kwargs: dict[str, Any], lock_class: int) -> None:
        self._conninfo = conninfo
        self._kwargs = kwargs
        self._class = lock_class
        self._guard = threading.Lock()
        self._conn: psycopg.Connection[TupleRow] | None = None
        self._held: set[int] = set()

    def try_acquire(self, key: int) -> bool:
        """Take `key` if free in this process and in PostgreSQL; False when another holds it.

        Raises:
            psycopg.Error: the database cannot be reached (the connection is made again next time).
        """
        with self._guard:
            if key in self._held:
                return False
            conn = self._connection()
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (self._class, key)).fetchone()
            except psycopg.Error:
                self._drop()
                raise
            if row and row[0]:
                self._held.add(key)
                return True
            return False

    def release(self, key: int) -> None:
        """Give `key` back (nothing when it was lost with its connection). Never raises."""
        with self._guard:
            if key not in self._held:
                return
            self._held.discard(key)
            conn = self._conn
            if conn is None:
                return
            try:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (self._class, key))
            except psycopg.Error:
                self._drop()

    def close(self) -> None:
        """Close the connection: every key still held is released by PostgreSQL."""
        with self._guard:
            self._drop()

    def _connection(self) -> psycopg.Connection[TupleRow]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self._drop()
            conn = psycopg.connect(self._conninfo, autocommit=True, **self._kwargs)
            configure_session(conn)
            self._conn = conn
        return conn

    def _drop(self) -> None:
        """Forget the connection; the keys it held are gone with it (PostgreSQL released them)."""
        conn, self._conn = self._conn, None
        if self._held:
            logger.warning("store.keyed_locks_lost", extra={"held": len(self._held)})
        self._held.clear()
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()
