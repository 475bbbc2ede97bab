"""The CLI names the data directory it used and says whether a serve owns it (issue 11, R-9.2).

The trap: `serve --data-dir X`, then a command without `--data-dir` silently used (or created) the
default directory — a token the gateway rejected, "no servers yet", nothing saying where it looked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from tests.support.cli import CliResult, run_cli
from tests.support.gateway import gateway_client
from tests.support.serve import ADMIN_TOKEN, running_host


def run(data_dir: Path, *args: str, token: bool = False) -> CliResult:
    return run_cli(data_dir, *args, columns=250, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN} if token else None)


def test_list_of_a_missing_data_directory_says_where_it_looked_and_creates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "nowhere"
    listed = run(data, "list")
    assert listed.returncode == 0, listed.stderr
    assert f"no servers yet in {data} (data directory, which does not exist)" in listed.stdout
    assert f"no mcp-center serve runs on {data}" in listed.stdout
    assert not data.exists()
    assert run(data, "list", "--json").stdout.strip() == "[]"
    assert not data.exists()


def test_a_server_not_found_names_the_data_directory_and_nothing_is_created(tmp_path: Path) -> None:
    data = tmp_path / "nowhere"
    for command in (["show", "nope"], ["call", "nope", "tool"]):
        missing = run(data, *command)
        assert missing.returncode == 3, (command, missing.stderr)
        assert "MCP_SERVER_NOT_FOUND" in missing.stderr
        assert f"looked in {data} (data directory, which does not exist)" in missing.stderr
    assert not data.exists()
    assert run(data, "add", "Local", "--", sys.executable, "-c", "pass").returncode == 0
    missing = run(data, "show", "nope")
    assert missing.returncode == 3
    assert f"looked in {data} (data directory);" in missing.stderr


def test_add_and_list_name_the_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    added = run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    assert added.returncode == 0, added.stderr
    assert f"added local to {data} (data directory" in added.stdout
    listed = run(data, "list")
    assert "local" in listed.stdout
    assert f"{data} (data directory)" in listed.stdout


def test_a_token_created_beside_no_serve_says_it_works_once_serve_runs_there(tmp_path: Path) -> None:
    data = tmp_path / "data"
    created = run(data, "gateway", "token", "create", "agent")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("mcpg_") and "\n" not in token, "stdout holds the token alone"
    assert f"in {data} (data directory" in created.stderr
    assert f"no mcp-center serve runs on {data}: the token works once 'mcp-center serve --data-dir {data}' runs" in (
        created.stderr
    )
    listed = run(data, "gateway", "token", "list")
    assert "agent" in listed.stdout and f"{data} (data directory)" in listed.stdout
    empty = run(tmp_path / "other", "gateway", "token", "list")
    assert f"no gateway tokens in {tmp_path / 'other'} (data directory, which does not exist)" in empty.stdout


def test_a_token_created_beside_a_running_serve_is_accepted_by_its_gateway(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        created = run(host.data_dir, "gateway", "token", "create", "agent")
        assert created.returncode == 0, created.stderr
        assert f"the serve of this data directory (pid {host.proc.pid}, {host.url}) accepts it now" in created.stderr
        token = created.stdout.strip()

        async def connect() -> None:
            async with gateway_client(host.url, token) as client:
                await client.list_tools()

        anyio.run(connect)


def test_commands_that_need_a_running_serve_say_none_runs_on_the_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    approvals = run(data, "approvals", token=True)
    assert approvals.returncode == 7
    assert "MCP_SERVER_UNREACHABLE" in approvals.stderr
    assert f"no mcp-center serve runs on the data directory {data}" in approvals.stderr
    assert "--url" in approvals.stderr
    # No serve ever ran (no admin token either): still "none runs" (exit 7), not ADMIN_AUTH_REQUIRED.
    no_token = run(data, "approvals")
    assert no_token.returncode == 7
    assert f"no mcp-center serve runs on the data directory {data}" in no_token.stderr
    exported = run(data, "export", "--format", "cursor", "--gateway")
    assert exported.returncode == 0, exported.stderr
    # cli36: the address is not "the default address" of a host that runs: none does yet.
    assert (
        f"no mcp-center serve runs on {data}: this is the address a serve of this data directory would use by default"
        in exported.stderr
    ), exported.stderr
    assert "export again once it runs" in exported.stderr
    assert "this is the default address" not in exported.stderr
    auth = run(data, "auth", "local", token=True)
    assert auth.returncode == 7
    assert f"no mcp-center serve runs on {data}" in auth.stderr


def test_a_data_directory_that_cannot_be_created_is_one_storage_error_line(tmp_path: Path) -> None:
    """A data directory under a regular file (or anywhere mkdir fails) is `STORAGE_ERROR` naming the
    path, exit 1, no traceback: every command that creates the directory (R-9.2, R-10.1). `export`
    only reads, so it no longer creates one (`test_verbs_that_only_read_create_nothing_...`)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    data = blocker / "data"
    for command in (
        ["add", "Local", "--", sys.executable, "-c", "pass"],
        ["gateway", "token", "create", "agent"],
    ):
        failed = run(data, *command)
        assert failed.returncode == 1, (command, failed.stderr)
        assert "Traceback" not in failed.stderr, (command, failed.stderr)
        first = failed.stderr.strip().splitlines()[0]
        assert first.startswith("error [STORAGE_ERROR]: "), (command, failed.stderr)
        assert str(data) in first, (command, first)
    # `revoke` only changes an existing token: it never creates the directory, so it is not found.
    revoke = run(data, "gateway", "token", "revoke", "nope")
    assert revoke.returncode == 3, revoke.stderr
    assert revoke.stderr.startswith("error [GATEWAY_TOKEN_NOT_FOUND]: ")


