"""The first hour on the command line (issue 15): `add` takes `-e KEY=value` and `-H "Name: value"`
as `claude mcp add` users type them (credential-looking values become write-only secrets, and it
says so), `list` shows the live state and tool count of a running `serve` in 80 columns without
cutting ids, unknown ids get the closest ones, and `mcp-center test` counts the tools serve sees."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_center.cli import host, listing
from mcp_center.config import Settings
from mcp_center.models import ErrorReason
from mcp_center.store.owner import FileOwnerLock, ServeOwner
from mcp_center.store.running import running_owner, running_url
from tests.support.cli import CliResult, ready_with_cli, run_cli
from tests.support.mcp_servers import EVERYTHING
from tests.support.serve import ADMIN_TOKEN, Host, running_host
from tests.support.slow_serves import SLOW_SERVES


def run(data_dir: Path, *args: str, columns: int = 200) -> CliResult:
    """The CLI, in process, as a user beside `running_host` runs it (that serve's admin token in the environment)."""
    return run_cli(data_dir, *args, columns=columns, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})


def wait_for_state(host: Host, server_id: str, state: str, timeout_s: float = 60.0) -> dict[str, object]:
    """The server's status once serve reports `state` (polled: serve runs in another process)."""
    deadline = time.monotonic() + timeout_s
    status: dict[str, object] = {}
    while time.monotonic() < deadline:
        status = host.client.get(f"/api/mcp/servers/{server_id}").json()["status"]
        if status["state"] == state:
            return status
        time.sleep(0.1)
    raise AssertionError(f"{server_id} never became {state}: {status}")


def test_env_and_header_values_that_look_like_credentials_become_secrets_and_it_says_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = "ghp_0123456789abcdefghij"
    added = run(data, "add", "GitHub", "-e", f"GITHUB_TOKEN={token}", "-e", "LOG_LEVEL=debug", "--", "node", "gh.js")
    assert added.returncode == 0, added.stderr
    assert "stored as write-only secrets (encrypted, never shown again): env GITHUB_TOKEN" in added.stdout
    assert token not in added.stdout + added.stderr
    shown = json.loads(run(data, "show", "github").stdout)
    assert shown["env"] == {"LOG_LEVEL": "debug"}
    assert shown["secret_env"] == {"GITHUB_TOKEN": {"configured": True}}
    assert token not in (data / "mcp" / "servers.json").read_text()

    bearer = "abc123-bearer-token"
    remote = run(
        data,
        "add",
        "Docs",
        "https://mcp.example.com/mcp",
        "-H",
        f"Authorization: Bearer {bearer}",
        "-H",
        "X-Api-Key: key-0123456789",
        "-H",
        "X-Team: blue",
        "--transport",
        "http",
    )
    assert remote.returncode == 0, remote.stderr
    assert "bearer token (auth: bearer), header X-Api-Key" in remote.stdout
    docs = json.loads(run(data, "show", "docs").stdout)
    assert docs["transport"] == "streamable_http"
    assert docs["headers"] == {"X-Team": "blue"}
    assert docs["auth"] == {"kind": "bearer", "token": {"configured": True}}
    assert docs["secret_headers"] == {"X-Api-Key": {"configured": True}}
    assert bearer not in (data / "mcp" / "servers.json").read_text()

    kept = run(data, "add", "Plain", "-e", "TOKEN_FORMAT=jwt", "--plain", "TOKEN_FORMAT", "--", "node", "x.js")
    assert kept.returncode == 0, kept.stderr
    assert "secrets" not in kept.stdout
    assert json.loads(run(data, "show", "plain").stdout)["env"] == {"TOKEN_FORMAT": "jwt"}


def test_malformed_options_and_a_second_server_of_the_same_name_are_said_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bad = run(data, "add", "X", "-e", "NOEQUALS", "--", "node", "x.js")
    assert bad.returncode == 2
    assert "--env: expected KEY=value" in bad.stderr
    wrong = run(data, "add", "X", "https://mcp.example.com/mcp", "-e", "A=1")
    assert wrong.returncode == 2
    assert "[REQUEST_INVALID]" in wrong.stderr
    assert run(data, "add", "Time", "--", "uvx", "mcp-server-time").returncode == 0
    again = run(data, "add", "time", "--id", "time-2", "--", "uvx", "mcp-server-time")
    assert again.returncode == 0, again.stderr
    assert "another server is already named 'time' (time)" in again.stderr


