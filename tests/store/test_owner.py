"""One owner per data directory (R-9.2): `FileOwnerLock` against real processes.

Owners in other processes are real Python processes that claim the lock and wait on stdin; a
"killed serve" is one of them SIGKILLed. Reused pids are played by live unrelated processes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcp_center.errors import DatabaseRequired, DataDirInUse, StorageError
from mcp_center.store.owner import (
    DATABASE_FILE,
    LOCK_FILE,
    OWNER_FILE,
    DirIdentity,
    FileOwnerLock,
    ServeOwner,
    database_of,
    process_start_ticks,
)
from tests.support.processes import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

OWNER_SCRIPT = """
import subprocess, sys
from pathlib import Path
from mcp_center.store.owner import FileOwnerLock, ServeOwner
lock = FileOwnerLock(Path(sys.argv[1]))
lock.claim(ServeOwner.this_process())
lock.announce("http://127.0.0.1:1234")
child = 0
if "--child" in sys.argv:  # a server-like child that keeps every inheritable descriptor
    child = subprocess.Popen(["sleep", "600"], close_fds=False).pid
print("claimed", child, flush=True)
sys.stdin.read()
lock.release()
"""


@contextmanager
def owner_process(data_dir: Path, *flags: str) -> Generator[tuple[subprocess.Popen[str], int]]:
    """Another process that owns `data_dir` (and, with --child, started a child); yields (it, child pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(data_dir), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the owner process did not claim the lock within 30 s"
        words = proc.stdout.readline().split()
        assert words[0] == "claimed", words
        child = int(words[1])
        yield proc, child
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        if child and alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_claim_records_the_owner_and_another_claim_is_refused_naming_it(tmp_path: Path) -> None:
    first = FileOwnerLock(tmp_path)
    owner = ServeOwner.this_process()
    first.claim(owner)
    first.announce("http://127.0.0.1:8799/")
    record = json.loads((tmp_path / OWNER_FILE).read_text())
    assert (record["pid"], record["url"], record["instance"]) == (owner.pid, "http://127.0.0.1:8799", owner.instance)
    before = (tmp_path / OWNER_FILE).read_bytes()

    second = FileOwnerLock(tmp_path)  # flock locks are per open file: a second claim conflicts in-process too
    with pytest.raises(DataDirInUse) as refused:
        second.claim(ServeOwner.this_process())
    error = refused.value
    assert error.code == "SERVE_DATA_DIR_IN_USE"
    assert error.exit_code == 4
    assert error.details == {"data_dir": str(tmp_path), "pid": owner.pid, "url": "http://127.0.0.1:8799"}
    assert "\n" not in error.message
    assert str(owner.pid) in error.message and "http://127.0.0.1:8799" in error.message
    assert (tmp_path / OWNER_FILE).read_bytes() == before, "a refused claim writes nothing"
    assert second.current() == first.current()

    first.release()
    assert not (tmp_path / OWNER_FILE).exists()
    assert second.current() is None
    second.claim(ServeOwner.this_process())
    assert second.current() is not None
    second.release()


def test_release_never_removes_a_record_another_owner_wrote(tmp_path: Path) -> None:
    lock = FileOwnerLock(tmp_path)
    lock.claim(ServeOwner.this_process())
    other = ServeOwner(pid=1, url="http://127.0.0.1:1")  # someone else's record replaced ours (hand edit)
    (tmp_path / OWNER_FILE).write_bytes(other.to_json())
    lock.release()
    assert (tmp_path / OWNER_FILE).read_bytes() == other.to_json()
    lock.release()  # idempotent


def test_announce_needs_a_claim_and_a_lock_claims_once(tmp_path: Path) -> None:
    lock = FileOwnerLock(tmp_path)
    with pytest.raises(RuntimeError):
        lock.announce("http://127.0.0.1:1")
    lock.claim(ServeOwner.this_process())
    with pytest.raises(RuntimeError):
        lock.claim(ServeOwner.this_process())
    lock.release()


def test_an_owner_in_another_process_is_named_and_its_lock_is_taken_over_after_sigkill(tmp_path: Path) -> None:
    with owner_process(tmp_path) as (owner, _):
        lock = FileOwnerLock(tmp_path)
        seen = lock.current()
        assert seen is not None and (seen.pid, seen.url) == (owner.pid, "http://127.0.0.1:1234")
        with pytest.raises(DataDirInUse) as refused:
            lock.claim(ServeOwner.this_process())
        assert (refused.value.details["pid"], refused.value.details["url"]) == (owner.pid, "http://127.0.0.1:1234")
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        # The dead owner's record is still there but names nobody; its lock went with it.
        assert json.loads((tmp_path / OWNER_FILE).read_text())["pid"] == owner.pid
        assert lock.current() is None
        lock.claim(ServeOwner.this_process())
        assert json.loads((tmp_path / OWNER_FILE).read_text())["pid"] == ServeOwner.this_process().pid
        lock.release()


def test_a_child_of_a_killed_owner_does_not_keep_its_lock(tmp_path: Path) -> None:
    """The lock descriptor is close-on-exec: a server process that outlives serve holds no lock."""
    with owner_process(tmp_path, "--child") as (owner, child):
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert alive(child)
        lock = FileOwnerLock(tmp_path)
        lock.claim(ServeOwner.this_process())
        lock.release()


def test_a_record_whose_pid_now_belongs_to_another_program_names_no_owner(tmp_path: Path) -> None:
    unrelated = subprocess.Popen(["sleep", "600"])
    try:
        ticks = process_start_ticks(unrelated.pid)
        assert ticks is not None
        here = DirIdentity.of(tmp_path)
        reused = ServeOwner(pid=unrelated.pid, url="http://127.0.0.1:1", start_ticks=ticks - 1, directory=here)
        (tmp_path / OWNER_FILE).write_bytes(reused.to_json())
        assert FileOwnerLock(tmp_path).current() is None
        same = ServeOwner(pid=unrelated.pid, url="http://127.0.0.1:1", start_ticks=ticks, directory=here)
        (tmp_path / OWNER_FILE).write_bytes(same.to_json())
        assert FileOwnerLock(tmp_path).current() == same
    finally:
        unrelated.kill()
        unrelated.wait()


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b"[]", b'{"pid": true}', b'{"pid": -4}', b'{"pid": "12"}'],
)
def test_a_torn_or_foreign_record_names_no_owner_and_is_replaced_by_a_claim(tmp_path: Path, content: bytes) -> None:
    (tmp_path / OWNER_FILE).write_bytes(content)
    lock = FileOwnerLock(tmp_path)
    assert lock.current() is None
    lock.claim(ServeOwner.this_process())
    assert json.loads((tmp_path / OWNER_FILE).read_text())["pid"] == ServeOwner.this_process().pid
    lock.release()


