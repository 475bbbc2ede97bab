"""The file-backed store: `<data>/mcp/servers.json` and `<data>/mcp/secrets.json` (R-1.2, R-1.5).

servers.json holds plain configuration only; secrets.json holds ciphertexts keyed by internal id
(never plaintext — the cipher is in `mcp_center.secrets`, this module never sees a key). Both are
written with `atomic_write` under one `FileLock`, so a transaction that changes a server and its
secrets is serialized against every other process and never leaves a torn file. Within a
transaction the ciphertext file is written before servers.json: a crash in between can leave an
orphaned ciphertext (removed by `collect_orphans`), never a server that points at a missing one
it just added.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from mcp_center.config import parse_server_config
from mcp_center.errors import ConfigInvalid, StorageError
from mcp_center.secrets import server_prefix
from mcp_center.store.files import FileLock, atomic_write
from mcp_center.store.records import ServerRecord

__all__ = ["SCHEMA_VERSION", "JsonStore", "Store", "StoreState"]

SCHEMA_VERSION = 1
SERVERS_FILE = "servers.json"
SECRETS_FILE = "secrets.json"
LOCK_FILE = ".lock"


@dataclass
class StoreState:
    """A consistent view of the store; mutable inside a transaction, a private copy otherwise."""

    servers: dict[str, ServerRecord] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    """Internal secret id → ciphertext (`SecretCipher.seal` output)."""

    def copy(self) -> StoreState:
        """A shallow copy (records are frozen, so sharing them is safe)."""
        return StoreState(dict(self.servers), dict(self.secrets))

    def secret_ids_of(self, server_id: str) -> list[str]:
        """Internal ids of every ciphertext belonging to `server_id`."""
        prefixes = server_prefix(server_id)
        return [sid for sid in self.secrets if sid.startswith(prefixes)]


class Store(Protocol):
    """Persistence seam: a database-backed store for multi-instance deployments implements this too.

    Implementations are synchronous (called from a worker thread) and serialize transactions
    across every process that shares the data.
    """

    def read(self) -> StoreState:
        """Return a consistent snapshot. Raises StorageError when the data cannot be read."""
        ...

    def transaction(self) -> contextlib.AbstractContextManager[StoreState]:
        """Exclusive read-modify-write: mutate the yielded state; it is written when the block exits
        without an exception and discarded otherwise. Raises StorageError on I/O failure."""
        ...

    def stamp(self) -> tuple[int, int, int] | None:
        """A cheap change marker (e.g. inode, mtime, size) to notice writes by other processes."""
        ...

    def read_if_fresh(self) -> StoreState | None:
        """A snapshot without I/O when nothing changed since the last read or write, else None."""
        ...


class JsonStore:
    """`Store` over two JSON files in `directory` (normally `<data dir>/mcp`).

    Args:
        directory: Created with mode 0700 if missing.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._servers_path = directory / SERVERS_FILE
        self._secrets_path = directory / SECRETS_FILE
        self._lock = FileLock(directory / LOCK_FILE)
        self._cache: tuple[_Stamps, StoreState] | None = None

    def _stamps(self) -> _Stamps:
        return (_file_stamp(self._servers_path), _file_stamp(self._secrets_path))

    def read_if_fresh(self) -> StoreState | None:
        """The last state read or written, if neither file changed since (two `stat` calls, no I/O).

        Cheap enough for the event loop: callers on hot paths (every gateway call) try this first.
        Files are replaced atomically, so a changed inode, mtime or size means another write.
        """
        cache = self._cache
        if cache is not None and cache[0] == self._stamps():
            return cache[1].copy()
        return None

    def read(self) -> StoreState:
        fresh = self.read_if_fresh()
        if fresh is not None:
            return fresh
        with self._lock.hold(shared=True):
            stamps = self._stamps()
            state = self._load()
        self._cache = (stamps, state)
        return state.copy()

    @contextlib.contextmanager
    def transaction(self) -> Generator[StoreState]:
        with self._lock.hold():
            current = self._load()
            working = current.copy()
            yield working
            try:
                if working.secrets != current.secrets:
                    atomic_write(
                        self._secrets_path, _dump({"schema_version": SCHEMA_VERSION, "secrets": working.secrets})
                    )
                if working.servers != current.servers:
                    servers = [r.model_dump(mode="json") for r in sorted(working.servers.values(), key=lambda r: r.id)]
                    atomic_write(self._servers_path, _dump({"schema_version": SCHEMA_VERSION, "servers": servers}))
            except OSError as exc:
                self._cache = None
                raise StorageError(
                    f"cannot write the data directory: {exc.strerror}", details={"file": exc.filename}
                ) from None
            self._cache = (self._stamps(), working.copy())

    def stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self._servers_path.stat()
        except FileNotFoundError:
            return None
        return (info.st_ino, info.st_mtime_ns, info.st_size)

    def collect_orphans(self) -> int:
        """Delete ciphertexts whose server no longer exists; return how many were removed."""
        with self.transaction() as state:
            orphans = [sid for sid in state.secrets if _server_of(sid) not in state.servers]
            for sid in orphans:
                del state.secrets[sid]
            return len(orphans)

    def _load(self) -> StoreState:
        servers_doc = _read_json(self._servers_path)
        secrets_doc = _read_json(self._secrets_path)
        state = StoreState()
        if servers_doc is not None:
            _check_schema(self._servers_path, servers_doc)
            raw_servers = servers_doc.get("servers", [])
            if not isinstance(raw_servers, list):
                raise StorageError(f"{SERVERS_FILE} is malformed: 'servers' is not a list")
            for i, raw in enumerate(raw_servers):
                try:
                    record = ServerRecord.model_validate(raw)
                except ValidationError as exc:
                    raise StorageError(
                        f"{SERVERS_FILE} entry {i} is invalid; fix or remove it",
                        details={"entry": i, "errors": exc.errors(include_url=False, include_input=False)},
                    ) from None
                try:  # a hand-edited file must not bypass the R-1 rules (a shell string, plain http)
                    parse_server_config(record.config.model_dump(mode="json"))
                except ConfigInvalid as exc:
                    raise StorageError(
                        f"{SERVERS_FILE} entry {i} ('{record.id}') breaks a configuration rule ({exc.message}); "
                        "fix or remove it",
                        details={"entry": i, "server_id": record.id, "errors": exc.details.get("errors", [])},
                    ) from None
                if record.id in state.servers:
                    # Keeping either copy would silently drop the other on the next write.
                    raise StorageError(
                        f"{SERVERS_FILE} entry {i} repeats server id '{record.id}'; fix or remove one of them",
                        details={"entry": i, "server_id": record.id},
                    )
                state.servers[record.id] = record
        if secrets_doc is not None:
            _check_schema(self._secrets_path, secrets_doc)
            raw_secrets = secrets_doc.get("secrets", {})
            if not isinstance(raw_secrets, dict) or not all(isinstance(v, str) for v in raw_secrets.values()):
                raise StorageError(f"{SECRETS_FILE} is malformed: 'secrets' is not a map of strings")
            state.secrets = dict(raw_secrets)
        return state


_Stamp = tuple[int, int, int] | None
_Stamps = tuple[_Stamp, _Stamp]


def _file_stamp(path: Path) -> _Stamp:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def _server_of(secret_id: str) -> str:
    parts = secret_id.split(".")
    return parts[2] if len(parts) >= 4 else ""


def _dump(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc.strerror}") from None
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path.name} is not valid JSON ({exc}); restore it from a backup or remove it") from None
    if not isinstance(doc, dict):
        raise StorageError(f"{path.name} is malformed: not a JSON object")
    return doc


def _check_schema(path: Path, doc: dict[str, Any]) -> None:
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StorageError(f"{path.name} has no valid schema_version")
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{path.name} was written by a newer mcp-center (schema {version}, this one reads {SCHEMA_VERSION})"
        )
