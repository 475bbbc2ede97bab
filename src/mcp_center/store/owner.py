"""One owner per data directory: the `mcp-center serve` that runs on it (R-9.2).

Threat: two `serve` processes on one data directory. Both would run every enabled stdio server
(two copies of each), both would claim to be "the" host in `serve.json`, and whichever stopped
first would delete the other's record, after which `mcp-center approvals` and `export --gateway`
found no host or the wrong one. Here the first `serve` claims the directory and every later one
is refused with `DataDirInUse` (`SERVE_DATA_DIR_IN_USE`) naming the owner's pid and URL, before it
touches anything. CLI commands are not owners: they still read and write configuration beside a
running serve (the store's own file lock makes that safe, R-1.2).

`OwnerLock` is the seam (the store's interface for "who runs this data"): claim it with the
owner's facts, announce the URL once it listens, release it at the end, and ask who owns it now.
`FileOwnerLock` implements it for a data directory on a local disk:

- `<data dir>/serve.lock` carries an exclusive `flock`, taken without waiting and held by the
  owning process for its whole life. The kernel drops it when that process ends in any way,
  SIGKILL included, so the lock of a dead serve is simply taken over: no stale-lock guessing.
- `<data dir>/serve.json` is the owner's record `{"pid", "url", "local_url", "database",
  "instance", "started_at", "start_ticks", "directory"}`, written atomically when the lock is claimed (`url`
  and `local_url` null until the socket is bound) and again when the URLs are announced. `url` is
  what users and remote clients reach (`--public-url` when given), `local_url` where it listens
  (what a process on this machine, the CLI, connects to), `database` the shared database without
  its password when the serve is database-backed (its state is not in the directory's files). A
  crashed serve's record is replaced by the next claim; otherwise only its writer removes it
  (`release` checks the `instance` it wrote). `directory` is the identity of the directory the
  owner claimed (`DirIdentity`: its real path, device and inode): a copy of the directory (`cp -a`
  while its serve runs) carries the record of a live serve that does not serve the copy, and a
  reader of the copy must not take that serve's answers for the copy's (issue 16).
- `<data dir>/database.json` `{"database", "since"}`, written by a database-backed serve once it listens
  (its database opened: a serve that never reached it marks nothing), stays after that serve stopped:
  the directory's state is in that database (without its password), not in its files. Without it a
  stopped database-backed serve's directory read as an empty host to the CLI, and a serve started
  there without the database began a second, empty state beside the real one. `claim` refuses a
  file-backed owner while the file is there (`DatabaseRequired`), and the CLI checks it too
  (`database_of`). Deleting the file is how a user gives the directory back to its own files.
- Readers never take the lock (a reader holding it for an instant would make a starting serve
  fail its claim). They trust the record only while its pid is alive *and* started at the
  recorded time (`/proc/<pid>/stat`), so a pid reused by another program is never taken for a
  serve, and only for the directory the record names (`directory`). A record without a valid
  `directory` (null, missing or malformed: a record of an mcp-center before issue 16, or a hand-edited
  or copied one) is not trusted: `claim` refuses to write one (StorageError when the directory's
  identity cannot be read), so a serve of this version always has one; an older serve is found
  again once restarted.

A database-backed store (several instances sharing one database) implements the same protocol
with a per-instance registration instead of a lock; `current()` then answers for this data set.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeGuard

from mcp_center.errors import DatabaseRequired, DataDirInUse, StorageError
from mcp_center.models import is_object
from mcp_center.store.files import atomic_write

__all__ = [
    "DATABASE_FILE",
    "LOCK_FILE",
    "OWNER_FILE",
    "DirIdentity",
    "FileOwnerLock",
    "OwnerLock",
    "ServeOwner",
    "database_of",
    "database_required",
    "process_start_ticks",
]

OWNER_FILE = "serve.json"
"""The owner's record, in the data directory."""
LOCK_FILE = "serve.lock"
"""The lock file, in the data directory (its content is unused)."""
DATABASE_FILE = "database.json"
"""The mark of a directory whose state a database-backed serve keeps in its database (module doc)."""

RECORD_WAIT_S = 1.0
"""When a claim is refused, seconds to wait for the owner's record to name a live process (the
owner may have taken the lock an instant ago and not written its record yet)."""
_RECORD_POLL_S = 0.02


def process_start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22).

    A pid is reused once its process is gone; the pair (pid, start ticks) names one process for
    the whole boot. Returns None when the process does not exist, is a zombie, or /proc cannot be
    read (not Linux).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; cut at the last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


