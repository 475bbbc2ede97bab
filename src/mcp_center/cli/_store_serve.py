"""Which running `serve` keeps the same state as this command: the serve of this store (R-9.2, R-10.2).

A data directory's `serve.json` names the serve that claimed it, and which state that serve keeps
(`ServeOwner.database`: the database without its password, None for the directory's files). With
`MCP_CENTER_DATABASE_URL` exported, the CLI's store is that database, and a single-instance serve on
the default data directory is NOT its serve: it keeps other state and refuses this store's tokens
(trialfix36: `gateway token create` said it "accepts it now"; `list` asked it, met 401, and said
"none answered"). So a recorded serve counts only when it keeps the same store: the same database
identity (`Settings.database_display`, which holds no password) when a database is given.

With a database, the live instances of that database (its instances table, `store.instances()`,
what `GET /api/instances` lists) are the serves to name or ask.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from mcp_center.store.running import running_owner

if TYPE_CHECKING:
    from mcp_center.config import Settings
    from mcp_center.store.coordination import InstanceInfo
    from mcp_center.store.owner import ServeOwner

__all__ = ["local_address", "store_owner"]


def store_owner(settings: Settings) -> ServeOwner | None:
    """The live `serve` recorded in the data directory's `serve.json` when it keeps the state this
    command uses; None when none runs or, with a database given here, it keeps another store (a
    single-instance serve, or one on another database, beside an exported database URL).

    Without a database here the directory's serve is its store's, whatever it keeps: a database-backed
    serve owns its directory (commands that would read the files refuse, `STORAGE_DATABASE_REQUIRED`;
    those that ask the serve over REST ask it)."""
    owner = running_owner(settings.data_dir)
    if owner is None:
        return None
    if settings.database_display is not None and owner.database != settings.database_display:
        return None
    return owner


def local_address(instance: InstanceInfo) -> str | None:
    """Where this machine reaches a live instance of the database: its listen URL, a wildcard host
    (`0.0.0.0`, `::`) read as loopback when the instance runs on this machine; None when it has no
    URL yet, or listens on a wildcard address of another machine (no address to ask)."""
    if not instance.url:
        return None
    parts = urlsplit(instance.url)
    if parts.hostname not in {"0.0.0.0", "::"}:  # noqa: S104 - a wildcard read, not a bind
        return instance.url.rstrip("/")
    if instance.hostname != socket.gethostname():
        return None
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, f"127.0.0.1{port}", "", "", "")).rstrip("/")
