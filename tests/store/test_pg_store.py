"""The PostgreSQL store against a real PostgreSQL 15 (R-10.1): schema versions, refusals, the feed that
keeps the hot path off the database, locks and presence across processes, and a database that goes away.

The store's semantics shared with the file backend (transactions, approvals, cards, tokens) are
proved by the service modules, which run on both backends (`shared_settings`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import psycopg
import pytest

from mcp_center.config import Settings, parse_server_config
from mcp_center.errors import SecretKeyMismatch, StorageError, StorageSchemaTooNew, StorageUnavailable
from mcp_center.service.gateway_tokens import GatewayTokens
from mcp_center.store import PgStore, ServerRecord
from mcp_center.store.pg_feed import INSTANCE_LOCK_CLASS, NAME_LOCK_CLASS, lock_key
from mcp_center.store.pg_schema import code_version
from tests.support.postgres import PgCluster, advisory_lock_waiters
from tests.support.waiting import eventually_sync

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _record(server_id: str, version: int = 1) -> ServerRecord:
    config = parse_server_config({"id": server_id, "name": server_id, "transport": "stdio", "command": "cat"})
    return ServerRecord(config=config, version=version, created_at=NOW, updated_at=NOW)


@pytest.fixture
def stores(database_url: str) -> Iterator[list[PgStore]]:
    """Two open stores on one database: two instances' views of the shared state."""
    made = [PgStore(database_url, display="test-db") for _ in range(2)]
    for store in made:
        store.open()
    yield made
    for store in made:
        store.close()


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [int(r[0]) for r in conn.execute("SELECT version FROM mcp_center.schema_version ORDER BY version")]


def test_open_applies_every_migration_once_and_records_it(database_url: str) -> None:
    for _ in range(2):  # the second open finds the schema current
        store = PgStore(database_url, display="test-db")
        store.open()
        store.close()
    assert _versions(database_url) == list(range(1, code_version() + 1))


def test_a_schema_newer_than_the_code_is_refused_naming_both_versions(database_url: str) -> None:
    PgStore(database_url, display="test-db").open()
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO mcp_center.schema_version (version, name) VALUES (99, 'from_the_future')")
    store = PgStore(database_url, display="test-db")
    with pytest.raises(StorageSchemaTooNew) as refused:
        store.open()
    assert refused.value.code == "STORAGE_SCHEMA_TOO_NEW"
    assert refused.value.details["database_version"] == 99
    assert refused.value.details["code_version"] == code_version()
    assert "99" in refused.value.message and str(code_version()) in refused.value.message
    assert _versions(database_url)[-1] == 99  # nothing was changed


def test_an_unreachable_database_is_a_clear_error_without_the_password(tmp_path: object) -> None:
    url = f"postgresql://mcp:s3cret-pw@/nowhere?host={tmp_path}"
    settings = Settings.load(data_dir=f"{tmp_path}/data", database_url=url, environ={})
    store = PgStore(url, display=settings.database_display or "")
    with pytest.raises(StorageUnavailable) as refused:
        store.open()
    assert refused.value.code == "STORAGE_UNAVAILABLE"
    assert refused.value.http_status == 503
    assert "s3cret-pw" not in refused.value.message
    assert "s3cret-pw" not in str(refused.value.details)
    assert refused.value.details["database"] == "postgresql://mcp:***@/nowhere"


def test_a_commit_in_one_instance_reaches_the_other_s_change_feed_within_a_second(stores: list[PgStore]) -> None:
    here, there = stores

    async def main() -> frozenset[str]:
        async with there.changes(["servers"]) as changes:
            with here.transaction() as state:
                state.servers["a"] = _record("a")
            with anyio.fail_after(1.0):
                return await changes.next()

    assert anyio.run(main) == frozenset({"servers"})
    assert "a" in there.read().servers


def test_the_hot_path_answers_from_memory_while_the_tables_are_locked(stores: list[PgStore], database_url: str) -> None:
    """The per-call token check and the registry key never query the database (R-8.2, R-10.1):
    with the tables locked by another session, they still answer, and at once."""
    here, there = stores
    record, token = GatewayTokens(there).create("agent")
    tokens = GatewayTokens(here)
    assert eventually_sync(lambda: tokens.identify(token)) == record.id
    answers: list[object] = []
    with psycopg.connect(database_url) as blocker, blocker.transaction():
        blocker.execute(
            "LOCK TABLE mcp_center.gateway_tokens, mcp_center.servers, mcp_center.generations IN ACCESS EXCLUSIVE MODE"
        )

        def hot_path() -> None:
            answers.extend(tokens.identify(token) for _ in range(1000))
            answers.append(here.stamp("servers"))
            answers.append(here.read_if_fresh() is not None)

        worker = threading.Thread(target=hot_path, daemon=True)
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), "the hot path waited for the locked tables"
    assert answers[:1000] == [record.id] * 1000
    assert answers[-1] is True


