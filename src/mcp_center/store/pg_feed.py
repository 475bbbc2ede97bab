"""The PostgreSQL backend's change feed and presence: one listening connection per process (R-10.1, R-9.2).

A thread of the process holds one connection to the database for its whole life and:

- `LISTEN`s on `mcp_center_changes`. Every commit that changes a section bumps that section's row
  in `mcp_center.generations` and `NOTIFY`s the new values in the same transaction, so the
  notification arrives exactly when the change is visible. The thread keeps the newest known
  generation of each section (`known`), which is what the store compares its cached snapshot with
  (`PgStore.read_if_fresh`, `PgStore.stamp`): the per-call hot paths read memory, never the
  database.
- holds the presence of this process's runs (`join` / `leave`): a session advisory lock
  `(3, key of the run)` and a row in `mcp_center.instances`. PostgreSQL releases the lock when the
  connection ends — a SIGKILL of the process included — so a run is alive exactly while its lock
  is held. The live set of every run is re-read every `PRESENCE_REFRESH_S` (and on the `join`/
  `leave` notifications of other processes); a run that disappeared wakes the subscribers of
  approvals and cards, whose owners close what it left pending as `interrupted`.

While the connection is down (the database restarted, the network failed) the feed is not `live`:
the store's caches then count as stale and every read goes to the database (and fails with
`STORAGE_UNAVAILABLE` while it is gone). The thread reconnects with a bounded back-off; after a
reconnect it re-reads every generation (notifications sent meanwhile are lost, the counters are
not), takes its runs' locks again, and wakes every subscriber whose sections moved.

Subscribers are coroutines (`Changes.next`); the thread wakes them through their event loop's
thread-safe call (asyncio, the loop uvicorn and the tests run).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterable
from typing import Any

import anyio
import psycopg
from psycopg.rows import TupleRow

from mcp_center.store.pg_url import fault_text, url_secrets
from mcp_center.store.sections import SECTIONS, Section

_Conn = psycopg.Connection[TupleRow]

__all__ = ["CHANNEL", "INSTANCE_LOCK_CLASS", "NAME_LOCK_CLASS", "PRESENCE_CHANNEL", "PgFeed", "lock_key"]

logger = logging.getLogger(__name__)

CHANNEL = "mcp_center_changes"
PRESENCE_CHANNEL = "mcp_center_instances"
INSTANCE_LOCK_CLASS = 3
"""Advisory lock class of presence locks (1: transactions, 2: keyed locks, 4: migrations, 5: names)."""
NAME_LOCK_CLASS = 5
"""Advisory lock class of instance names (`describe`): one claim of a name at a time."""
NAME_WAIT_S = 15.0
"""Seconds a claim of an instance name waits at most for another claim of it (each holds it for two
statements; past it the claim fails as a database failure)."""
PRESENCE_REFRESH_S = 1.0
"""Seconds between re-reads of which runs are alive."""
WAIT_S = 0.1
"""Longest the thread waits for a notification before it looks at its other duties (a caller that
borrows the connection, `stop`); ten short waits a second cost an idle process about 0.5% of a core."""
MAX_BACKOFF_S = 2.0

_LIVE_SQL = """
SELECT i.id FROM mcp_center.instances i
JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.classid = %s
  AND l.objid = i.lock_key::oid AND l.objsubid = 2
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""

_TIDY_SQL = """
DELETE FROM mcp_center.instances i WHERE NOT EXISTS (
  SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s
    AND l.objid = i.lock_key::oid AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
"""


_NAME_HOLDER_SQL = """
SELECT i.id, i.name, i.url, i.hostname, i.pid, i.started_at FROM mcp_center.instances i
WHERE i.name = %s AND i.id <> %s AND EXISTS (
  SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s
    AND l.objid = i.lock_key::oid AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
ORDER BY i.started_at, i.id LIMIT 1
"""