def test_unknown_ids_get_the_closest_existing_ones(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(data, "add", "Everything", "--", "node", "everything.js").returncode == 0
    missing = run(data, "show", "everythng")
    assert missing.returncode == 3
    assert "MCP_SERVER_NOT_FOUND" in missing.stderr
    assert "did you mean: everything?" in missing.stderr


def test_list_shows_live_state_and_tool_count_in_80_columns_without_cutting_ids(tmp_path: Path, echo_url: str) -> None:
    long_id = "a-long-server-identifier-nr-1"
    with running_host(tmp_path) as host:
        data = host.data_dir
        assert run(data, "add", "Echo", echo_url).returncode == 0
        added = run(data, "add", "An echo server with a rather long display name", "--id", long_id, echo_url)
        assert added.returncode == 0, added.stderr
        for server_id in ("echo", long_id):
            ready_with_cli(data, server_id, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})
            wait_for_state(host, server_id, "ready")
        listed = run(data, "list", columns=80)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert all(len(line) <= 80 for line in lines), listed.stdout
        rows = {
            line.split()[0]: line.split() for line in lines if line.strip() and line.split()[0] in {"echo", long_id}
        }
        assert set(rows) == {"echo", long_id}, listed.stdout
        assert rows["echo"][-3:] == ["ready", "4", "-"]
        assert rows[long_id][-3:] == ["ready", "4", "-"]
        live = json.loads(run(data, "list", "--json").stdout)
        assert {s["id"]: s["status"]["tool_count"] for s in live} == {"echo": 4, long_id: 4}
        assert run(data, "disable", "echo").returncode == 0
        wait_for_state(host, "echo", "disconnected")
        assert run(data, "list", columns=80).stdout.count(" off ") == 1
    stopped = run(data, "list", columns=80)
    assert "none answered" in stopped.stderr
    assert "ready" not in stopped.stdout


def test_the_cli_test_counts_the_tools_serve_sees(shared_serve: Host) -> None:
    """server-everything lists tools by the client's capabilities: the CLI's test connection must
    advertise what serve's live session does, or the page shows two counts on one row. (The
    worker's shared serve: the CLI finds it through its data directory, as a user's would.)"""
    if not EVERYTHING.exists():
        pytest.fail("the npm test servers are missing: run scripts/bootstrap --dev")
    host = shared_serve
    data = host.data_dir
    assert run(data, "add", "Everything", "--", "node", str(EVERYTHING), "stdio").returncode == 0
    assert run(data, "trust", "everything", "--yes").returncode == 0
    tested = run(data, "test", "everything")
    assert tested.returncode == 0, tested.stderr
    match = re.search(r"(\d+) tools", tested.stdout)
    assert match is not None, tested.stdout
    assert run(data, "enable", "everything").returncode == 0
    status = wait_for_state(host, "everything", "ready")
    assert status["tool_count"] == int(match.group(1))
    assert host.client.get("/api/mcp/servers/everything").json()["last_test"]["tool_count"] == int(match.group(1))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["docs", "https://mcp.example.com/mcp", "-H", "Authorization: Bearer "], "--header Authorization"),
        (["docs", "https://mcp.example.com/mcp", "-H", "X-Api-Key:"], "--header X-Api-Key"),
        (["gh", "-e", "GITHUB_TOKEN=", "--", "npx", "-y", "server-github"], "--env GITHUB_TOKEN"),
    ],
)
def test_a_credential_left_empty_by_an_unset_shell_variable_is_refused_and_nothing_is_stored(
    tmp_path: Path, args: list[str], field: str
) -> None:
    """`-H "Authorization: Bearer $DOCS_TOKEN"` with DOCS_TOKEN unset used to store `Bearer` as the
    secret header (R-1.5): now exit 2, field code CREDENTIAL_EMPTY naming it, and nothing added."""
    data = tmp_path / "data"
    refused = run(data, "add", *args)
    assert refused.returncode == 2, refused.stdout
    assert f"{field}: " in refused.stderr
    assert "[CREDENTIAL_EMPTY]" in refused.stderr
    assert "probably unset" in refused.stderr
    assert refused.stderr.count("probably unset") == 1  # said once, not again as a field line
    listed = run(data, "list", "--json")
    assert json.loads(listed.stdout) == []
    # A plain, non-credential variable may be empty.
    assert run(data, "add", "quiet", "-e", "DEBUG=", "--", "npx", "-y", "x").returncode == 0