@dataclass(frozen=True)
class DirIdentity:
    """Which directory a serve claimed: a copy of it (another inode) or the same path after a move
    (another real path) is another directory (R-9.2, issue 16).

    Attributes:
        path: Its real path (symlinks resolved), absolute.
        device: `st_dev` of the directory.
        inode: `st_ino` of the directory.
    """

    path: str
    device: int
    inode: int

    @classmethod
    def of(cls, directory: Path) -> DirIdentity | None:
        """The identity of `directory` now; None when it cannot be looked at (absent, no permission)."""
        try:
            real = os.path.realpath(directory)
            info = os.stat(real)
        except OSError:
            return None
        return cls(path=real, device=info.st_dev, inode=info.st_ino)

    def to_doc(self) -> dict[str, object]:
        """The JSON form in `serve.json`: `{"path", "device", "inode"}`."""
        return {"path": self.path, "device": self.device, "inode": self.inode}

    @classmethod
    def from_doc(cls, doc: object) -> DirIdentity | None:
        """Parse `to_doc`'s form; None when `doc` is not one."""
        if not is_object(doc):
            return None
        path, device, inode = doc.get("path"), doc.get("device"), doc.get("inode")
        if not isinstance(path, str) or not path or not _is_int(device) or not _is_int(inode):
            return None
        return cls(path=path, device=device, inode=inode)


@dataclass(frozen=True)
class ServeOwner:
    """The facts about the process that owns a data directory (R-9.2).

    Attributes:
        pid: The owning process.
        url: Its base URL for users and remote clients (no trailing slash; the public URL when it
            has one) once it listens; None while it starts.
        local_url: Where it listens (`http://127.0.0.1:PORT`), for processes on this machine; None
            while it starts, or in a record of an older mcp-center (then `url` is both).
        database: The shared database it keeps the state in, without its password (R-10.1); None
            when the state is the data directory's files.
        instance: A random id per run: tells this run's record from an earlier one of the same pid.
        started_at: When it claimed the directory (aware UTC).
        start_ticks: Its start time from /proc (see `process_start_ticks`); None off Linux.
        directory: The data directory it claimed (`DirIdentity`), filled in by `FileOwnerLock.claim`;
            None in a record of an older mcp-center, or a malformed one (not trusted by `current`).
    """

    pid: int
    url: str | None = None
    instance: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    start_ticks: int | None = None
    local_url: str | None = None
    database: str | None = None
    directory: DirIdentity | None = None

    @classmethod
    def this_process(cls, url: str | None = None, *, database: str | None = None) -> ServeOwner:
        """The record of the calling process, with a fresh `instance`; `database` as in the attributes."""
        pid = os.getpid()
        return cls(pid=pid, url=_clean_url(url), start_ticks=process_start_ticks(pid), database=database)

    @property
    def address(self) -> str | None:
        """Where a process on this machine reaches the serve: `local_url`, else `url` (R-9.2)."""
        return self.local_url or self.url

    def is_alive(self) -> bool:
        """True while the recorded process runs (same pid *and* start time where /proc tells)."""
        if self.pid <= 0:
            return False
        if sys.platform.startswith("linux"):
            ticks = process_start_ticks(self.pid)
            return ticks is not None and (self.start_ticks is None or ticks == self.start_ticks)
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, another user's
            return True
        return True

    def to_json(self) -> bytes:
        """The record as written to `serve.json` (no secret in it)."""
        doc = {
            "pid": self.pid,
            "url": self.url,
            "local_url": self.local_url,
            "database": self.database,
            "instance": self.instance,
            "started_at": self.started_at.isoformat(),
            "start_ticks": self.start_ticks,
            "directory": self.directory.to_doc() if self.directory is not None else None,
        }
        return (json.dumps(doc) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes) -> ServeOwner | None:
        """Parse a record; None when it is not one (torn, hand-edited, of another format)."""
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        if not is_object(doc):
            return None
        pid, url, ticks = doc.get("pid"), doc.get("url"), doc.get("start_ticks")
        if not _is_int(pid) or pid <= 0:
            return None
        url = url if _is_http_url(url) else None
        local_url = doc.get("local_url")
        local_url = local_url if _is_http_url(local_url) else None
        database = doc.get("database")
        started_at = datetime.now(UTC)
        raw_started = doc.get("started_at")
        if isinstance(raw_started, str):
            with contextlib.suppress(ValueError):
                started_at = datetime.fromisoformat(raw_started)
        instance = doc.get("instance")
        return cls(
            pid=pid,
            url=_clean_url(url),
            instance=instance if isinstance(instance, str) else "",
            started_at=started_at,
            start_ticks=ticks if _is_int(ticks) else None,
            local_url=_clean_url(local_url),
            database=database if isinstance(database, str) and database else None,
            directory=DirIdentity.from_doc(doc.get("directory")),
        )