def lock_key(name: str) -> int:
    """A stable 31-bit advisory-lock key for `name` (a collision only makes two names share a lock)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF


class _Subscription:
    """One `changes()` block: its sections, the generations it saw last, and how to wake it."""

    def __init__(self, feed: PgFeed, sections: Iterable[Section]) -> None:
        self._feed = feed
        self.sections = frozenset(sections)
        self._last = feed.generations(self.sections)
        self._extra: set[Section] = set()
        self._loop = asyncio.get_running_loop()
        self._event = anyio.Event()

    def poke(self, extra: Iterable[Section] = ()) -> None:
        """Called from any thread: something may have changed; wake `next()`."""
        wanted = self.sections.intersection(extra)
        if wanted:
            with self._feed.guard:
                self._extra |= wanted
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._set)

    def _set(self) -> None:
        self._event.set()

    def _changed(self) -> frozenset[Section]:
        now = self._feed.generations(self.sections)
        with self._feed.guard:
            changed: set[Section] = {s for s in self.sections if now[s] != self._last[s]}
            changed |= self._extra
            self._extra.clear()
        self._last = now
        return frozenset(changed)

    async def next(self) -> frozenset[Section]:
        while True:
            changed = self._changed()
            if changed:
                return changed
            self._event = anyio.Event()
            changed = self._changed()  # a change between the first look and the new event
            if changed:
                return changed
            await self._event.wait()


class PgFeed:
    """The listening thread of one process (see the module docstring).

    Args:
        conninfo: The database URL.
        connect_kwargs: Extra libpq parameters (timeouts, keepalives, application name).
        on_reconnect: Called (in the thread) after every (re)connection, before `live` turns true:
            the store drops its caches there.
    """

    def __init__(
        self, conninfo: str, connect_kwargs: dict[str, Any], on_reconnect: Callable[[], None] | None = None
    ) -> None:
        self._conninfo = conninfo
        self._secrets = url_secrets(conninfo)
        self._kwargs = connect_kwargs
        self._on_reconnect = on_reconnect
        self.guard = threading.Lock()
        self._known: dict[Section, int] = dict.fromkeys(SECTIONS, -1)
        self._live = False
        self.epoch = 0
        """Bumped at every (re)connection: a stamp taken before it never equals one taken after."""
        self._conn: _Conn | None = None
        self._subscriptions: set[_Subscription] = set()
        self._joined: set[str] = set()
        self._described: dict[str, tuple[str | None, str | None]] = {}  # joined run -> (name, url)
        self._alive: frozenset[str] = frozenset()
        self._stop = threading.Event()
        self._up = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: str | None = None
        self._turns = threading.Condition()
        self._borrowers = 0
        self._name_watchers: dict[str, Callable[[tuple[Any, ...]], None]] = {}

    # ----- lifecycle ---------------------------------------------------------------------------------

    def start(self, timeout_s: float) -> None:
        """Start the thread and wait (at most `timeout_s`) until it listens.

        Raises:
            psycopg.OperationalError: it could not connect within the time (the thread is stopped).
        """
        self._stop.clear()
        self._up.clear()
        self._thread = threading.Thread(target=self._run, name="mcp-center-pg-feed", daemon=True)
        self._thread.start()
        if not self._up.wait(timeout_s):
            self.stop()
            raise psycopg.OperationalError(self._failure or "the change feed did not connect in time")

    def stop(self) -> None:
        """Stop listening; the runs still joined lose their presence (their locks end with the connection)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    # ----- what the store asks -------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """True while the thread listens: `known` is then current up to notification latency."""
        return self._live

    @property
    def failure(self) -> str | None:
        """While not `live`: the first line of the driver's last connection failure (libpq never
        echoes a password), the cause a pool timeout hides; None while live or before any failure."""
        return None if self._live else self._failure

    def generations(self, sections: Iterable[Section] = SECTIONS) -> dict[Section, int]:
        """The newest known generation of each of `sections` (-1: not known yet)."""
        with self.guard:
            return {s: self._known[s] for s in sections}

    def known(self) -> tuple[int, ...]:
        """Every section's newest known generation, in `SECTIONS` order."""
        known = self._known
        return tuple(known[s] for s in SECTIONS)

    def advance(self, generations: dict[Section, int]) -> None:
        """This process saw these generations (its own commit, a read): keep the newest, wake subscribers."""
        moved = False
        with self.guard:
            for section, value in generations.items():
                if value > self._known[section]:
                    self._known[section] = value
                    moved = True
        if moved:
            self._wake()

    def subscribe(self, sections: Iterable[Section]) -> _Subscription:
        """A subscription for the calling coroutine's event loop; `unsubscribe` it at the end."""
        subscription = _Subscription(self, sections)
        with self.guard:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: _Subscription) -> None:
        with self.guard:
            self._subscriptions.discard(subscription)

    # ----- presence ------------------------------------------------------------------------------------

    def join(self, instance: str) -> None:
        """Hold `instance`'s presence lock and row on the listening connection.

        Raises:
            ValueError: another live run holds that id.
            psycopg.Error: the database failed.
        """
        conn = self._require()
        with self.guard:
            if instance in self._joined:
                raise ValueError(f"instance '{instance}' is already alive")
        with self._borrowed():
            taken = self._take(conn, instance)
        if not taken:
            raise ValueError(f"instance '{instance}' is already alive")
        with self.guard:
            self._joined.add(instance)
            self._alive = self._alive | {instance}

    def watch_name(self, instance: str, on_lost: Callable[[tuple[Any, ...]], None]) -> None:
        """Call `on_lost(holder row)` (in the feed's thread, once) when the joined run `instance`,
        taking its presence again after a reconnection, finds another live run holding its name.

        Names are leases (R-10.2): while this process was away from the database (it restarted, the
        network failed, the process was stopped) its presence lapsed and another run may have
        claimed the name. The re-take claims the name the way `describe` does (under the name's
        advisory lock, with the live-holder check); when it is taken the row is written nameless
        and `on_lost` decides what the run does (`serve` stops, exit 4).
        """
        with self.guard:
            self._name_watchers[instance] = on_lost

    def leave(self, instance: str) -> None:
        """Give `instance`'s presence up (its row is removed; never raises)."""
        with self.guard:
            if instance not in self._joined:
                return
            self._joined.discard(instance)
            self._described.pop(instance, None)
            self._name_watchers.pop(instance, None)
        conn = self._conn
        if conn is None:
            return
        with self._borrowed(), contextlib.suppress(psycopg.Error):
            conn.execute("DELETE FROM mcp_center.instances WHERE id = %s", (instance,))
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (INSTANCE_LOCK_CLASS, lock_key(instance)))
            conn.execute("SELECT pg_notify(%s, %s)", (PRESENCE_CHANNEL, "leave:" + instance))

    def alive(self, instance: str) -> bool | None:
        """True/False from the live set (current within `PRESENCE_REFRESH_S`); None: not known, ask the database."""
        if instance in self._joined or instance in self._alive:
            return True
        return None

    def describe(self, instance: str, *, name: str | None, url: str | None) -> tuple[Any, ...] | None:
        """Record what a joined run is called and where it listens (shown on every instance's page),
        unless another live run already has that name.

        The look for a live holder of `name` and the write of it are one transaction under the
        advisory lock `(NAME_LOCK_CLASS, lock_key(name))`: of two runs claiming one name at once, the
        second waits for the first's commit and then finds it (R-10.2). A dead run's row keeps its
        name until tidied, but is not live, so the name is free again at once.

        Returns:
            None when recorded; else the live holder's row `(id, name, url, hostname, pid,
            started_at)` (nothing was recorded).
        Raises:
            psycopg.Error: the database failed, or the name's lock was held past `NAME_WAIT_S`.
        """
        conn = self._require()
        with self._borrowed(), conn.transaction():
            if name is not None:
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(NAME_WAIT_S * 1000)}ms",))
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (NAME_LOCK_CLASS, lock_key(name)))
                holder = conn.execute(_NAME_HOLDER_SQL, (name, instance, INSTANCE_LOCK_CLASS)).fetchone()
                if holder is not None:
                    return tuple(holder)
            conn.execute("UPDATE mcp_center.instances SET name = %s, url = %s WHERE id = %s", (name, url, instance))
        with self.guard:  # kept: a row taken again after a reconnection is written with them
            if instance in self._joined:
                self._described[instance] = (name, url)
        return None

    # ----- the thread -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _borrowed(self) -> Generator[None]:
        """Use the listening connection from another thread (`join`, `leave`, `describe`).

        The thread holds the connection's lock while it waits for notifications (`WAIT_S` at a
        time) and would take it straight back after each wait: Python's locks are not fair, so a
        caller could wait through many rounds (1-2 s seen for `join` and `leave`). While a caller
        is registered here the thread pauses after its current wait, so the caller waits at most
        `WAIT_S`.
        """
        with self._turns:
            self._borrowers += 1
        try:
            yield
        finally:
            with self._turns:
                self._borrowers -= 1
                self._turns.notify_all()

    def _require(self) -> _Conn:
        conn = self._conn
        if conn is None or not self._live:
            raise psycopg.OperationalError("the database connection is down")
        return conn

    def _take(self, conn: _Conn, instance: str) -> bool:
        key = lock_key(instance)
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (INSTANCE_LOCK_CLASS, key)).fetchone()
        if row is None or not row[0]:
            return False
        with self.guard:
            name, url = self._described.get(instance, (None, None))
        holder: tuple[Any, ...] | None = None
        # Taken again after a reconnection, the row may have been removed meanwhile (another instance
        # cleaned it up while this one's lock was gone): it is written whole, name and URL included,
        # or the run vanished from every instance's list until it restarted. The name is claimed
        # again as `describe` claims it: another run may have taken it while this one was away.
        with conn.transaction():
            if name is not None:
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(NAME_WAIT_S * 1000)}ms",))
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (NAME_LOCK_CLASS, lock_key(name)))
                found = conn.execute(_NAME_HOLDER_SQL, (name, instance, INSTANCE_LOCK_CLASS)).fetchone()
                holder = tuple(found) if found is not None else None
            conn.execute(
                "INSERT INTO mcp_center.instances (id, lock_key, hostname, pid, name, url)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET lock_key = EXCLUDED.lock_key,"
                " name = CASE WHEN %s THEN NULL ELSE COALESCE(EXCLUDED.name, mcp_center.instances.name) END,"
                " url = COALESCE(EXCLUDED.url, mcp_center.instances.url)",
                (instance, key, socket.gethostname(), os.getpid(), None if holder else name, url, holder is not None),
            )
        conn.execute("SELECT pg_notify(%s, %s)", (PRESENCE_CHANNEL, "join:" + instance))
        if holder is not None:
            with self.guard:
                self._described[instance] = (None, url)
                on_lost = self._name_watchers.pop(instance, None)
            if on_lost is None:
                logger.error(
                    "store.instance_name_lost", extra={"instance": instance, "instance_name": name, "holder": holder[0]}
                )
            else:
                try:
                    on_lost(holder)
                except Exception:  # the watcher's fault never ends the feed
                    logger.exception("store.instance_name_watch_failed", extra={"instance": instance})
        return True

    def _run(self) -> None:
        backoff = 0.05
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, **self._kwargs) as conn:
                    self._serve(conn)
            except psycopg.Error as exc:
                self._failure = fault_text(exc, self._secrets)
                if self._live:
                    logger.warning("store.feed_lost", extra={"fault": self._failure})
            finally:
                was_live, self._live, self._conn = self._live, False, None
                if was_live:
                    self._wake()  # waiters re-read (and learn the database is gone)
            if was_live:  # a new outage: retry at once, back off only while it lasts
                backoff = 0.05
            self._stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _serve(self, conn: _Conn) -> None:
        conn.execute("LISTEN mcp_center_changes")  # CHANNEL
        conn.execute("LISTEN mcp_center_instances")  # PRESENCE_CHANNEL
        rows = conn.execute("SELECT section, generation FROM mcp_center.generations").fetchall()
        if self._on_reconnect is not None:
            self._on_reconnect()
        with self.guard:
            for section, generation in rows:
                if section in self._known:
                    self._known[section] = int(generation)
            joined = set(self._joined)
        for instance in joined:  # a reconnection: take the runs' presence again
            if not self._take(conn, instance):
                logger.error("store.presence_taken", extra={"instance": instance})
        self._conn = conn
        self.epoch += 1
        self._live = True
        self._up.set()
        self._refresh_presence(conn, tidy=True)
        logger.info("store.feed_live", extra={"epoch": self.epoch})
        self._wake()
        last_refresh = time.monotonic()
        while not self._stop.is_set():
            with self._turns:  # let a waiting caller have the connection first (`_borrowed`)
                while self._borrowers and not self._stop.is_set():
                    self._turns.wait(WAIT_S)
            for notify in conn.notifies(timeout=WAIT_S):
                self._on_notify(notify)
            if time.monotonic() - last_refresh >= PRESENCE_REFRESH_S:
                self._refresh_presence(conn)
                last_refresh = time.monotonic()

    def _on_notify(self, notify: psycopg.Notify) -> None:
        if notify.channel == PRESENCE_CHANNEL:
            kind, _, instance = notify.payload.partition(":")
            with self.guard:
                self._alive = self._alive | {instance} if kind == "join" else self._alive - {instance}
            if kind == "leave":
                self._wake(("approvals", "interactions"))
            return
        try:
            doc = json.loads(notify.payload)
            moved: dict[Section, int] = {s: int(g) for s, g in dict(doc["generations"]).items() if s in SECTIONS}
        except (ValueError, KeyError, TypeError):
            logger.warning("store.feed_unreadable")
            self._wake(SECTIONS)
            return
        self.advance(moved)

    def _refresh_presence(self, conn: _Conn, *, tidy: bool = False) -> None:
        rows = conn.execute(_LIVE_SQL, (INSTANCE_LOCK_CLASS,)).fetchall()
        alive = frozenset(str(r[0]) for r in rows)
        with self.guard:
            gone = self._alive - alive - self._joined
            self._alive = alive | self._joined
        if gone or tidy:  # rows of runs whose lock is gone (their server states go with them)
            conn.execute(_TIDY_SQL, (INSTANCE_LOCK_CLASS,))
        if gone:
            self._wake(("approvals", "interactions"))

    def _wake(self, extra: Iterable[Section] = ()) -> None:
        with self.guard:
            subscriptions = list(self._subscriptions)
        extra = tuple(extra)
        for subscription in subscriptions:
            subscription.poke(extra)
