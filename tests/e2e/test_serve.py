"""`mcp-center serve` as users run it: its log and its start-up (R-3.11, R-7.3).

- An agent that goes away mid-request leaves one `gateway.client_gone` line in the log, not the
  SDK transport's tracebacks (`mcp_center.gateway._disconnects`).
- A second instance on a busy port fails fast with one message and touches nothing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from mcp_center.errors import AddressInUse, ServeAlreadyRunning
from mcp_center.store.running import RUNNING_FILE
from tests.support.gateway import gateway_client
from tests.support.loopback import NO_TLS
from tests.support.mcp_servers import running_echo_http
from tests.support.readiness import add_ready_on_host
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, Host, running_host

pytestmark = pytest.mark.e2e

PROTOCOL_VERSION = "2025-11-25"
LEAVES = 5
"""How often an agent leaves mid-call: its DELETE races its `notifications/cancelled`, so a few
rounds make the race (the ClosedResourceError path of the SDK) all but certain."""


def _gateway_token(host: Host) -> str:
    created = host.client.post("/api/gateway/tokens", json={"name": "e2e"})
    assert created.status_code == 201, created.text
    return str(created.json()["token"])


def _open_session(host: Host, token: str) -> str:
    """Initialize a gateway session over plain HTTP; return its `Mcp-Session-Id`."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    with httpx2.Client(verify=NO_TLS, base_url=host.url, headers=headers, timeout=30) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "e", "version": "1"},
            },
        }
        answered = http.post("/mcp", json=init)
        assert answered.status_code == 200, answered.text
        session_id = answered.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        session = {"mcp-session-id": session_id, "mcp-protocol-version": PROTOCOL_VERSION}
        assert http.post("/mcp", json=initialized, headers=session).status_code == 202
    return session_id


def _drop_mid_body(host: Host, token: str, session_id: str) -> None:
    """Send a POST whose body stops half-way, once the host reads it (`100 Continue`), and hang up."""
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    port = int(host.url.rsplit(":", 1)[1])
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nMcp-Session-Id: {session_id}\r\n"
        f"Mcp-Protocol-Version: {PROTOCOL_VERSION}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode())
        assert sock.recv(1024).startswith(b"HTTP/1.1 100"), "the host did not start reading the body"
        sock.sendall(body[: len(body) // 2])


async def _leave_mid_call(host: Host, token: str) -> None:
    """What an SDK client does when its caller gives up on a call: cancel it, then end the session."""
    asked = anyio.Event()

    async def on_elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        del context, params
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with (
        gateway_client(host.url, token, elicitation_callback=on_elicit) as client,
        anyio.create_task_group() as tg,
    ):

        async def call() -> None:
            await client.call_tool("mcp__caps__ask", {"question": "stay?"})

        tg.start_soon(call)
        with anyio.fail_after(30):
            await asked.wait()  # the call is in flight, its response stream open
        tg.cancel_scope.cancel()


def _ready_caps(host: Host, caps_url: str) -> None:
    body = {"id": "caps", "name": "Caps", "transport": "streamable_http", "url": caps_url}
    add_ready_on_host(host, {**body, "tool_policies": {"ask": "allow"}})


def test_an_agent_that_goes_away_mid_request_is_one_log_line_not_a_traceback(tmp_path: Path) -> None:
    with running_echo_http("tests.servers.run_capabilities") as caps_url, running_host(tmp_path) as host:
        _ready_caps(host, caps_url)
        token = _gateway_token(host)
        _drop_mid_body(host, token, _open_session(host, token))
        for _ in range(LEAVES):
            anyio.run(_leave_mid_call, host, token)
        # The gateway still serves: a new session answers.
        assert _open_session(host, token)
    log = host.log()
    assert "gateway.client_gone" in log, log[-3000:]
    assert "Traceback" not in log, log[-6000:]
    assert "Exception in ASGI application" not in log, log[-3000:]
    assert " ERROR " not in log, log[-3000:]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root`: relative path → (size, mtime in ns)."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


def _serve(data_dir: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(MCP_CENTER_ADMIN_TOKEN=ADMIN_TOKEN)
    return subprocess.run(
        [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_the_first_start_prints_the_admin_token_it_stored_and_a_later_start_does_not(tmp_path: Path) -> None:
    """On its first start without MCP_CENTER_ADMIN_TOKEN, serve prints the token it generated, once,
    on the line after its announcement, and that is the token in <data dir>/admin-token, which the REST
    API accepts (R-7.1); the next start says where it is and prints no token. (A suggested command once
    took the token's variable name, and the banner printed the command instead of the token.)"""
    no_token = {"MCP_CENTER_ADMIN_TOKEN": ""}  # empty means unset: the token file is used
    with running_host(tmp_path, env=no_token) as host:
        stored = (host.data_dir / "admin-token").read_text().strip()
        assert host.client.get("/api/mcp/servers", headers={"Authorization": f"Bearer {stored}"}).status_code == 200
        lines = host.log().splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("admin token (shown once"))
        assert lines[at + 1].strip() == stored
    first_log = host.log()
    assert first_log.count(stored) == 1, "the token is printed once, and nowhere else in the log"
    with running_host(tmp_path, env=no_token) as again:
        assert (again.data_dir / "admin-token").read_text().strip() == stored
    later = again.log()[len(first_log) :]
    assert f"admin token: in {again.data_dir / 'admin-token'}" in later
    assert stored not in later


@pytest.mark.parametrize("same_data_dir", [True, False], ids=["same-data-dir", "other-data-dir"])
def test_a_second_serve_on_a_busy_port_fails_before_starting_anything(tmp_path: Path, same_data_dir: bool) -> None:
    """Started again on its own data directory and port, `serve` says it already runs and where to
    open it (SERVE_ALREADY_RUNNING); another directory's serve (or another program) on the port is
    SERVE_ADDRESS_IN_USE with the way out. Both exit 4 in one line (R-7.3, R-9.2)."""
    with running_host(tmp_path) as host:
        port = int(host.url.rsplit(":", 1)[1])
        # `serve` listens before it starts (connections wait); a request is answered once it has started.
        assert host.client.get("/api/mcp/servers").status_code == 200
        before = _files(host.data_dir)
        assert RUNNING_FILE in before
        data_dir = host.data_dir if same_data_dir else tmp_path / "second"

        second = _serve(data_dir, port)

        output = second.stdout + second.stderr
        assert second.returncode == 4, output
        if same_data_dir:
            assert second.stderr == (
                f"error [{ServeAlreadyRunning.code}]: mcp-center serve is already running on this data "
                f"directory (pid {host.proc.pid}): open http://127.0.0.1:{port}\n"
            )
        else:
            assert f"[{AddressInUse.code}]" in second.stderr
            assert f"127.0.0.1:{port}" in second.stderr
            assert "--port" in second.stderr
            assert f"pid {host.proc.pid}" not in second.stderr  # only this or the default directory's serve is named
        assert len(output.strip().splitlines()) == 1, output  # one message: no banner, no runtime, no traceback
        # The running instance is untouched: same files, same record, still serving.
        assert _files(host.data_dir) == before
        assert str(host.proc.pid) in (host.data_dir / RUNNING_FILE).read_text()
        assert host.client.get("/api/mcp/servers").status_code == 200
        assert same_data_dir or not data_dir.exists()
