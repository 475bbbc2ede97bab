"""CLI verbs for agents' capabilities: prompts and resources in process; approvals through a running host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import typer

from mcp_center.cli._suggest import forget
from mcp_center.cli.agents import approval_of_prefix
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.cli import CLI, CliResult, run_cli, run_cli_process
from tests.support.ports import closed_port_url, free_port
from tests.support.readiness import add_ready_on_host
from tests.support.serve import ADMIN_TOKEN, running_host, serve_record


def run(data_dir: Path, *args: str, token: bool = False) -> CliResult:
    return run_cli(data_dir, *args, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN} if token else None)


def _enable_in_process(data: Path, url: str) -> None:
    async def setup() -> None:
        async with McpCenter.open(Settings.load(data_dir=data, environ={}), connect=False) as center:
            view = (await center.create_server({"name": "Caps", "transport": "streamable_http", "url": url})).to_dict()
            await center.trust(view["id"], view["digest"])
            assert (await center.test(view["id"])).ok
            await center.enable(view["id"])

    anyio.run(setup)


def test_prompts_and_resources_are_listed_from_enabled_servers(tmp_path: Path, caps_url: str) -> None:
    data = tmp_path / "data"
    _enable_in_process(data, caps_url)
    table = run(data, "prompts")
    assert table.returncode == 0, table.stderr
    assert "/caps:greet" in table.stdout
    assert "/caps:team/standup" in table.stdout
    found = run(data, "resources", "item", "--json")
    assert found.returncode == 0, found.stderr
    assert [(r["kind"], r["mention"], r["variables"]) for r in json.loads(found.stdout)] == [
        ("template", "@caps:test://items/{item_id}", ["item_id"])
    ]


def _approvals(host_url: str, data: Path, *extra: str) -> list[dict[str, Any]]:
    listed = run(data, "approvals", "list", "--json", "--url", host_url, *extra, token=True)
    assert listed.returncode == 0, listed.stderr
    items: list[dict[str, Any]] = json.loads(listed.stdout)
    return items


def _wait_for_approval(host_url: str, data: Path) -> dict[str, Any]:
    """Poll the running host (another process) until an approval is pending; bounded at 20 s."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        items = _approvals(host_url, data)
        if items:
            return items[0]
        time.sleep(0.1)
    raise TimeoutError("no approval appeared")


def _agent_call(client: httpx2.Client, note: str, answers: list[httpx2.Response]) -> None:
    answers.append(client.post("/api/tools/mcp__caps__record/call", json={"arguments": {"note": note}}))


def test_approvals_of_a_running_host_are_listed_approved_and_denied(tmp_path: Path, caps_url: str) -> None:
    with running_host(tmp_path) as host:
        add_ready_on_host(host, {"name": "Caps", "transport": "streamable_http", "url": caps_url})
        for decision, status in (("approve", 200), ("deny", 403)):
            answers: list[httpx2.Response] = []
            caller = threading.Thread(target=_agent_call, args=(host.client, decision, answers))
            caller.start()
            try:
                pending = _wait_for_approval(host.url, host.data_dir)
                assert pending["tool"] == "mcp__caps__record"
                # deny by a prefix of the id, as git takes a commit's (issue 16)
                given = pending["id"] if decision == "approve" else pending["id"][:6]
                decided = run(host.data_dir, "approvals", decision, given, "--url", host.url, token=True)
                assert decided.returncode == 0, decided.stderr
                assert pending["id"] in decided.stdout
            finally:
                caller.join(timeout=30)
            assert answers[0].status_code == status, answers[0].text
        again = run(host.data_dir, "approvals", "approve", pending["id"], "--url", host.url, token=True)
        assert again.returncode == 4
        assert "MCP_APPROVAL_CLOSED" in again.stderr
        history = _approvals(host.url, host.data_dir, "--all")
        assert [a["state"] for a in history] == ["denied", "approved"]


def test_approvals_without_a_running_host_say_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    no_serve = run(data, "approvals")
    assert no_serve.returncode == 7
    assert "no mcp-center serve runs" in no_serve.stderr
    # With --url (a host elsewhere) but no admin token in this directory: exit 6.
    no_token = run(data, "approvals", "--url", "http://127.0.0.1:9")
    assert no_token.returncode == 6
    assert "ADMIN_AUTH_REQUIRED" in no_token.stderr
    # ... and the hint is for that host: its token, not "start a serve here" without the --url (issue 16, F7).
    assert "no admin token for the host at http://127.0.0.1:9: set MCP_CENTER_ADMIN_TOKEN" in no_token.stderr
    assert "start one with" not in no_token.stderr
    unreachable = run(data, "approvals", "--url", "http://127.0.0.1:9", token=True)
    assert unreachable.returncode == 7
    assert "cannot reach" in unreachable.stderr


