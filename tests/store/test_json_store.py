"""Unit tests for the JSON file store: transactions, schema version, failures, orphans (R-1.2, R-1.5)."""

from __future__ import annotations

import json
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcp_center.config import parse_server_config
from mcp_center.errors import StorageError
from mcp_center.secrets import SecretKind, secret_id
from mcp_center.store import SCHEMA_VERSION, JsonStore, ServerRecord, StoreState, TestError, TestResult

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
CIPHERTEXT = "v1.c2VhbGVkLWJ5dGVzLW9ubHk"


def stdio_record(server_id: str = "files", version: int = 1) -> ServerRecord:
    config = parse_server_config(
        {
            "id": server_id,
            "name": f"Server {server_id}",
            "transport": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
            "env": {"MODE": "ro"},
            "secret_env": ["GITHUB_TOKEN"],
        }
    )
    return ServerRecord(config=config, version=version, created_at=NOW, updated_at=NOW)


def remote_record(server_id: str = "remote") -> ServerRecord:
    config = parse_server_config(
        {
            "id": server_id,
            "name": "Remote",
            "transport": "streamable_http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"X-Tenant": "acme"},
            "secret_headers": ["X-Api-Key"],
            "auth": {"kind": "oauth", "scopes": ["read"]},
        }
    )
    tested_at = NOW + timedelta(minutes=5)
    return ServerRecord(
        config=config,
        version=3,
        created_at=NOW,
        updated_at=tested_at,
        enabled=True,
        trusted_digest="sha256:abc",
        last_test=TestResult(
            ok=False,
            digest="sha256:abc",
            tested_at=tested_at,
            elapsed_ms=120,
            error=TestError(code="MCP_SERVER_UNREACHABLE", reason="refused", message="connection refused"),
        ),
    )


@pytest.fixture
def store(tmp_path: Path) -> JsonStore:
    return JsonStore(tmp_path / "mcp")


def servers_file(store: JsonStore) -> Path:
    return store.directory / "servers.json"


def secrets_file(store: JsonStore) -> Path:
    return store.directory / "secrets.json"


def put(store: JsonStore, *records: ServerRecord, secrets: dict[str, str] | None = None) -> None:
    with store.transaction() as state:
        for record in records:
            state.servers[record.id] = record
        state.secrets.update(secrets or {})


def write_doc(path: Path, doc: Any) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(doc).encode()
    path.write_bytes(raw)
    return raw


def refused_read(store: JsonStore) -> StorageError:
    with pytest.raises(StorageError) as caught:
        store.read()
    assert caught.value.code == "STORAGE_ERROR"
    return caught.value


# ----- transactions -----------------------------------------------------------------------------


def test_an_empty_store_reads_as_no_servers_and_no_secrets(store: JsonStore) -> None:
    state = store.read()
    assert state.servers == {}
    assert state.secrets == {}
    assert store.stamp() == store.stamp("servers", "secrets", "gateway_tokens", "interactions", "approvals")


def test_a_transaction_that_succeeds_is_committed_and_reads_back_equal(store: JsonStore) -> None:
    files, remote = stdio_record(), remote_record()
    sid = secret_id(SecretKind.ENV, "files", "GITHUB_TOKEN")
    put(store, files, remote, secrets={sid: CIPHERTEXT})
    for reader in (store, JsonStore(store.directory)):
        state = reader.read()
        assert state.servers == {"files": files, "remote": remote}
        assert state.secrets == {sid: CIPHERTEXT}
    loaded = JsonStore(store.directory).read().servers["remote"]
    assert loaded.created_at.tzinfo is not None
    assert loaded.last_test == remote.last_test


def test_a_transaction_whose_block_raises_writes_nothing(store: JsonStore) -> None:
    with pytest.raises(RuntimeError), store.transaction() as state:
        state.servers["files"] = stdio_record()
        state.secrets["mcp.env.files.0123456789abcdef"] = CIPHERTEXT
        raise RuntimeError("validation failed halfway")
    assert not servers_file(store).exists()
    assert not secrets_file(store).exists()
    assert store.read() == StoreState()


