"""Which store a host uses: the JSON files of its data directory, or a shared PostgreSQL database (R-10.1)."""

from __future__ import annotations

from mcp_center.config import Settings
from mcp_center.store.json_store import JsonStore, Store

__all__ = ["store_for"]


def store_for(settings: Settings) -> Store:
    """The store `settings` ask for, not yet opened: `PgStore` when `settings.database_url` is set
    (`--database-url`, `MCP_CENTER_DATABASE_URL`), else `JsonStore` over `<data dir>/mcp`."""
    if settings.database_url:
        from mcp_center.store.pg_store import PgStore  # psycopg only when used: ~20 MB RSS otherwise

        return PgStore(settings.database_url, display=settings.database_display or "postgresql")
    return JsonStore(settings.mcp_dir)
