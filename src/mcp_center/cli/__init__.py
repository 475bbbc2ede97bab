"""The `mcp-center` command line: `serve`, and verbs that call the same `McpCenter` code.

The verbs open the data directory in-process (the store's file lock makes that safe beside a
running `serve`, which notices the change within a second and reconciles, R-3.3); those about a
server's live state (`enable`, `disable`, `test`, `tools`, and `list`/`show`) ask the running
`serve` of the directory instead, when there is one (`cli._served`, cli39). Errors print
`error [CODE]: message` and exit with the error's `exit_code` (the table in docs/errors.md#in-the-cli-exit-codes;
click's usage errors exit 2 too).

Which data directory a command used is easy to get wrong (`--data-dir` on `serve` but not on the
next command), so every message whose meaning depends on it names it — "no servers yet in X",
"looked in X" after a not-found error, the directory a new gateway token went to — and says
whether a `serve` owns it (`cli._where`): a token created beside no serve works once serve runs on
that directory (R-9.2). Commands that only read or change existing servers never create the
directory.
"""

from __future__ import annotations

import inspect

import typer
from typer.core import TyperCommand

from mcp_center import __version__
from mcp_center.cli._shared import CenterCommand, CenterGroup, app, err, out

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


def reflow_help(doc: str) -> str:
    """A command's docstring as help text whose paragraphs the terminal wraps (issue: newcomer fixes).

    typer keeps the single line breaks of every paragraph after the first, so a docstring wrapped
    at 100 columns printed with hard breaks in `mcp-center import --help`. Paragraphs become one
    line each; a paragraph with an indented line (an example) or starting with `\b` stays as
    written, and everything from a form feed on (the part help never shows) is kept unchanged.
    """
    shown, feed, hidden = inspect.cleandoc(doc).partition("\f")
    paragraphs = [
        p if p.startswith("\b") or any(line.startswith(" ") for line in p.splitlines()) else " ".join(p.split("\n"))
        for p in shown.split("\n\n")
    ]
    return "\n\n".join(paragraphs) + feed + hidden


def _polish_commands(group: typer.Typer) -> None:
    # Every command: its docstring reflowed as help, and CenterCommand's help without `<bool>`
    # (a command registered without cls= has typer's TyperCommand; a group has cls=CenterGroup).
    for command in group.registered_commands:
        if command.help is None and command.callback is not None and command.callback.__doc__:
            command.help = reflow_help(command.callback.__doc__)
        if command.cls is None or command.cls is TyperCommand:
            command.cls = CenterCommand
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _polish_commands(sub.typer_instance)


_polish_commands(app)
assert app.info.cls is CenterGroup


def main() -> None:
    """Console-script entry point."""
    app()