def test_a_failed_transaction_leaves_existing_files_byte_for_byte(store: JsonStore) -> None:
    put(store, stdio_record(), secrets={"mcp.env.files.0123456789abcdef": CIPHERTEXT})
    before = (servers_file(store).read_bytes(), secrets_file(store).read_bytes())
    with pytest.raises(RuntimeError), store.transaction() as state:
        del state.servers["files"]
        state.secrets.clear()
        raise RuntimeError("abort")
    assert (servers_file(store).read_bytes(), secrets_file(store).read_bytes()) == before


def test_a_transaction_that_changes_nothing_rewrites_nothing(store: JsonStore) -> None:
    put(store, stdio_record())
    stamp = store.stamp()
    with store.transaction() as state:
        assert "files" in state.servers
    assert store.stamp() == stamp
    assert not secrets_file(store).exists()


def test_a_snapshot_from_read_is_private_to_the_caller(store: JsonStore) -> None:
    put(store, stdio_record())
    snapshot = store.read()
    snapshot.servers.clear()
    snapshot.secrets["x"] = "y"
    assert list(store.read().servers) == ["files"]
    assert store.read().secrets == {}


def test_both_files_carry_the_schema_version_and_are_private(store: JsonStore) -> None:
    put(store, stdio_record(), secrets={"mcp.env.files.0123456789abcdef": CIPHERTEXT})
    for path in (servers_file(store), secrets_file(store)):
        assert json.loads(path.read_bytes())["schema_version"] == SCHEMA_VERSION
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) & 0o077 == 0


def test_servers_are_written_sorted_by_id_as_json_records(store: JsonStore) -> None:
    put(store, stdio_record("zeta"), stdio_record("alpha"), remote_record("mid"))
    doc = json.loads(servers_file(store).read_bytes())
    assert [entry["config"]["id"] for entry in doc["servers"]] == ["alpha", "mid", "zeta"]
    assert doc["servers"][0]["version"] == 1


def test_the_secrets_file_holds_only_what_was_put_and_servers_json_holds_no_ciphertext(store: JsonStore) -> None:
    secrets = {
        secret_id(SecretKind.ENV, "files", "GITHUB_TOKEN"): CIPHERTEXT,
        secret_id(SecretKind.HEADER, "remote", "X-Api-Key"): "v1.b3RoZXItY2lwaGVydGV4dA",
    }
    put(store, stdio_record(), remote_record(), secrets=secrets)
    assert json.loads(secrets_file(store).read_bytes()) == {"schema_version": SCHEMA_VERSION, "secrets": secrets}
    servers_text = servers_file(store).read_text()
    for ciphertext in secrets.values():
        assert ciphertext not in servers_text


def test_stamp_changes_after_each_write_of_servers(store: JsonStore) -> None:
    put(store, stdio_record())
    first = store.stamp()
    assert first is not None
    put(store, stdio_record(version=2))
    second = store.stamp()
    assert second is not None
    assert second != first
    put(store, remote_record())
    assert store.stamp() not in {first, second}


# ----- bad files --------------------------------------------------------------------------------


def test_a_servers_file_from_a_newer_schema_is_refused_and_kept(store: JsonStore) -> None:
    raw = write_doc(servers_file(store), {"schema_version": SCHEMA_VERSION + 1, "servers": []})
    error = refused_read(store)
    assert "servers.json" in error.message
    with pytest.raises(StorageError), store.transaction() as state:
        state.servers["files"] = stdio_record()
    assert servers_file(store).read_bytes() == raw


