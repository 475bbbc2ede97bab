"""An id or name argument given empty is ARGUMENT_MISSING, like one left out, for every verb (trial40, R-7.3).

`mcp-center approvals approve ""` printed `error [NOT_FOUND]: no route for POST /api/approvals/: ...`:
the empty id went on into a URL path. Every required one-value argument of every command now refuses
a value that is empty or spaces only before the command runs (`cli._shared._blank_argument`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from mcp_center import cli
from tests.support.cli import run_cli


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under `command` (groups included) with its words after `mcp-center`."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


REQUIRED_OPTION_VALUES = {"--kind": "environment"}
"""A value for each required option (`secret set --kind`), so parsing reaches the arguments' check."""


def _blank_cases() -> list[tuple[list[str], str]]:
    """(argv, ARGUMENT) for each required one-value argument of each command: that argument given as
    spaces, the arguments before and after it as `x`, each required option with a value it takes."""
    cases: list[tuple[list[str], str]] = []
    for path, command in _commands(typer.main.get_command(cli.app), ()):
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options: list[str] = []
        for param in command.params if arguments else ():
            if param.param_type_name == "option" and param.required:
                name = max(param.opts, key=len)
                options += [name, REQUIRED_OPTION_VALUES[name]]  # a new required option: give it a value here
        for blank in arguments:
            if not blank.required or blank.nargs != 1:
                continue
            values = ["  " if p is blank else "x" for p in arguments if p.required and p.nargs == 1]
            cases.append(([*path, *values, *options], (blank.name or "").upper()))
    return cases


CASES = _blank_cases()


def test_the_cases_cover_the_verbs_that_take_an_id_or_a_name() -> None:
    """The walk finds the verbs of the report, so the parametrized test below checks them."""
    commands = {" ".join(path) for path, _ in _commands(typer.main.get_command(cli.app), ())}
    checked = {verb for verb in commands if any(" ".join(argv).startswith(f"{verb} ") for argv, _ in CASES)}
    verbs = {"approvals approve", "approvals deny", "trust", "enable", "disable", "delete", "secret set"}
    assert verbs | {"gateway token revoke", "call", "policy", "import"} <= checked
    assert len(CASES) >= 25


@pytest.mark.parametrize(("argv", "argument"), CASES, ids=[" ".join(a).replace("  ", "_") for a, _ in CASES])
def test_a_blank_required_argument_is_argument_missing_and_nothing_runs(
    tmp_path: Path, argv: list[str], argument: str
) -> None:
    result = run_cli(tmp_path / "data", *argv)
    first = result.stderr.splitlines()[0] if result.stderr else ""
    assert result.returncode == 2, result.stderr
    assert first.startswith("error [ARGUMENT_MISSING]: mcp-center "), first
    assert f" needs {argument} (it was given empty); usage: " in first, first
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_approve_with_an_empty_id_is_the_missing_argument_line(tmp_path: Path, value: str) -> None:
    """The report's command: one line, ARGUMENT_MISSING with the usage, exit 2 (not a 404 of a URL)."""
    result = run_cli(tmp_path, "approvals", "approve", value)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error [ARGUMENT_MISSING]: mcp-center approvals approve needs APPROVAL_ID (it was given empty); "
        "usage: mcp-center approvals approve [OPTIONS] APPROVAL_ID; see 'mcp-center approvals approve --help'"
    ]


def test_an_optional_argument_may_be_blank(tmp_path: Path) -> None:
    """`resources ""` means every resource (its help says "blank: all"): not refused."""
    result = run_cli(tmp_path, "resources", "")
    assert result.returncode == 0, result.stderr
