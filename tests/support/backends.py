"""What a store holds, read the way an operator would: the section file, or the table's rows (R-9.1, R-10.1)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from mcp_center.config import Settings
from mcp_center.store import FILES, Section

__all__ = ["stored_text"]


def stored_text(settings: Settings, section: Section) -> str:
    """Everything stored for `section` as text: its JSON file (files), or its rows (PostgreSQL).

    For asserting what is NOT stored (an answer, a token) whatever the backend.
    """
    if settings.database_url:
        column = sql.Identifier("ciphertext" if section == "secrets" else "record")
        query = sql.SQL("SELECT id || ' ' || {}::text FROM {}").format(column, sql.Identifier("mcp_center", section))
        with psycopg.connect(settings.database_url) as conn:
            rows = conn.execute(query).fetchall()
        return "\n".join(str(r[0]) for r in rows)
    path = settings.mcp_dir / FILES[section]
    return path.read_text(encoding="utf-8") if path.exists() else ""
