"""A policy or trust that is already in place says "unchanged" and changes nothing (issue 16 item 5,
R-1.3, R-2.1, R-5.3).

`policy ID TOOL ask` on a tool that was already `ask` printed as if it had changed and bumped the
server's version (an update of nothing); `trust` of a trusted server asked again and rewrote it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli


def show(data: Path, server_id: str) -> dict[str, Any]:
    shown = run_cli(data, "show", server_id)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def without_status(view: dict[str, Any]) -> dict[str, Any]:
    """The stored server (its live `status` is read anew each time)."""
    return {k: v for k, v in view.items() if k != "status"}


def test_a_policy_already_set_is_unchanged_and_keeps_the_version(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "local", "--", sys.executable, "-c", "pass").returncode == 0
    before = show(tmp_path, "local")
    same = run_cli(tmp_path, "policy", "local", "add", "ask")  # ask is every tool's default
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines() == ["add of local: already ask; unchanged"]
    assert show(tmp_path, "local")["version"] == before["version"]
    changed = run_cli(tmp_path, "policy", "local", "add", "allow")
    assert changed.stdout.splitlines()[0] == "add of local: allow"
    after = show(tmp_path, "local")
    assert after["version"] == before["version"] + 1
    again = run_cli(tmp_path, "policy", "local", "add", "allow")
    assert again.stdout.splitlines() == ["add of local: already allow; unchanged"]
    assert without_status(show(tmp_path, "local")) == without_status(after)


def test_trusting_a_trusted_server_says_so_and_writes_nothing(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "local", "--", sys.executable, "-c", "pass").returncode == 0
    first = run_cli(tmp_path, "trust", "local", "--yes")
    assert first.stdout.splitlines()[-1] == "trusted; next: mcp-center test local"
    trusted = show(tmp_path, "local")
    # No --yes and stdin closed: a question would fail with CONFIRMATION_REQUIRED; none is asked.
    again = run_cli(tmp_path, "trust", "local", input="")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == (
        "local is already trusted with this digest; nothing changed; next: mcp-center test local"
    )
    assert without_status(show(tmp_path, "local")) == without_status(trusted)
