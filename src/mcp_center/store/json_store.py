"""The store: its interface (`Store`) and the embedded backend over JSON files in `<data dir>/mcp` (R-1.2, R-9.1).

What is stored where: see `store/sections.py` (servers.json stays a readable file of plain
configuration; ciphertexts, gateway tokens, cards and approvals have their own files).

**One change, one commit.** A transaction may change any sections together — a server and its
secrets, a card and its answer, OAuth credentials and the binding they record. Every transaction
of every process runs under ONE exclusive lock (`mcp/.lock`, an `flock`), reads the sections,
lets the caller change them, and writes the changed files through the redo journal
(`store/journal.py`): temps first, then the journal as the commit point, then the renames. So
whatever a transaction acknowledged is complete after a SIGKILL at any instant (the next lock
holder rolls the journal forward), whatever it refused — including ENOSPC or EIO on any write
before the commit point — left the old files untouched, and a reader never sees half of a change.
Readers take the same lock shared; they roll a leftover journal forward first (taking it
exclusively for that).

**Caching.** Each section is parsed once per version of its file: a reader keeps the parsed
section with the file's stat stamp (inode, mtime ns, size) and parses again only when the stamp
changed. Every commit gives the files it replaces a new inode and an mtime above the old one, so a
stamp never repeats even within one tick of a coarse clock. `read_if_fresh()` answers from that
cache with five `stat` calls, one `access` (the journal, usually absent: no exception raised and
caught for it) and no lock, which is what the per-call hot paths use. While a gateway
request is served, those `stat` calls are shared by the looks of one event-loop step that came
after the request arrived (`store/freshness.py`: a change another process committed before the
request arrived is still seen by it); a commit of this process drops what was shared.

**Start-up.** `open()` rolls a leftover journal forward, removes stray temps, and parses every
section: a corrupt or truncated file, or one written by a newer schema, raises `StorageError`
naming the file and the fault, and no file is ever rewritten before all of them parsed.

**A moved or removed directory.** Only `open()` (or the first use of a store never opened)
creates the directory. It records the directory's identity (device and inode); every locked read
or transaction checks it before and after taking the lock, and nothing else in the store creates
a missing directory. So a `serve` whose data directory was moved (`mv d1 d2`), removed or
replaced while it runs fails every read and write with `STORAGE_ERROR` (`details.fault` =
`directory_moved`) and changes nothing; it never re-creates the old path and reads an empty state
there (a silent fork, R-9.1). docs/state.md has the rule.

Damaged data and I/O failures are logged (`store.file_damaged`, `store.io_failed`, with the file).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncGenerator, Callable, Generator, Hashable, Iterable
from pathlib import Path
from typing import Any, Protocol

from mcp_center.errors import StorageError
from mcp_center.store.coordination import (
    DEFAULT_LOCK_TIMEOUT_S,
    ChangeFeed,
    Changes,
    FileKeyedLocks,
    FilePresence,
    InstanceBoard,
    InstanceInfo,
    InstanceServerState,
    KeyedLocks,
    LocalBoard,
    PolledChanges,
    Presence,
)
from mcp_center.store.files import OS_DISK, Disk, FileLock, Stamp, file_stamp
from mcp_center.store.freshness import FreshStamps
from mcp_center.store.journal import Journal, storage_error
from mcp_center.store.owner import FileOwnerLock, OwnerLock
from mcp_center.store.sections import (
    FILES,
    SECTIONS,
    Section,
    StoreState,
    dump_section,
    parse_section,
    prune_section,
)

__all__ = ["DEFAULT_POLL_S", "LOCK_FILE", "JsonStore", "Store"]

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
DEFAULT_POLL_S = 0.1
"""Seconds between checks of a `changes()` subscription (a few `stat` calls each)."""


class Store(KeyedLocks, ChangeFeed, Presence, InstanceBoard, Protocol):
    """The persistence seam: the embedded JSON files (`JsonStore`) or a shared PostgreSQL database
    for several instances (`PgStore`, R-10.1); `store_for(settings)` picks one.

    Data (`read`, `read_if_fresh`, `transaction`, `stamp`) is synchronous: call it from a worker
    thread, except `read_if_fresh` and `stamp`, which are cheap enough for the event loop (memory
    and at most a few `stat` calls; never the database). Coordination (`lock`, `changes`, the
    presence of process runs) comes from the Protocols in `store/coordination.py`. Every
    implementation serializes transactions across every process (or instance) that shares the data.
    Which `serve` owns a *data directory* is not the store's business: each instance owns its own
    (`store/owner.py`), whatever backend holds the shared state.
    """

    def open(self) -> None:
        """Check the store at start: complete or discard an interrupted commit, remove temps (files),
        bring the schema up to date (database), parse everything.

        Raises:
            StorageError: damaged or newer-schema data, naming the file (or table and row) and the
                fault (nothing written).
            StorageUnavailable: the database cannot be reached.
            StorageSchemaTooNew: the database's schema is newer than this code.
        """
        ...

    def close(self) -> None:
        """Release what `open()` took (connections, threads); idempotent. Nothing for files."""
        ...

    def check_key(self, check: str) -> None:
        """Make sure this process seals and opens ciphertexts with the key the store's were sealed
        with: `check` is the keyed fingerprint of a constant under this process's key. The first
        check records it (a shared database); a later different one is refused.

        Raises:
            SecretKeyMismatch: the store's ciphertexts belong to another key (nothing was written).
            StorageError: the check could not be read or recorded.
        """
        ...

    def read(self) -> StoreState:
        """A consistent snapshot, private to the caller.

        Raises:
            StorageError: the data cannot be read or is damaged (`details.file`, `details.fault`).
        """
        ...

    def read_if_fresh(self) -> StoreState | None:
        """The snapshot of the last read or write when nothing changed since, without I/O beyond a
        few `stat` calls; None when it may be stale (then call `read`)."""
        ...

    def transaction(self) -> contextlib.AbstractContextManager[StoreState]:
        """Exclusive read-modify-write of the whole state: mutate the yielded state; every changed
        section is committed together when the block exits without an exception, nothing otherwise.

        Raises:
            StorageError: the commit failed and nothing changed (`details.file` names the file).
        """
        ...

    def stamp(self, *sections: Section) -> Hashable:
        """A cheap marker that changes whenever one of `sections` (default: all) is committed."""
        ...


_Stamps = tuple[Stamp, ...]


class JsonStore:
    """`Store` over the section files in `directory` (normally `<data dir>/mcp`); see the module docstring.

    Args:
        directory: Created with mode 0700 if missing, by `open()` (or the first use) only; then every locked
            operation refuses a directory that is gone or another one (module docstring).
        disk: The write primitives (tests pass a faulty one).
        poll_s: Seconds between checks of a `changes()` subscription.
    """

    def __init__(self, directory: Path, *, disk: Disk = OS_DISK, poll_s: float = DEFAULT_POLL_S) -> None:
        self.directory = directory
        self._paths = {s: directory / FILES[s] for s in SECTIONS}
        self._str_paths = {s: str(directory / FILES[s]) for s in SECTIONS}
        self._path_strs = tuple(self._str_paths.values())
        self._lock = FileLock(directory / LOCK_FILE)
        self._journal = Journal(directory, disk)
        self._journal_str = str(self._journal.path)
        self._fresh = FreshStamps()
        self._parsed: dict[Section, tuple[Stamp, dict[str, Any]]] = {}
        self._snapshot: tuple[_Stamps, StoreState] | None = None
        self._locks = FileKeyedLocks(directory)
        self._presence = FilePresence(directory)
        self._board = LocalBoard()
        self._poll_s = poll_s
        self._identity: tuple[int, int] | None = None

    # ----- data ------------------------------------------------------------------------------------

    def open(self) -> None:
        self._identity = None  # open() takes the directory as it is now
        with self._locked():
            self._journal.recover()
            self._parsed.clear()
            self._snapshot = self._load()

    def close(self) -> None:
        """Nothing to release: every lock is taken and given back per call."""

    def check_key(self, check: str) -> None:
        """Nothing to check: the key file lives beside these files (one data directory, one key)."""
        del check

    def read_if_fresh(self) -> StoreState | None:
        snapshot = self._snapshot
        if snapshot is not None and snapshot[0] == self._stamps():
            return snapshot[1].copy()
        return None

    def read(self) -> StoreState:
        fresh = self.read_if_fresh()
        if fresh is not None:
            return fresh
        with self._locked(shared=True):
            snapshot = None if self._journal.pending() else self._load()
            if snapshot is not None:
                self._snapshot = snapshot
        if snapshot is None:  # a crashed commit: complete it under the exclusive lock
            with self._locked():
                self._recover_if_needed()
                snapshot = self._snapshot = self._load()
        return snapshot[1].copy()

    @contextlib.contextmanager
    def transaction(self) -> Generator[StoreState]:
        with self._locked():
            self._recover_if_needed()
            stamps, current = self._load()
            working = current.copy()
            yield working
            changed: list[Section] = [s for s in SECTIONS if working.section(s) != current.section(s)]
            if not changed:
                self._snapshot = (stamps, current)
                return
            values = {s: prune_section(s, working.section(s)) for s in changed}
            files = {FILES[s]: dump_section(s, values[s]) for s in changed}
            old = dict(zip(SECTIONS, stamps, strict=False))
            mtimes = {FILES[s]: stamp[1] for s in changed if (stamp := old[s]) is not None}
            self._snapshot = None
            try:
                complete = self._journal.commit(files, mtimes=mtimes)
            except BaseException:
                for section in changed:
                    self._parsed.pop(section, None)
                raise
            finally:
                self._fresh.forget()  # our own write: the next look stats again
            if not complete:  # committed; the next lock holder completes the renames
                for section in changed:
                    self._parsed.pop(section, None)
                return
            for section in changed:
                self._parsed[section] = (file_stamp(self._paths[section]), values[section])
            committed = current.copy()
            for section in changed:
                setattr(committed, section, dict(values[section]))
            self._snapshot = (self._stamps(), committed)

    def stamp(self, *sections: Section) -> Hashable:
        stat = self._fresh.stamp
        if len(sections) == 1:  # the hot paths: one section (gateway tokens, servers)
            return (stat(self._str_paths[sections[0]]), stat(self._journal_str, rare=True))
        wanted = sections or SECTIONS
        return (*(stat(self._str_paths[s]) for s in wanted), stat(self._journal_str, rare=True))

    # ----- coordination ----------------------------------------------------------------------------

    def lock(
        self, key: str, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    ) -> contextlib.AbstractAsyncContextManager[None]:
        return self._locks.lock(key, timeout_s=timeout_s)

    @contextlib.asynccontextmanager
    async def changes(self, sections: Iterable[Section] = SECTIONS) -> AsyncGenerator[Changes]:
        yield PolledChanges(lambda s: file_stamp(self._str_paths[s]), sections, self._poll_s)

    def join_instance(self, instance: str) -> None:
        self._presence.join_instance(instance)

    def leave_instance(self, instance: str) -> None:
        self._board.forget(instance)
        self._presence.leave_instance(instance)

    def instance_alive(self, instance: str) -> bool:
        return self._presence.instance_alive(instance)

    def describe_instance(self, instance: str, *, name: str | None, url: str | None) -> InstanceInfo | None:
        return self._board.describe_instance(instance, name=name, url=url)

    def watch_instance_name(self, instance: str, on_lost: Callable[[InstanceInfo], None]) -> None:
        self._board.watch_instance_name(instance, on_lost)

    def publish_server_state(self, instance: str, server_id: str, state: str, reason: str | None) -> None:
        self._board.publish_server_state(instance, server_id, state, reason)

    def instances(self) -> list[InstanceInfo]:
        return self._board.instances()

    def server_states(self) -> list[InstanceServerState]:
        return self._board.server_states()

    def owner_lock(self) -> OwnerLock:
        """`FileOwnerLock` over the data directory (`<data dir>/serve.lock`, `serve.json`): the
        parent of this store's directory."""
        return FileOwnerLock(self.directory.parent)

    # ----- internals -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, *, shared: bool = False) -> Generator[None]:
        """Hold the data lock, on the directory `open()` (or the first use) found, checked before and
        after taking it; only that first use creates the directory.

        Raises:
            StorageError: the directory was moved, removed or replaced (`details.fault` =
                `directory_moved`), or the lock file cannot be opened; nothing was changed.
        """
        if self._identity is None:  # the first use (open() or a store used without it) makes it
            try:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:  # under a file, read-only, no space: one STORAGE_ERROR naming the path
                raise storage_error(exc, doing="create the data directory") from exc
        identity = self._current_identity()
        self._identity = identity
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self._lock.hold(shared=shared))
            except FileNotFoundError:
                raise self._moved() from None
            except OSError as exc:
                raise storage_error(exc, doing="lock") from None
            self._current_identity()
            yield

    def _current_identity(self) -> tuple[int, int]:
        """The directory's (device, inode) now; raises `_moved()` when it is gone or not the one
        `open()` found."""
        try:
            info = os.stat(self.directory)
        except OSError:
            raise self._moved() from None
        identity = (info.st_dev, info.st_ino)
        if self._identity is not None and identity != self._identity:
            raise self._moved()
        return identity

    def _moved(self) -> StorageError:
        """The error of an operation whose directory was moved, removed or replaced since `open()`."""
        data_dir = self.directory.parent
        logger.error("store.directory_moved", extra={"file": str(self.directory)})
        return StorageError(
            f"the data directory {data_dir} was moved or removed while serve runs; "
            "restart serve on its new path (nothing was changed)",
            details={"file": str(self.directory), "fault": "directory_moved"},
        )

    def _stamps(self) -> _Stamps:
        stat = self._fresh.stamp
        return (*(stat(p) for p in self._path_strs), stat(self._journal_str, rare=True))

    def _recover_if_needed(self) -> None:
        """With the exclusive lock held: roll a crashed commit forward."""
        if self._journal.pending():
            self._journal.recover()
            self._parsed.clear()
            self._fresh.forget()

    def _load(self) -> tuple[_Stamps, StoreState]:
        """Every section, parsed again only where its file changed (lock held, no journal pending)."""
        state = StoreState()
        stamps: list[Stamp] = []
        for section in SECTIONS:
            path = self._paths[section]
            stamp = file_stamp(path)
            cached = self._parsed.get(section)
            if cached is not None and cached[0] == stamp and stamp is not None:
                value = cached[1]
            else:
                value = parse_section(section, path, self._read_bytes(path))
                self._parsed[section] = (stamp, value)
            setattr(state, section, dict(value))
            stamps.append(stamp)
        stamps.append(None)  # the journal: none while the lock is held and nothing is pending
        return tuple(stamps), state

    @staticmethod
    def _read_bytes(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise storage_error(exc, doing="read") from None
