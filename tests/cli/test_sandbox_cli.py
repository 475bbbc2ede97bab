"""The CLI and sandboxes (R-11.1, R-11.2): `add` sets a policy, `list`, `show` and `trust` show it,
`test` runs the server sandboxed in the CLI's own process, `sandbox check` and `sandbox warm-up`
say what they did, and `logs` marks what the sandbox refused (through a running serve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_center.cli._sandbox import warm_up_lines
from mcp_center.transports import WarmUpResult
from tests.cli.test_cli import run
from tests.support.cli import run_cli
from tests.support.sandbox import escape_command, require_sandbox
from tests.support.serve import ADMIN_TOKEN, Host


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


def add_escape(data: Path, *options: str) -> None:
    argv, paths = escape_command()
    path_options = [arg for p in paths for arg in ("--sandbox-path", p.path)]
    added = run(data, "add", "Escape", *options, *path_options, "--", *argv)
    assert added.returncode == 0, added.stderr


def test_add_sets_the_policy_and_list_show_and_trust_show_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    add_escape(data, "--network", "egress", "--memory-mb", "0", "--sandbox-path", f"rw:{out_dir}")
    shown = json.loads(run(data, "show", "escape").stdout)
    assert shown["sandbox"]["network"] == "egress" and shown["sandbox"]["memory_mb"] is None
    assert {"path": str(out_dir), "writable": True} in shown["sandbox"]["paths"]
    assert shown["sandbox_host"]["available"] is True
    listed = run(data, "list")
    assert "sandboxed (network egress)" in listed.stdout, listed.stdout
    trusted = run(data, "trust", "escape", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert '"network": "egress"' in trusted.stdout
    tested = run(data, "test", "escape")
    assert tested.returncode == 0, tested.stderr
    assert "11 tools" in tested.stdout


def test_an_unconfined_stdio_server_is_listed_as_such(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv, _ = escape_command()
    assert run(data, "add", "Plain", "--", *argv).returncode == 0
    assert "unconfined" in run(data, "list").stdout


def test_a_policy_for_a_remote_server_is_refused_and_nothing_is_added(tmp_path: Path) -> None:
    data = tmp_path / "data"
    refused = run(data, "add", "Docs", "https://mcp.example.com/mcp", "--network", "egress")
    assert refused.returncode == 2, refused.stderr
    assert "[REQUEST_INVALID]" in refused.stderr and "only a stdio server runs in a sandbox" in refused.stderr
    assert "docs" not in run(data, "list").stdout


def test_production_refuses_the_unconfined_and_runs_the_sandboxed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv, _ = escape_command()
    assert run(data, "add", "Plain", "--", *argv).returncode == 0
    add_escape(data, "--sandbox")
    for server_id in ("plain", "escape"):
        assert run(data, "trust", server_id, "--yes").returncode == 0
    refused = run(data, "test", "plain", "--profile", "production")
    assert refused.returncode == 5 and "MCP_SANDBOX_REQUIRED" in refused.stderr
    assert "sandbox" in refused.stderr, "the message says what to add"
    allowed = run(data, "test", "escape", "--profile", "production")
    assert allowed.returncode == 0, allowed.stderr


def test_sandbox_check_and_a_warm_up_that_does_not_apply(tmp_path: Path) -> None:
    data = tmp_path / "data"
    checked = run(data, "sandbox", "check")
    assert checked.returncode == 0 and "sandboxes work here" in checked.stdout
    add_escape(data, "--sandbox")
    assert run(data, "trust", "escape", "--yes").returncode == 0
    warmed = run(data, "sandbox", "warm-up", "escape")
    assert warmed.returncode == 2 and "MCP_SANDBOX_WARM_UP_UNSUPPORTED" in warmed.stderr


def test_logs_mark_what_the_sandbox_refused(shared_serve: Host) -> None:
    """`logs` against a running serve (the worker's shared one) marks the sandbox's refusal."""
    argv, paths = escape_command()
    body = {
        "name": "Escape",
        "transport": "stdio",
        "command": argv[0],
        "args": argv[1:],
        "sandbox": {"paths": [p.model_dump() for p in paths]},
    }
    host = shared_serve
    view = host.client.post("/api/mcp/servers", json=body).json()
    host.client.post("/api/mcp/servers/escape/trust", json={"digest": view["digest"]})
    assert host.client.post("/api/mcp/servers/escape/test").json()["ok"]
    host.client.post("/api/mcp/servers/escape/enable")
    call = host.client.post("/api/mcp/servers/escape/tools/write_file/call", json={"arguments": {"path": "/etc/x"}})
    assert call.json()["isError"] is True
    shown = run_cli(
        None,
        "logs",
        "escape",
        "--url",
        host.url,
        "--data-dir",
        str(host.data_dir),
        env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN},  # the host's admin token, as serve has it
    )
    assert shown.returncode == 0, shown.stderr
    assert any("tools/call ok" in line and "[sandbox: filesystem EROFS]" in line for line in shown.stdout.splitlines())


def test_a_warm_up_names_the_instances_that_warm_their_own_copies() -> None:
    """R-10.2 (inst36): after a success the CLI says which other instances follow; alone, nothing."""
    result = WarmUpResult(True, ("/usr/bin/npx", "--yes"), 0, 12, (), instance="a", others=("b", "c"))
    lines = warm_up_lines("offline", result)
    assert lines[-1] == "  the other instances warm their own copies in the background: b, c"
    alone = warm_up_lines("offline", WarmUpResult(True, ("/usr/bin/npx",), 0, 12, (), instance="a"))
    assert not any("other instances" in line for line in alone)
