"""The redo journal and the start-up check (R-9.1): a crashed commit is completed by whoever comes next,
stray temps are removed, and a damaged journal or file stops everything without touching anything."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_center.config import Settings, parse_server_config
from mcp_center.errors import StorageError
from mcp_center.service import McpCenter
from mcp_center.store import OS_DISK, JsonStore, ServerRecord
from mcp_center.store.journal import JOURNAL_FILE, Journal
from mcp_center.store.sections import SCHEMA_VERSION, dump_section

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _record(version: int) -> ServerRecord:
    config = parse_server_config({"id": "files", "name": "Files", "transport": "stdio", "command": "npx"})
    return ServerRecord(config=config, version=version, created_at=T0, updated_at=T0)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _plant_journal(directory: Path, temps: dict[str, bytes], *, renamed: tuple[str, ...] = ()) -> None:
    """What a writer killed after its commit point leaves: temps (some already renamed) and the journal."""
    entries: list[dict[str, str | int]] = []
    for target, data in temps.items():
        temp = f".{target}.deadbeef.tmp"
        (directory / (target if target in renamed else temp)).write_bytes(data)
        entries.append({"file": target, "temp": temp, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    doc = {"schema_version": 1, "commit": "deadbeef", "files": entries}
    (directory / JOURNAL_FILE).write_text(json.dumps(doc))


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    directory = tmp_path / "mcp"
    with JsonStore(directory).transaction() as state:
        state.servers["files"] = _record(1)
        state.secrets["mcp.env.files.0123456789abcdef"] = "ciphertext-1"
    return directory


@pytest.mark.parametrize("renamed", [(), ("servers.json",)], ids=["before-any-rename", "after-one-rename"])
def test_a_commit_killed_after_its_commit_point_is_completed_by_the_next_reader(
    directory: Path, renamed: tuple[str, ...]
) -> None:
    servers = dump_section("servers", {"files": _record(2)})
    secrets = dump_section("secrets", {"mcp.env.files.0123456789abcdef": "ciphertext-2"})
    _plant_journal(directory, {"servers.json": servers, "secrets.json": secrets}, renamed=renamed)
    state = JsonStore(directory).read()
    assert state.servers["files"].version == 2
    assert state.secrets == {"mcp.env.files.0123456789abcdef": "ciphertext-2"}
    assert sorted(_files(directory)) == [".lock", "secrets.json", "servers.json"]  # no temp, no journal


def test_a_writer_completes_a_pending_journal_before_its_own_change(directory: Path) -> None:
    _plant_journal(directory, {"servers.json": dump_section("servers", {"files": _record(2)})})
    with JsonStore(directory).transaction() as state:
        assert state.servers["files"].version == 2
        state.servers["files"] = _record(3)
    assert JsonStore(directory).read().servers["files"].version == 3
    assert not (directory / JOURNAL_FILE).exists()


def test_open_removes_stray_temps_of_commits_that_never_reached_their_commit_point(directory: Path) -> None:
    (directory / ".servers.json.0a1b2c3d.tmp").write_bytes(b'{"half": ')
    (directory / ".secrets.json.k3j4h5g6.tmp").write_bytes(b"")  # an older mcp-center's mkstemp name
    (directory / ".journal.json.0a1b2c3d.tmp").write_bytes(b"{")
    before = {k: v for k, v in _files(directory).items() if not k.endswith(".tmp")}
    JsonStore(directory).open()
    assert _files(directory) == before


@pytest.mark.parametrize(
    ("journal", "fault"),
    [
        (b'{"schema_version": 1, "files": [', "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"schema_version": 2, "files": []}', "newer mcp-center"),
        (b'{"schema_version": 1, "files": [{"file": "../x", "temp": ".x.tmp", "sha256": "", "size": 0}]}', "malformed"),
    ],
)
def test_a_damaged_journal_stops_the_store_and_nothing_is_touched(directory: Path, journal: bytes, fault: str) -> None:
    (directory / JOURNAL_FILE).write_bytes(journal)
    (directory / ".servers.json.deadbeef.tmp").write_bytes(b"{}")
    before = _files(directory)
    for attempt in (JsonStore(directory).open, JsonStore(directory).read):
        with pytest.raises(StorageError) as caught:
            attempt()
        assert caught.value.details["file"] == str(directory / JOURNAL_FILE)
        assert fault in caught.value.details["fault"]
        assert str(directory / JOURNAL_FILE) in caught.value.message
    assert _files(directory) == before


def test_a_journal_whose_temp_does_not_match_its_checksum_is_refused(directory: Path) -> None:
    _plant_journal(directory, {"servers.json": dump_section("servers", {"files": _record(2)})})
    (directory / ".servers.json.deadbeef.tmp").write_bytes(b'{"schema_version": 1, "servers": []}\n')
    before = _files(directory)
    with pytest.raises(StorageError) as caught:
        JsonStore(directory).read()
    assert "checksum" in caught.value.details["fault"]
    assert _files(directory) == before


def test_the_journal_commits_nothing_it_does_not_name(tmp_path: Path) -> None:
    """A commit of one file leaves every other file as it was (same inode)."""
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "other.json").write_bytes(b"keep")
    inode = (directory / "other.json").stat().st_ino
    assert Journal(directory, OS_DISK).commit({"one.json": b"1"}) is True
    assert (directory / "one.json").read_bytes() == b"1"
    assert (directory / "other.json").stat().st_ino == inode
    assert sorted(p.name for p in directory.iterdir()) == ["one.json", "other.json"]


# ----- start-up (R-9.1: a damaged file stops serve, named, untouched) ------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "content", "fault"),
    [
        ("servers.json", b'{"schema_version": 1, "servers": [{"config": ', "truncated JSON"),
        ("secrets.json", b"\x00\x00\x00\x00", "not valid JSON"),
        ("gateway-tokens.json", b'{"schema_version": 7, "tokens": []}', "newer mcp-center (schema 7"),
        ("approvals.json", b'{"schema_version": 1, "approvals": {}}', "'approvals' is not a list"),
    ],
)
async def test_the_host_does_not_start_on_a_damaged_file_and_names_it(
    settings: Settings, name: str, content: bytes, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings.mcp_dir.mkdir(parents=True)
    path = settings.mcp_dir / name
    path.write_bytes(content)
    caplog.set_level(logging.ERROR)
    with pytest.raises(StorageError) as caught:
        async with McpCenter.open(settings):
            pytest.fail("the host started on a damaged file")
    assert caught.value.details["file"] == str(path)
    assert fault in caught.value.message
    assert str(path) in caught.value.message
    assert path.read_bytes() == content
    assert any(r.msg == "store.file_damaged" and getattr(r, "file", None) == str(path) for r in caplog.records)


def test_the_section_files_say_their_schema_version(directory: Path) -> None:
    for name in ("servers.json", "secrets.json"):
        assert json.loads((directory / name).read_bytes())["schema_version"] == SCHEMA_VERSION