def test_verbs_that_only_read_create_nothing_in_a_data_directory_without_servers(tmp_path: Path) -> None:
    """A directory that exists but holds no servers (no mcp/: a serve's record, a new folder) got a
    secret.key and mcp/ from `list` and the other verbs that only read (R-9.2)."""
    data = tmp_path / "data"
    data.mkdir()
    for argv in (
        ("list",),
        ("list", "--json"),
        ("show", "nope"),
        ("tools", "nope"),
        ("prompts",),
        ("resources",),
        ("gateway", "token", "list"),
        ("export", "--format", "claude-desktop"),
        ("export", "--format", "cursor", "--gateway"),
    ):
        done = run(data, *argv)
        assert done.returncode in {0, 3}, (argv, done.stderr)
        assert list(data.iterdir()) == [], argv
    assert json.loads(run(data, "export", "--format", "claude-desktop").stdout) == {"mcpServers": {}}


def test_a_data_directory_named_with_an_emoji_code_is_printed_as_written(tmp_path: Path) -> None:
    # rich would print `:thumbs_up:` as the emoji: the consoles print what they are given (and
    # `serve` does not load rich's emoji table, R-8.3).
    data = tmp_path / "team:thumbs_up:data"
    listed = run(data, "list")
    assert listed.returncode == 0, listed.stderr
    assert f"no servers yet in {data} (data directory, which does not exist)" in listed.stdout


def test_the_bridge_without_a_token_suggests_creating_one_in_its_data_directory(tmp_path: Path) -> None:
    """`gateway --stdio --data-dir K` suggested `gateway token create NAME` without `--data-dir K`:
    the token landed in the default directory, whose serve is not K's (issue 16, F7)."""
    data = tmp_path / "K"
    bridge = run_cli(None, "gateway", "--stdio", "--data-dir", str(data), env={"MCP_CENTER_GATEWAY_TOKEN": ""})
    assert bridge.returncode == 6  # GATEWAY_AUTH_REQUIRED, the gateway's own code for a request with no token
    assert bridge.stderr.startswith("error [GATEWAY_AUTH_REQUIRED]: set MCP_CENTER_GATEWAY_TOKEN"), bridge.stderr
    assert f"mcp-center gateway token create NAME --data-dir {data}" in bridge.stderr