def test_list_at_80_columns_gives_each_command_the_whole_width_and_wide_terminals_keep_the_table(
    tmp_path: Path,
) -> None:
    """At 80 columns the table left a command the name's column (about 38 characters): `npx -y
    @modelcontextprotocol/server-github@2025.4.8` took three lines broken inside words (issue 16).
    Now each server is one line (a long name ends in "…", never the id) with its command whole at
    the terminal's width under it; 120 columns and more keep the table."""
    data = tmp_path / "data"
    package = "@modelcontextprotocol/server-github@2025.4.8"
    name = "GitHub for the platform team's staging and production organisations"
    added = run(data, "add", name, "--id", "github", "-e", "LOG=1", "--", "npx", "-y", package)
    assert added.returncode == 0, added.stderr
    narrow = run(data, "list", columns=80)
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), narrow.stdout
    assert lines[0].split() == ["id", "name", "type", "on", "next"]
    [row] = [line for line in lines if line.startswith("github ")]
    assert row.split()[-3:] == ["stdio", "no", "trust"] and "…" in row and name not in row
    assert f"  npx -y {package}" in lines and "  unconfined" in lines
    wide = run(data, "list", columns=160).stdout.splitlines()
    assert any(name in line for line in wide), wide
    assert not any(line.startswith("  npx") for line in wide)  # in the name's column of the table


@pytest.mark.parametrize("columns", [40, 57, 80])
def test_list_with_a_32_character_id_fits_40_to_80_columns(tmp_path: Path, columns: int) -> None:
    """At 40-57 columns a 32-character id left the name no room: the header and every row wrapped
    (issue 16). Below the row's width the id stands alone on its line, never cut, and the rest goes
    under it; from the row's width up (80 here) the one-line rows stay."""
    data = tmp_path / "data"
    long_id = "platform-team-github-production1"
    assert len(long_id) == 32
    added = run(data, "add", "GitHub for the platform team", "--id", long_id, "--", "npx", "-y", "gh-mcp")
    assert added.returncode == 0, added.stderr
    listed = run(data, "list", columns=columns)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), listed.stdout
    if columns == 80:
        assert lines[0].split() == ["id", "name", "type", "on", "next"]
        [row] = [line for line in lines if line.startswith(long_id)]
        assert row.split()[-3:] == ["stdio", "no", "trust"]
    else:
        assert lines[:3] == ["id", "  name", "  type · on · next"]
        at = lines.index(long_id)
        assert lines[at + 1 : at + 5] == [
            "  GitHub for the platform team",
            "  stdio · off · next: trust",
            "  npx -y gh-mcp",
            "  unconfined",
        ]


def test_an_accented_name_keeps_its_letters_in_the_id_and_existing_ids_stay(tmp_path: Path) -> None:
    """ "Café" became the id "caf" (and "mcp__caf__..." tool names): the accented letter was dropped.
    New servers now get "cafe"; a server registered before with "caf" keeps it, and an import of
    the same name is made unique beside both (R-1.1, R-1.8, issue 16)."""
    data = tmp_path / "data"
    assert run(data, "add", "Café", "--id", "caf", "--", "uvx", "cafe-mcp").returncode == 0  # as stored before
    # Another configuration: the same one again is refused (MCP_SERVER_ALREADY_REGISTERED, test_add_twice).
    added = run(data, "add", "Café", "--", "uvx", "cafe-mcp", "--stdio")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added cafe to ")
    source = tmp_path / ".mcp.json"
    source.write_text(json.dumps({"mcpServers": {"Café": {"command": "uvx", "args": ["cafe-mcp", "--v2"]}}}))
    imported = run(data, "import", str(source), "--yes", "--on-conflict", "rename")
    assert imported.returncode == 0, imported.stderr
    listed = json.loads(run(data, "list", "--json").stdout)
    assert sorted(s["id"] for s in listed) == ["caf", "cafe", "cafe-2"]
    assert {s["name"] for s in listed} == {"Café"}


