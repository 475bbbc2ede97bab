"""The `mcp-center` command line: `serve`, and verbs that call the same `McpCenter` code.

The verbs open the data directory in-process (the store's file lock makes that safe beside a
running `serve`, which notices the change within a second and reconciles, R-3.3). Errors print
`error [CODE]: message` and exit with the error's `exit_code`.

Which data directory a command used is easy to get wrong (`--data-dir` on `serve` but not on the
next command), so every message whose meaning depends on it names it — "no servers yet in X",
"looked in X" after a not-found error, the directory a new gateway token went to — and says
whether a `serve` owns it (`cli._where`): a token created beside no serve works once serve runs on
that directory (R-9.2). Commands that only read or change existing servers never create the
directory.
"""

from __future__ import annotations

from mcp_center import __version__
from mcp_center.cli._shared import app, err, out

# Importing the command modules registers their commands on `app`, in this order: the order
# `mcp-center --help` lists them (hence no import sorting here).
# isort: off
from mcp_center.cli import serve as serve
from mcp_center.cli import servers as servers
from mcp_center.cli import interchange as interchange
from mcp_center.cli import oauth as oauth
from mcp_center.cli import agents as agents
from mcp_center.cli import gateway as gateway
from mcp_center.cli import migrate as migrate
from mcp_center.cli import sandbox as sandbox
# isort: on

__all__ = ["app", "err", "main", "out"]  # out/err: the consoles the commands print to


@app.command()
def version() -> None:
    """Print the version."""
    out.print(__version__)


def main() -> None:
    """Console-script entry point."""
    app()