def test_optimistic_versions_hold_across_instances(stores: list[PgStore]) -> None:
    """The transaction lock serializes instances: the second writer reads the first one's commit."""
    here, there = stores
    with here.transaction() as state:
        state.servers["a"] = _record("a", version=1)
    # A plain read is current within the notification's latency (ms); the transaction below is exact.
    seen = eventually_sync(lambda: there.read().servers.get("a"))
    assert seen is not None
    seen_by_there = seen.version
    with here.transaction() as state:
        state.servers["a"] = _record("a", version=2)
    with there.transaction() as state:  # a stale read (version 1) would let a lost update through
        assert seen_by_there == 1
        assert state.servers["a"].version == 2


def test_a_keyed_lock_is_single_flight_across_instances(stores: list[PgStore]) -> None:
    here, there = stores

    async def main() -> None:
        async with here.lock("oauth-renewal:x"):
            with anyio.move_on_after(0.3) as waited:
                async with there.lock("oauth-renewal:x"):
                    pytest.fail("two instances held one lock")
            assert waited.cancelled_caught
            with pytest.raises(StorageError) as timed_out:
                async with there.lock("oauth-renewal:x", timeout_s=0.2):
                    pytest.fail("two instances held one lock")
            assert timed_out.value.details["fault"] == "lock_timeout"
        with anyio.fail_after(5):
            async with there.lock("oauth-renewal:x"):
                pass

    anyio.run(main)


_JOINER = """
import sys
from mcp_center.store import PgStore
store = PgStore(sys.argv[1], display="db")
store.open()
store.join_instance("doomed-run")
print("joined", flush=True)
sys.stdin.read()
"""


def test_a_run_killed_with_sigkill_is_seen_gone_by_the_other_instances(
    stores: list[PgStore], database_url: str
) -> None:
    here, _ = stores
    with subprocess.Popen(
        [sys.executable, "-c", _JOINER, database_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == b"joined\n"
            assert eventually_sync(lambda: here.instance_alive("doomed-run"), timeout_s=5)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=5)
            assert eventually_sync(lambda: not here.instance_alive("doomed-run"), timeout_s=3)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=5)


def test_a_damaged_row_is_refused_naming_the_table_and_the_id(stores: list[PgStore], database_url: str) -> None:
    del stores  # opened: the schema exists
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO mcp_center.servers (id, version, enabled, updated_at, record)"
            " VALUES ('broken', 1, false, now(), '{\"config\": 3}')"
        )
        conn.execute("UPDATE mcp_center.generations SET generation = generation + 1 WHERE section = 'servers'")
    fresh = PgStore(database_url, display="test-db")
    with pytest.raises(StorageError) as refused:
        fresh.open()
    assert refused.value.details["table"] == "mcp_center.servers"
    assert refused.value.details["id"] == "broken"


def test_the_database_going_away_fails_with_a_stable_code_and_the_store_recovers_when_it_returns(
    pg_cluster: PgCluster, stores: list[PgStore]
) -> None:
    here, there = stores
    with here.transaction() as state:
        state.servers["a"] = _record("a")
    tokens = GatewayTokens(here)
    pg_cluster.stop()
    try:
        # The feed notices at once (the server closes every connection): caches no longer count.
        eventually_sync(lambda: here.read_if_fresh() is None, timeout_s=5)
        with pytest.raises(StorageUnavailable) as down:
            here.read()
        assert down.value.code == "STORAGE_UNAVAILABLE"
        with pytest.raises(StorageUnavailable):
            tokens.identify("mcpg_anything")
        with pytest.raises(StorageUnavailable), here.transaction() as state:
            state.servers["b"] = _record("b")
    finally:
        pg_cluster.start_again()
    returned = time.monotonic()

    def reads() -> bool:
        try:
            here.read()
        except StorageUnavailable:
            return False
        return here.read_if_fresh() is not None

    assert eventually_sync(reads, timeout_s=10)
    sys.stderr.write(f"store usable again {time.monotonic() - returned:.2f} s after the database returned\n")
    with there.transaction() as state:
        state.servers["b"] = _record("b")
    assert eventually_sync(lambda: "b" in (here.read_if_fresh() or here.read()).servers, timeout_s=2)
    assert tokens.identify("mcpg_anything") is None


def test_an_instance_with_another_key_is_refused(stores: list[PgStore]) -> None:
    """Every instance must hold the key the ciphertexts were sealed with (R-10.1); the key never enters
    the database, only a keyed check value of a constant."""
    here, there = stores
    here.check_key("check-of-key-one")
    here.check_key("check-of-key-one")  # the same key again: fine
    with pytest.raises(SecretKeyMismatch) as refused:
        there.check_key("check-of-key-two")
    assert refused.value.code == "SECRET_KEY_MISMATCH"


