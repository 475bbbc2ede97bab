"""Coordination between the processes (and, later, the instances) that share one store (R-9.2, R-10.1).

The store is shared: `serve`, the CLI and library scripts open the same data directory, and the
next step puts several `serve` instances on one PostgreSQL database. Besides the data itself
(`Store.read` / `transaction`) they need four primitives, each a small Protocol here so that a
database backend implements the same seam (rows + LISTEN/NOTIFY + advisory locks):

- `KeyedLocks` — a cross-process lock by key, for single-flight work that takes time and must not
  run twice (an OAuth refresh with single-use refresh tokens). Files: an `flock` on
  `.locks/<hash of key>`; PostgreSQL: `pg_advisory_lock(hashtext(key))` on a held connection.
- `ChangeFeed` — "another process committed": a subscription that wakes when given sections
  changed. Files: the sections' stat stamps, polled (a few `stat` calls every `poll_s`);
  PostgreSQL: `LISTEN` on a channel the committing transaction `NOTIFY`s.
- `Presence` — is the process run that created a pending approval or card still alive? Files: the
  run holds an `flock` on `.instances/<id>` for its lifetime (the kernel drops it on SIGKILL, so a
  crashed run is seen dead at once and a reused pid fools nobody); PostgreSQL: a session advisory
  lock per instance, or a heartbeat row.
- `OwnerLock` — one `serve` owns a data directory (R-9.2): `store/owner.py` (`FileOwnerLock`
  over `<data dir>/serve.lock`); `Store.owner_lock()` hands it out. With PostgreSQL it becomes a
  per-instance registration.

Hot paths never wait on these: the per-call check "is my cached snapshot still current" is
`Store.read_if_fresh()` / `Store.stamp()` (a few `stat` calls; a generation counter kept current by
notifications in a database backend).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import re
import socket
import threading
from collections.abc import AsyncGenerator, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import anyio

from mcp_center.errors import StorageError
from mcp_center.store.sections import SECTIONS, Section

__all__ = [
    "ChangeFeed",
    "Changes",
    "FileKeyedLocks",
    "FilePresence",
    "InstanceBoard",
    "InstanceInfo",
    "InstanceServerState",
    "KeyedLocks",
    "LocalBoard",
    "PolledChanges",
    "Presence",
]

logger = logging.getLogger(__name__)

LOCKS_DIR = ".locks"
INSTANCES_DIR = ".instances"
DEFAULT_LOCK_TIMEOUT_S = 60.0
"""Seconds `KeyedLocks.hold` waits before giving up (an OAuth refresh holds it for one HTTP round trip)."""
_INSTANCE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class KeyedLocks(Protocol):
    """A cross-process (cross-instance) lock per key: single flight for slow work."""

    def lock(
        self, key: str, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the lock named `key` for the block; other holders of the same key wait.

        Tasks of one process exclude each other too. Cancelling a waiting task stops the wait.

        Raises:
            StorageError: not obtained within `timeout_s` seconds (`details.fault`: `lock_timeout`).
        """
        ...


class Changes(Protocol):
    """A subscription to committed changes (see `ChangeFeed`)."""

    async def next(self) -> frozenset[Section]:
        """Wait until a watched section changed since the subscription began or the last `next()`;
        return which (several commits may be folded into one wake-up)."""
        ...


class ChangeFeed(Protocol):
    """Wake-ups when any process commits a change to given sections."""

    def changes(self, sections: Iterable[Section] = SECTIONS) -> contextlib.AbstractAsyncContextManager[Changes]:
        """Subscribe to changes of `sections` for the duration of the block."""
        ...


class Presence(Protocol):
    """Which process runs (instances) are alive: the owners of pending approvals and cards."""

    def join_instance(self, instance: str) -> None:
        """Announce this run as alive until `leave_instance` (or its death).

        Args:
            instance: A new, never reused id: 1-64 characters of `[A-Za-z0-9_-]`.
        Raises:
            ValueError: a malformed id, or one that is already alive.
        """
        ...

    def leave_instance(self, instance: str) -> None:
        """This run stops being alive (after it closed what it owned)."""
        ...

    def instance_alive(self, instance: str) -> bool:
        """True while the run `instance` is alive (a malformed id is never alive)."""
        ...


