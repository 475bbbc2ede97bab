"""Crash-safe file primitives: atomic replace and an inter-process lock (R-1.2).

Threat: a crash, power loss or a second mcp-center process (CLI beside `serve`) leaving a torn or
interleaved servers.json. `atomic_write` writes a temp file in the same directory, fsyncs it,
renames it over the target and fsyncs the directory, so a crash at any instant leaves the old or
the new file. `FileLock` is an `fcntl.flock` on a lock file beside the data, held for the whole
read-check-write of a transaction.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path

__all__ = ["FileLock", "atomic_write"]


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` atomically: temp file, fsync, rename, directory fsync.

    Raises:
        OSError: the directory is not writable or the disk is full (the old file is untouched).
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class FileLock:
    """An exclusive lock shared by threads of this process and by other processes.

    Args:
        path: The lock file (created with mode 0600 if missing; its content is unused).
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread_lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, *, shared: bool = False) -> Generator[None]:
        """Hold the lock for the duration of the block (`shared=True` for readers)."""
        with self._thread_lock:
            self._path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
