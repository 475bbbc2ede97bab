"""Fault injection at the store's disk seam (R-9.1, R-7.3): ENOSPC and EIO on every primitive call of a
commit that changes all five sections at once. Each fault leaves either the old state (the commit was
refused with a StorageError naming the file) or the whole new one (the commit was acknowledged and a
reader completes it) — never a mix, never a temp file after the next start."""

from __future__ import annotations

import errno
import logging
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_center.config import parse_server_config
from mcp_center.errors import StorageError
from mcp_center.store import (
    FILES,
    ApprovalRecord,
    GatewayTokenRecord,
    InteractionRecord,
    JsonStore,
    ServerRecord,
    StoreState,
)
from mcp_center.store.journal import JOURNAL_FILE
from tests.support.faulty_disk import FaultyDisk, Op

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SECRET_ID = "mcp.env.files.0123456789abcdef"


def _record(version: int) -> ServerRecord:
    config = parse_server_config(
        {
            "id": "files",
            "name": "Files",
            "transport": "stdio",
            "command": "npx",
            "env": {"GENERATION": str(version)},
            "secret_env": ["TOKEN"],
        }
    )
    return ServerRecord(config=config, version=version, created_at=T0, updated_at=T0)


def _seed(directory: Path) -> StoreState:
    """The old state: one server, its secret, one of everything else."""
    with JsonStore(directory).transaction() as state:
        state.servers["files"] = _record(1)
        state.secrets[SECRET_ID] = "ciphertext-1"
        state.gateway_tokens["t1"] = GatewayTokenRecord(id="t1", name="one", sha256="a" * 64, created_at=T0.isoformat())
    return JsonStore(directory).read()


def _change(store: JsonStore) -> None:
    """One change across all five sections: config + its secret, a token, a card, an approval."""
    with store.transaction() as state:
        state.servers["files"] = _record(2)
        state.secrets[SECRET_ID] = "ciphertext-2"
        state.gateway_tokens["t2"] = GatewayTokenRecord(id="t2", name="two", sha256="b" * 64, created_at=T0.isoformat())
        state.interactions["c1"] = InteractionRecord(
            id="c1", server_id="files", host_instance="run", message="Q", created_at=T0, expires_at=T0
        )
        state.approvals["a1"] = ApprovalRecord(
            id="a1",
            tool="mcp__files__rm",
            server_id="files",
            server_tool="rm",
            operation_id="op",
            host_instance="run",
            created_at=T0,
            expires_at=T0 + timedelta(minutes=10),
        )


def _ops_of_one_commit(tmp_path: Path) -> tuple[list[Op], StoreState]:
    directory = tmp_path / "dry-run"
    _seed(directory)
    disk = FaultyDisk()
    store = JsonStore(directory, disk=disk)
    disk.arm(None, 0)
    _change(store)
    return list(disk.ops), JsonStore(directory).read()


def test_a_commit_writes_temps_then_the_journal_then_renames(tmp_path: Path) -> None:
    """The order the fault test relies on (store/journal.py): the journal rename is the commit point."""
    ops, _new = _ops_of_one_commit(tmp_path)
    kinds = [op.kind for op in ops]
    journal_at = ops.index(Op("replace", JOURNAL_FILE))
    assert kinds[:journal_at] == ["create", "write", "fsync"] * 6  # five sections, then the journal
    assert all(op.name.endswith(".tmp") for op in ops[:journal_at])
    assert ops[journal_at + 1].kind == "fsync"  # the directory: the commit is durable
    renamed = [op.name for op in ops[journal_at + 2 :] if op.kind == "replace"]
    assert sorted(renamed) == sorted(FILES.values())
    assert ops[-2:] == [Op("unlink", JOURNAL_FILE), Op("fsync", ops[-1].name)]


