"""The store's sections: what lives in which file of `<data dir>/mcp`, and how each is read and written (R-1.2, R-9.1).

| section          | file                  | content                                                      |
|------------------|-----------------------|--------------------------------------------------------------|
| `servers`        | `servers.json`        | plain server configuration, trust, test, enable (readable)  |
| `secrets`        | `secrets.json`        | ciphertexts by internal id (secrets, OAuth credentials)      |
| `gateway_tokens` | `gateway-tokens.json` | gateway tokens as SHA-256 hashes                             |
| `interactions`   | `interactions.json`   | elicitation cards                                            |
| `approvals`      | `approvals.json`      | approvals of agents' calls                                   |

Each file is a JSON object with a `schema_version` and one list or map. A file that does not parse,
is not of the expected shape, or was written by a newer schema is refused with `StorageError`
naming the file (`details.file`) and the fault (`details.fault`), and is never overwritten: the
store loads every section before it writes anything.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError

from mcp_center.config import parse_server_config
from mcp_center.errors import ConfigInvalid, StorageError
from mcp_center.secrets import server_prefix
from mcp_center.store.approvals import ApprovalRecord, prune_approvals
from mcp_center.store.interactions import InteractionRecord, prune_interactions
from mcp_center.store.records import GatewayTokenRecord, ServerRecord

__all__ = ["FILES", "SCHEMA_VERSION", "SECTIONS", "Section", "StoreState", "dump_section", "parse_section"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

Section = Literal["servers", "secrets", "gateway_tokens", "interactions", "approvals"]
SECTIONS: tuple[Section, ...] = ("servers", "secrets", "gateway_tokens", "interactions", "approvals")
FILES: dict[Section, str] = {
    "servers": "servers.json",
    "secrets": "secrets.json",
    "gateway_tokens": "gateway-tokens.json",
    "interactions": "interactions.json",
    "approvals": "approvals.json",
}
_KEYS: dict[Section, str] = {
    "servers": "servers",
    "secrets": "secrets",
    "gateway_tokens": "tokens",
    "interactions": "interactions",
    "approvals": "approvals",
}


@dataclass
class StoreState:
    """A consistent view of the whole store; mutable inside a transaction, a private copy otherwise.

    Every map is keyed by the record's id; records are frozen, so copies share them safely.
    """

    servers: dict[str, ServerRecord] = field(default_factory=dict[str, ServerRecord])
    secrets: dict[str, str] = field(default_factory=dict[str, str])
    """Internal secret id → ciphertext (`SecretCipher.seal` output)."""
    gateway_tokens: dict[str, GatewayTokenRecord] = field(default_factory=dict[str, GatewayTokenRecord])
    interactions: dict[str, InteractionRecord] = field(default_factory=dict[str, InteractionRecord])
    approvals: dict[str, ApprovalRecord] = field(default_factory=dict[str, ApprovalRecord])

    def copy(self) -> StoreState:
        """A shallow copy (records are frozen, so sharing them is safe)."""
        return StoreState(
            dict(self.servers),
            dict(self.secrets),
            dict(self.gateway_tokens),
            dict(self.interactions),
            dict(self.approvals),
        )

    def section(self, name: Section) -> dict[str, Any]:
        """The map of one section (the live object: mutate it inside a transaction only)."""
        return cast(dict[str, Any], getattr(self, name))

    def orphaned_secrets(self) -> list[str]:
        """Internal ids of ciphertexts whose server no longer exists (to delete, R-1.5)."""

        def server_of(secret_id: str) -> str:
            parts = secret_id.split(".")
            return parts[2] if len(parts) >= 4 else ""

        return [sid for sid in self.secrets if server_of(sid) not in self.servers]

    def secret_ids_of(self, server_id: str) -> list[str]:
        """Internal ids of every ciphertext belonging to `server_id`."""
        prefixes = server_prefix(server_id)
        return [sid for sid in self.secrets if sid.startswith(prefixes)]


def _damaged(path: Path, fault: str, hint: str = "fix or remove it", **details: Any) -> StorageError:
    logger.error("store.file_damaged", extra={"file": str(path), "fault": fault})
    return StorageError(
        f"{path} is damaged: {fault}; nothing was written — {hint}",
        details={"file": str(path), "fault": fault, **details},
    )


def parse_section(section: Section, path: Path, raw: bytes | None) -> dict[str, Any]:
    """Parse one section file's bytes (None: the file does not exist, the section is empty).

    Returns:
        `{id: record}` (for `secrets`: `{internal id: ciphertext}`).
    Raises:
        StorageError: not JSON, wrong shape, a newer or missing schema version, an invalid entry
            (`details`: `file`, `fault`, and `entry` / `errors` for an entry).
    """
    if raw is None:
        return {}
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        truncated = isinstance(exc, json.JSONDecodeError) and exc.pos >= len(raw.rstrip())
        fault = "truncated JSON" if truncated else "not valid JSON"
        raise _damaged(path, fault, "restore it from a backup or remove it") from None
    if not isinstance(doc, dict):
        raise _damaged(path, "not a JSON object")
    body = cast(dict[str, Any], doc)
    version = body.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _damaged(path, "no valid schema_version")
    if version > SCHEMA_VERSION:
        raise _damaged(
            path,
            f"written by a newer mcp-center (schema {version}, this one reads {SCHEMA_VERSION})",
            "run the newer mcp-center, or restore a backup",
            schema_version=version,
        )
    key = _KEYS[section]
    if section == "secrets":
        raw_secrets = body.get(key, {})
        if not isinstance(raw_secrets, dict) or not all(
            isinstance(v, str) for v in cast(dict[str, Any], raw_secrets).values()
        ):
            raise _damaged(path, "'secrets' is not a map of strings")
        return dict(cast(dict[str, str], raw_secrets))
    items = body.get(key, [])
    if not isinstance(items, list):
        raise _damaged(path, f"'{key}' is not a list")
    model: type[BaseModel] = {
        "servers": ServerRecord,
        "gateway_tokens": GatewayTokenRecord,
        "interactions": InteractionRecord,
        "approvals": ApprovalRecord,
    }[section]
    records: dict[str, Any] = {}
    for i, item in enumerate(cast(list[Any], items)):
        try:
            record = model.model_validate(item)
        except ValidationError as exc:
            raise _damaged(
                path,
                f"entry {i} is invalid",
                entry=i,
                errors=exc.errors(include_url=False, include_input=False),
            ) from None
        record_id = str(getattr(record, "id"))  # noqa: B009 - every model has an `id`
        if isinstance(record, ServerRecord):
            try:  # a hand-edited file must not bypass the R-1 rules (a shell string, plain http)
                parse_server_config(record.config.model_dump(mode="json"))
            except ConfigInvalid as exc:
                raise _damaged(
                    path,
                    f"entry {i} ('{record_id}') breaks a configuration rule ({exc.message})",
                    entry=i,
                    server_id=record_id,
                    errors=exc.details.get("errors", []),
                ) from None
        if record_id in records:
            # Keeping either copy would silently drop the other on the next write.
            key = "server_id" if section == "servers" else "id"
            raise _damaged(
                path, f"entry {i} repeats id '{record_id}'", "fix or remove one of them", entry=i, **{key: record_id}
            )
        records[record_id] = record
    return records


def prune_section(section: Section, value: dict[str, Any]) -> dict[str, Any]:
    """What is kept of a section when it is written (bounded history of cards and approvals)."""
    if section == "interactions":
        return prune_interactions(cast(dict[str, InteractionRecord], value))
    if section == "approvals":
        return prune_approvals(cast(dict[str, ApprovalRecord], value))
    return value


def dump_section(section: Section, value: dict[str, Any]) -> bytes:
    """The file content of one section (after `prune_section`)."""
    key = _KEYS[section]
    payload: Any
    if section == "secrets":
        payload = dict(value)
    elif section == "servers":
        payload = [r.model_dump(mode="json") for r in sorted(value.values(), key=lambda r: r.id)]
    else:
        payload = [r.model_dump(mode="json") for r in value.values()]
    doc = {"schema_version": SCHEMA_VERSION, key: payload}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
