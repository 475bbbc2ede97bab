"""The PostgreSQL backend's schema: numbered SQL files applied at start, one transaction each (R-10.1).

`store/migrations/NNNN_<name>.sql` are the versions of the schema `mcp_center`, applied in order.
`mcp_center.schema_version` records each applied one (`version`, `name`, `applied_at`). At start
(`migrate`), under a transaction-scoped advisory lock so that instances starting together take
turns, every pending file runs in its own transaction together with its `schema_version` row: a
file is applied whole or not at all, and a failure leaves the schema at the previous version.

A database whose schema is newer than the newest file this code ships (a newer mcp-center
migrated it) is refused with `StorageSchemaTooNew` naming both versions, before anything is read
or written: an older instance must not write rows whose meaning it does not know.

No migration tool: the schema is a handful of tables, and plain files keep it reviewable.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import psycopg

from mcp_center.errors import StorageSchemaTooNew

__all__ = ["MIGRATIONS_DIR", "Migration", "MigrationResult", "code_version", "migrate", "migrations"]

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SCHEMA = "mcp_center"
"""The PostgreSQL schema (namespace) every table lives in."""
MIGRATION_LOCK = (4, 1)
"""The advisory lock `(class, key)` held while the schema is checked or changed."""
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One schema version: `NNNN_<name>.sql`."""

    version: int
    name: str
    sql: str


@dataclass(frozen=True)
class MigrationResult:
    """What `migrate` found and did: the version before, the versions applied, the version now."""

    before: int
    applied: tuple[int, ...]
    version: int


@cache
def migrations() -> tuple[Migration, ...]:
    """The shipped migrations, oldest first (numbered 1, 2, ... without gaps)."""
    found: list[Migration] = []
    for path in sorted(MIGRATIONS_DIR.iterdir()):
        match = _FILE.match(path.name)
        if match is None:
            continue
        found.append(Migration(int(match.group(1)), match.group(2), path.read_text(encoding="utf-8")))
    expected = list(range(1, len(found) + 1))
    if [m.version for m in found] != expected:  # a packaging mistake, not a user error
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, found {[m.version for m in found]}")
    return tuple(found)


def code_version() -> int:
    """The schema version this code reads and writes (the newest migration)."""
    return migrations()[-1].version


def _current(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM mcp_center.schema_version").fetchone()
    value = row[0] if row is not None else 0
    return value if isinstance(value, int) else 0


def migrate(conn: psycopg.Connection[tuple[object, ...]], *, database: str) -> MigrationResult:
    """Bring the schema to `code_version()`, one transaction per pending migration.

    Args:
        conn: A connection in autocommit mode (each migration opens its own transaction).
        database: The database as shown to people (no password), for the refusal's message.
    Returns:
        The versions before and after, and which were applied now (none when current).
    Raises:
        StorageSchemaTooNew: the database's schema is newer than this code (nothing was changed).
        psycopg.Error: the database failed a statement (the failing migration was rolled back).
    """
    newest = code_version()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
        conn.execute("CREATE SCHEMA IF NOT EXISTS mcp_center")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS mcp_center.schema_version ("
            " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        before = _current(conn)
    if before > newest:
        logger.error("store.schema_too_new", extra={"database_version": before, "code_version": newest})
        raise StorageSchemaTooNew(
            f"the database {database} has mcp-center schema version {before}, newer than version {newest} that "
            "this mcp-center knows; run the newer mcp-center (or restore a backup of the database)",
            details={"database": database, "database_version": before, "code_version": newest},
        )
    applied: list[int] = []
    for migration in migrations():
        if migration.version <= before:
            continue
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
            if _current(conn) >= migration.version:  # another instance applied it meanwhile
                continue
            conn.execute(migration.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO mcp_center.schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
        applied.append(migration.version)
        logger.info("store.schema_migrated", extra={"version": migration.version, "migration": migration.name})
    return MigrationResult(before=before, applied=tuple(applied), version=max(before, newest))
