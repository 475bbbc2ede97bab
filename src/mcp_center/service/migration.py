"""Move a data directory's state into PostgreSQL, all or nothing (`mcp-center migrate --to`, R-10.1).

Everything the files hold goes over as it is — servers with their versions, trust, tests and
enabled flags; ciphertexts (secrets, bearer tokens, OAuth clients, metadata and grants); gateway
token hashes; cards and approvals — in ONE database transaction, so the database holds all of it
or none of it. Ciphertexts are copied, never opened: they stay sealed with the data directory's
key, and the database records that key's check value, so every instance must then be started
with that same key (`MCP_CENTER_SECRET_KEY`, or a copy of `secret.key`). That is what lets the
servers stay trusted and callable without a secret being entered again.

Refused, with nothing written: a data directory that a running `serve` owns (it would keep
changing the files after the copy), one that does not exist, and a database that already holds
servers, secrets or gateway tokens (merging two data sets is not a migration).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mcp_center.config import Settings
from mcp_center.errors import Conflict, DataDirInUse, NotFound
from mcp_center.secrets import SecretCipher, key_check
from mcp_center.service.master_key import checked_key
from mcp_center.store import SECTIONS, JsonStore, PgStore, Section
from mcp_center.store.running import running_owner

__all__ = ["DataDirMissing", "MigrationReport", "MigrationTargetNotEmpty", "migrate_to_database"]


class MigrationTargetNotEmpty(Conflict):
    """The database already holds servers, secrets or gateway tokens: nothing was copied (R-10.1)."""

    code = "MIGRATION_TARGET_NOT_EMPTY"


class DataDirMissing(NotFound):
    """The data directory to migrate from does not exist (or holds no `mcp/` state)."""

    code = "DATA_DIR_NOT_FOUND"


@dataclass(frozen=True)
class MigrationReport:
    """What `migrate_to_database` copied: records per section, and where to."""

    database: str
    counts: dict[Section, int]


def migrate_to_database(settings: Settings, url: str, *, display: str) -> MigrationReport:
    """Copy the state of `settings.data_dir` into the database at `url`, in one transaction.

    The data directory is left as it was (a backup; nothing is deleted there).

    Args:
        settings: Where the data directory and the key are (the key: `MCP_CENTER_SECRET_KEY` or
            `<data dir>/secret.key`).
        url: The target database (`postgresql://...`); its schema is created or updated first.
        display: The database as shown in messages (no password).
    Returns:
        Records copied per section.
    Raises:
        DataDirMissing: no data directory (or no `mcp/` in it) to migrate from.
        DataDirInUse: a running serve owns the data directory (stop it first).
        MigrationTargetNotEmpty: the database already holds servers, secrets or gateway tokens.
        SecretKeyMismatch: the database was set up with another key, or the key does not open the
            data directory's secrets (`master_key.checked_key`); nothing was copied or recorded.
        StorageUnavailable, StorageSchemaTooNew, StorageError: the database or the files failed;
            nothing was copied.
    """
    if not settings.mcp_dir.is_dir():
        raise DataDirMissing(
            f"there is no mcp-center data in {settings.data_dir} to migrate (no {settings.mcp_dir})",
            details={"data_dir": str(settings.data_dir)},
        )
    owner = running_owner(settings.data_dir)
    if owner is not None:
        raise DataDirInUse(
            f"mcp-center serve (pid {owner.pid}) runs on {settings.data_dir}; stop it first, so that nothing "
            "changes the files after they are copied",
            details={"data_dir": str(settings.data_dir), "pid": owner.pid, "url": owner.url},
        )
    source = JsonStore(settings.mcp_dir)
    source.open()  # completes an interrupted commit; refuses damaged files
    state = source.read()
    # The key must open the files' secrets before the database records its check (fix37).
    cipher = SecretCipher(checked_key(replace(settings, database_url=None), source))
    target = PgStore(url, display=display)
    target.open()
    try:
        target.check_key(key_check(cipher))
        with target.transaction() as current:
            filled = [s for s in ("servers", "secrets", "gateway_tokens") if current.section(s)]
            if filled:
                raise MigrationTargetNotEmpty(
                    f"the database {display} already holds {', '.join(filled)}; migrate into an empty database",
                    details={"database": display, "sections": filled},
                )
            for section in SECTIONS:
                current.section(section).update(state.section(section))
    finally:
        target.close()
    return MigrationReport(database=display, counts={s: len(state.section(s)) for s in SECTIONS})
