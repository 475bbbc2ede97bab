"""`mcp-center tools` cuts a long description at a word, marks the cut with "…" and says once how to
see it whole (`--full`) (trial40, R-7.3).

It cut at 80 characters, mid-word and unmarked, so a cut description looked whole and nothing said
where the rest was.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_center.cli._clip import clip_words
from tests.support.cli import ready_with_cli, run_cli

ECHO = str(Path(__file__).parents[1] / "servers" / "echo_stdio.py")
BIG = "Return `kib` KiB of text, one character repeated: enough of it is more than a host keeps of a result."
"""The description of echo_stdio's `big` tool: 103 characters, past the 80 `tools` shows."""


@pytest.mark.parametrize(
    ("text", "limit", "clipped"),
    [
        ("short enough", 80, "short enough"),
        ("one two three four", 12, "one two…"),  # "one two three" would be 13 with the mark
        ("one two three four", 14, "one two three…"),
        ("line one\n  line two", 80, "line one line two"),
        ("a, b, c, d", 7, "a, b…"),  # no comma before the mark
        ("x" * 30, 10, "x" * 9 + "…"),  # one long word: cut inside it
        ("ab " + "x" * 30, 10, "ab xxxxxx…"),  # a first word under half the limit: cut inside the next
    ],
)
def test_clip_words_cuts_at_a_word_and_marks_the_cut(text: str, limit: int, clipped: str) -> None:
    assert clip_words(text, limit) == clipped
    assert len(clipped) <= limit


def test_tools_cuts_a_long_description_at_a_word_and_says_once_how_to_see_it_whole(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "echo", "--", sys.executable, ECHO).returncode == 0
    ready_with_cli(tmp_path, "echo")

    listed = run_cli(tmp_path, "tools", "echo")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    row = next(line for line in lines if " big " in line)
    shown = row.split("│")[-2].strip()
    assert shown == "Return `kib` KiB of text, one character repeated: enough of it is more than a…"
    assert BIG.startswith(shown.removesuffix("…") + " ")  # ends at a whole word
    hints = [line for line in lines if "--full" in line]
    assert hints == ["descriptions ending in … are cut; 'mcp-center tools echo --full' shows them whole"]

    whole = run_cli(tmp_path, "tools", "echo", "--full")
    assert whole.returncode == 0, whole.stderr
    assert BIG in whole.stdout and "…" not in whole.stdout and "--full" not in whole.stdout


LONG = (
    "Every note the team wrote this quarter, newest first, with the author and the date of each: "
    "read it before a planning meeting"
)
"""A resource description of 127 characters: past the 80 `resources` shows."""

RESOURCE_SERVER = f"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")

@server.resource("test://notes", name="notes", description={LONG!r})
def notes() -> str:
    return "notes"

server.run()
"""


def test_resources_cuts_a_long_description_at_a_word_as_tools_does(tmp_path: Path) -> None:
    """cli36: `resources` cut descriptions at 60 characters mid-word (`clip`); now `tools`' cut
    (`_clip.description_cells`), the same hint under the table, and `--full`."""
    server = tmp_path / "notes_server.py"
    server.write_text(RESOURCE_SERVER)
    data = tmp_path / "data"
    assert run_cli(data, "add", "notes", "--", sys.executable, str(server)).returncode == 0
    ready_with_cli(data, "notes")

    listed = run_cli(data, "resources", "notes")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    row = next(line for line in lines if "@notes:test://notes" in line)
    shown = row.split("│")[-2].strip()
    assert shown == clip_words(LONG, 80)
    assert shown.endswith("…") and LONG.startswith(shown.removesuffix("…") + " ")  # ends at a whole word
    assert [line for line in lines if "--full" in line] == [
        "descriptions ending in … are cut; 'mcp-center resources notes --full' shows them whole"
    ]

    whole = run_cli(data, "resources", "notes", "--full", columns=400)
    assert whole.returncode == 0, whole.stderr
    assert LONG in whole.stdout and "…" not in whole.stdout and "--full" not in whole.stdout