@dataclass(frozen=True)
class InstanceInfo:
    """A live `serve` instance on the shared state (R-10.2): its run id, name, the URL it listens on
    (`Settings.listen_url`, not the public URL every instance behind a balancer shares) and when it started."""

    id: str
    name: str | None
    url: str | None
    hostname: str
    pid: int
    started_at: datetime

    def view(self) -> dict[str, object]:
        """JSON shape for the API and the page."""
        return {
            "id": self.id,
            "name": self.name,
            "url": self.url,
            "hostname": self.hostname,
            "pid": self.pid,
            "started_at": self.started_at.isoformat(),
        }


@dataclass(frozen=True)
class InstanceServerState:
    """One instance's connection state of one server (connections are per instance, R-10.2)."""

    instance: str
    server_id: str
    state: str
    reason: str | None = None
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))


class InstanceBoard(Protocol):
    """What every live instance is and how its connections fare, for the page of any instance (R-10.2).

    Not the shared data (no transaction, no change feed): each instance writes its own lines, and a
    line of an instance that died disappears with its presence.
    """

    def describe_instance(self, instance: str, *, name: str | None, url: str | None) -> InstanceInfo | None:
        """Record a joined run's name and listen URL (a `serve`; CLI runs stay undescribed), unless
        another live run has that name: the look and the write are atomic, so of two runs naming
        themselves alike at once exactly one gets the name (R-10.2). A dead run's name is free.

        Returns:
            None when recorded; else the live run that has `name` (nothing was recorded).
        Raises:
            StorageError: it could not be recorded.
        """
        ...

    def watch_instance_name(self, instance: str, on_lost: Callable[[InstanceInfo], None]) -> None:
        """Call `on_lost(holder)` once if the described run `instance` loses its name: its presence
        lapsed (the database restarted, the network failed, the process was stopped), another live
        run claimed the name meanwhile, and the re-take found it (R-10.2: a name is a lease, claimed
        again atomically whenever presence is taken again). Called from a store thread; the run then
        stays listed without a name. A single-process board never loses a name (never calls it).
        """
        ...

    def publish_server_state(self, instance: str, server_id: str, state: str, reason: str | None) -> None:
        """Record this instance's connection state of `server_id` (`disconnected`, `ready`, ...).

        Raises:
            StorageError: it could not be recorded.
        """
        ...

    def instances(self) -> list[InstanceInfo]:
        """The live described instances, oldest first.

        Raises:
            StorageError: the board could not be read.
        """
        ...

    def server_states(self) -> list[InstanceServerState]:
        """Every live instance's state of every server it published.

        Raises:
            StorageError: the board could not be read.
        """
        ...


class LocalBoard:
    """`InstanceBoard` of one process (the file backend: one `serve` per data directory)."""

    def __init__(self) -> None:
        self._instances: dict[str, InstanceInfo] = {}
        self._states: dict[tuple[str, str], InstanceServerState] = {}
        self._guard = threading.Lock()

    def describe_instance(self, instance: str, *, name: str | None, url: str | None) -> InstanceInfo | None:
        with self._guard:
            holder = next((i for i in self._instances.values() if i.id != instance and name and i.name == name), None)
            if holder is not None:
                return holder
            self._instances[instance] = InstanceInfo(
                instance, name, url, socket.gethostname(), os.getpid(), datetime.now(UTC)
            )
            return None

    def watch_instance_name(self, instance: str, on_lost: Callable[[InstanceInfo], None]) -> None:
        """One process: no other run can take the name while this one lives."""

    def publish_server_state(self, instance: str, server_id: str, state: str, reason: str | None) -> None:
        with self._guard:
            self._states[(instance, server_id)] = InstanceServerState(instance, server_id, state, reason)

    def forget(self, instance: str) -> None:
        """The run left: its lines go."""
        with self._guard:
            self._instances.pop(instance, None)
            self._states = {k: v for k, v in self._states.items() if k[0] != instance}

    def instances(self) -> list[InstanceInfo]:
        with self._guard:
            return sorted(self._instances.values(), key=lambda i: i.started_at)

    def server_states(self) -> list[InstanceServerState]:
        with self._guard:
            return [s for s in self._states.values() if s.instance in self._instances]


