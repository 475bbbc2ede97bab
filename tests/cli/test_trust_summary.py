"""`mcp-center trust` shows how the server will run before asking: `"sandbox": null` and what that
means for an unconfined server, the policy for a sandboxed one (trial40, R-2.1, R-11.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.cli import run_cli


def _summary(stdout: str) -> dict[str, object]:
    """The JSON object `trust` prints between its first line and the lines after it."""
    start, end = stdout.index("{"), stdout.rindex("}")
    return json.loads(stdout[start : end + 1])


def test_trust_says_an_unconfined_server_runs_with_the_users_rights(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "plain", "--", sys.executable, "-c", "pass").returncode == 0
    trusted = run_cli(tmp_path, "trust", "plain", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert _summary(trusted.stdout)["sandbox"] is None
    said = [line for line in trusted.stdout.splitlines() if line.startswith('"sandbox": null means')]
    assert said == [
        '"sandbox": null means unconfined: no sandbox; the server runs with your user\'s rights (its files, '
        "network and processes); 'mcp-center add --sandbox' confines one (see docs/sandbox.md)"
    ]


def test_trust_shows_a_sandboxed_servers_policy_and_no_unconfined_line(tmp_path: Path) -> None:
    added = run_cli(tmp_path, "add", "boxed", "--network", "egress", "--", sys.executable, "-c", "pass")
    assert added.returncode == 0, added.stderr
    trusted = run_cli(tmp_path, "trust", "boxed", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    policy = _summary(trusted.stdout)["sandbox"]
    assert isinstance(policy, dict) and policy["network"] == "egress"
    assert "null means" not in trusted.stdout