def test_a_refused_claim_on_a_lock_held_without_a_record_says_another_process(tmp_path: Path) -> None:
    """A lock holder that never wrote a record (or a foreign one): named as well as we can, after a bounded wait."""
    import fcntl

    fd = os.open(tmp_path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(DataDirInUse) as refused:
            FileOwnerLock(tmp_path).claim(ServeOwner.this_process())
        assert refused.value.details == {"data_dir": str(tmp_path), "pid": None, "url": None}
        assert "another process" in refused.value.message
    finally:
        os.close(fd)


def test_the_record_keeps_the_public_url_the_listen_address_and_the_database(tmp_path: Path) -> None:
    """`url` is for users and remote clients, `local_url` for this machine's CLI, `database` (no
    password) says the state is not in the directory's files; a record of an older mcp-center
    (no `local_url`) is reached at its `url` (R-9.2, R-10.1)."""
    lock = FileOwnerLock(tmp_path)
    lock.claim(ServeOwner.this_process(database="postgresql://mcp:***@db/center"))
    try:
        lock.announce("https://mcp.example.com/", local_url="http://127.0.0.1:8801/")
        record = json.loads((tmp_path / OWNER_FILE).read_text())
        assert (record["url"], record["local_url"], record["database"]) == (
            "https://mcp.example.com",
            "http://127.0.0.1:8801",
            "postgresql://mcp:***@db/center",
        )
        read = FileOwnerLock(tmp_path).current()
        assert read is not None
        assert (read.address, read.database) == ("http://127.0.0.1:8801", "postgresql://mcp:***@db/center")
    finally:
        lock.release()
    older = ServeOwner.from_json(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9999"}).encode())
    assert older is not None
    assert (older.address, older.local_url, older.database) == ("http://127.0.0.1:9999", None, None)
    foreign = ServeOwner.from_json(json.dumps({"pid": 1, "local_url": "file:///etc", "database": 7}).encode())
    assert foreign is not None
    assert (foreign.address, foreign.database) == (None, None)


def test_the_database_mark_is_whole_before_the_record_announces_the_url(tmp_path: Path) -> None:
    """Whoever sees a database-backed serve's URL in serve.json finds database.json already whole:
    the mark is written first, so a mark that cannot be written leaves the record without a URL and
    announce fails (a CLI once listed the directory between the two writes and saw the mark's temp
    file; R-9.2, R-10.1)."""
    (tmp_path / DATABASE_FILE).mkdir()  # the mark cannot be replaced
    lock = FileOwnerLock(tmp_path)
    lock.claim(ServeOwner.this_process(database="postgresql://mcp:***@db/center"))
    try:
        with pytest.raises(StorageError):
            lock.announce("http://127.0.0.1:8801")
        record = json.loads((tmp_path / OWNER_FILE).read_text())
        assert record["pid"] == os.getpid() and record.get("url") is None
    finally:
        lock.release()


def test_a_database_backed_owner_marks_the_directory_and_a_file_backed_claim_is_refused_after_it(
    tmp_path: Path,
) -> None:
    """A database-backed serve's directory stays marked after it stopped: a serve started there without
    the database would begin a second, empty state beside the real one. The refusal names the database
    (no password) and the file to delete to go back to the directory's own files (R-9.2, R-10.1)."""
    display = "postgresql://mcp:***@db/center"
    assert database_of(tmp_path) is None
    never_listened = FileOwnerLock(tmp_path)  # its database was down, or its URL mistyped
    never_listened.claim(ServeOwner.this_process(database=display))
    never_listened.release()
    assert database_of(tmp_path) is None
    lock = FileOwnerLock(tmp_path)
    lock.claim(ServeOwner.this_process(database=display))
    lock.announce("http://127.0.0.1:8801")
    lock.release()
    assert database_of(tmp_path) == display
    before = sorted(path.name for path in tmp_path.iterdir())
    with pytest.raises(DatabaseRequired) as refused:
        FileOwnerLock(tmp_path).claim(ServeOwner.this_process())
    assert display in refused.value.message and str(tmp_path / DATABASE_FILE) in refused.value.message
    assert refused.value.details == {"data_dir": str(tmp_path), "pid": None, "database": display}
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # no record written
    again = FileOwnerLock(tmp_path)
    again.claim(ServeOwner.this_process(database="postgresql://mcp:***@other/center"))  # another database
    again.announce("http://127.0.0.1:8801")
    again.release()
    assert database_of(tmp_path) == "postgresql://mcp:***@other/center"
    marker = tmp_path / DATABASE_FILE
    unreadable = f"(unreadable {DATABASE_FILE})"  # still refuses, and names the file
    marker.write_bytes(b"\x00not json")
    assert database_of(tmp_path) == unreadable
    marker.write_text(json.dumps({"database": "x" * 5_000}))  # never printed whole
    assert database_of(tmp_path) == unreadable
    marker.unlink()
    os.mkfifo(marker)  # never opened: reading a FIFO would wait for a writer forever
    assert database_of(tmp_path) == unreadable
    marker.unlink()
    marker.symlink_to("/dev/zero")  # never read: it has no end
    assert database_of(tmp_path) == unreadable
    marker.unlink()
    marker.mkdir()
    assert database_of(tmp_path) == unreadable
    marker.rmdir()
    files = FileOwnerLock(tmp_path)
    files.claim(ServeOwner.this_process())  # the user gave the directory back to its files
    files.release()


def test_a_copy_of_an_owned_directory_names_no_owner_and_can_be_claimed(tmp_path: Path) -> None:
    """`cp -a` while the owner runs copies its record (a live pid): the copy is not that owner's
    directory (another inode), so no reader of the copy takes it for its serve (issue 16)."""
    data, copy = tmp_path / "data", tmp_path / "copy"
    with owner_process(data) as (proc, _):
        subprocess.run(["cp", "-a", str(data), str(copy)], check=True)
        record = json.loads((copy / OWNER_FILE).read_text())
        info = os.stat(data)
        assert record["pid"] == proc.pid
        assert record["directory"] == {"path": str(data.resolve()), "device": info.st_dev, "inode": info.st_ino}
        owner = FileOwnerLock(data).current()
        assert owner is not None and owner.pid == proc.pid
        assert FileOwnerLock(copy).current() is None
        lock = FileOwnerLock(copy)
        lock.claim(ServeOwner.this_process())  # a serve of the copy may start
        try:
            assert FileOwnerLock(copy).current() == lock.current()
            assert FileOwnerLock(data).current() == owner
        finally:
            lock.release()
    # A record that names no valid directory is not trusted (issue 16, F5): an older mcp-center's
    # (missing), one written when the identity could not be read (null), or a hand-edited one.
    live = {"pid": os.getpid(), "url": "http://127.0.0.1:9999", "started_at": "2026-01-02T03:04:05+00:00"}
    for directory in (_MISSING, None, {"path": str(copy)}, {"path": "", "device": 1, "inode": 2}, "copy"):
        record = live if directory is _MISSING else {**live, "directory": directory}
        (copy / OWNER_FILE).write_text(json.dumps(record))
        assert FileOwnerLock(copy).current() is None, directory
    info = os.stat(copy)
    named = {"path": str(copy.resolve()), "device": info.st_dev, "inode": info.st_ino}
    (copy / OWNER_FILE).write_text(json.dumps({**live, "directory": named}))
    trusted = FileOwnerLock(copy).current()
    assert trusted is not None and (trusted.pid, trusted.address) == (os.getpid(), "http://127.0.0.1:9999")


_MISSING = object()


def test_a_claim_that_cannot_read_the_directory_identity_writes_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim wrote `"directory": null` when `DirIdentity.of` failed; no reader trusts such a
    record now, so the claim is refused instead and the lock is free again (issue 16, F5)."""

    def unreadable(cls: type[DirIdentity], directory: Path) -> DirIdentity | None:
        del cls, directory
        return None

    monkeypatch.setattr(DirIdentity, "of", classmethod(unreadable))
    with pytest.raises(StorageError) as refused:
        FileOwnerLock(tmp_path).claim(ServeOwner.this_process())
    assert refused.value.details == {"data_dir": str(tmp_path)}
    assert not (tmp_path / OWNER_FILE).exists()
    monkeypatch.undo()
    lock = FileOwnerLock(tmp_path)
    lock.claim(ServeOwner.this_process())
    lock.release()
