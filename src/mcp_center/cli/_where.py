"""Where a CLI command looked: the data directory and the serve that owns it, in words (R-9.2).

A forgotten `--data-dir` (given to `serve`, not to the next command) used to pass silently; these
phrases make every message that depends on the directory name it and say whether a live `serve`
owns it (`store.running`).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from mcp_center.cli._suggest import suggested
from mcp_center.config import Settings
from mcp_center.store.owner import ServeOwner
from mcp_center.store.running import running_owner

__all__ = ["data_dir_phrase", "serve_on_port", "serve_state", "unreachable_why"]


def data_dir_phrase(settings: Settings) -> str:
    """`/path (data directory)`, saying so when it does not exist; with a database (R-10.1), the
    database (never its password), where the shared state is."""
    if settings.database_display:
        return f"{settings.database_display} (database)"
    missing = "" if settings.data_dir.exists() else ", which does not exist"
    return f"{settings.data_dir} (data directory{missing})"


def serve_state(settings: Settings) -> str:
    """Whether a live `serve` owns the data directory, in words (R-9.2)."""
    owner = running_owner(settings.data_dir)
    if owner is None:
        return f"no mcp-center serve runs on {settings.data_dir}"
    return f"mcp-center serve (pid {owner.pid}) runs on it at {owner.address or '(still starting)'}"


def unreachable_why(settings: Settings, url: str | None) -> str:
    """Why the running host was not reached, naming the data directory and whether a serve owns it (R-9.2)."""
    if url:
        return (
            f"nothing answers at the --url given: is an mcp-center serve running there? "
            f"(the data directory is {settings.data_dir})"
        )
    owner = running_owner(settings.data_dir)
    if owner is None:
        return (
            f"no mcp-center serve runs on the data directory {settings.data_dir} (this is the default address); "
            f"start one with '{suggested('serve', settings=settings)}', or pass --url"
        )
    return f"the serve of the data directory {settings.data_dir} (pid {owner.pid}) does not answer; pass --url"


def serve_on_port(port: int, data_dirs: list[Path]) -> tuple[Path, ServeOwner] | None:
    """The live `serve` among those of `data_dirs` whose recorded URL has `port`, with its data
    directory, or None (R-9.2). Cheap: reads only those directories' `serve.json`; a serve of any
    other directory is not found (the caller says "another program")."""
    for data_dir in dict.fromkeys(data_dirs):
        owner = running_owner(data_dir)
        if owner is None or not owner.address:
            continue
        try:
            owner_port = urlsplit(owner.address).port
        except ValueError:
            continue
        if owner_port == port:
            return data_dir, owner
    return None