def test_every_lost_feed_connection_is_retried_at_once_not_after_the_last_outage_s_backoff(
    stores: list[PgStore], database_url: str
) -> None:
    """The feed backs off while the database stays away, and starts again from its shortest wait once
    it was live: eight dropped connections in a row (every connection to the database ended, the
    database up all along) come back within 5 s in all, counted from each drop to the feed's next
    connection. The backoff used to carry over, doubling per outage up to 2 s: the eight waits alone
    then added up to 7.15 s, so this fails without the reset whatever the machine's load; with it
    they add up to 0.4 s (R-10.1)."""
    here = stores[0]
    name = urlsplit(database_url).path.lstrip("/")
    waited = 0.0
    for _ in range(8):
        here.read()  # the store answers before each drop
        epoch = here._feed.epoch  # pyright: ignore[reportPrivateUsage]
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        lost = time.monotonic()
        eventually_sync(lambda before=epoch: here._feed.epoch > before, timeout_s=10)  # pyright: ignore[reportPrivateUsage]
        waited += time.monotonic() - lost
    assert waited < 5.0, waited


def test_a_start_refused_for_another_key_leaves_no_key_file_behind(database_url: str, tmp_path: Path) -> None:
    """break38: a fresh data directory started on a database whose secrets another key sealed was
    refused (SECRET_KEY_MISMATCH) but kept the `secret.key` made for that start, which opens nothing
    there and would be taken for the instance's key next time (R-10.1, R-9.1)."""
    from mcp_center.secrets.keyfiles import KEY_FILE
    from mcp_center.service.master_key import checked_key

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    store = PgStore(database_url, display="test-db")
    store.open()
    try:
        kept = checked_key(Settings.load(data_dir=first, database_url=database_url, environ={}), store)
        assert (first / KEY_FILE).exists()
        with pytest.raises(SecretKeyMismatch):
            checked_key(Settings.load(data_dir=second, database_url=database_url, environ={}), store)
        assert not (second / KEY_FILE).exists()
        assert checked_key(Settings.load(data_dir=first, database_url=database_url, environ={}), store) == kept
    finally:
        store.close()


def test_a_run_taken_again_after_its_connection_ended_keeps_its_name_and_url(
    stores: list[PgStore], database_url: str
) -> None:
    """R-10.2 (break40): the listening connection of a run ends (terminated) while its row is gone
    (another instance cleaned it up): taken again on reconnection, the row is written whole, and the
    other instance lists the run with its name and URL, not nameless (hidden from /api/instances)."""
    here, there = stores
    here.join_instance("run-a")
    here.describe_instance("run-a", name="a", url="http://127.0.0.1:1/")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM mcp_center.instances WHERE id = 'run-a'")
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks"
            " WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND objsubid = 2",
            (INSTANCE_LOCK_CLASS, lock_key("run-a")),
        ).fetchall()
    assert ended == [(True,)]

    def listed() -> tuple[str | None, str | None] | None:
        found = [(i.name, i.url) for i in there.instances() if i.id == "run-a"]
        return found[0] if found else None

    assert eventually_sync(listed, timeout_s=10) == ("a", "http://127.0.0.1:1/")
    here.leave_instance("run-a")


def test_a_name_claimed_by_a_live_run_is_refused_and_free_again_once_that_run_left(stores: list[PgStore]) -> None:
    """R-10.2 (inst36): `describe_instance` looks for a live holder of the name and records it in one
    step: a second run gets the holder back (and stays nameless, off the board); once the holder left
    (or died: its presence lock is gone), the name is the second run's."""
    here, there = stores
    here.join_instance("run-a")
    there.join_instance("run-b")
    try:
        assert here.describe_instance("run-a", name="a", url="http://127.0.0.1:1/") is None
        holder = there.describe_instance("run-b", name="a", url="http://127.0.0.1:2/")
        assert holder is not None and (holder.id, holder.url, holder.pid) == (
            "run-a",
            "http://127.0.0.1:1/",
            os.getpid(),
        )
        assert [(i.id, i.name) for i in there.instances()] == [("run-a", "a")]
        assert here.describe_instance("run-a", name="a", url="http://127.0.0.1:3/") is None  # its own name again
        here.leave_instance("run-a")
        assert there.describe_instance("run-b", name="a", url="http://127.0.0.1:2/") is None
        assert [(i.id, i.name) for i in here.instances()] == [("run-b", "a")]
    finally:
        here.leave_instance("run-a")
        there.leave_instance("run-b")


