"""CLI tables at 80 columns size their columns to what they hold (trialfix36, R-7.3).

A new user saw `list` pad a 4-character name to about 44 columns, its notes under the table end in
spaces where they wrapped, and `tools everything` cut a tool name ("trigger-long-running-opera…"):
ids and tool names are what users type, so they are never cut; descriptions give way instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.cli import run_cli

LONG_TOOL = "trigger-long-running-operation-with-progress"
SERVER = f'''
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("wide")


@mcp.tool(name="{LONG_TOOL}")
def long_one(duration: int = 1) -> str:
    """Starts an operation that runs for a while and sends progress notifications as it goes on, \
step by step, until it is done."""
    return "done"


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


mcp.run("stdio")
'''


def test_list_sizes_the_name_column_to_the_names_with_no_trailing_spaces(tmp_path: Path) -> None:
    """The name column is as wide as the longest name, 8 at least (not the terminal's rest), and no
    line, the notes under the table included, ends in a space."""
    data = tmp_path / "data"
    assert run_cli(data, "add", "time", "--", sys.executable, "-c", "pass").returncode == 0
    listed = run_cli(data, "list", columns=80)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[:3] == ["id   name     type  on  next", "─" * 30, "time time     stdio no  trust"], listed.stdout
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines), [x for x in lines if x != x.rstrip()]
    assert any(line.startswith("unconfined: ") for line in lines)  # the note that wrapped with trailing spaces


def test_tools_at_80_columns_never_cut_a_tool_name(tmp_path: Path) -> None:
    """A 44-character tool name is shown whole in a table of 80 columns; its description wraps."""
    data = tmp_path / "data"
    script = tmp_path / "wide.py"
    script.write_text(SERVER)
    for command in (
        ["add", "wide", "--", sys.executable, str(script)],
        ["trust", "wide", "--yes"],
        ["test", "wide"],
        ["enable", "wide"],
    ):
        done = run_cli(data, *command)
        assert done.returncode == 0, (command, done.stderr)
    listed = run_cli(data, "tools", "wide", columns=80)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(f"│ {LONG_TOOL} │" in line for line in lines), listed.stdout
    assert "…" not in "".join(line.split("│")[1] for line in lines if line.startswith("│")), listed.stdout
    assert all(len(line) <= 80 for line in lines), listed.stdout
