"""`mcp-center secret set`: a value's true fault is named (R-1.5, R-7.3, issue 16: a new user's CLI trial).

In process (`tests/support/cli.run_cli`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult, run_cli

VALUE = "secret-set-invented-0042"


def run(data: Path, *args: str, stdin: str | None = None) -> CliResult:
    return run_cli(data, *args, input=stdin)


def show(data: Path, server_id: str) -> dict[str, Any]:
    shown = run(data, "show", server_id)
    assert shown.returncode == 0, shown.stderr
    result: dict[str, Any] = json.loads(shown.stdout)
    return result


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data directory with `local` (stdio: plain env MODE, secret env API_KEY) and `docs` (remote:
    plain header X-Team, secret header X-Api-Key)."""
    data = tmp_path / "data"
    added = run(data, "add", "Local", "-e", "MODE=fast", "-e", f"API_KEY={VALUE}", "--", sys.executable, "-c", "pass")
    assert added.returncode == 0, added.stderr
    remote = ["add", "Docs", "https://docs.example.net/mcp", "-H", "X-Team: core", "-H", f"X-Api-Key: {VALUE}"]
    added = run(data, *remote)
    assert added.returncode == 0, added.stderr
    return data


def test_a_value_with_nul_gets_its_own_reason(data: Path) -> None:
    """It said "must be a non-empty string of at most 32 KiB" for a 20-character value."""
    result = run(data, "secret", "set", "local", "API_KEY", "--kind", "environment", stdin="abc\x00defghijklmnop\n")
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        "error [CONFIG_INVALID]: value: must not contain a NUL character (\\x00) [SECRET_VALUE_HAS_NUL]"
    ]
    assert "32 KiB" not in result.stderr and "defghijklmnop" not in result.stderr