def test_a_secrets_file_from_a_newer_schema_is_refused(store: JsonStore) -> None:
    write_doc(secrets_file(store), {"schema_version": SCHEMA_VERSION + 1, "secrets": {}})
    assert "secrets.json" in refused_read(store).message


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"schema_version": 1, "servers": [', id="truncated"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\xff\xfe not utf-8", id="not-utf8"),
        pytest.param(b"nonsense", id="not-json"),
    ],
)
def test_a_servers_file_that_is_not_json_is_refused_and_not_overwritten(store: JsonStore, raw: bytes) -> None:
    servers_file(store).parent.mkdir(parents=True)
    servers_file(store).write_bytes(raw)
    error = refused_read(store)
    assert "servers.json" in error.message
    with pytest.raises(StorageError), store.transaction() as state:
        state.servers["files"] = stdio_record()
    assert servers_file(store).read_bytes() == raw


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param([], id="not-an-object"),
        pytest.param({"servers": []}, id="no-schema-version"),
        pytest.param({"schema_version": 0, "servers": []}, id="schema-version-zero"),
        pytest.param({"schema_version": "1", "servers": []}, id="schema-version-string"),
        pytest.param({"schema_version": True, "servers": []}, id="schema-version-bool"),
        pytest.param({"schema_version": 1, "servers": {}}, id="servers-not-a-list"),
    ],
)
def test_a_malformed_servers_file_is_refused(store: JsonStore, doc: Any) -> None:
    write_doc(servers_file(store), doc)
    assert "servers.json" in refused_read(store).message


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"schema_version": 1, "secrets": []}, id="secrets-not-a-map"),
        pytest.param({"schema_version": 1, "secrets": {"a": 1}}, id="value-not-a-string"),
        pytest.param({"secrets": {}}, id="no-schema-version"),
    ],
)
def test_a_malformed_secrets_file_is_refused(store: JsonStore, doc: Any) -> None:
    write_doc(secrets_file(store), doc)
    assert "secrets.json" in refused_read(store).message


def test_an_invalid_server_entry_is_refused_with_its_index_and_the_file_is_kept(store: JsonStore) -> None:
    good = stdio_record().model_dump(mode="json")
    bad = stdio_record("bad").model_dump(mode="json")
    bad["version"] = 0
    raw = write_doc(servers_file(store), {"schema_version": SCHEMA_VERSION, "servers": [good, bad]})
    error = refused_read(store)
    assert error.details["entry"] == 1
    assert "servers.json" in error.message
    with pytest.raises(StorageError), store.transaction() as state:
        state.servers.clear()
    assert servers_file(store).read_bytes() == raw


def test_two_entries_with_one_server_id_are_refused_rather_than_one_dropped(store: JsonStore) -> None:
    first = stdio_record(version=1).model_dump(mode="json")
    second = stdio_record(version=2).model_dump(mode="json")
    write_doc(servers_file(store), {"schema_version": SCHEMA_VERSION, "servers": [first, second]})
    error = refused_read(store)
    assert error.details["entry"] == 1
    assert error.details["server_id"] == "files"


def test_a_storage_error_does_not_quote_secret_file_contents(store: JsonStore) -> None:
    secrets_file(store).parent.mkdir(parents=True)
    secrets_file(store).write_bytes(b'{"schema_version": 1, "secrets": {"x": "' + CIPHERTEXT.encode() + b'"')
    error = refused_read(store)
    assert CIPHERTEXT not in str(error)
    assert CIPHERTEXT not in json.dumps(error.to_dict())


# ----- orphans ----------------------------------------------------------------------------------


def test_orphaned_secrets_are_only_ciphertexts_of_deleted_servers(store: JsonStore) -> None:
    kept = {
        secret_id(SecretKind.ENV, "files", "GITHUB_TOKEN"): "v1.a2VwdC0x",
        secret_id(SecretKind.HEADER, "files-2", "X-Api-Key"): "v1.a2VwdC0y",
        secret_id(SecretKind.BEARER, "files-2", "token"): "v1.a2VwdC0z",
    }
    orphaned = {
        secret_id(SecretKind.ENV, "file", "GITHUB_TOKEN"): "v1.b3JwaGFuLTE",
        secret_id(SecretKind.OAUTH, "gone", "refresh_token"): "v1.b3JwaGFuLTI",
    }
    put(store, stdio_record("files"), stdio_record("files-2"), stdio_record("gone"), secrets=kept | orphaned)
    with store.transaction() as state:
        del state.servers["gone"]
        assert sorted(state.orphaned_secrets()) == sorted(orphaned)
        for sid in state.orphaned_secrets():
            del state.secrets[sid]
    assert store.read().secrets == kept
    assert json.loads(secrets_file(store).read_bytes())["secrets"] == kept
    assert store.read().orphaned_secrets() == []


def test_secret_ids_of_lists_only_that_servers_ciphertexts() -> None:
    mine = [secret_id(kind, "files", "K") for kind in SecretKind]
    state = StoreState(secrets=dict.fromkeys([*mine, secret_id(SecretKind.ENV, "files-2", "K")], CIPHERTEXT))
    assert sorted(state.secret_ids_of("files")) == sorted(mine)
    assert state.secret_ids_of("nobody") == []


