"""Durable interaction cards: `<data dir>/mcp/interactions.json` (R-6.1, R-6.3).

A card is what a server's `elicitation/create` becomes while a human answers it. Cards are kept
in a file so they survive a restart of the service: a card that was pending when the host
stopped is found again at the next start and marked `interrupted` (its server request cannot be
resumed), so the user sees what was asked and that the call failed.

Writes use `atomic_write` under a `FileLock` beside the file (as servers.json does, R-1.2). One
process at a time owns the cards (`claim()`, an exclusive non-blocking `flock` held for the
process's lifetime): only the owner may declare pending cards of a previous run interrupted, so
a CLI command that opens the data directory beside a running `serve` never touches them.

Answers are not stored: a closed card keeps the names of the fields that were answered, not
their values (an elicitation may ask for something sensitive).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Generator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_center.errors import StorageError
from mcp_center.store.files import FileLock, atomic_write

__all__ = [
    "INTERACTIONS_FILE",
    "MAX_CLOSED_INTERACTIONS",
    "CallRef",
    "InteractionRecord",
    "InteractionState",
    "InteractionStore",
    "JsonInteractionStore",
    "RetryState",
]

INTERACTIONS_FILE = "interactions.json"
SCHEMA_VERSION = 1
MAX_CLOSED_INTERACTIONS = 200
"""Closed cards kept for the record (newest first); pending cards and interrupted ones whose retry
is still offered are always kept."""

InteractionState = Literal["pending", "accepted", "declined", "cancelled", "expired", "withdrawn", "interrupted"]
"""`pending` waits for the user; `accepted` / `declined` / `cancelled` are the user's answer;
`expired`: nobody answered in time (the server got `cancel`); `withdrawn`: the call or the server
went away first; `interrupted`: the host stopped while it was pending (nothing was delivered)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class CallRef(_Model):
    """The tool call during which the server asked (one of the calls running on its connection).

    `arguments` is kept so that the user can re-send the call after an interruption (R-6.3); it is
    None when the arguments were too large to keep (then no retry is offered).
    """

    operation_id: str
    server_id: str
    tool: str
    caller: Literal["agent", "user"]
    exposed_name: str | None = None
    arguments: dict[str, Any] | None = None


class RetryState(_Model):
    """Whether re-sending the interrupted call is offered, and whether the user did it (R-6.3)."""

    offered: bool = False
    done: bool = False
    at: datetime | None = None
    outcome: str | None = None
    """`ok`, or the error code of the re-sent call."""


class InteractionRecord(_Model):
    """One interaction card as stored."""

    id: str
    kind: Literal["elicitation"] = "elicitation"
    mode: Literal["form", "url"] = "form"
    state: InteractionState = "pending"
    server_id: str
    connection_id: str | None = None
    host_instance: str
    """Which run of the host created the card (a pending card of another run is stale)."""
    message: str
    requested_schema: dict[str, Any] | None = None
    defaults: dict[str, Any] = Field(default_factory=dict)
    url_origin: str | None = None
    calls: list[CallRef] = Field(default_factory=list)
    created_at: datetime
    expires_at: datetime
    closed_at: datetime | None = None
    reason: str | None = None
    answer_fields: list[str] = Field(default_factory=list)
    retry: RetryState = Field(default_factory=RetryState)

    @property
    def open(self) -> bool:
        """True while the card waits for an answer."""
        return self.state == "pending"


class InteractionStore(Protocol):
    """Persistence seam for interaction cards (a database-backed host implements this too)."""

    def read(self) -> list[InteractionRecord]:
        """Every stored card, oldest first. Raises StorageError when the file cannot be read."""
        ...

    def transaction(self) -> contextlib.AbstractContextManager[dict[str, InteractionRecord]]:
        """Exclusive read-modify-write of `{id: card}`; written (and pruned) when the block exits cleanly."""
        ...

    def claim(self) -> bool:
        """Become the one process that owns pending cards; False if another live process does."""
        ...

    def release(self) -> None:
        """Give up ownership (at shutdown)."""
        ...


class JsonInteractionStore:
    """`InteractionStore` over `<directory>/interactions.json` (normally `<data dir>/mcp`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._path = directory / INTERACTIONS_FILE
        self._lock = FileLock(directory / ".interactions.lock")
        self._owner_fd: int | None = None

    def read(self) -> list[InteractionRecord]:
        with self._lock.hold(shared=True):
            return list(self._load().values())

    @contextlib.contextmanager
    def transaction(self) -> Generator[dict[str, InteractionRecord]]:
        with self._lock.hold():
            current = self._load()
            working = dict(current)
            yield working
            if working != current:
                try:
                    atomic_write(self._path, _dump(_prune(working)))
                except OSError as exc:
                    raise StorageError(
                        f"cannot write {INTERACTIONS_FILE}: {exc.strerror}", details={"file": INTERACTIONS_FILE}
                    ) from None

    def claim(self) -> bool:
        if self._owner_fd is not None:
            return True
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.directory / ".interactions.owner", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._owner_fd = fd
        return True

    def release(self) -> None:
        fd, self._owner_fd = self._owner_fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock

    def _load(self) -> dict[str, InteractionRecord]:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError(f"cannot read {INTERACTIONS_FILE}: {exc.strerror}") from None
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise StorageError(
                f"{INTERACTIONS_FILE} is not valid JSON; restore it from a backup or remove it"
            ) from None
        version = doc.get("schema_version") if isinstance(doc, dict) else None
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise StorageError(f"{INTERACTIONS_FILE} has no valid schema_version")
        if version > SCHEMA_VERSION:
            raise StorageError(f"{INTERACTIONS_FILE} was written by a newer mcp-center (schema {version})")
        items = doc.get("interactions", [])
        if not isinstance(items, list):
            raise StorageError(f"{INTERACTIONS_FILE} is malformed: 'interactions' is not a list")
        records: dict[str, InteractionRecord] = {}
        for i, item in enumerate(items):
            try:
                record = InteractionRecord.model_validate(item)
            except ValidationError as exc:
                raise StorageError(
                    f"{INTERACTIONS_FILE} entry {i} is invalid; fix or remove it",
                    details={"entry": i, "errors": exc.errors(include_url=False, include_input=False)},
                ) from None
            records[record.id] = record
        return records


def _needs_user(record: InteractionRecord) -> bool:
    if record.state == "pending":
        return True
    return record.state == "interrupted" and record.retry.offered and not record.retry.done


def _prune(records: dict[str, InteractionRecord]) -> list[InteractionRecord]:
    keep = [r for r in records.values() if _needs_user(r)]
    closed = [r for r in records.values() if not _needs_user(r)]
    closed.sort(key=lambda r: r.closed_at or r.created_at, reverse=True)
    return sorted(keep + closed[:MAX_CLOSED_INTERACTIONS], key=lambda r: r.created_at)


def _dump(records: list[InteractionRecord]) -> bytes:
    doc = {"schema_version": SCHEMA_VERSION, "interactions": [r.model_dump(mode="json") for r in records]}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