def test_a_copy_of_a_served_data_directory_is_read_from_its_own_files(tmp_path: Path) -> None:
    """`cp -a data copy` while data's serve runs copies its serve.json (a live pid, the same admin
    token): `list` and `show` in the copy must not take that serve's views for the copy's, and no
    verb that looks for "the serve of this directory" finds it there (issue 16, R-9.2)."""
    with running_host(tmp_path) as host:
        data = host.data_dir
        assert run(data, "add", "Kept", "--", "node", "kept.js").returncode == 0
        copy = tmp_path / "copy"
        subprocess.run(["cp", "-a", str(data), str(copy)], check=True)
        assert (copy / "serve.json").read_bytes() == (data / "serve.json").read_bytes()
        assert run(data, "add", "Only", "--", "node", "only.js").returncode == 0  # only the original has it
        owner = running_owner(data)
        assert owner is not None and owner.pid == host.proc.pid
        assert (running_owner(copy), running_url(copy)) == (None, None)  # approvals, auth, gateway --stdio use these

        listed = run(copy, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [s["id"] for s in json.loads(listed.stdout)] == ["kept"]
        table = run(copy, "list")
        assert "none answered" in table.stderr  # no serve runs for the copy
        assert "kept" in table.stdout and "only" not in table.stdout
        missing = run(copy, "show", "only")
        assert missing.returncode == 3
        assert "MCP_SERVER_NOT_FOUND" in missing.stderr
        assert json.loads(run(copy, "show", "kept").stdout)["id"] == "kept"
        approvals = run(copy, "approvals")  # the verbs that talk to the serve do not find it either
        assert approvals.returncode == 7
        assert f"no mcp-center serve runs on the data directory {copy}" in " ".join(approvals.stderr.split())
        served = json.loads(run(data, "list", "--json").stdout)  # the original is still its serve's
        assert sorted(s["id"] for s in served) == ["kept", "only"]


@pytest.mark.parametrize("kind", SLOW_SERVES)
def test_a_serve_that_never_answers_is_waited_for_once_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A serve that accepts connections but never answers (stopped, hung), or sends its answer a byte
    at a time (every read gets one before a per-read timeout; issue 16, F4): `list` and `show` wait
    `LIVE_TIMEOUT_S` once in all, say so in one line on stderr, and answer from the data directory
    (exit 0) (issue 16)."""
    data = tmp_path / "data"
    assert run(data, "add", "Kept", "--", "node", "kept.js").returncode == 0
    monkeypatch.setattr(listing, "LIVE_TIMEOUT_S", 0.3)
    with SLOW_SERVES[kind]() as url:
        lock = FileOwnerLock(data)
        lock.claim(ServeOwner.this_process(url))  # this live test process is the directory's serve
        try:
            started = time.monotonic()
            listed = run(data, "list", "--json")
            shown = run(data, "show", "kept")
            table = run(data, "list")
            elapsed = time.monotonic() - started
        finally:
            lock.release()
    said = f"the serve on {url} did not answer within 0.3 s; showing the data directory's view"
    for result in (listed, shown, table):
        assert result.returncode == 0, result.stderr
        assert result.stderr.count("did not answer") == 1, result.stderr  # one wait per command
        assert said in " ".join(result.stderr.split()), result.stderr
        assert "none answered" not in result.stderr
    assert [s["id"] for s in json.loads(listed.stdout)] == ["kept"]
    assert json.loads(shown.stdout)["id"] == "kept"
    assert "kept" in table.stdout
    assert elapsed < 10, elapsed  # a trickle is cut after 15 s: without one deadline, 45 s


@pytest.mark.parametrize("kind", SLOW_SERVES)
def test_approvals_and_logs_wait_once_for_a_serve_that_never_answers_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """`approvals list` and `logs` waited 31 s for a serve that accepts and never answers (`list`/`show`
    5 s), and for ever for one that sends a byte at a time (F4): one bounded wait in all
    (`host.ANSWER_TIMEOUT_S`), then one error line, exit 7 (issue 16, F7)."""
    monkeypatch.setattr(host, "ANSWER_TIMEOUT_S", 0.3)
    with SLOW_SERVES[kind]() as url:
        token = {"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
        started = time.monotonic()
        approvals = run_cli(tmp_path, "approvals", "list", "--url", url, env=token, columns=300)
        logs = run_cli(tmp_path, "logs", "kept", "--url", url, env=token, columns=300)
        elapsed = time.monotonic() - started
    said = f"error [MCP_SERVER_UNREACHABLE]: the serve on {url} did not answer within 0.3 s"
    for result in (approvals, logs):
        assert result.returncode == 7, result.stderr
        assert result.stderr.startswith(said), result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert elapsed < 10, elapsed  # not the 30 s of a change, twice


def test_list_suggests_logs_then_test_for_an_enabled_server_in_error(tmp_path: Path) -> None:
    views: list[dict[str, Any]] = [
        {"id": "crashy", "name": "Crashy", "transport": "stdio", "command": "x", "enabled": True, "needs": []},
        {"id": "fine", "name": "Fine", "transport": "stdio", "command": "y", "enabled": True, "needs": []},
    ]
    error = {"code": "MCP_SERVER_UNREACHABLE", "details": {"reason": "exited"}}
    live: dict[str, dict[str, Any]] = {
        "crashy": {"state": "error", "error": error, "tool_count": None},
        "fine": {"state": "ready", "tool_count": 1},
    }
    rows = {str(line.plain.split()[0]): line.plain.split() for line in listing.servers_lines(views, live, 80)[2:]}
    assert (rows["crashy"][-1], rows["fine"][-1]) == ("logs", "-")
    settings = Settings.load(data_dir=tmp_path / "data", environ={})
    [hint] = listing.errored_hints(views, live, settings)
    assert hint.startswith("crashy is in error: see why with 'mcp-center logs crashy")
    assert "then 'mcp-center test crashy" in hint
    narrow = "\n".join(line.plain for line in listing.servers_lines(views, live, 30))  # one fact a line
    assert ("1 tool\n" in narrow, "1 tools" in narrow) == (True, False), narrow
    assert "next: logs" in narrow


def test_list_says_an_errors_reason_in_words_as_the_page_does_never_the_api_word() -> None:
    """trial38: `list` showed `error: process_exited`; the reason's plain words are shown, the same the
    settings page uses (`format.js`), and `list --json` keeps `details.reason` (ux39, R-7.3)."""
    views: list[dict[str, Any]] = [
        {"id": "crashy", "name": "Crashy", "transport": "stdio", "command": "x", "enabled": True, "needs": []}
    ]
    error = {"code": "MCP_SERVER_UNREACHABLE", "message": "m", "details": {"reason": "process_exited"}}
    live: dict[str, dict[str, Any]] = {"crashy": {"state": "error", "error": error, "tool_count": None}}
    for width in (80, 30):
        shown = "\n".join(line.plain for line in listing.servers_lines(views, live, width))
        assert "process exited" in shown and "process_exited" not in shown, shown
    page = (Path(listing.__file__).parent.parent / "web" / "static" / "js" / "format.js").read_text(encoding="utf-8")
    assert set(listing.REASON_WORDS) == set(ErrorReason)
    for reason, words in listing.REASON_WORDS.items():
        assert f'  {reason}: "{words}",' in page, reason


def test_an_id_made_from_another_name_is_said(tmp_path: Path) -> None:
    """trial35: `add my_tool` silently became id `my-tool`, which later commands need (R-7.3)."""
    added = run_cli(tmp_path, "add", "my_tool", "--", "python3", "-c", "pass")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added my-tool to ")
    assert added.stderr.splitlines() == [
        "note: its id is 'my-tool', made from the name 'my_tool' (an id is a-z, 0-9 and '-'); "
        "later commands take the id"
    ]
    same = run_cli(tmp_path, "add", "plain", "--", "python3", "-c", "pass")
    assert same.returncode == 0 and same.stderr == ""


def test_delete_of_an_unknown_id_says_so_before_asking(tmp_path: Path) -> None:
    """trial35: `delete tiem` asked "Delete tiem and its secrets?" before finding no such server (R-7.3)."""
    assert run_cli(tmp_path, "add", "time", "--", "python3", "-c", "pass").returncode == 0
    typo = run_cli(tmp_path, "delete", "tiem", input="y\n")
    assert typo.returncode != 0
    assert "Delete" not in typo.stdout + typo.stderr
    assert typo.stderr.startswith("error [MCP_SERVER_NOT_FOUND]: "), typo.stderr
    assert "did you mean: time?" in typo.stderr
    kept = run_cli(tmp_path, "delete", "time", input="y\n")
    assert kept.returncode == 0, kept.stderr
    assert "Delete time and its secrets?" in kept.stdout + kept.stderr


def test_add_warns_of_a_command_not_on_the_path_as_trust_does_and_still_adds(tmp_path: Path) -> None:
    """trial38: `add nocmd -- uvxx ...` printed only `added ...`; `trust` then warned (R-7.3, bridge39)."""
    missing = "mcp-center-no-such-command-38"
    warning = f"'{missing}' was not found on the host's PATH; install it (or use an absolute path) before testing"
    added = run_cli(tmp_path, "add", "nocmd", "--", missing, "serve")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added nocmd to ")
    assert added.stderr.splitlines() == [f"warning [COMMAND_NOT_FOUND]: {warning}"]
    trusted = run_cli(tmp_path, "trust", "nocmd", "--yes")
    assert f"warning: {warning}" in trusted.stderr.splitlines()
    found = run_cli(tmp_path, "add", "found", "--", "python3", "-c", "pass")
    assert found.returncode == 0 and found.stderr == ""