class OwnerLock(Protocol):
    """Who runs a data directory: at most one live owner at a time (R-9.2).

    Lifecycle of an owner: `claim` before touching anything, `announce` once it listens,
    `release` at the very end (after its servers stopped). Other processes call only `current`.
    """

    def claim(self, owner: ServeOwner) -> None:
        """Become the owner, described by `owner` (`ServeOwner.this_process()`).

        Raises:
            DataDirInUse: another live process owns it; `details` name its pid and URL.
            DatabaseRequired: `owner` is file-backed but the directory's state is in a database
                (`DATABASE_FILE`); nothing was written.
            StorageError: the data directory cannot be created or written, or its identity
                (`DirIdentity`) cannot be read.
            RuntimeError: this lock is already claimed.
        """
        ...

    def announce(self, url: str, *, local_url: str | None = None) -> None:
        """Record the URLs of the owner (after its socket is bound: `--port 0` is resolved): `url`
        for users and remote clients, `local_url` where it listens (see `ServeOwner`).

        Raises:
            StorageError: the record cannot be written.
            RuntimeError: not claimed.
        """
        ...

    def release(self) -> None:
        """Give up ownership and remove this owner's record (never another's); idempotent, never raises."""
        ...

    def current(self) -> ServeOwner | None:
        """The live owner now, or None when no live process owns the data directory (a live owner of
        another directory, named by a copied record, owns none; nor does a record that names no
        valid directory)."""
        ...


