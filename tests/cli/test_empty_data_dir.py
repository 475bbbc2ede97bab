"""An empty `--data-dir` is refused, not taken as the current directory (break36, R-7.3, R-9.2).

`mcp-center gateway token create n --data-dir ''` (or `--data-dir=`) wrote a data directory into
wherever the shell stood. An empty `MCP_CENTER_DATA_DIR` still means the default directory.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from tests.support.cli import run_cli

COMMANDS = [
    ("list", ()),
    ("approvals list", ()),
    ("trust", ("srv",)),
    ("gateway token create", ("n",)),
    ("export", ("--format", "claude-code")),
]
"""Each command's path and its other arguments."""


@pytest.mark.parametrize(("command", "words"), COMMANDS, ids=[command for command, _ in COMMANDS])
@pytest.mark.parametrize("spelled", [("--data-dir", ""), ("--data-dir=",)], ids=["separate", "equals"])
def test_an_empty_data_dir_is_refused_and_nothing_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    words: tuple[str, ...],
    spelled: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(None, *command.split(), *words, *spelled, columns=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(
        f"error [OPTION_VALUE_INVALID]: option '--data-dir' of mcp-center {command} is empty"
    ), result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_empty_environment_variable_still_means_the_default_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    listed = run_cli(None, "list", env={"MCP_CENTER_DATA_DIR": ""}, columns=400)
    assert listed.returncode == 0, listed.stderr
    assert str(Path(platformdirs.user_data_dir("mcp-center")).resolve()) in listed.stdout
    assert list(tmp_path.iterdir()) == []