def test_the_cli_finds_the_serve_of_its_data_directory_on_another_port_without_url(tmp_path: Path) -> None:
    """`serve --port N --data-dir X` records where it listens; `mcp-center approvals --data-dir X` finds it."""
    with running_host(tmp_path) as host:
        record = json.loads((host.data_dir / "serve.json").read_text())
        assert (record["url"], record["pid"]) == (host.url, host.proc.pid)
        listed = run(host.data_dir, "approvals", "list", "--json", token=True)
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout) == []
        exported = run(host.data_dir, "export", "--format", "cursor", "--gateway")
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout)["mcpServers"]["mcp-center"]["url"] == f"{host.url}/mcp"
    # Stopped: the record is gone, and the CLI says where it looked and how to point it elsewhere.
    assert not (host.data_dir / "serve.json").exists()
    gone = run(host.data_dir, "approvals", token=True)
    assert gone.returncode == 7
    assert f"no mcp-center serve runs on the data directory {host.data_dir}" in gone.stderr
    assert "--url" in gone.stderr


def test_the_stdio_bridge_finds_the_serve_of_its_data_directory_or_says_in_one_line_that_there_is_none(
    tmp_path: Path,
) -> None:
    """`gateway --stdio` as Claude Desktop starts it (no --url) talked to 127.0.0.1:8765 whatever its
    data directory; it finds that directory's serve like the other verbs, or exits 7 at once (R-9.2, R-8.1).

    A real bridge process driven by the SDK's stdio client, as a process-only client would."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def tools_through_the_bridge(env: dict[str, str]) -> list[str]:
        params = StdioServerParameters(command=CLI, args=["gateway", "--stdio"], env=env)
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    with running_host(tmp_path) as host:
        created = run(host.data_dir, "gateway", "token", "create", "desktop")
        assert created.returncode == 0, created.stderr
        env = {
            **base_env,
            "MCP_CENTER_DATA_DIR": str(host.data_dir),
            "MCP_CENTER_GATEWAY_TOKEN": created.stdout.strip(),
        }
        assert anyio.run(tools_through_the_bridge, env) == []
        # MCP_CENTER_URL names the host (as for the other verbs); the bridge adds /mcp.
        elsewhere = {**env, "MCP_CENTER_DATA_DIR": str(tmp_path / "elsewhere"), "MCP_CENTER_URL": host.url}
        assert anyio.run(tools_through_the_bridge, elsewhere) == []
        snippet = run(host.data_dir, "export", "--format", "claude-desktop", "--gateway")
        bridge = json.loads(snippet.stdout)["mcpServers"]["mcp-center"]
        assert bridge["args"] == ["gateway", "--stdio", "--url", f"{host.url}/mcp"]
    gone = run_cli(host.data_dir, "gateway", "--stdio", input="", env={"MCP_CENTER_GATEWAY_TOKEN": "mcpg_unused-0123"})
    assert gone.returncode == 7
    assert gone.stderr.strip().splitlines() == [
        f"error [MCP_SERVER_UNREACHABLE]: no mcp-center serve runs on the data directory {host.data_dir}; start "
        f"one with 'mcp-center serve --data-dir {host.data_dir}', or pass --url (or set MCP_CENTER_URL) to talk "
        "to a host elsewhere"
    ]
    no_token = run_cli(host.data_dir, "gateway", "--stdio", input="")
    assert (no_token.returncode, no_token.stderr.count("\n")) == (6, 1)
    assert no_token.stderr.startswith("error [GATEWAY_AUTH_REQUIRED]: set MCP_CENTER_GATEWAY_TOKEN")


def test_a_serve_of_another_data_directory_on_the_default_port_is_never_asked(tmp_path: Path) -> None:
    """R-9.2: the CLI talks to the serve recorded for its data directory, never to whatever listens
    on the default port (another directory's serve, same admin token here, would answer).

    The default port is this test's own free port, through MCP_CENTER_PORT (read by `serve` and the
    CLI's settings alike): the real 8765 may be a user's serve on a shared machine."""
    port = free_port()
    env = {"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN, "MCP_CENTER_PORT": str(port)}
    for place in ("other", "own"):
        (tmp_path / place).mkdir()
    with running_host(tmp_path / "other", port=port) as other:
        assert other.url == f"http://127.0.0.1:{port}"
        data = tmp_path / "mine"
        assert Settings.load(data_dir=data, environ=env).base_url == other.url  # the default address, here
        assert run(data, "add", "Local", "--", sys.executable, "-c", "pass").returncode == 0
        approvals = run_cli(data, "approvals", "list", "--json", env=env)
        assert approvals.returncode == 7, approvals.stdout
        assert f"no mcp-center serve runs on the data directory {data}" in approvals.stderr
        auth = run_cli(data, "auth", "local", env=env)
        assert auth.returncode == 7, auth.stdout
        assert str(port) not in auth.stdout
        # With its own serve on another port, the CLI finds that one, not the one on the default port.
        with running_host(tmp_path / "own") as own:
            listed = run_cli(own.data_dir, "approvals", "--json", env=env)
            assert listed.returncode == 0, listed.stderr
        # An explicit --url (or MCP_CENTER_URL) is the user's choice and is used as given.
        explicit = run_cli(data, "approvals", "list", "--json", "--url", other.url, env=env)
        assert explicit.returncode == 0, explicit.stderr


def test_the_cli_reaches_a_serve_with_a_public_url_at_its_listen_address(tmp_path: Path) -> None:
    """`serve --public-url https://mcp.example.com` (a proxy this machine need not reach): serve.json
    records the public URL and the listen address; the CLI's verbs and the stdio bridge use the
    listen address, `export --gateway` gives clients the public URL (R-9.2, R-8.1)."""
    from mcp_center.cli.gateway import bridge_url

    public = "https://mcp.example.com"
    with running_host(tmp_path, extra_args=("--public-url", public)) as host:
        record = serve_record(host.data_dir)
        assert (record["url"], record["local_url"]) == (public, host.url)
        assert host.url.startswith("http://127.0.0.1:")
        approvals = run(host.data_dir, "approvals", "list", "--json", token=True)
        assert approvals.returncode == 0, approvals.stderr
        assert json.loads(approvals.stdout) == []
        settings = Settings.load(data_dir=host.data_dir, environ={})
        assert bridge_url(settings, None) == f"{host.url}/mcp"
        snippet = run(host.data_dir, "export", "--format", "claude-desktop", "--gateway")
        assert snippet.returncode == 0, snippet.stderr
        bridge = json.loads(snippet.stdout)["mcpServers"]["mcp-center"]
        assert bridge["args"] == ["gateway", "--stdio", "--url", f"{public}/mcp"]


def test_a_record_left_by_a_killed_serve_is_ignored(tmp_path: Path) -> None:
    from dataclasses import replace

    from mcp_center.store.owner import DirIdentity, ServeOwner
    from mcp_center.store.running import RUNNING_FILE, running_url

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / RUNNING_FILE).write_bytes(ServeOwner(pid=dead.pid, url="http://127.0.0.1:9999").to_json())
    assert running_url(tmp_path) is None
    live = ServeOwner.this_process("http://127.0.0.1:9999/")
    (tmp_path / RUNNING_FILE).write_bytes(replace(live, directory=DirIdentity.of(tmp_path)).to_json())
    assert running_url(tmp_path) == "http://127.0.0.1:9999"


def test_approvals_at_80_columns_show_whole_ids_states_tools_and_hints() -> None:
    from rich.console import Console

    from mcp_center.cli import agents

    approval_id = "157d2c35e3a94f0c8a7b6d5e4f3a2b1c"
    item: dict[str, Any] = {
        "id": approval_id,
        "state": "pending",
        "tool": "mcp__capabilities__record_something_long",
        "arguments": {"note": "x" * 80},
        "hints": {"readOnlyHint": True, "destructiveHint": False},
        "expires_at": "2026-11-30T17:00:00+00:00",
    }
    narrow = Console(width=80, record=True)
    narrow.print(agents._approvals_view([item], 80))  # pyright: ignore[reportPrivateUsage]
    text = narrow.export_text()
    assert f"{approval_id}  pending" in text
    assert "mcp__capabilities__record_something_long" in text
    assert "readOnlyHint=True, destructiveHint=False" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    wide = Console(width=160, record=True)
    wide.print(agents._approvals_view([item], 160))  # pyright: ignore[reportPrivateUsage]
    table = wide.export_text()
    assert approval_id in table
    assert "┃ id" in table  # a table there


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://gateway.example:8765/mcp", "refusing to send the gateway token over plain http to gateway.example"),
        ("http://10.0.0.5/mcp", "refusing to send the gateway token over plain http to 10.0.0.5"),
        (
            "ftp://127.0.0.1/mcp",
            "OPTION_VALUE_INVALID]: option '--url' (or MCP_CENTER_URL) must be an http:// or https:// URL",
        ),
        ("127.0.0.1:8765/mcp", "must be an http:// or https:// URL with a host"),
    ],
)
def test_the_stdio_bridge_never_sends_its_token_in_clear_beyond_this_machine(
    tmp_path: Path, url: str, says: str
) -> None:
    """R-7.2: the bridge refuses before connecting; the token is never printed."""
    token = {"MCP_CENTER_GATEWAY_TOKEN": "mcpg_secret-bridge-token-0123"}
    done = run_cli(tmp_path, "gateway", "--stdio", "--url", url, input="", env=token)
    assert done.returncode == 2
    assert says in done.stderr
    assert "mcpg_secret" not in done.stderr + done.stdout


def test_a_bridge_that_finds_no_gateway_names_the_cause_and_the_way_out(tmp_path: Path) -> None:
    """The connect error itself (not "ExceptionGroup"), and --url / --data-dir as the way out; never the token.

    A real process (forked by the worker's fork server): the stdio bridge, its stdin and its exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(
        MCP_CENTER_DATA_DIR=str(tmp_path), MCP_CENTER_GATEWAY_TOKEN="mcpg_secret-bridge-token-0123", COLUMNS="300"
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    # Bound but not listening: connecting is refused, and no other test can take the port meanwhile
    # (a port freed before the run could be reused by a server of a parallel test).
    with closed_port_url() as url:
        done = run_cli_process(
            "gateway", "--stdio", "--url", url, input=(json.dumps(initialize) + "\n").encode(), env=env
        )
    assert done.returncode == 7
    said = " ".join(done.stderr.split())
    assert f"the gateway at {url} is not reachable (ConnectError" in said
    assert "ExceptionGroup" not in said
    assert "pass --url" in said
    assert "mcpg_secret" not in done.stderr + done.stdout


def test_approvals_say_who_asked_from_the_caller_the_api_returns() -> None:
    """R-5.3: the table and the narrow blocks show the token name, the client and the way in."""
    from rich.console import Console

    from mcp_center.cli import agents

    item: dict[str, Any] = {
        "id": "0123456789abcdef0123456789abcdef",
        "state": "pending",
        "tool": "mcp__caps__record",
        "arguments": {"note": "x"},
        "hints": {},
        "expires_at": "2026-11-30T17:00:00+00:00",
        "caller": {"via": "gateway", "token_name": "ci-bot", "client": {"name": "claude-code", "version": "2.1"}},
    }
    for width in (80, 200):
        console = Console(width=width, record=True)
        console.print(agents._approvals_view([item], width))  # pyright: ignore[reportPrivateUsage]
        text = " ".join(console.export_text().split())
        assert "ci-bot, client claude-code 2.1, via gateway" in text, text
    bare = Console(width=200, record=True)
    bare.print(agents._approvals_view([item | {"caller": {"via": "script"}}], 200))  # pyright: ignore[reportPrivateUsage]
    assert "via script" in bare.export_text()


APPROVALS = [
    {"id": "a1b2" + "0" * 28, "state": "pending"},
    {"id": "a1b2" + "1" * 28, "state": "pending"},
    {"id": "a1c3" + "0" * 28, "state": "approved"},
    {"id": "a1c3" + "1" * 28, "state": "denied"},
    {"id": "a1d4" + "0" * 28, "state": "expired"},
    {"id": "a1d4" + "1" * 28, "state": "pending"},
]


@pytest.mark.parametrize(
    ("prefix", "chosen"),
    [
        ("a1b20", "a1b2" + "0" * 28),  # the one id that starts so
        ("A1B20", "a1b2" + "0" * 28),  # ids are lowercase hex: an uppercase prefix names the same one
        ("a1c30", "a1c3" + "0" * 28),  # a closed one: the host says it is closed
        ("a1e5", "a1e5"),  # none: the host says not found
        ("a1b", "a1b"),  # shorter than 4 characters: never looked up
        ("a1b2" + "0" * 28, "a1b2" + "0" * 28),
        ("A1B2" + "0" * 28, "a1b2" + "0" * 28),
    ],
)
def test_a_unique_prefix_names_its_approval(prefix: str, chosen: str) -> None:
    assert approval_of_prefix(prefix, APPROVALS) == chosen


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        ("a1b2", "2 approvals (2 pending) have ids starting with 'a1b2'"),
        ("a1c3", "2 approvals (0 pending) have ids starting with 'a1c3'"),
        # a closed one (the one the user looked at) and a newer pending one: never pick the pending one
        ("a1d4", "2 approvals (1 pending) have ids starting with 'a1d4'"),
        ("A1D4", "2 approvals (1 pending) have ids starting with 'a1d4'"),
    ],
)
def test_an_ambiguous_prefix_decides_nothing_and_says_how_many_match(
    prefix: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    forget()  # no --url or --data-dir remembered by an earlier command in this process
    with pytest.raises(typer.Exit) as exited:
        approval_of_prefix(prefix, APPROVALS)
    assert exited.value.exit_code == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error [MCP_APPROVAL_AMBIGUOUS]: {line}: nothing was decided; "
        "give more of the id (see 'mcp-center approvals list')"
    )
