"""`mcp-center import`: the dialect a file's name says, and answers from a pipe (R-1.8, R-7.3, issue 16:
a new user's CLI trial).

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


STDIO_ONLY = {"mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time"]}}}


@pytest.mark.parametrize(
    ("path", "document", "reported"),
    [
        (".mcp.json", STDIO_ONLY, "claude-code"),  # was claude-desktop: the shape alone is Desktop's
        ("backup/project.mcp.json", STDIO_ONLY, "claude-code"),
        (".claude.json", STDIO_ONLY, "claude-code"),
        (".cursor/mcp.json", STDIO_ONLY, "cursor"),
        ("windsurf/mcp_config.json", STDIO_ONLY, "windsurf"),
        (
            "claude_desktop_config.json",
            {"mcpServers": {"clock": {"type": "stdio", "command": "uvx"}}},
            "claude-desktop",
        ),
        ("servers.json", STDIO_ONLY, "claude-desktop"),  # a name that says nothing: the shape decides
        ("mcp.json", STDIO_ONLY, "claude-desktop"),  # mcp.json outside .cursor/.vscode says nothing either
        (".mcp.json", {"servers": {"clock": {"command": "uvx"}}}, "vscode"),  # content of another client
        (".vscode/mcp.json", {"servers": {"clock": {"command": "uvx"}}}, "vscode"),
    ],
)
def test_the_format_is_the_one_the_files_name_says_when_its_content_fits(
    data: Path, tmp_path: Path, path: str, document: dict[str, Any], reported: str
) -> None:
    source = tmp_path / path
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(json.dumps(document))
    result = run(data, "import", str(source), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"format: {reported}"


def test_stdin_has_no_name_and_keeps_the_shapes_format(data: Path) -> None:
    result = run(data, "import", "-", "--dry-run", input=json.dumps(STDIO_ONLY))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "format: claude-desktop"


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
