"""Unit tests for crash-safe file primitives: atomic replace and the inter-process lock (R-1.2)."""

from __future__ import annotations

import errno
import fcntl
import os
import select
import stat
import subprocess
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import pytest

from mcp_center.store import FileLock, atomic_write

# A second process that takes the lock the way FileLock does (flock on the lock file), reports
# "locked" on stdout and holds it until a line arrives on stdin.
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_SH if sys.argv[2] == "shared" else fcntl.LOCK_EX)
sys.stdout.write("locked\\n")
sys.stdout.flush()
sys.stdin.readline()
"""


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def read_line(stream: IO[str], timeout_s: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout_s)
    assert ready, f"no line within {timeout_s} s"
    return stream.readline()


@contextmanager
def held_by_other_process(lock_path: Path, *, shared: bool = False) -> Generator[subprocess.Popen[str]]:
    """Another process holds the lock until `release(proc)` or the end of the block."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path), "shared" if shared else "exclusive"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert read_line(proc.stdout, 10) == "locked\n"
        yield proc
    finally:
        # EOF on stdin ends the holder's readline too; it may already be gone if the test released it.
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with suppress(BrokenPipeError):
                    stream.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()


class Contender:
    """A thread that enters `lock.hold()` and records when it got in."""

    def __init__(self, lock: FileLock, *, shared: bool = False) -> None:
        self.acquired = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(lock, shared), daemon=True)
        self._thread.start()

    def _run(self, lock: FileLock, shared: bool) -> None:
        with lock.hold(shared=shared):
            self.acquired.set()

    def join(self) -> None:
        self._thread.join(timeout=5)
        assert not self._thread.is_alive()


def temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


# ----- atomic_write -----------------------------------------------------------------------------


def test_atomic_write_creates_the_file_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    atomic_write(path, b'{"a": 1}\n')
    assert path.read_bytes() == b'{"a": 1}\n'
    assert mode_of(path) == 0o600
    assert temp_files(tmp_path) == []


def test_atomic_write_replaces_an_existing_file_and_tightens_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b"old")
    path.chmod(0o644)
    atomic_write(path, b"new")
    assert path.read_bytes() == b"new"
    assert mode_of(path) == 0o600


def test_atomic_write_applies_the_requested_mode(tmp_path: Path) -> None:
    path = tmp_path / "public.json"
    atomic_write(path, b"x", mode=0o640)
    assert mode_of(path) == 0o640


def test_atomic_write_creates_missing_parent_directories_private(tmp_path: Path) -> None:
    path = tmp_path / "data" / "mcp" / "servers.json"
    atomic_write(path, b"x")
    assert path.read_bytes() == b"x"
    assert mode_of(path.parent) & 0o077 == 0


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b"old content")

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, failing, boom)
        with pytest.raises(OSError) as caught:
            atomic_write(path, b"new content that never lands")
    assert caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["servers.json"]


def test_a_write_interrupted_by_keyboard_interrupt_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "servers.json"
    path.write_bytes(b"old content")

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", interrupt)
        with pytest.raises(KeyboardInterrupt):
            atomic_write(path, b"new")
    assert path.read_bytes() == b"old content"
    assert temp_files(tmp_path) == []


# ----- FileLock ---------------------------------------------------------------------------------


def test_hold_blocks_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    lock = FileLock(lock_path)
    with held_by_other_process(lock_path) as proc:
        contender = Contender(lock)
        assert not contender.acquired.wait(timeout=0.3), "got the lock while another process held it"
        release(proc)
        assert contender.acquired.wait(timeout=5), "did not get the lock after the other process released it"
        contender.join()


def test_a_shared_hold_coexists_with_another_shared_holder_but_an_exclusive_one_waits(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    with held_by_other_process(lock_path, shared=True) as proc:
        reader = Contender(FileLock(lock_path), shared=True)
        assert reader.acquired.wait(timeout=5)
        reader.join()
        writer = Contender(FileLock(lock_path))
        assert not writer.acquired.wait(timeout=0.3)
        release(proc)
        assert writer.acquired.wait(timeout=5)
        writer.join()


def test_two_lock_objects_on_one_file_exclude_each_other_across_threads(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    with FileLock(lock_path).hold():
        contender = Contender(FileLock(lock_path))
        assert not contender.acquired.wait(timeout=0.3)
    assert contender.acquired.wait(timeout=5)
    contender.join()


def test_one_lock_object_excludes_a_second_thread(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    with lock.hold():
        contender = Contender(lock)
        assert not contender.acquired.wait(timeout=0.3)
    assert contender.acquired.wait(timeout=5)
    contender.join()


def test_the_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    with pytest.raises(RuntimeError), FileLock(lock_path).hold():
        raise RuntimeError("boom")
    fd = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError if still held
    finally:
        os.close(fd)


def test_the_lock_file_is_created_private_but_never_its_directory(tmp_path: Path) -> None:
    """A missing directory is not made again (a data directory moved while serve runs, R-9.1)."""
    lock_path = tmp_path / "data" / "mcp" / ".lock"
    with pytest.raises(FileNotFoundError), FileLock(lock_path).hold():
        pass
    assert not (tmp_path / "data").exists()
    lock_path.parent.mkdir(parents=True)
    with FileLock(lock_path).hold():
        assert mode_of(lock_path) == 0o600
