"""`mcp-center sandbox`: whether this host can run sandboxed stdio servers, and a server's warm-up (R-11.1)."""

from __future__ import annotations

import typer

from mcp_center.cli._sandbox import support_lines, warm_up_lines
from mcp_center.cli._shared import (
    DataDir,
    ProfileOpt,
    err,
    out,
    run_center,
    sandbox_app,
    settings_for_server,
)


@sandbox_app.command("check")
def sandbox_check() -> None:
    """Say whether sandboxed stdio servers can run on this host (bubblewrap, user namespaces), and how."""
    from mcp_center.transports import sandbox_support

    support = sandbox_support(refresh=True)
    for line in support_lines(support):
        out.print(line, markup=False, highlight=False)
    if not support.available:
        raise typer.Exit(10)


@sandbox_app.command("warm-up")
def sandbox_warm_up(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Fill a sandboxed npx/uvx server's package caches inside its sandbox, with egress for this run only.

    Only the package manager runs (the server does not start), so a server with network none can
    start offline afterwards. Needs the current summary confirmed.
    """
    settings = settings_for_server(server_id, data_dir, profile)
    with err.status(f"warming up {server_id} (downloads its package into the sandbox's home)..."):
        result = run_center(settings, lambda c: c.warm_up_sandbox(server_id))
    for line in warm_up_lines(server_id, result):
        (out if result.ok else err).print(line, markup=False, highlight=False)
    if not result.ok:
        raise typer.Exit(1)