@pytest.mark.parametrize("fault", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_a_fault_on_any_call_of_a_commit_leaves_the_old_state_or_all_of_the_new_one(
    tmp_path: Path, fault: int, caplog: pytest.LogCaptureFixture
) -> None:
    ops, new = _ops_of_one_commit(tmp_path)
    commit_point = ops.index(Op("replace", JOURNAL_FILE)) + 1  # and its directory fsync (1-based: +1)
    refused = acknowledged = 0
    for n in range(1, len(ops) + 1):
        directory = tmp_path / f"fail-{n}"
        old = _seed(directory)
        disk = FaultyDisk()
        store = JsonStore(directory, disk=disk)
        disk.arm(n, fault)
        caplog.clear()
        try:
            _change(store)
        except StorageError as exc:
            refused += 1
            assert n <= commit_point + 1, f"call {n} ({disk.failed}) came after the commit point but was refused"
            named = Path(exc.details["file"])
            assert named.parent == directory
            assert named.name in {*FILES.values(), JOURNAL_FILE}, exc.details
            assert exc.details["errno"] == fault
            assert str(named) in exc.message
            assert any(r.msg == "store.io_failed" and getattr(r, "file", None) == str(named) for r in caplog.records)
            assert JsonStore(directory).read() == old, f"call {n} ({disk.failed}) left part of a refused change"
            assert store.read() == old
        else:
            acknowledged += 1
            assert n > commit_point + 1, f"call {n} ({disk.failed}) failed before the commit point but was acknowledged"
            assert JsonStore(directory).read() == new, f"call {n} ({disk.failed}): an acknowledged change is missing"
            assert store.read() == new
        JsonStore(directory).open()
        assert [p.name for p in directory.iterdir() if p.name.endswith(".tmp") or p.name == JOURNAL_FILE] == []
    assert refused == commit_point + 1
    assert acknowledged == len(ops) - refused


def test_a_commit_failing_before_its_commit_point_keeps_every_file_byte_for_byte(tmp_path: Path) -> None:
    directory = tmp_path / "mcp"
    _seed(directory)
    before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    disk = FaultyDisk()
    store = JsonStore(directory, disk=disk)
    disk.arm(len([*FILES]) * 3 + 2, errno.ENOSPC)  # the write of the journal itself
    with pytest.raises(StorageError) as caught:
        _change(store)
    assert Path(caught.value.details["file"]).name == JOURNAL_FILE
    assert {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()} == before


def test_a_reader_completes_a_commit_whose_renames_failed_after_the_commit_point(tmp_path: Path) -> None:
    directory = tmp_path / "mcp"
    _seed(directory)
    ops, new = _ops_of_one_commit(tmp_path)
    disk = FaultyDisk()
    writer = JsonStore(directory, disk=disk)
    disk.arm(ops.index(Op("replace", JOURNAL_FILE)) + 3, errno.EIO)  # the first rename over a target
    _change(writer)  # acknowledged: the journal holds the change
    assert disk.failed is not None
    assert disk.failed.kind == "replace"
    assert (directory / JOURNAL_FILE).exists()
    other = JsonStore(directory)  # another process: its cheap check sees the pending journal
    assert other.read() == new
    assert not (directory / JOURNAL_FILE).exists()
    assert writer.read_if_fresh() is None or writer.read_if_fresh() == new


def test_a_storage_error_is_logged_with_the_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "mcp"
    _seed(directory)
    disk = FaultyDisk()
    store = JsonStore(directory, disk=disk)
    disk.arm(2, errno.EIO)  # writing the first temp
    caplog.set_level(logging.ERROR)
    with pytest.raises(StorageError) as caught:
        _change(store)
    [record] = [r for r in caplog.records if r.msg == "store.io_failed"]
    assert getattr(record, "file", None) == caught.value.details["file"]
    assert getattr(record, "errno", None) == errno.EIO


def test_a_copy_of_a_data_directory_mid_commit_opens_to_one_state(tmp_path: Path) -> None:
    """A backup copied while a journal was pending is completed on open, like the original."""
    directory = tmp_path / "mcp"
    _seed(directory)
    ops, new = _ops_of_one_commit(tmp_path)
    disk = FaultyDisk()
    disk.arm(ops.index(Op("replace", JOURNAL_FILE)) + 3, errno.EIO)
    _change(JsonStore(directory, disk=disk))
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    store = JsonStore(copy)
    store.open()
    assert store.read() == new
