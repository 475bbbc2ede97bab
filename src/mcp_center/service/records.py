"""Server records: find, version-check, add and change them inside a store transaction (R-1.1 to R-1.4).

Pure functions over a `StoreState` the caller holds in a transaction: they never read or write
the store themselves, so a use case composes several of them and commits once (R-1.8: all or
nothing). Secret values are not handled here (`secret_values.py`), nor is readiness
(`readiness.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mcp_center.config import ServerConfig, parse_server_config, slugify
from mcp_center.errors import ServerExists, ServerNotFound, ServerVersionConflict, did_you_mean
from mcp_center.store import ServerRecord, Store, StoreState

__all__ = ["changed", "check_version", "collect_orphans", "editable", "get_record", "new_config", "now"]


def now() -> datetime:
    """The current time (aware UTC): `created_at` / `updated_at` of a record."""
    return datetime.now(UTC)


def get_record(state: StoreState, server_id: str) -> ServerRecord:
    """The record of `server_id`.

    Raises:
        ServerNotFound: no such id (`details.did_you_mean` lists close ids).
    """
    record = state.servers.get(server_id)
    if record is None:
        raise ServerNotFound(
            f"no server with id '{server_id}'",
            details={"server_id": server_id, "did_you_mean": did_you_mean(server_id, state.servers)},
        )
    return record


def check_version(record: ServerRecord, version: int | None) -> None:
    """Optimistic locking (R-1.3): `version` None skips the check.

    Raises:
        ServerVersionConflict: `version` is not the record's current version (409; nothing changed).
    """
    if version is not None and version != record.version:
        raise ServerVersionConflict(
            f"server '{record.id}' was changed by someone else (you read version {version}, it is now "
            f"{record.version}); reload and apply your change again",
            details={"server_id": record.id, "your_version": version, "current_version": record.version},
        )


def editable(config: ServerConfig) -> dict[str, Any]:
    """The configuration as JSON (R-1.1 field names): the base a partial update merges into."""
    return config.model_dump(mode="json")


def new_config(state: StoreState, data: dict[str, Any]) -> ServerConfig:
    """Validate the configuration of a new server; derive a unique `id` from `name` when absent.

    Raises:
        ConfigInvalid: a rule of R-1 is broken. ServerExists: the id is taken.
    """
    config_data = dict(data)
    config_data.pop("enabled", None)
    if "id" not in config_data or config_data["id"] in (None, ""):
        base = slugify(str(config_data.get("name") or "server"))
        candidate, n = base, 2
        while candidate in state.servers:
            suffix = f"-{n}"
            candidate, n = base[: 32 - len(suffix)].rstrip("-") + suffix, n + 1
        config_data["id"] = candidate
    config = parse_server_config(config_data)
    if config.id in state.servers:
        raise ServerExists(f"a server with id '{config.id}' already exists", details={"server_id": config.id})
    return config


def namesakes(state: StoreState, config: ServerConfig) -> tuple[list[str], list[str]]:
    """The other servers named as `config` is (case and surrounding spaces ignored), and those of
    them whose whole configuration but the id is the same (secret values are not compared), as
    `(same_name, same_config)` lists of ids, `same_config` oldest first (issue 16: `add` twice
    registered `time-3`; a refusal names the server registered first, not a later copy)."""
    name = config.name.strip().lower()
    mine = config.model_dump(exclude={"id", "name"})
    same = [sid for sid, r in state.servers.items() if sid != config.id and r.config.name.strip().lower() == name]
    twins = [sid for sid in same if state.servers[sid].config.model_dump(exclude={"id", "name"}) == mine]
    oldest_first = sorted(twins, key=lambda sid: (state.servers[sid].created_at, sid))  # the first is the one named
    return same, oldest_first


def changed(record: ServerRecord, config: ServerConfig, *, high_risk: bool) -> ServerRecord:
    """`record` with `config`, the next version and a new `updated_at`.

    A high-risk change (the connection summary digest changed, R-1.4) also clears trust and the
    last test and disables the server. The tool names of the last test (`known_tools`) are kept
    when only the tool policies or switches changed (the same server lists the same tools).
    """
    update: dict[str, Any] = {"config": config, "version": record.version + 1, "updated_at": now()}
    if high_risk:
        update.update(trusted_digest=None, last_test=None, enabled=False)
    if not same_server(record.config, config):
        update["known_tools"] = None
    return record.model_copy(update=update)


def same_server(before: ServerConfig, after: ServerConfig) -> bool:
    """True when `after` differs from `before` in the tool policies and switches only (the server,
    and so its tool catalogue, is the same; issue 16)."""
    tools = {"tool_policies": after.tool_policies, "disabled_tools": after.disabled_tools}
    return before.model_copy(update=tools) == after


def collect_orphans(store: Store) -> None:
    """Delete ciphertexts whose server no longer exists (R-1.5: deleting a server deletes its secrets)."""
    with store.transaction() as state:
        for sid in state.orphaned_secrets():
            del state.secrets[sid]
