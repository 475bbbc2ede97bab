"""`mcp-center import` in a script (R-1.8, R-7.3, issue 16: a new user's CLI trial).

The test that needs a real pipe (click's hidden prompt on a non-terminal) runs the installed `mcp-center`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CLI, CliResult, run_cli


def run(data: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    return run_cli(data, *args, input=input, env=env)


def servers(data: Path) -> dict[str, dict[str, Any]]:
    listed = run(data, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {s["id"]: s for s in json.loads(listed.stdout)}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_a_piped_answer_to_a_hidden_question_prints_no_getpass_warning(data: Path, tmp_path: Path) -> None:
    """click hides input with getpass, which on a pipe printed `GetPassWarning: Can not control echo on
    the terminal` before reading the line. A real process with a real pipe (the warning is getpass's)."""
    source = tmp_path / "servers.json"
    source.write_text(json.dumps({"mcpServers": {"svc": {"command": "mcp-svc", "env": {"API_KEY": "${API_KEY}"}}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    done = subprocess.run(
        [CLI, "import", str(source), "--data-dir", str(data)],
        input="piped-secret-invented-77\ny\n",
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and done.stderr == "", done.stderr
    assert "API_KEY [secret]: " in done.stdout
    assert "piped-secret-invented-77" not in done.stdout + done.stderr
    assert servers(data)["svc"]["secret_env"] == {"API_KEY": {"configured": True}}
