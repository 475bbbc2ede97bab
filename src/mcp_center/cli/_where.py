"""Where a CLI command looked: the data directory and the serve that owns it, in words (R-9.2).

A forgotten `--data-dir` (given to `serve`, not to the next command) used to pass silently; these
phrases make every message that depends on the directory name it and say whether a live `serve`
owns it (`store.running`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlsplit

from mcp_center.cli._suggest import suggested
from mcp_center.config import Settings
from mcp_center.store.owner import ServeOwner
from mcp_center.store.running import running_owner

__all__ = ["EXIT_SETTLE_S", "data_dir_phrase", "serve_on_port", "serve_state", "unreachable_why", "url_origin"]


def data_dir_phrase(settings: Settings) -> str:
    """`/path (data directory)`, saying so when it does not exist; with a database (R-10.1), the
    database (never its password), where the shared state is."""
    if settings.database_display:
        return f"{settings.database_display} (database)"
    missing = "" if settings.data_dir.exists() else ", which does not exist"
    return f"{settings.data_dir} (data directory{missing})"


EXIT_SETTLE_S = 2.0
"""Seconds `serve_state(..., settle=True)` gives a serve that just closed a connection to finish
exiting before it names it as running: a killed process closes its sockets a moment before /proc
shows it gone (cli36)."""

_SETTLE_POLL_S = 0.05


def serve_state(settings: Settings, *, settle: bool = False) -> str:
    """Whether a live `serve` owns the data directory, in words (R-9.2).

    `settle`: the serve just closed a connection before it answered (`details.reason` `dropped`):
    it may be exiting (killed), so its pid's liveness is looked at again for up to `EXIT_SETTLE_S`
    before it is named as running, and a serve that ended in that time is named as stopped. A serve
    that still runs after it is named as running (it closed the connection but lives on)."""
    owner = running_owner(settings.data_dir)
    if owner is None:
        return f"no mcp-center serve runs on {settings.data_dir}"
    if settle:
        deadline = time.monotonic() + EXIT_SETTLE_S
        while owner.is_alive() and time.monotonic() < deadline:
            time.sleep(_SETTLE_POLL_S)  # a bounded wait for a process to end, not a synchronisation
        if not owner.is_alive():
            return (
                f"the mcp-center serve (pid {owner.pid}) that ran on {settings.data_dir} has stopped; start one "
                f"again with '{suggested('serve', settings=settings)}'"
            )
        return f"mcp-center serve (pid {owner.pid}) still runs on it at {owner.address or '(still starting)'}"
    return f"mcp-center serve (pid {owner.pid}) runs on it at {owner.address or '(still starting)'}"


def unreachable_why(settings: Settings, url: str | None, address: str | None = None) -> str:
    """Why the running host was not reached, naming where its address came from (R-9.2, cli40): the
    `--url` given or `MCP_CENTER_URL` (`url`), else the `serve.json` of the data directory, whose
    serve may have stopped since, or restarted elsewhere (`address`: the one used, to compare)."""
    if url:
        return (
            f"nothing answers at {url_origin(url)}: is an mcp-center serve running there? "
            f"(the data directory is {settings.data_dir})"
        )
    recorded = f"the address is the one the serve of the data directory {settings.data_dir} recorded in its serve.json"
    owner = running_owner(settings.data_dir)
    if owner is None:
        return (
            f"{recorded}, and that serve no longer runs; start one with "
            f"'{suggested('serve', settings=settings)}', or pass --url"
        )
    now = owner.address
    if address and now and urlsplit(now)[:2] != urlsplit(address)[:2]:
        return f"{recorded}; its serve (pid {owner.pid}) now listens at {now}: run the command again"
    return f"{recorded} (pid {owner.pid}), and it does not answer there; pass --url"


def url_origin(url: str) -> str:
    """Where the `url` a command was given came from, in words: "the --url given" or "MCP_CENTER_URL".

    Click's parameter source of the running command's `--url` (or a parent group's) when there is
    one; else whether the environment holds that value (a library caller)."""
    import click
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        source = ctx.get_parameter_source("url")
        if source is not None:
            return "MCP_CENTER_URL" if source is ParameterSource.ENVIRONMENT else "the --url given"
        ctx = ctx.parent
    from_env = os.environ.get("MCP_CENTER_URL", "").rstrip("/")
    return "MCP_CENTER_URL" if from_env and from_env == url.rstrip("/") else "the --url given"


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
