"""The PostgreSQL store when another session holds its locks, or the database turns read-only (R-10.1,
R-10.2; store40, from break40's t24/t26): a real PostgreSQL 15 per run (`tests/support/postgres.py`).

- A write waits a bounded time for the write lock `(1, 1)` and then fails `STORAGE_BUSY` (503)
  naming the holder's backend pid and application, logged `store.write_lock_busy`.
- Writes waiting for it hold at most one pooled connection: reads are answered meanwhile.
- A write transaction of ours left idle (a frozen process) is ended by PostgreSQL, freeing the lock.
- Keyed locks (an OAuth renewal's) hold no pooled connection, however many wait or run.
- Pooled connections opened while the database was read-only do not keep writes failing afterwards.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import anyio
import psycopg
import pytest
from psycopg import sql

from mcp_center.errors import StorageBusy, StorageUnavailable
from mcp_center.store import PgStore
from mcp_center.store.pg_store import POOL_SIZE
from tests.support.postgres import waiting_for_advisory_lock
from tests.support.waiting import eventually_sync

HOLDER_APP = "operator-psql"


@pytest.fixture
def holder(database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A session outside mcp-center (an operator's psql), in a transaction that holds nothing yet."""
    conn = psycopg.connect(database_url, application_name=HOLDER_APP)
    yield conn
    conn.close()


def _write(store: PgStore, name: str) -> None:
    with store.transaction() as state:
        state.secrets[name] = "ciphertext"


def test_a_write_behind_a_held_write_lock_fails_busy_in_bounded_time_naming_the_holder(
    database_url: str, holder: psycopg.Connection[tuple[object, ...]], caplog: pytest.LogCaptureFixture
) -> None:
    """t26: a psql session holding `pg_advisory_xact_lock(1, 1)` stalled every write, with no error and
    no log line. Now: `STORAGE_BUSY` (503) after `write_wait_s`, with the holder's pid and application."""
    store = PgStore(database_url, display="test-db", write_wait_s=1.0)
    store.open()
    try:
        holder_pid = holder.info.backend_pid
        holder.execute("SELECT pg_advisory_xact_lock(1, 1)")
        outcome: list[BaseException | None] = []
        thread = threading.Thread(target=lambda: outcome.append(_capture(lambda: _write(store, "a"))), daemon=True)
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="mcp_center.store"):
            thread.start()
            thread.join(timeout=10)
            stalled = thread.is_alive()
            holder.rollback()  # a stalled write (the bug) gets the lock now and ends
            thread.join(timeout=10)
        assert not stalled, "the write waited for the lock without bound"
        elapsed = time.monotonic() - started
        failure = outcome[0]
        assert isinstance(failure, StorageBusy), failure
        assert (failure.code, failure.http_status) == ("STORAGE_BUSY", 503)
        assert 0.8 <= elapsed < 4.0, elapsed
        assert failure.details["holder_pid"] == holder_pid
        assert failure.details["holder_application"] == HOLDER_APP
        assert str(holder_pid) in failure.message and HOLDER_APP in failure.message
        logged = [r for r in caplog.records if r.getMessage() == "store.write_lock_busy"]
        assert logged and getattr(logged[0], "holder_pid", None) == holder_pid
        holder.execute("SELECT pg_advisory_xact_lock(1, 1)")  # held again: the next write knows it is stuck
        started = time.monotonic()
        with pytest.raises(StorageBusy):
            _write(store, "a")
        assert time.monotonic() - started < 0.6  # a short wait, not a whole budget per write
        holder.rollback()
        _write(store, "b")  # the lock is free again: writes go through
        assert "b" in store.read().secrets
    finally:
        store.close()


def _capture(call: object) -> BaseException | None:
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        return exc
    return None


def test_reads_are_answered_while_more_writes_than_the_pool_holds_wait_for_the_write_lock(
    database_url: str, holder: psycopg.Connection[tuple[object, ...]]
) -> None:
    """t26: 12 waiting writes took the 10 pooled connections and `GET /api/approvals` waited 16 s.
    Now at most one of the process's writes waits on a connection; reads keep theirs."""
    store = PgStore(database_url, display="test-db", write_wait_s=4.0)
    store.open()
    try:
        holder.execute("SELECT pg_advisory_xact_lock(1, 1)")
        writers = [
            threading.Thread(target=_capture, args=(lambda i=i: _write(store, f"w{i}"),), daemon=True)
            for i in range(POOL_SIZE + 2)
        ]
        for writer in writers:
            writer.start()
        eventually_sync(lambda: waiting_for_advisory_lock(database_url) >= 1)
        # Reads for 1.5 s while the writes wait (their budget is 4 s): the pool would have filled by then.
        slowest, reads, until = 0.0, 0, time.monotonic() + 1.5
        while time.monotonic() < until:
            started = time.monotonic()
            store.read()
            store.instances()
            slowest, reads = max(slowest, time.monotonic() - started), reads + 1
        waiting = waiting_for_advisory_lock(database_url)
        holder.rollback()
        for writer in writers:
            writer.join(timeout=15)
        assert slowest < 0.5, (slowest, reads)
        assert waiting == 1, waiting  # one write of the process waits on a connection, the rest in memory
    finally:
        store.close()


