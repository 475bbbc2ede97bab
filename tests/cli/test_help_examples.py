"""The `add` examples in the CLI's help texts follow our own advice: a package pinned to one release
(trial40, R-2.1, R-1.10).

`mcp-center --help` showed `add time -- uvx mcp-server-time`; a newcomer ran it and got the
PACKAGE_NOT_PINNED warning. Every `mcp-center add ...` example in any command's help, epilog or
option help is put through the check `add` itself makes (`config.pinning.unpinned_package`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer.main

from mcp_center import cli
from mcp_center.config.pinning import unpinned_package
from tests.support.cli import run_cli

_EXAMPLE = re.compile(r"mcp-center add [^`\n]+")
"""An `add` example: to the end of its line, or of the backticks around it."""


def _help_texts(command: Any, path: str) -> Iterator[tuple[str, str]]:
    """(command path, text) of every help text under `command`: its help, short help, epilog and the
    help of each of its parameters, and the same of every subcommand."""
    for text in (command.help, command.short_help, command.epilog):
        if text:
            yield path, text
    for param in command.params:
        if getattr(param, "help", None):
            yield path, param.help
    for name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, f"{path} {name}")


def help_examples() -> list[tuple[str, list[str]]]:
    """(command path, the example's words after `mcp-center add`) for each `add` example in a help text."""
    found: list[tuple[str, list[str]]] = []
    for path, text in _help_texts(typer.main.get_command(cli.app), "mcp-center"):
        found += [(path, shlex.split(match.removeprefix("mcp-center add "))) for match in _EXAMPLE.findall(text)]
    return found


def unpinned_examples(examples: list[tuple[str, list[str]]]) -> list[str]:
    """The examples whose program after `--` runs a package with no fixed version, with the warning."""
    bad: list[str] = []
    for path, words in examples:
        if "--" not in words:
            continue  # a remote server: no package to pin
        command, *args = words[words.index("--") + 1 :]
        unpinned = unpinned_package(command, args)
        if unpinned is not None:
            bad.append(f"{path}: add {shlex.join(words)}: {unpinned.message}")
    return bad


def test_every_add_example_in_the_help_pins_its_package() -> None:
    examples = help_examples()
    assert any("--" in words for _, words in examples), examples  # the stdio example is found
    assert unpinned_examples(examples) == []


def test_the_check_finds_an_unpinned_example() -> None:
    """What the help showed before: the check above would have named it."""
    said = unpinned_examples([("mcp-center", ["time", "--", "uvx", "mcp-server-time"])])
    assert len(said) == 1 and "'mcp-server-time' names no fixed version" in said[0]


def test_the_stdio_example_of_add_adds_without_a_warning(tmp_path: Path) -> None:
    """The example as a user would paste it: added, and nothing on stderr."""
    words = next(words for path, words in help_examples() if path == "mcp-center add" and "--" in words)
    added = run_cli(tmp_path, "add", *words)
    assert added.returncode == 0, added.stderr
    assert added.stderr == ""