def test_two_runs_claiming_one_name_at_once_one_gets_it(stores: list[PgStore], database_url: str) -> None:
    """R-10.2 (inst36): the two claims wait on the name's lock (held here) and go together: exactly
    one records the name, the other gets that one back."""
    here, there = stores
    here.join_instance("run-a")
    there.join_instance("run-b")
    results: dict[str, object] = {}
    with psycopg.connect(database_url, autocommit=True) as barrier:
        barrier.execute("SELECT pg_advisory_lock(%s, %s)", (NAME_LOCK_CLASS, lock_key("a")))

        def claim(store: PgStore, run: str) -> None:
            results[run] = store.describe_instance(run, name="a", url=None)

        threads = [threading.Thread(target=claim, args=(s, r)) for s, r in ((here, "run-a"), (there, "run-b"))]
        for thread in threads:
            thread.start()

        def both_wait() -> bool:
            return advisory_lock_waiters(barrier, NAME_LOCK_CLASS, lock_key("a")) == 2

        try:
            eventually_sync(both_wait, timeout_s=10)
        finally:
            barrier.execute("SELECT pg_advisory_unlock(%s, %s)", (NAME_LOCK_CLASS, lock_key("a")))
            for thread in threads:
                thread.join(timeout=20)
    try:
        winners = [r for r, holder in results.items() if holder is None]
        assert len(results) == 2 and len(winners) == 1, results
        loser = next(r for r in results if r not in winners)
        assert getattr(results[loser], "id", None) == winners[0]
        assert [(i.id, i.name) for i in here.instances()] == [(winners[0], "a")]
    finally:
        here.leave_instance("run-a")
        there.leave_instance("run-b")


def test_a_run_whose_name_was_claimed_while_its_presence_lapsed_loses_it_on_retake(
    database_url: str, stores: list[PgStore]
) -> None:
    """R-10.2 (fixa36 F1): a name is a lease. The listening connection of run-a ('a') ends; before
    run-a takes its presence again (held at the reconnection hook) run-b claims 'a' (run-a's lock
    is gone, so 'a' is free); the re-take then claims 'a' again under the name's lock, finds run-b,
    writes run-a nameless and calls the watcher once with run-b: never two live runs named 'a'."""
    reconnected, proceed = threading.Event(), threading.Event()
    armed = threading.Event()

    def hold() -> None:  # the feed's thread, after every (re)connection
        if armed.is_set():
            reconnected.set()
            proceed.wait(20)

    here = PgStore(database_url, display="test-db", on_reconnect=hold)
    here.open()
    there = stores[0]
    lost: list[object] = []
    told = threading.Event()

    def on_lost(holder: object) -> None:
        lost.append(holder)
        told.set()

    try:
        here.join_instance("run-a")
        assert here.describe_instance("run-a", name="a", url="http://127.0.0.1:1/") is None
        here.watch_instance_name("run-a", on_lost)
        there.join_instance("run-b")
        armed.set()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND objsubid = 2",
                (INSTANCE_LOCK_CLASS, lock_key("run-a")),
            )
        assert reconnected.wait(10)
        # The old connection's lock goes when its backend exits: then 'a' is free for run-b.
        assert eventually_sync(
            lambda: there.describe_instance("run-b", name="a", url="http://127.0.0.1:2/") is None, timeout_s=10
        )
        proceed.set()
        assert told.wait(10)
        assert [getattr(h, "id", None) for h in lost] == ["run-b"]
        named = [(i.id, i.name) for i in there.instances() if i.name == "a"]
        assert named == [("run-b", "a")]
        assert eventually_sync(lambda: here.instance_alive("run-a"), timeout_s=10)  # its presence is back
    finally:
        proceed.set()
        here.leave_instance("run-a")
        there.leave_instance("run-b")
        here.close()


def test_a_run_taken_again_with_its_name_free_keeps_it_and_no_watcher_is_called(
    database_url: str, stores: list[PgStore]
) -> None:
    """R-10.2 (fixa36 F1): the re-take's name claim finds no other holder: the name stays run-a's
    and the watcher is never called."""
    there = stores[0]
    here = PgStore(database_url, display="test-db")
    here.open()
    lost: list[object] = []
    held = (
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s AND objid = %s"
        " AND objsubid = 2"
    )
    try:
        here.join_instance("run-a")
        assert here.describe_instance("run-a", name="a", url=None) is None
        here.watch_instance_name("run-a", lost.append)
        with psycopg.connect(database_url, autocommit=True) as conn:
            before = conn.execute(held, (INSTANCE_LOCK_CLASS, lock_key("run-a"))).fetchall()
            conn.execute("SELECT pg_terminate_backend(%s)", (before[0][0],))

            def retaken() -> bool:
                now = conn.execute(held, (INSTANCE_LOCK_CLASS, lock_key("run-a"))).fetchall()
                return len(now) == 1 and now != before

            assert eventually_sync(retaken, timeout_s=10)
        assert [(i.id, i.name) for i in there.instances()] == [("run-a", "a")]
        assert lost == []
    finally:
        here.leave_instance("run-a")
        here.close()