class FileKeyedLocks:
    """`KeyedLocks` over `flock` on `<directory>/.locks/<sha256 of key>`.

    The wait polls a non-blocking `flock` (2 ms, doubling up to 50 ms), so it never occupies a
    thread and a cancelled waiter simply stops.
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory / LOCKS_DIR

    @contextlib.asynccontextmanager
    async def lock(self, key: str, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> AsyncGenerator[None]:
        path = self._dir / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] + ".lock")
        try:
            self._dir.mkdir(exist_ok=True, mode=0o700)  # never its parent: a moved data directory stays moved
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StorageError(
                f"cannot open the lock '{key}': {exc.strerror or type(exc).__name__} (was the data directory "
                "moved or removed while serve runs? restart serve on its new path); nothing was changed",
                details={"file": str(path), "fault": exc.strerror or type(exc).__name__, "lock": key},
            ) from None
        try:
            delay = 0.002
            with anyio.move_on_after(timeout_s) as waiting:
                while not _try_flock(fd, fcntl.LOCK_EX):
                    await anyio.sleep(delay)
                    delay = min(delay * 2, 0.05)
            if waiting.cancelled_caught:
                logger.warning("store.lock_timeout", extra={"lock": key, "timeout_s": timeout_s})
                raise StorageError(
                    f"another process held the lock '{key}' for more than {timeout_s:g} s",
                    details={"file": str(path), "fault": "lock_timeout", "lock": key},
                )
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _try_flock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


class FilePresence:
    """`Presence` over `flock` on `<directory>/.instances/<instance>`: held by the live run.

    A run that dies (even by SIGKILL) loses its lock with its last file descriptor, so `alive` is
    exact, immediate and immune to pid reuse. Runs in one process exclude each other too (an `flock`
    belongs to an open file description), so two hosts in one test process see each other.
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory / INSTANCES_DIR
        self._held: dict[str, int] = {}
        self._guard = threading.Lock()

    def join_instance(self, instance: str) -> None:
        if not _INSTANCE_ID.fullmatch(instance):
            raise ValueError("instance ids are 1-64 characters of [A-Za-z0-9_-]")
        self._dir.mkdir(exist_ok=True, mode=0o700)  # never its parent: a moved data directory stays moved
        fd = os.open(self._dir / instance, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if not _try_flock(fd, fcntl.LOCK_EX):
            os.close(fd)
            raise ValueError(f"instance '{instance}' is already alive")
        with self._guard:
            self._held[instance] = fd

    def leave_instance(self, instance: str) -> None:
        with self._guard:
            fd = self._held.pop(instance, None)
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self._dir / instance)
        os.close(fd)  # closing the last descriptor releases the flock

    def instance_alive(self, instance: str) -> bool:
        if instance in self._held:
            return True
        if not _INSTANCE_ID.fullmatch(instance):
            return False
        path = self._dir / instance
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            if not _try_flock(fd, fcntl.LOCK_SH):
                return True
            with contextlib.suppress(OSError):  # its run is gone: tidy up (instance ids are never reused)
                os.unlink(path)
            return False
        finally:
            os.close(fd)


class PolledChanges:
    """`Changes` for a file store: polls `stamp_of(section)` of the watched sections every `poll_s` seconds.

    Args:
        stamp_of: A section's change marker (its file's stat stamp).
        sections: The sections to watch.
        poll_s: Seconds between polls (a few `stat` calls each).
    """

    def __init__(self, stamp_of: Callable[[Section], Hashable], sections: Iterable[Section], poll_s: float) -> None:
        self._stamp_of = stamp_of
        self._sections = tuple(sections)
        self._poll_s = poll_s
        self._last: dict[Section, Any] = {s: stamp_of(s) for s in self._sections}

    async def next(self) -> frozenset[Section]:
        while True:
            changed = self.poll()
            if changed:
                return changed
            await anyio.sleep(self._poll_s)

    def poll(self) -> frozenset[Section]:
        """The watched sections changed since the last poll (no wait)."""
        changed: set[Section] = set()
        for section in self._sections:
            stamp = self._stamp_of(section)
            if stamp != self._last[section]:
                self._last[section] = stamp
                changed.add(section)
        return frozenset(changed)