# ----- concurrency ------------------------------------------------------------------------------


@pytest.mark.parametrize("shared_instance", [True, False], ids=["one-store-object", "store-object-per-thread"])
def test_concurrent_read_modify_write_transactions_lose_no_update(tmp_path: Path, shared_instance: bool) -> None:
    directory = tmp_path / "mcp"
    put(JsonStore(directory), stdio_record(version=1))
    shared = JsonStore(directory)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def increment_50_times() -> None:
        store = shared if shared_instance else JsonStore(directory)
        try:
            start.wait(timeout=5)
            for _ in range(50):
                with store.transaction() as state:
                    record = state.servers["files"]
                    state.servers["files"] = record.model_copy(update={"version": record.version + 1})
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            errors.append(exc)

    workers = [threading.Thread(target=increment_50_times) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    assert errors == []
    assert JsonStore(directory).read().servers["files"].version == 1 + 100


def test_a_reader_never_sees_a_torn_file_while_a_writer_commits(tmp_path: Path) -> None:
    directory = tmp_path / "mcp"
    put(JsonStore(directory), stdio_record(version=1))
    done = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def read_until_done() -> None:
        reader = JsonStore(directory)
        try:
            while not done.is_set():
                seen.append(reader.read().servers["files"].version)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            errors.append(exc)

    thread = threading.Thread(target=read_until_done)
    thread.start()
    writer = JsonStore(directory)
    try:
        for version in range(2, 32):
            put(writer, stdio_record(version=version))
    finally:
        done.set()
        thread.join(timeout=10)
    assert errors == []
    assert seen == sorted(seen)
    assert JsonStore(directory).read().servers["files"].version == 31


def test_a_store_whose_directory_was_moved_fails_and_never_makes_the_old_path_again(tmp_path: Path) -> None:
    """`mv d1 d2` between two operations of an opened store (R-9.1): every read and write fails with
    STORAGE_ERROR naming the move, nothing is created at d1, and d2 keeps the state unchanged."""
    store = JsonStore(tmp_path / "d1" / "mcp")
    store.open()
    put(store, stdio_record(version=1))
    (tmp_path / "d1").rename(tmp_path / "d2")

    with pytest.raises(StorageError) as read_error:
        store.read()
    assert read_error.value.details["fault"] == "directory_moved"
    assert "was moved or removed while serve runs" in str(read_error.value)
    with pytest.raises(StorageError) as write_error:
        put(store, stdio_record("other"))
    assert write_error.value.details["fault"] == "directory_moved"
    assert not (tmp_path / "d1").exists()
    assert set(JsonStore(tmp_path / "d2" / "mcp").read().servers) == {"files"}

    # Moved back: the same directory again, the store works on.
    (tmp_path / "d2").rename(tmp_path / "d1")
    put(store, stdio_record("other"))
    assert set(store.read().servers) == {"files", "other"}


def test_a_store_whose_directory_was_replaced_refuses_the_new_one(tmp_path: Path) -> None:
    """Another directory put at the opened path (another inode) is not read as this store's state."""
    store = JsonStore(tmp_path / "d1" / "mcp")
    store.open()
    put(store, stdio_record(version=1))
    (tmp_path / "d1").rename(tmp_path / "d2")
    (tmp_path / "d1" / "mcp").mkdir(parents=True)

    with pytest.raises(StorageError) as caught:
        put(store, stdio_record("other"))
    assert caught.value.details["fault"] == "directory_moved"
    assert list((tmp_path / "d1" / "mcp").iterdir()) == []


@pytest.mark.anyio
async def test_the_store_locks_do_not_make_a_moved_directory_again(tmp_path: Path) -> None:
    """The keyed locks (`.locks`) of a store whose directory was moved fail with STORAGE_ERROR."""
    store = JsonStore(tmp_path / "d1" / "mcp")
    store.open()
    (tmp_path / "d1").rename(tmp_path / "d2")
    with pytest.raises(StorageError):
        async with store.lock("refresh:o"):
            pass
    assert not (tmp_path / "d1").exists()
