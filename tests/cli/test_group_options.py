"""An option given to a command group before its subcommand applies to the subcommand (R-7.3, R-9.2).

trial35: `mcp-center gateway --data-dir D token create t` created the token in the DEFAULT data
directory, and `mcp-center approvals --data-dir D approve ID` asked the default directory's serve:
click kept the group's `--data-dir` with the group, and `approvals --help` listed it there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from mcp_center import cli
from tests.support.cli import run_cli


def _value_for(param: Any) -> tuple[list[str], object]:
    """What to type for option `param` and the value click makes of it."""
    option = max(param.opts, key=len)
    if getattr(param, "is_flag", False):
        return [option], True
    if "dir" in (param.name or ""):
        return [option, "elsewhere/data"], Path("elsewhere/data")
    return [option, "http://127.0.0.1:9"], "http://127.0.0.1:9"


def _leaves(group: Any, path: list[tuple[str, Any]]) -> Iterator[list[tuple[str, Any]]]:
    """Every command under `group`, as the chain of (name, command) from `group`'s first subcommand."""
    ctx = typer.main.get_command(cli.app).make_context("mcp-center", [], resilient_parsing=True)
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        if hasattr(sub, "list_commands"):
            yield from _leaves(sub, [*path, (name, sub)])
        else:
            yield [*path, (name, sub)]


def _group_options() -> Iterator[tuple[list[tuple[str, Any]], int, Any]]:
    """(chain of commands from the root, index of the group in it, one of that group's options)
    for every option of every group above every command."""
    root = typer.main.get_command(cli.app)
    for chain in _leaves(root, []):
        full = [("mcp-center", root), *chain]
        for index, (_, group) in enumerate(full[:-1]):
            for param in group.params:
                if param.param_type_name == "option" and not param.is_eager and param.name != "help":
                    yield full, index, param


def _contexts(full: list[tuple[str, Any]], index: int, given: list[str]) -> Any:
    """Parse `mcp-center ... GROUP GIVEN ... COMMAND ARGS` as click does level by level (each group's
    own parsing, then its subcommand's, in the group's context), without running any callback; the
    command's required arguments get a placeholder. Returns the command's context."""
    ctx: Any = None
    for level, (name, command) in enumerate(full):
        args = list(given) if level == index else []
        if level == len(full) - 1:
            args += ["x" for p in command.params if p.param_type_name == "argument" and p.required]
        else:
            args.append(full[level + 1][0])  # a group is parsed with its subcommand's name after its options
        ctx = command.make_context(name, args, parent=ctx)
    return ctx


CASES = list(_group_options())


def test_every_group_with_options_is_walked() -> None:
    """The walk below reaches the groups trial35 found (a tree change cannot empty it silently)."""
    walked = {(full[index][0], param.name) for full, index, param in CASES}
    assert {("approvals", "data_dir"), ("approvals", "url"), ("gateway", "data_dir"), ("gateway", "url")} <= walked


@pytest.mark.parametrize(
    ("full", "index", "param"),
    CASES,
    ids=[f"{' '.join(n for n, _ in full[1:])}<-{full[index][0]}{max(p.opts, key=len)}" for full, index, p in CASES],
)
def test_a_group_option_applies_to_each_subcommand_or_is_refused(
    full: list[tuple[str, Any]], index: int, param: Any
) -> None:
    """For every group of the CLI and every command under it: an option given to the group reaches
    the command when the command has it, and is refused (OPTION_UNKNOWN, exit 2) when not —
    never dropped."""
    typed, value = _value_for(param)
    leaf = full[-1][1]
    if any(p.name == param.name for p in leaf.params):
        ctx = _contexts(full, index, typed)
        assert ctx.params[param.name] == value
        return
    with pytest.raises(typer.Exit) as refused:
        _contexts(full, index, typed)
    assert refused.value.exit_code == 2


def test_a_group_data_dir_is_where_a_gateway_token_goes(tmp_path: Path) -> None:
    """The trial's command: the token is created in --data-dir, not in the default directory."""
    default, chosen = tmp_path / "default", tmp_path / "chosen"
    made = run_cli(default, "gateway", "--data-dir", str(chosen), "token", "create", "t")
    assert made.returncode == 0, made.stderr
    assert f"in {chosen} (data directory)" in made.stderr
    assert not default.exists()
    listed = run_cli(default, "gateway", "token", "list", "--data-dir", str(chosen))
    assert listed.returncode == 0
    assert " t " in listed.stdout


def test_a_group_data_dir_is_the_one_approvals_asks(tmp_path: Path) -> None:
    default, chosen = tmp_path / "default", tmp_path / "chosen"
    asked = run_cli(default, "approvals", "--data-dir", str(chosen), "approve", "abcd")
    assert asked.returncode == 7
    assert f"no mcp-center serve runs on the data directory {chosen};" in asked.stderr
    assert str(default) not in asked.stderr


def test_the_same_option_twice_with_different_values_is_refused(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    both = run_cli(None, "gateway", "--data-dir", str(one), "token", "create", "t", "--data-dir", str(two))
    assert both.returncode == 2
    assert both.stderr.splitlines() == [
        "error [OPTION_VALUE_INVALID]: option '--data-dir' was given to mcp-center gateway and to "
        "mcp-center gateway token create with different values; give it once (either place applies to "
        "mcp-center gateway token create)"
    ]
    assert not one.exists() and not two.exists()
    same = run_cli(None, "gateway", "--data-dir", str(one), "token", "create", "t", "--data-dir", str(one))
    assert same.returncode == 0, same.stderr


def test_one_data_dir_given_relative_and_absolute_is_no_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fix37: `gateway --data-dir data token create t --data-dir $PWD/data` was refused as two values."""
    monkeypatch.chdir(tmp_path)
    absolute = str(tmp_path / "data")
    made = run_cli(None, "gateway", "--data-dir", "data", "token", "create", "t", "--data-dir", absolute)
    assert made.returncode == 0, made.stderr
    listed = run_cli(None, "gateway", "--data-dir", f"{absolute}/", "token", "list", "--data-dir", "./data")
    assert (listed.returncode, " t " in listed.stdout) == (0, True), listed.stderr
    other = run_cli(None, "gateway", "--data-dir", "data", "token", "list", "--data-dir", str(tmp_path / "other"))
    assert other.returncode == 2 and "with different values" in other.stderr


def test_a_group_option_the_subcommand_has_not_is_refused(tmp_path: Path) -> None:
    refused = run_cli(tmp_path, "approvals", "--all", "approve", "abcd")
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[0] == (
        "error [OPTION_UNKNOWN]: option '--all' of mcp-center approvals does not apply to "
        "mcp-center approvals approve, which has no such option; see 'mcp-center approvals approve --help' "
        "for its options"
    )
