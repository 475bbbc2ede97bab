"""A policy or switch for a tool the server does not have is refused (issue 16, a new-user trial):
`policy everything ecoh allow` stored `{"ecoh": "allow"}`, disabled the server, and the real `echo`
still asked. Now MCP_TOOL_NOT_FOUND with did-you-mean, nothing stored, nothing disabled, while the
server's tools are known (its last successful test, or its live session); before they are, the
name is accepted with a TOOL_NOT_KNOWN_YET warning (R-5.2, R-5.3, R-1.4)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import ready_with_cli, run_cli


def _shown(data: Path, server_id: str) -> dict[str, object]:
    return json.loads(run_cli(data, "show", server_id).stdout)


def test_a_policy_for_a_tool_the_server_does_not_list_is_refused_and_changes_nothing(
    tmp_path: Path, echo_url: str
) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "add", "Echo", "--url", echo_url).returncode == 0
    ready_with_cli(data, "echo")
    typo = run_cli(data, "policy", "echo", "ecoh", "allow")
    assert typo.returncode == 3, typo.stdout
    assert typo.stderr.startswith(
        "error [MCP_TOOL_NOT_FOUND]: server 'echo' has no tool 'ecoh' (as of its last test; if it has added "
        "tools since, test it again): nothing changed"
    )
    assert "did you mean: echo?" in typo.stderr
    shown = _shown(data, "echo")
    assert (shown["tool_policies"], shown["enabled"], shown["trusted"]) == ({}, True, True)
    # A real tool's policy is a change (trust cleared); the tool names stay known for the next one.
    assert run_cli(data, "policy", "echo", "echo", "allow").returncode == 0
    again = run_cli(data, "policy", "echo", "ad", "deny")
    assert again.returncode == 3 and "did you mean: add?" in again.stderr
    assert _shown(data, "echo")["tool_policies"] == {"echo": "allow"}


def test_before_any_test_a_policy_is_accepted_with_a_warning_naming_the_tool(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "add", "Other", "--", "echo", "hi").returncode == 0
    accepted = run_cli(data, "policy", "other", "fetch", "deny")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.splitlines()[0] == "fetch of other: deny"
    assert "warning [TOOL_NOT_KNOWN_YET]: the tools of 'other' are not known yet" in accepted.stderr
    assert "'fetch' could not be checked" in accepted.stderr
    assert _shown(data, "other")["tool_policies"] == {"fetch": "deny"}
