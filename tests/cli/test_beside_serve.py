"""`enable`, `disable`, `test` and `tools` beside the serve of their data directory go through its REST
API (cli39, R-9.2): run in-process they started a copy of the server of their own (`enable` printed
that copy's state, `tools` listed what it offered a client declaring no roots, sampling or
elicitation: 13 of server-everything's 16 tools) and spent seconds of CPU on the host's imports.

Each start of the server appends its parent's pid to a marker file: every start must be the serve's.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.mcp_servers import EVERYTHING
from tests.support.serve import ADMIN_TOKEN, Host

HIDDEN_FROM_A_BARE_CLIENT = {"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}
"""server-everything's tools offered only to a client that declares roots, elicitation and sampling."""


def run(data_dir: Path, *args: str) -> CliResult:
    """The CLI as a user beside the serve runs it (that serve's admin token in the environment)."""
    return run_cli(data_dir, *args, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})


def starts(marker: Path) -> list[int]:
    """The parent pid of each start of the marked server so far (the process that started it)."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def test_enable_test_tools_and_disable_beside_a_serve_start_no_server_of_their_own(
    shared_serve: Host, tmp_path: Path
) -> None:
    if not EVERYTHING.exists():
        pytest.fail("the npm test servers are missing: run scripts/bootstrap --dev")
    host, data = shared_serve, shared_serve.data_dir
    marker = tmp_path / "starts"
    script = f"echo $PPID >> {shlex.quote(str(marker))}; exec node {shlex.quote(str(EVERYTHING))} stdio"
    assert run(data, "add", "Everything", "--", "sh", "-c", script).returncode == 0
    assert run(data, "trust", "everything", "--yes").returncode == 0

    tested = run(data, "test", "everything")
    assert tested.returncode == 0, tested.stderr
    assert "16 tools" in tested.stdout
    assert starts(marker) == [host.proc.pid]  # the serve ran the test
    assert host.client.get("/api/mcp/servers/everything").json()["last_test"]["tool_count"] == 16

    enabled = run(data, "enable", "everything")
    assert enabled.returncode == 0, enabled.stderr
    state = host.client.get("/api/mcp/servers/everything").json()["status"]["state"]
    assert enabled.stdout == f"enabled everything (state: {state})\n"  # the serve's state, not a copy's
    assert state == "ready"
    assert starts(marker) == [host.proc.pid] * 2

    listed = run(data, "tools", "everything", "--json")
    assert listed.returncode == 0, listed.stderr
    names = [tool["name"] for tool in json.loads(listed.stdout)]
    served = host.client.get("/api/mcp/servers/everything/tools").json()["tools"]
    assert names == [tool["name"] for tool in served]  # what the serve, the page and agents see
    assert set(names) >= HIDDEN_FROM_A_BARE_CLIENT
    table = run(data, "tools", "everything")
    assert table.returncode == 0, table.stderr
    assert "trigger-sampling-request" in table.stdout

    disabled = run(data, "disable", "everything")
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout == "disabled everything\n"
    assert host.client.get("/api/mcp/servers/everything").json()["status"]["state"] == "disconnected"
    assert starts(marker) == [host.proc.pid] * 2  # tools and disable started nothing
    assert os.getpid() != host.proc.pid


def test_the_serves_errors_keep_their_codes_exit_codes_and_next_steps(shared_serve: Host) -> None:
    """A refusal the serve answers prints as the same refusal in-process would: its code, its next
    step, the did-you-mean and where it looked, and the exit code of README's table."""
    data = shared_serve.data_dir
    assert run(data, "add", "Clock", "--", "sh", "-c", "exit 1").returncode == 0

    untested = run(data, "enable", "clock")
    assert untested.returncode == 4  # a Conflict
    assert untested.stderr.splitlines()[0].startswith("error [MCP_SERVER_NOT_TRUSTED]: ")
    assert "  next: mcp-center trust clock" in untested.stderr

    unknown = run(data, "tools", "clokc")
    assert unknown.returncode == 3
    assert unknown.stderr.splitlines()[:2] == [
        "error [MCP_SERVER_NOT_FOUND]: no server with id 'clokc'",
        "  did you mean: clock?",
    ]
    assert f"looked in {data}" in unknown.stderr

    disabled = run(data, "tools", "clock")
    assert disabled.returncode == 4
    assert disabled.stderr.splitlines()[0] == "error [MCP_SERVER_DISABLED]: server 'clock' is not enabled"

    assert run(data, "trust", "clock", "--yes").returncode == 0
    failed = run(data, "test", "clock")
    assert failed.returncode == 1
    said, first = failed.stderr.splitlines()[:2]
    assert said == "testing clock: starting it (a first start may download packages)..."
    assert first.startswith("failed [MCP_SERVER_UNREACHABLE]: the server process exited with code 1")

    log = shared_serve.log()  # the serve answered each of them (its access log)
    for request in (
        '"POST /api/mcp/servers/clock/enable HTTP/1.1" 409',
        '"GET /api/mcp/servers/clokc/tools HTTP/1.1" 404',
        '"GET /api/mcp/servers/clock/tools HTTP/1.1" 409',
        '"POST /api/mcp/servers/clock/test HTTP/1.1" 200',
    ):
        assert request in log, request


def test_a_start_beside_a_serve_is_waited_for_as_long_as_its_startup_timeout_allows(shared_serve: Host) -> None:
    """break39: `enable` beside a serve gave up after a fixed 120 s and blamed the serve, for a server
    whose startup_timeout_s (up to 600 s) allowed longer; the wait is that timeout plus a margin, read
    from the server's view the command asks the serve for first (`served`)."""
    from mcp_center.cli._served import CHANGE_TIMEOUT_S, START_MARGIN_S, start_wait_s

    body = {"name": "Slowish", "transport": "stdio", "command": "true", "startup_timeout_s": 200}
    assert shared_serve.client.post("/api/mcp/servers", json=body).status_code == 201
    view = shared_serve.client.get("/api/mcp/servers/slowish").json()
    assert start_wait_s(view) == 200 + START_MARGIN_S
    assert start_wait_s({"startup_timeout_s": 5}) == CHANGE_TIMEOUT_S  # never less than a change's wait
    unknown = shared_serve.client.get("/api/mcp/servers/nope").json()
    assert start_wait_s(unknown) == CHANGE_TIMEOUT_S  # an error answer: the request itself says what is wrong
    assert start_wait_s(None) == CHANGE_TIMEOUT_S