class FileOwnerLock:
    """`OwnerLock` for a data directory on a local file system (see the module doc).

    Args:
        data_dir: The data directory (created on `claim` if missing, mode 0700).
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._record = data_dir / OWNER_FILE
        self._lock = data_dir / LOCK_FILE
        self._fd: int | None = None
        self._owner: ServeOwner | None = None

    @property
    def claimed(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def claim(self, owner: ServeOwner) -> None:
        if self._fd is not None:
            raise RuntimeError("this owner lock is already claimed")
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            # O_CLOEXEC (Python's default) matters: a server process that inherited the descriptor
            # would keep the lock after serve died and no serve could start again.
            fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _storage_error(self.data_dir, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise self._in_use() from None
        except OSError as exc:
            os.close(fd)
            raise _storage_error(self.data_dir, exc) from None
        self._fd = fd
        identity = DirIdentity.of(self.data_dir)
        if identity is None:  # a record without it would be trusted by no reader (see `current`)
            self._unlock()
            raise StorageError(
                f"cannot use the data directory {self.data_dir}: its real path and inode cannot be read",
                details={"data_dir": str(self.data_dir)},
            )
        owner = replace(owner, directory=identity)
        marked = database_of(self.data_dir)
        if owner.database is None and marked is not None:
            self._unlock()
            raise database_required(self.data_dir, marked)
        try:
            atomic_write(self._record, owner.to_json(), mode=0o644)
        except OSError as exc:
            self._unlock()
            raise _storage_error(self.data_dir, exc) from None
        self._owner = owner

    def announce(self, url: str, *, local_url: str | None = None) -> None:
        if self._fd is None or self._owner is None:
            raise RuntimeError("announce() needs a claimed owner lock")
        owner = replace(self._owner, url=_clean_url(url), local_url=_clean_url(local_url))
        try:
            # Marked only now, once serve has opened its database and listens: a serve that never
            # reached its database (a typo, a database down) must not lock the directory's files out.
            # The mark is written before the record that carries the URL: whoever sees this serve's
            # URL (a CLI, a test waiting for it) finds the mark already whole, never its temp file.
            if owner.database is not None and database_of(self.data_dir) != owner.database:
                mark = {"database": owner.database, "since": owner.started_at.isoformat()}
                atomic_write(self.data_dir / DATABASE_FILE, (json.dumps(mark) + "\n").encode(), mode=0o644)
            atomic_write(self._record, owner.to_json(), mode=0o644)
        except OSError as exc:
            raise _storage_error(self.data_dir, exc) from None
        self._owner = owner

    def release(self) -> None:
        if self._fd is None:
            return
        ours = self._owner
        # The record goes first, while the lock still keeps any next owner from writing its own.
        recorded = _read_record(self._record)
        if ours is not None and recorded is not None and recorded.instance == ours.instance:
            with contextlib.suppress(OSError):
                self._record.unlink()
        self._owner = None
        self._unlock()

    def current(self) -> ServeOwner | None:
        if self._owner is not None:
            return self._owner
        recorded = _read_record(self._record)
        if recorded is None or not recorded.is_alive():
            return None
        # A copy of the directory (`cp -a` while its serve ran) holds the live serve's record too:
        # that serve serves the original, not this one (issue 16). A record that names no valid
        # directory (null, missing, malformed: every claim writes one) proves nothing either.
        if recorded.directory is None or recorded.directory != DirIdentity.of(self.data_dir):
            return None
        return recorded

    def _unlock(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the flock

    def _in_use(self) -> DataDirInUse:
        """The refusal, naming the owner as soon as its record names a live process (bounded wait)."""
        deadline = time.monotonic() + RECORD_WAIT_S
        owner = self.current()
        while owner is None and time.monotonic() < deadline:
            time.sleep(_RECORD_POLL_S)
            owner = self.current()
        if owner is None:
            who = "another process"
        else:
            who = f"mcp-center serve (pid {owner.pid}, {owner.url or 'still starting'})"
        return DataDirInUse(
            f"the data directory {self.data_dir} is in use by {who}; stop it first, "
            "or give this serve another --data-dir",
            details={
                "data_dir": str(self.data_dir),
                "pid": owner.pid if owner is not None else None,
                "url": owner.url if owner is not None else None,
            },
        )


_MARK_MAX_BYTES = 4096
_MARK_MAX_DATABASE_CHARS = 512


def database_of(data_dir: Path) -> str | None:
    """The database (display form, no password) in which a database-backed serve of `data_dir` keeps
    its state, from `DATABASE_FILE`; None when the directory's state is its own files (R-9.2, R-10.1).
    A file that cannot be read or parsed, is not a regular file (a FIFO is never opened) or is larger
    than a few KiB counts as present: the refusal names it, so it is looked at."""
    path = data_dir / DATABASE_FILE
    unreadable = f"(unreadable {DATABASE_FILE})"
    try:
        mode = path.lstat().st_mode
    except OSError:  # absent (or the data directory is not one): the files are the state
        return None
    if not stat.S_ISREG(mode):  # a directory, a FIFO, a device, a symlink: never read, always refused
        return unreadable
    try:
        with path.open("rb") as marker:
            raw = marker.read(_MARK_MAX_BYTES + 1)
    except OSError:
        return unreadable
    try:
        doc = json.loads(raw) if len(raw) <= _MARK_MAX_BYTES else None
    except (ValueError, UnicodeDecodeError):
        doc = None
    database = doc.get("database") if is_object(doc) else None
    if not isinstance(database, str) or not database or len(database) > _MARK_MAX_DATABASE_CHARS:
        return unreadable
    return database


def database_required(data_dir: Path, database: str, pid: int | None = None) -> DatabaseRequired:
    """The refusal to use `data_dir`'s files because its state is in `database` (display form): kept
    by the live serve `pid`, or, without `pid`, by a database-backed serve that ran there (R-10.1)."""
    where = (
        f"belongs to mcp-center serve (pid {pid}), which keeps its state in the database {database}"
        if pid is not None
        else f"keeps its state in the database {database}, where a serve of it ran"
    )
    undo = (
        "" if pid is not None else f"; to start it afresh on its own files instead, delete {data_dir / DATABASE_FILE}"
    )
    return DatabaseRequired(
        f"the data directory {data_dir} {where}; set MCP_CENTER_DATABASE_URL and MCP_CENTER_SECRET_KEY "
        f"as that serve has them (or pass --url where the command takes it){undo}",
        details={"data_dir": str(data_dir), "pid": pid, "database": database},
    )


def _read_record(path: Path) -> ServeOwner | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    return ServeOwner.from_json(raw)


def _clean_url(url: str | None) -> str | None:
    return url.rstrip("/") if url else None


def _is_http_url(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _storage_error(data_dir: Path, exc: OSError) -> StorageError:
    return StorageError(
        f"cannot use the data directory {data_dir}: {exc.strerror or exc}", details={"data_dir": str(data_dir)}
    )
