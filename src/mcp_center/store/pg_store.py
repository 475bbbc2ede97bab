"""The store on PostgreSQL: the shared state of several `serve` instances (R-10.1).

Same interface and semantics as `JsonStore` (`store/json_store.py`): a transaction reads a
consistent view of the five sections, the caller changes it, and every changed section is
committed as one unit. Here:

- **One table per section** (`mcp_center.servers`, `.secrets`, `.gateway_tokens`,
  `.interactions`, `.approvals`; `store/migrations/`), one row per record, the record as `jsonb`
  beside the columns an operator reads. A commit turns the transaction's changed keys into
  `INSERT ... ON CONFLICT` / `DELETE`, bumps each changed section's counter in
  `mcp_center.generations` and `NOTIFY`s the new counters — all in one SQL transaction.
- **Transactions are serialized** across every process and instance by a transaction-scoped
  advisory lock `(1, 1)` taken first, in READ COMMITTED: once the lock is held, every statement
  sees every earlier commit, so a compare-and-set (an optimistic version, R-1.3; a pending
  approval; a refresh token) holds across instances exactly as under the file lock. (Under
  REPEATABLE READ the snapshot would predate the lock wait.) Plain reads use a REPEATABLE READ,
  READ ONLY transaction: one consistent snapshot, no lock.
- **Caching, off the hot path.** Each section is parsed once per generation. The process's feed
  (`store/pg_feed.py`) knows the newest generation of every section from the notifications, so
  `read_if_fresh()` and `stamp()` — the gateway's token check, the registry key — compare
  integers in memory and never reach the database; they are current within the notification's
  latency (milliseconds). `read()` is exact: it reads the generations (one small query) and
  parses again only the sections that moved, so a request that follows another instance's commit
  (trust there, test here) sees it. While the feed is down `read_if_fresh()` and `stamp()` report
  "stale", reads go to the database, and fail with `STORAGE_UNAVAILABLE` until it returns.
- **Coordination**: `lock(key)` is a session advisory lock `(2, key)` on a pooled connection held
  for the block (polled with `pg_try_advisory_lock`, so a cancelled waiter simply stops);
  presence is the feed's advisory lock per run; the change feed is the feed's subscriptions.

Failures: a connection that cannot be made or is lost raises `StorageUnavailable`
(`STORAGE_UNAVAILABLE`, 503), naming the database without its password; nothing of the change is
applied (a connection lost during COMMIT itself leaves the outcome to PostgreSQL: all or nothing,
the caller cannot tell which). A row that does not parse raises `StorageError` naming the table
and the id. A schema newer than the code is refused at `open()` (`StorageSchemaTooNew`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Generator, Hashable, Iterable
from typing import Any, Final, LiteralString, cast

import anyio
import anyio.to_thread
import psycopg
import psycopg.errors
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import BaseModel, ValidationError

from mcp_center.config import parse_server_config
from mcp_center.errors import (
    CenterError,
    ConfigInvalid,
    SecretKeyMismatch,
    StorageBusy,
    StorageError,
    StorageUnavailable,
)
from mcp_center.store.approvals import ApprovalRecord
from mcp_center.store.coordination import DEFAULT_LOCK_TIMEOUT_S, Changes, InstanceInfo, InstanceServerState
from mcp_center.store.interactions import InteractionRecord
from mcp_center.store.pg_feed import CHANNEL, INSTANCE_LOCK_CLASS, PgFeed, lock_key
from mcp_center.store.pg_locks import (
    IDLE_IN_TRANSACTION_S,
    WRITE_WAIT_S,
    KeyedLocks,
    WriteGate,
    configure_session,
    lock_holder,
)
from mcp_center.store.pg_schema import migrate
from mcp_center.store.pg_url import UNPARSABLE_URL, fault_text, url_secrets
from mcp_center.store.records import GatewayTokenRecord, ServerRecord
from mcp_center.store.sections import SECTIONS, Section, StoreState, prune_section

__all__ = ["CONNECT_TIMEOUT_S", "PgStore"]

logger = logging.getLogger(__name__)

_Conn = psycopg.Connection[TupleRow]
_Pool = ConnectionPool[psycopg.Connection[TupleRow]]

CONNECT_TIMEOUT_S = 5.0
"""Seconds to wait for the database at start and for a pooled connection later."""
OUTAGE_WAIT_S = 0.5
"""Seconds to wait for a connection while the feed is down (the database is likely away): fail fast."""
POOL_SIZE = 10
"""Connections a process keeps at most (worker threads' transactions, keyed locks held)."""
TXN_LOCK: Final = (1, 1)
KEYED_LOCK_CLASS: Final = 2
_TABLES: dict[Section, str] = {
    "servers": "mcp_center.servers",
    "secrets": "mcp_center.secrets",
    "gateway_tokens": "mcp_center.gateway_tokens",
    "interactions": "mcp_center.interactions",
    "approvals": "mcp_center.approvals",
}
_SELECT: dict[Section, LiteralString] = {
    "servers": "SELECT id, record FROM mcp_center.servers ORDER BY id",
    "secrets": "SELECT id, ciphertext FROM mcp_center.secrets ORDER BY id",
    "gateway_tokens": "SELECT id, record FROM mcp_center.gateway_tokens ORDER BY id",
    "interactions": "SELECT id, record FROM mcp_center.interactions ORDER BY id",
    "approvals": "SELECT id, record FROM mcp_center.approvals ORDER BY id",
}
_DELETE: dict[Section, LiteralString] = {
    "servers": "DELETE FROM mcp_center.servers WHERE id = ANY(%s)",
    "secrets": "DELETE FROM mcp_center.secrets WHERE id = ANY(%s)",
    "gateway_tokens": "DELETE FROM mcp_center.gateway_tokens WHERE id = ANY(%s)",
    "interactions": "DELETE FROM mcp_center.interactions WHERE id = ANY(%s)",
    "approvals": "DELETE FROM mcp_center.approvals WHERE id = ANY(%s)",
}
_UPSERT: dict[Section, LiteralString] = {
    "servers": "INSERT INTO mcp_center.servers (id, version, enabled, updated_at, record) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, enabled = EXCLUDED.enabled,"
    " updated_at = EXCLUDED.updated_at, record = EXCLUDED.record",
    "secrets": "INSERT INTO mcp_center.secrets (id, ciphertext) VALUES (%s, %s)"
    " ON CONFLICT (id) DO UPDATE SET ciphertext = EXCLUDED.ciphertext",
    "gateway_tokens": "INSERT INTO mcp_center.gateway_tokens (id, name, sha256, created_at, record)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name,"
    " sha256 = EXCLUDED.sha256, created_at = EXCLUDED.created_at, record = EXCLUDED.record",
    "interactions": "INSERT INTO mcp_center.interactions (id, state, host_instance, created_at, record)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state,"
    " host_instance = EXCLUDED.host_instance, created_at = EXCLUDED.created_at, record = EXCLUDED.record",
    "approvals": "INSERT INTO mcp_center.approvals (id, state, host_instance, created_at, record)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state,"
    " host_instance = EXCLUDED.host_instance, created_at = EXCLUDED.created_at, record = EXCLUDED.record",
}
_MODELS: dict[Section, type[BaseModel]] = {
    "servers": ServerRecord,
    "gateway_tokens": GatewayTokenRecord,
    "interactions": InteractionRecord,
    "approvals": ApprovalRecord,
}
_LIVE_INSTANCES: Final = """
SELECT i.id, i.name, i.url, i.hostname, i.pid, i.started_at FROM mcp_center.instances i
WHERE i.name IS NOT NULL AND EXISTS (
  SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s
    AND l.objid = i.lock_key::oid AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
ORDER BY i.started_at, i.id
"""
_LIVE_STATES: Final = """
SELECT s.instance, s.server_id, s.state, s.reason, s.updated_at FROM mcp_center.server_states s
JOIN mcp_center.instances i ON i.id = s.instance
WHERE EXISTS (
  SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s
    AND l.objid = i.lock_key::oid AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
ORDER BY s.server_id, i.started_at
"""
_CONNECT_KWARGS: dict[str, Any] = {
    "connect_timeout": int(CONNECT_TIMEOUT_S),
    "application_name": "mcp-center",
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}


def _row(section: Section, record_id: str, value: Any) -> tuple[Any, ...]:
    """The column values of one record (its table's `_UPSERT` order)."""
    if section == "secrets":
        return (record_id, value)
    if section == "servers":
        r = cast(ServerRecord, value)
        return (record_id, r.version, r.enabled, r.updated_at, Jsonb(r.model_dump(mode="json")))
    if section == "gateway_tokens":
        t = cast(GatewayTokenRecord, value)
        return (record_id, t.name, t.sha256, t.created_at, Jsonb(t.model_dump(mode="json")))
    w = cast(InteractionRecord | ApprovalRecord, value)
    return (record_id, w.state, w.host_instance, w.created_at, Jsonb(w.model_dump(mode="json")))


class PgStore:
    """`Store` over PostgreSQL (see the module docstring). `open()` it before use, `close()` it after.

    Args:
        url: `postgresql://user:password@host:port/database` (libpq URL; never logged or shown).
        display: The database as shown in messages (no password).
        connect_timeout_s: Seconds `open()` waits for the database, and a commit for a pooled connection.
        write_wait_s: Seconds a write waits at most for the write lock (`StorageBusy` after).
        idle_in_transaction_s: Seconds PostgreSQL lets a write transaction of ours sit idle before
            ending it (a frozen process's lock is freed after that).
        on_reconnect: Called in the change feed's thread after every (re)connection, before this
            process's runs take their presence again (tests order a reconnection with it).
    """

    def __init__(
        self,
        url: str,
        *,
        display: str,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        write_wait_s: float = WRITE_WAIT_S,
        idle_in_transaction_s: float = IDLE_IN_TRANSACTION_S,
        on_reconnect: Callable[[], None] | None = None,
    ) -> None:
        self._url = url
        self._secrets = url_secrets(url)
        self.display = display
        self._timeout_s = connect_timeout_s
        self._pool: _Pool | None = None
        self._on_reconnect = on_reconnect
        self._feed = PgFeed(url, _CONNECT_KWARGS, on_reconnect=self._reconnected)
        self._gate = WriteGate(write_wait_s)
        self._idle_s = idle_in_transaction_s
        self._keyed = KeyedLocks(url, _CONNECT_KWARGS, KEYED_LOCK_CLASS)
        self._parsed: dict[Section, tuple[int, dict[str, Any]]] = {}
        self._snapshot: tuple[tuple[int, ...], StoreState] | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, bring the schema up to date, start the feed, and parse every row once.

        Raises:
            StorageUnavailable: the database cannot be reached (refused, unknown host, bad
                password, no such database), with libpq's reason.
            StorageSchemaTooNew: the schema is newer than this code (nothing was changed).
            StorageError: a row does not parse (`details`: table, id, fault).
        """
        if self._pool is not None:
            return
        with self._errors("connect to"):
            with psycopg.connect(self._url, autocommit=True, **_CONNECT_KWARGS) as conn:
                migrate(conn, database=self.display)
            pool: _Pool = ConnectionPool(
                self._url,
                connection_class=psycopg.Connection[TupleRow],
                min_size=1,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True, **_CONNECT_KWARGS},
                check=ConnectionPool.check_connection,
                configure=configure_session,
                timeout=self._timeout_s,
                name="mcp-center",
                open=False,
            )
            pool.open(wait=True, timeout=self._timeout_s)
            self._pool = pool
            try:
                self._feed.start(self._timeout_s)
            except BaseException:
                self._pool = None
                pool.close()
                raise
        try:
            self.read()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the feed and close every connection (the runs still joined end with it). Idempotent."""
        self._feed.stop()
        self._keyed.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def check_key(self, check: str) -> None:
        """Record `check` (the keyed fingerprint of a constant under this instance's key) the first
        time; refuse another one later: every instance must hold the key the ciphertexts were sealed with."""
        with self._writing() as conn:
            row = conn.execute("SELECT value FROM mcp_center.meta WHERE key = 'key_check'").fetchone()
            if row is None:
                conn.execute("INSERT INTO mcp_center.meta (key, value) VALUES ('key_check', %s)", (check,))
                return
        if row[0] != check:
            logger.error("store.key_mismatch", extra={"database": self.display})
            raise SecretKeyMismatch(
                f"the secret key of this instance is not the key the data in {self.display} was sealed with; "
                "give every instance the same key (MCP_CENTER_SECRET_KEY, or a copy of the first one's "
                "secret.key file)",
                details={"database": self.display},
            )

    # ----- data ----------------------------------------------------------------------------------------

    def read_if_fresh(self) -> StoreState | None:
        snapshot = self._snapshot
        if snapshot is None or not self._feed.live or snapshot[0] != self._feed.known():
            return None
        return snapshot[1].copy()

    def read(self) -> StoreState:
        # Always current (one small query for the generations; unchanged sections come from the
        # cache): a read right after another instance's commit sees it, as the file backend's does.
        with self._connection("read") as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            generations = self._generations(conn)
            state = self._load(conn, generations)
        self._remember(generations, state)
        return state.copy()

    @contextlib.contextmanager
    def transaction(self) -> Generator[StoreState]:
        with self._writing() as conn:
            generations = self._generations(conn)
            current = self._load(conn, generations)
            working = current.copy()
            yield working
            changed: list[Section] = [s for s in SECTIONS if working.section(s) != current.section(s)]
            if not changed:
                self._remember(generations, current)
                return
            values: dict[Section, dict[str, Any]] = {s: prune_section(s, working.section(s)) for s in changed}
            for section in changed:
                self._write(conn, section, current.section(section), values[section])
            rows = conn.execute(
                "UPDATE mcp_center.generations SET generation = generation + 1 WHERE section = ANY(%s)"
                " RETURNING section, generation",
                (list(changed),),
            ).fetchall()
            moved: dict[Section, int] = {s: int(g) for s, g in rows}
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({"generations": moved})))
        committed = current.copy()
        for section in changed:
            setattr(committed, section, dict(values[section]))
            self._parsed[section] = (moved[section], values[section])
        self._remember({**generations, **moved}, committed)

    def stamp(self, *sections: Section) -> Hashable:
        feed = self._feed
        if not feed.live:
            return object()  # equal to nothing: the caller reads (and meets the outage)
        known = feed.generations(sections or SECTIONS)
        return (feed.epoch, *known.values())

    # ----- coordination ----------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lock(self, key: str, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> AsyncGenerator[None]:
        self._require_pool()
        keyed, number = self._keyed, lock_key(key)

        def attempt() -> bool:
            with self._errors("lock on"):
                return keyed.try_acquire(number)

        acquired = False
        try:
            delay = 0.002
            with anyio.move_on_after(timeout_s):
                while not acquired:
                    acquired = await anyio.to_thread.run_sync(attempt)
                    if not acquired:
                        await anyio.sleep(delay)
                        delay = min(delay * 2, 0.05)
            if not acquired:
                logger.warning("store.lock_timeout", extra={"lock": key, "timeout_s": timeout_s})
                raise StorageError(
                    f"another instance held the lock '{key}' for more than {timeout_s:g} s",
                    details={"database": self.display, "fault": "lock_timeout", "lock": key},
                )
            yield
        finally:
            if acquired:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(keyed.release, number)

    @contextlib.asynccontextmanager
    async def changes(self, sections: Iterable[Section] = SECTIONS) -> AsyncGenerator[Changes]:
        subscription = self._feed.subscribe(sections)
        try:
            yield subscription
        finally:
            self._feed.unsubscribe(subscription)

    def join_instance(self, instance: str) -> None:
        with self._errors("join"):
            self._feed.join(instance)

    def leave_instance(self, instance: str) -> None:
        self._feed.leave(instance)

    def instance_alive(self, instance: str) -> bool:
        known = self._feed.alive(instance)
        if known is not None:
            return known
        pool = self._pool
        if pool is None:
            return True
        try:
            with pool.connection(timeout=self._timeout_s) as conn:
                row = conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s"
                    " AND objid = %s::oid AND objsubid = 2"
                    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))",
                    (INSTANCE_LOCK_CLASS, lock_key(instance)),
                ).fetchone()
        except psycopg.Error:
            return True  # unknown: never close a live run's approvals because the database is away
        return bool(row and row[0])

    # ----- the instance board ------------------------------------------------------------------------

    def describe_instance(self, instance: str, *, name: str | None, url: str | None) -> InstanceInfo | None:
        with self._errors("write to"):
            holder = self._feed.describe(instance, name=name, url=url)
        if holder is None:
            return None
        return _info(holder)

    def _reconnected(self) -> None:
        self._forget()
        if self._on_reconnect is not None:
            self._on_reconnect()

    def watch_instance_name(self, instance: str, on_lost: Callable[[InstanceInfo], None]) -> None:
        self._feed.watch_name(instance, lambda holder: on_lost(_info(holder)))

    def publish_server_state(self, instance: str, server_id: str, state: str, reason: str | None) -> None:
        with self._connection("write to") as conn:
            conn.execute(
                "INSERT INTO mcp_center.server_states (instance, server_id, state, reason, updated_at)"
                " SELECT %s, %s, %s, %s, now() WHERE EXISTS (SELECT 1 FROM mcp_center.instances WHERE id = %s)"
                " ON CONFLICT (instance, server_id) DO UPDATE SET state = EXCLUDED.state,"
                " reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at",
                (instance, server_id, state, reason, instance),
            )

    def instances(self) -> list[InstanceInfo]:
        with self._connection("read") as conn:
            rows = conn.execute(_LIVE_INSTANCES, (INSTANCE_LOCK_CLASS,)).fetchall()
        return [InstanceInfo(str(i), n, u, str(h), int(p), s) for i, n, u, h, p, s in rows]

    def server_states(self) -> list[InstanceServerState]:
        with self._connection("read") as conn:
            rows = conn.execute(_LIVE_STATES, (INSTANCE_LOCK_CLASS,)).fetchall()
        return [InstanceServerState(str(i), str(sid), str(st), r, t) for i, sid, st, r, t in rows]

    # ----- internals -------------------------------------------------------------------------------------

    def _require_pool(self) -> _Pool:
        pool = self._pool
        if pool is None:
            raise StorageUnavailable(
                f"the database {self.display} is not open", details={"database": self.display, "fault": "not open"}
            )
        return pool

    @contextlib.contextmanager
    def _connection(self, doing: str) -> Generator[_Conn]:
        """A pooled connection; one that turned out read-only is closed, so the pool drops it."""
        pool = self._require_pool()
        wait_s = self._timeout_s if self._feed.live else OUTAGE_WAIT_S
        with self._errors(doing), pool.connection(timeout=wait_s) as conn:
            try:
                yield conn
            except (psycopg.errors.ReadOnlySqlTransaction, _ReadOnlySession):
                conn.close()
                raise

    @contextlib.contextmanager
    def _writing(self) -> Generator[_Conn]:
        """A write transaction holding the write lock `TXN_LOCK`, committed when the block ends.

        One write of this process waits for the lock at a time (`WriteGate`), for at most
        `WRITE_WAIT_S` in all (`STUCK_WAIT_S` after a write waited that long in vain, until one
        gets the lock again: a process's writes queue behind each other); PostgreSQL ends our
        transaction if it sits idle for `IDLE_IN_TRANSACTION_S` (`store/pg_locks.py`). A pooled
        connection opened while the database was read-only stays read-only: it is dropped with every
        other pooled connection and the write tried on another one, each found read-only closed, up
        to `_READ_ONLY_ATTEMPTS` connections (so writes recover as soon as the database does).

        Raises:
            StorageBusy: the lock was not ours within the budget (`details`: the holder if known).
            StorageUnavailable: the database is unreachable, or accepts no writes (read-only, a standby).
        """
        started = time.monotonic()
        left = budget = self._gate.enter()
        if left is None or budget is None:
            raise self._busy({}, time.monotonic() - started)
        try:
            for attempt in range(_READ_ONLY_ATTEMPTS):
                try:
                    with self._connection("write to") as conn, conn.transaction():
                        row = conn.execute(
                            "SELECT set_config('lock_timeout', %s, true),"
                            " set_config('idle_in_transaction_session_timeout', %s, true),"
                            " current_setting('transaction_read_only')",
                            (f"{int(left * 1000)}ms", f"{int(self._idle_s * 1000)}ms"),
                        ).fetchone()
                        if row is not None and row[2] == "on":
                            raise _ReadOnlySession
                        try:
                            with conn.transaction():  # a savepoint: the holder can be asked after a timeout
                                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", TXN_LOCK)
                        except psycopg.errors.LockNotAvailable:
                            raise self._busy(lock_holder(conn, TXN_LOCK), time.monotonic() - started) from None
                        self._gate.got()
                        yield conn
                    return
                except _ReadOnlySession:
                    if attempt == 0:
                        self._require_pool().drain()  # every pooled connection may date from the read-only time
                    if attempt == _READ_ONLY_ATTEMPTS - 1:
                        raise self._read_only() from None
                    left = max(0.05, budget - (time.monotonic() - started))
        finally:
            self._gate.leave()

    def _busy(self, holder: dict[str, Any], waited_s: float) -> StorageBusy:
        """The error (and log line) of a write that did not get the write lock within its budget."""
        self._gate.stuck()
        waited = round(waited_s, 1)
        logger.warning("store.write_lock_busy", extra={"database": self.display, "waited_s": waited, **holder})
        who = (
            f"PostgreSQL backend {holder['holder_pid']} ('{holder['holder_application']}', {holder['holder_state']})"
            if holder
            else "another write of this process"
        )
        return StorageBusy(
            f"the database {self.display} did not give this write its write lock within {waited:g} s: "
            f"{who} holds it; nothing was changed, retry",
            details={"database": self.display, "fault": "write_lock_busy", "waited_s": waited, **holder},
        )

    def _read_only(self) -> StorageUnavailable:
        logger.error("store.database_read_only", extra={"database": self.display})
        return StorageUnavailable(
            f"the database {self.display} accepts no writes now (read-only: default_transaction_read_only, "
            "or a standby); nothing was changed",
            details={"database": self.display, "fault": "read-only"},
        )

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Generator[None]:
        """Database failures as our errors: unreachable or lost → StorageUnavailable, else StorageError."""
        try:
            yield
        except CenterError:
            raise
        except psycopg.errors.ReadOnlySqlTransaction:
            raise self._read_only() from None
        except psycopg.OperationalError as exc:
            fault = fault_text(exc, self._secrets, connecting=doing == "connect to")
            if isinstance(exc, PoolTimeout) and (cause := self._feed.failure) is not None:
                fault = f"{cause} ({fault})"  # the pool's wait hides why no connection could be made
            logger.error("store.database_unavailable", extra={"database": self.display, "fault": fault})
            raise StorageUnavailable(
                f"cannot {doing} the database {self.display}: {fault}; nothing was changed",
                details={"database": self.display, "fault": fault},
            ) from None
        except psycopg.Error as exc:
            fault = fault_text(exc, self._secrets, connecting=doing == "connect to")
            logger.error("store.database_failed", extra={"database": self.display, "fault": fault})
            told = f"cannot {doing} the database {self.display}" if fault == UNPARSABLE_URL else None
            raise StorageError(
                f"{told or f'the database {self.display} refused to {doing.split()[0]}'}: {fault}; nothing was changed",
                details={"database": self.display, "fault": fault},
            ) from None

    def _forget(self) -> None:
        """The feed (re)connected: notifications may have been missed, so nothing cached is trusted."""
        self._snapshot = None
        self._parsed.clear()

    def _remember(self, generations: dict[Section, int], state: StoreState) -> None:
        self._snapshot = (tuple(generations[s] for s in SECTIONS), state)
        self._feed.advance(generations)

    @staticmethod
    def _generations(conn: _Conn) -> dict[Section, int]:
        rows = conn.execute("SELECT section, generation FROM mcp_center.generations").fetchall()
        found: dict[Section, int] = {s: int(g) for s, g in rows if s in SECTIONS}
        return {s: found.get(s, 0) for s in SECTIONS}

    def _load(self, conn: _Conn, generations: dict[Section, int]) -> StoreState:
        state = StoreState()
        for section in SECTIONS:
            cached = self._parsed.get(section)
            if cached is None or cached[0] != generations[section]:
                cached = (generations[section], self._parse(conn, section))
                self._parsed[section] = cached
            setattr(state, section, dict(cached[1]))
        return state

    def _parse(self, conn: _Conn, section: Section) -> dict[str, Any]:
        table = _TABLES[section]
        rows = conn.execute(_SELECT[section]).fetchall()
        if section == "secrets":
            return {str(i): str(c) for i, c in rows}
        model = _MODELS[section]
        records: dict[str, Any] = {}
        for record_id, body in rows:
            try:
                record = model.model_validate(body)
                if isinstance(record, ServerRecord):  # the R-1 rules hold for rows written by hand too
                    parse_server_config(record.config.model_dump(mode="json"))
            except (ValidationError, ConfigInvalid) as exc:
                fault = "invalid record" if isinstance(exc, ValidationError) else f"breaks a rule ({exc.message})"
                logger.error("store.row_damaged", extra={"table": table, "id": record_id})
                raise StorageError(
                    f"{table} row '{record_id}' is damaged: {fault}; nothing was written — fix or remove it",
                    details={"database": self.display, "table": table, "id": record_id, "fault": fault},
                ) from None
            records[str(record_id)] = record
        return records

    @staticmethod
    def _write(conn: _Conn, section: Section, old: dict[str, Any], new: dict[str, Any]) -> None:
        gone = [k for k in old if k not in new]
        if gone:
            conn.execute(_DELETE[section], (gone,))
        upserts = [_row(section, k, v) for k, v in new.items() if old.get(k) != v]
        if upserts:
            with conn.cursor() as cursor:
                cursor.executemany(_UPSERT[section], upserts)


_READ_ONLY_ATTEMPTS: Final = POOL_SIZE + 2
"""Connections a write tries before it calls the database read-only: after the pool is drained, a
connection whose start began while the database was read-only may still join it (each one found
read-only is closed), so one retry was not enough (a loaded test run saw it)."""


class _ReadOnlySession(Exception):
    """A pooled connection's transactions are read-only (it opened while the database was)."""


def _info(row: tuple[Any, ...]) -> InstanceInfo:
    """An instances row `(id, name, url, hostname, pid, started_at)` as `InstanceInfo`."""
    i, n, u, h, p, s = row
    return InstanceInfo(str(i), n, u, str(h), int(p), s)