def test_a_write_transaction_left_idle_by_a_frozen_instance_is_ended_and_frees_the_lock(database_url: str) -> None:
    """A process frozen mid-commit (SIGSTOP, a debugger) held the write lock until PostgreSQL dropped
    its TCP connection, hours later. Now PostgreSQL ends a write transaction idle for
    `idle_in_transaction_s`: the other instance's write goes through, the frozen one's is refused."""
    frozen = PgStore(database_url, display="test-db", idle_in_transaction_s=1.0)
    other = PgStore(database_url, display="test-db", write_wait_s=8.0)
    frozen.open()
    other.open()
    inside, thaw = threading.Event(), threading.Event()

    def freeze() -> None:
        with frozen.transaction() as state:
            state.secrets["frozen"] = "ciphertext"
            inside.set()
            thaw.wait(20)

    frozen_outcome: list[BaseException | None] = []
    thread = threading.Thread(target=lambda: frozen_outcome.append(_capture(freeze)), daemon=True)
    try:
        thread.start()
        assert inside.wait(10)
        started = time.monotonic()
        _write(other, "after")  # fails STORAGE_BUSY after 8 s if the frozen transaction keeps the lock
        assert time.monotonic() - started < 5.0
        thaw.set()
        thread.join(timeout=10)
        assert isinstance(frozen_outcome[0], StorageUnavailable), frozen_outcome  # nothing of it applied
        assert set(other.read().secrets) == {"after"}
    finally:
        thaw.set()
        frozen.close()
        other.close()


def test_keyed_locks_held_or_awaited_take_no_pooled_connection(database_url: str) -> None:
    """t24: each OAuth renewal held a pooled connection while it waited for its lock and while it
    called the token endpoint; ten at once took the pool and reads failed. Now they take none."""
    store = PgStore(database_url, display="test-db")
    other = PgStore(database_url, display="test-db")
    store.open()
    other.open()

    async def main() -> None:
        held, release, all_in = anyio.Event(), anyio.Event(), anyio.Event()
        inside = 0

        async def elsewhere() -> None:  # another instance renews binding 0 slowly
            async with other.lock("oauth-renewal:binding-0"):
                held.set()
                await release.wait()

        async def renewal(i: int) -> None:
            nonlocal inside
            async with store.lock(f"oauth-renewal:binding-{i}", timeout_s=20):
                inside += 1
                if inside == POOL_SIZE + 1:  # every renewal but binding 0's holds its lock
                    all_in.set()
                await release.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(elsewhere)
            await held.wait()
            for i in range(POOL_SIZE + 2):
                tg.start_soon(renewal, i)
            with anyio.fail_after(10):
                await all_in.wait()
            started = time.monotonic()
            await anyio.to_thread.run_sync(store.read)
            await anyio.to_thread.run_sync(_write, store, "during")
            assert time.monotonic() - started < 1.0
            release.set()

    try:
        anyio.run(main)
    finally:
        store.close()
        other.close()


def test_one_process_s_blocks_on_one_key_are_kept_apart(database_url: str) -> None:
    """The keyed locks share one session, where an advisory lock is re-entrant: the store keeps two
    blocks of one process on one key apart itself."""
    store = PgStore(database_url, display="test-db")
    store.open()

    async def main() -> None:
        async with store.lock("oauth-renewal:x"):
            with anyio.move_on_after(0.3) as waited:
                async with store.lock("oauth-renewal:x"):
                    pytest.fail("two blocks of one process held one key")
            assert waited.cancelled_caught
        with anyio.fail_after(5):
            async with store.lock("oauth-renewal:x"):
                pass

    try:
        anyio.run(main)
    finally:
        store.close()


def _set_read_only(cluster_url: str, database: str, on: bool) -> None:
    with psycopg.connect(cluster_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = {}").format(
                sql.Identifier(database), sql.SQL("on" if on else "off")
            )
        )


def test_writes_recover_as_soon_as_the_database_accepts_them_again(database_url: str) -> None:
    """break40: after `ALTER DATABASE ... SET default_transaction_read_only = on` and back off, the
    pooled connections opened meanwhile stayed read-only and every write failed `STORAGE_ERROR`
    for the pool's hour. Now a write in the window is `STORAGE_UNAVAILABLE` (503, retry) and the
    first write after it succeeds."""
    parts = urlsplit(database_url)
    database = parts.path.lstrip("/")
    cluster_url = database_url.replace(f"/{database}?", "/postgres?")
    store = PgStore(database_url, display="test-db")
    store.open()
    try:
        _write(store, "before")
        _set_read_only(cluster_url, database, True)
        with psycopg.connect(cluster_url, autocommit=True) as conn:  # every session of ours opens again
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )
        eventually_sync(lambda: _capture(store.read) is None)  # pooled connections opened in the window

        def refused_as_read_only() -> bool:
            # A pooled connection the termination ended may answer first (503, fault: that loss):
            # the write is tried again until a live one says read-only; it must never succeed.
            with pytest.raises(StorageUnavailable) as refused:
                _write(store, "during")
            return refused.value.details["fault"] == "read-only"

        eventually_sync(refused_as_read_only)
        _set_read_only(cluster_url, database, False)
        _write(store, "after")
        assert set(store.read().secrets) == {"before", "after"}
    finally:
        _set_read_only(cluster_url, database, False)
        store.close()
