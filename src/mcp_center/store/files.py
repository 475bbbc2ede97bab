"""Crash-safe file primitives: the disk seam, atomic replace, an inter-process lock, change stamps (R-1.2, R-9.1).

Threat: a crash, power loss or a second mcp-center process (the CLI or a library script beside
`serve`) leaving a torn or interleaved file. `atomic_write` writes a temp file in the same
directory, fsyncs it, renames it over the target and fsyncs the directory, so a crash at any
instant leaves the old or the new file. `FileLock` is an `fcntl.flock` on a lock file beside the
data, held for the whole read-check-write of a transaction. Several files that must change
together go through the store's journal (`store/journal.py`), which is built on these primitives.

Every write the store makes goes through one `Disk` object: the seam where a test injects
ENOSPC or EIO into the n-th write, fsync or rename of a commit (our own small fake; production
uses `OS_DISK`). An `OSError` leaving `Disk` always names the file it was about.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import uuid
from collections.abc import Generator
from pathlib import Path

__all__ = ["OS_DISK", "Disk", "FileLock", "Stamp", "atomic_write", "file_stamp", "rare_file_stamp"]

Stamp = tuple[int, int, int] | None
"""`(inode, mtime in ns, size)` of a file, None when it does not exist: a cheap change marker."""


def file_stamp(path: str | Path) -> Stamp:
    """The `Stamp` of `path` (one `stat`; None when it does not exist)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def rare_file_stamp(path: str | Path) -> Stamp:
    """`file_stamp` of a file that is usually absent (the journal): one `access` when it is absent.

    The same answer as `file_stamp`, but its usual absence costs no `FileNotFoundError` raised and
    caught (which `os.stat` cannot avoid): the journal is looked at on every forwarded gateway call
    (R-8.3, issue 12). When it exists, a `stat` follows (two system calls, only then); a file
    removed between the two gives None, as a `stat` after the removal would.

    Raises:
        OSError: as `file_stamp`, when the file exists but cannot be `stat`ed.
    """
    if not os.access(path, os.F_OK):
        return None
    return file_stamp(path)


class Disk:
    """The store's writes to the file system, one method per primitive (the fault-injection seam).

    Every method raises `OSError` with `filename` set to the file concerned.
    """

    def write_new(self, path: Path, data: bytes, *, mode: int = 0o600, after_ns: int | None = None) -> None:
        """Create `path` (it must not exist), write `data`, set `mode`, fsync it, close it.

        Args:
            after_ns: When given, the file's mtime is set above this value (ns), so that replacing
                a file whose mtime is `after_ns` always changes its `Stamp`, even within one tick
                of a coarse clock (see `JsonStore.read_if_fresh`).
        """
        fd = self.create(path, mode)
        try:
            self.write(fd, data, path)
            os.fchmod(fd, mode)
            if after_ns is not None:
                mtime = max(time.time_ns(), after_ns + 1)
                os.utime(fd, ns=(mtime, mtime))
            self.fsync(fd, path)
        finally:
            os.close(fd)

    def create(self, path: Path, mode: int) -> int:
        """Create `path` exclusively for writing; return its descriptor."""
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        except OSError as exc:
            raise _named(exc, path) from None

    def write(self, fd: int, data: bytes, path: Path) -> None:
        """Write all of `data` to `fd` (which is `path`)."""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise _named(exc, path) from None

    def fsync(self, fd: int, path: Path) -> None:
        """Flush `fd` (which is `path`) to the disk."""
        try:
            os.fsync(fd)
        except OSError as exc:
            raise _named(exc, path) from None

    def replace(self, source: Path, target: Path) -> None:
        """Rename `source` over `target` atomically (same directory)."""
        try:
            os.replace(source, target)
        except OSError as exc:
            raise _named(exc, target) from None

    def fsync_dir(self, directory: Path) -> None:
        """Make the directory's entries (created, renamed, removed files) durable."""
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise _named(exc, directory) from None
        try:
            self.fsync(fd, directory)
        finally:
            os.close(fd)

    def unlink(self, path: Path) -> None:
        """Remove `path`; a missing file is not an error."""
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _named(exc, path) from None


OS_DISK = Disk()
"""The real disk."""


def _named(exc: OSError, path: Path) -> OSError:
    """`exc` with `filename` set to `path` when the OS did not set it (os.write, os.fsync)."""
    if exc.filename is None:
        return OSError(exc.errno, exc.strerror, str(path))
    return exc


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600, disk: Disk = OS_DISK) -> None:
    """Replace `path` with `data` atomically: temp file, fsync, rename, directory fsync.

    For one file on its own; files that must change together use the store's journal.

    Raises:
        OSError: the directory is not writable or the disk is full (the old file is untouched;
            `filename` names the file).
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        disk.write_new(temp, data, mode=mode)
        disk.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    disk.fsync_dir(path.parent)


class FileLock:
    """An exclusive (or shared) lock across threads of this process and across processes.

    Args:
        path: The lock file (created with mode 0600 if missing; its content is unused). Its
            directory is never created: `hold` raises `FileNotFoundError` when it is gone (a data
            directory moved while serve runs must not be made again at its old path, R-9.1).
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread_lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The lock file."""
        return self._path

    @contextlib.contextmanager
    def hold(self, *, shared: bool = False) -> Generator[None]:
        """Hold the lock for the duration of the block (`shared=True` for readers).

        Threads of one process are serialized by a thread lock first (readers included): the
        `flock` itself belongs to an open file description, not to a thread.

        Raises:
            OSError: the lock file cannot be opened (`FileNotFoundError`: its directory is gone).
        """
        with self._thread_lock:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
