"""An unknown command is one `error [COMMAND_UNKNOWN]` line with the closest commands (issue 16 item 2, R-7.3).

A newcomer typed `mcp-center status` (README said a server's state is "shown in its status") and got
typer's "No such command" box, in no format the rest of the CLI uses and with no way forward.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli


def test_an_unknown_command_says_so_in_our_format_with_what_to_type_instead(tmp_path: Path) -> None:
    status = run_cli(tmp_path, "status")
    assert status.returncode == 2
    assert status.stderr.splitlines() == [
        "error [COMMAND_UNKNOWN]: no command 'status' in mcp-center; see 'mcp-center --help' for the commands",
        "  did you mean: list, show?",
    ]
    assert status.stdout == ""
    typo = run_cli(tmp_path, "lsit")
    assert (typo.returncode, typo.stderr.splitlines()[1]) == (2, "  did you mean: list?")
    nested = run_cli(tmp_path, "gateway", "token", "rm", "x")
    assert nested.returncode == 2
    assert nested.stderr.splitlines() == [
        "error [COMMAND_UNKNOWN]: no command 'rm' in mcp-center gateway token; "
        "see 'mcp-center gateway token --help' for the commands",
        "  did you mean: revoke?",
    ]
    assert not (tmp_path / "mcp").exists()


def test_an_unknown_command_never_writes_control_characters_to_the_terminal(tmp_path: Path) -> None:
    hostile = run_cli(tmp_path, "\x1b[31mred")
    assert hostile.returncode == 2
    assert "\x1b" not in hostile.stderr
    assert "COMMAND_UNKNOWN" in hostile.stderr


def test_known_commands_and_options_still_work(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "version").returncode == 0
    assert run_cli(tmp_path, "gateway", "token", "--help").returncode == 0


def test_an_unknown_option_says_so_in_our_format_with_the_closest_options(tmp_path: Path) -> None:
    """`--dat-dir` got typer's error box, with no stable code (issue 16, F7)."""
    typo = run_cli(tmp_path, "list", "--dat-dir", str(tmp_path / "other"))
    assert typo.returncode == 2
    assert typo.stderr.splitlines() == [
        "error [OPTION_UNKNOWN]: no option '--dat-dir' for mcp-center list; "
        "see 'mcp-center list --help' for its options",
        "  did you mean: --data-dir?",
    ]
    assert typo.stdout == ""
    nested = run_cli(tmp_path, "gateway", "token", "create", "x", "--dat-dir=elsewhere")
    assert nested.returncode == 2
    assert nested.stderr.splitlines()[0].startswith(
        "error [OPTION_UNKNOWN]: no option '--dat-dir' for mcp-center gateway token create;"
    )
    root = run_cli(tmp_path, "--verison")
    assert (root.returncode, root.stderr.splitlines()[1]) == (2, "  did you mean: --version?")
    hostile = run_cli(tmp_path, "list", "--\x1b[31mred")
    assert hostile.returncode == 2
    assert "\x1b" not in hostile.stderr
    assert "OPTION_UNKNOWN" in hostile.stderr
    assert not (tmp_path / "mcp").exists() and not (tmp_path / "other").exists()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["list", "--json=1"], "option '--json' of mcp-center list is a flag and takes no value"),
        (["list", "--data-dir"], "option '--data-dir' of mcp-center list needs a value"),
        (
            ["serve", "--port", "hunter2secret"],
            "option '--port' of mcp-center serve was given a value of 13 characters that is not an integer",
        ),
        (["serve", "--port", "abc"], "option '--port' of mcp-center serve was given 'abc', which is not an integer"),
        (["serve", "--port=80a"], "option '--port' of mcp-center serve was given '80a', which is not an integer"),
    ],
)
def test_a_missing_or_wrong_option_value_is_one_error_line(tmp_path: Path, args: list[str], line: str) -> None:
    """A value given to a flag, a missing value or one of the wrong type got typer's box (issue 16, F6)."""
    result = run_cli(tmp_path, *args)
    assert result.returncode == 2
    command = "mcp-center " + args[0]
    assert result.stderr.splitlines() == [f"error [OPTION_VALUE_INVALID]: {line}; see '{command} --help'"]
    assert result.stdout == ""
    assert not (tmp_path / "mcp").exists()


@pytest.mark.parametrize(
    ("args", "argument", "usage"),
    [
        (["add"], "NAME", "mcp-center add [OPTIONS] NAME [TARGET]..."),
        (["enable"], "SERVER_ID", "mcp-center enable [OPTIONS] SERVER_ID"),
        (["call", "time"], "TOOL", "mcp-center call [OPTIONS] SERVER_ID TOOL"),
        (["approvals", "approve"], "APPROVAL_ID", "mcp-center approvals approve [OPTIONS] APPROVAL_ID"),
    ],
)
def test_a_missing_argument_is_one_error_line_with_the_usage(
    tmp_path: Path, args: list[str], argument: str, usage: str
) -> None:
    """`mcp-center add` with no name got typer's "Missing argument" box, with no stable code (issue 16)."""
    result = run_cli(tmp_path, *args)
    assert result.returncode == 2
    command = usage.split(" [OPTIONS]")[0]
    assert result.stderr.splitlines() == [
        f"error [ARGUMENT_MISSING]: {command} needs {argument}; usage: {usage}; see '{command} --help'"
    ]
    assert result.stdout == ""
    assert not (tmp_path / "mcp").exists()
