"""`mcp-center migrate --to`: copy a data directory's state into PostgreSQL, all or nothing (R-10.1)."""

from __future__ import annotations

from typing import Annotated

import typer

from mcp_center.cli._shared import DataDir, app, err, fail, out
from mcp_center.cli._wording import option_value_refused
from mcp_center.config import Settings
from mcp_center.config.settings import DATABASE_URL_FORM, is_database_url
from mcp_center.errors import CenterError, FieldError, RequestInvalid


@app.command()
def migrate(
    to: Annotated[str, typer.Option("--to", help="The target database: postgresql://user:password@host:port/db.")],
    data_dir: DataDir = None,
) -> None:
    """Copy a data directory's state into PostgreSQL, all or nothing (for several instances).

    Servers (trusted, tested, enabled as they are), secrets and OAuth credentials (still sealed with
    this data directory's key: start every instance with that key), gateway tokens, cards and
    approvals go over in one transaction. The data directory is left as it was. Stop its serve first.

    \f
    R-10.1 (the help text ends at the form feed above).
    """
    from mcp_center.service.migration import migrate_to_database

    if not to.strip():  # "" would mean "no database" to the settings, and libpq's defaults to a connect
        error = FieldError("to", "FIELD_REQUIRED", "give the target: postgresql://user:password@host:port/db")
        raise fail(RequestInvalid(f"--to: {error.message}", details={"errors": [error.to_dict()]}))
    if not is_database_url(to):  # one code (OPTION_VALUE_INVALID); the URL, which may hold a password, not echoed
        raise fail(option_value_refused("mcp-center migrate", "--to", f"must be {DATABASE_URL_FORM}"))
    try:
        settings = Settings.load(data_dir=data_dir, database_url=to)
        report = migrate_to_database(settings, to, display=settings.database_display or "postgresql")
    except CenterError as exc:
        raise fail(exc) from None
    copied = ", ".join(f"{count} {section.replace('_', ' ')}" for section, count in report.counts.items())
    out.print(f"migrated {settings.data_dir} into {report.database}: {copied}", highlight=False, markup=False)
    err.print(
        "start every instance with this data directory's key (MCP_CENTER_SECRET_KEY, or a copy of "
        f"{settings.data_dir / 'secret.key'}) and --database-url",
        highlight=False,
        markup=False,
    )
    # The admin token is per data directory, never in the database: an instance on a new directory
    # would make its own and refuse the one in use so far (issue 16).
    err.print(
        "and with one admin token, MCP_CENTER_ADMIN_TOKEN (to keep this directory's, "
        f"MCP_CENTER_ADMIN_TOKEN=$(cat {settings.data_dir / 'admin-token'})); without it each instance's data "
        "directory makes and prints a new one",
        highlight=False,
        markup=False,
    )
