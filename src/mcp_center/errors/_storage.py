"""Storage and secret store failures: the data directory, the database, the key (R-10.1, R-7.3).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from mcp_center.errors._base import CenterError

__all__ = [
    "SecretKeyMismatch",
    "SecretStoreError",
    "StorageBusy",
    "StorageError",
    "StorageSchemaTooNew",
    "StorageUnavailable",
]


class StorageError(CenterError):
    code = "STORAGE_ERROR"


class StorageUnavailable(StorageError):
    """The database cannot be reached now (refused, gone mid-run, timed out) (R-10.1).

    Nothing of the change was applied. Retry later: `serve` keeps running and recovers by itself
    when the database returns. `details.database` names it without its password.
    """

    code = "STORAGE_UNAVAILABLE"
    http_status = 503
    exit_code = 10


class StorageBusy(StorageUnavailable):
    """A write waited its whole budget for the database's write lock, which another session holds
    (R-10.1): a slow or frozen instance mid-commit, or an operator's session. Nothing was applied;
    retry. `details`: `database`, `waited_s`, and `holder_pid` / `holder_application` /
    `holder_state` / `holder_for_s` when PostgreSQL can tell who holds it."""

    code = "STORAGE_BUSY"


class StorageSchemaTooNew(StorageError):
    """The database was migrated by a newer mcp-center than this one (R-10.1).

    Refused before anything is read or written. `details`: `database_version`, `code_version`.
    """

    code = "STORAGE_SCHEMA_TOO_NEW"
    exit_code = 11


class SecretStoreError(CenterError):
    code = "SECRET_STORE_ERROR"


class SecretKeyMismatch(SecretStoreError):
    """This instance's secret key is not the one the shared database's ciphertexts were sealed with
    (R-10.1): every instance on one database needs the same key (`MCP_CENTER_SECRET_KEY` or a copy
    of the key file). Refused at start, before anything is written."""

    code = "SECRET_KEY_MISMATCH"
