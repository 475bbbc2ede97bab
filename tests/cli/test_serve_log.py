"""What a running `serve` writes to its log (newcomer trial, issue 16): a balancer's passing health
checks are not logged, failing ones and every other request are (R-10.2); a clean stop with a
2025-11-25 gateway session's GET stream open ends that stream and logs no ERROR (R-8.1, R-3.11); the
banner and the instance list show where serve listens beside its public URL (R-10.2)."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import httpx2

from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, running_host, serve_env, spawn_serve, wait_until_serving


def test_passed_health_checks_leave_no_access_log_line_and_failed_ones_do(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        for _ in range(5):
            assert host.client.get("/healthz").status_code == 200
        refused = host.client.get("/healthz", headers={"Host": "elsewhere.example"})  # not an allowed Host
        assert refused.status_code >= 400
        assert host.client.get("/api/instances").status_code == 200
    lines = host.log().splitlines()
    assert [line for line in lines if '"GET /healthz HTTP/1.1" 200' in line] == []
    assert [line for line in lines if f'"GET /healthz HTTP/1.1" {refused.status_code}' in line] != []
    assert [line for line in lines if '"GET /api/instances HTTP/1.1" 200' in line] != []


def test_a_clean_stop_with_a_legacy_gateway_session_streaming_logs_no_error(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        created = host.client.post("/api/gateway/tokens", json={"name": "stop"})
        assert created.status_code == 201, created.text
        headers = {
            "Authorization": f"Bearer {created.json()['token']}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        with httpx2.Client(base_url=host.url, headers=headers, timeout=30) as agent:
            opened = agent.post("/mcp", json=_INITIALIZE)
            assert opened.status_code == 200, opened.text
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            done = agent.post("/mcp", headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert done.status_code == 202, done.text
            with agent.stream("GET", "/mcp", headers={**session, "Accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                host.proc.send_signal(signal.SIGTERM)  # while the session's GET stream is open
                assert host.proc.wait(timeout=30) in (0, -signal.SIGTERM)
                stream.read()  # the stream ends complete: a cut chunked body raises RemoteProtocolError
    errors = [line for line in host.log().splitlines() if "ERROR" in line or "Traceback" in line]
    assert errors == [], host.log()[-3000:]


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "stop-test", "version": "1"},
    },
}


def test_behind_a_public_url_the_banner_and_instances_show_where_serve_listens(tmp_path: Path) -> None:
    data_dir, log_path = tmp_path / "data", tmp_path / "serve.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [
                *(str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", "0"),
                *("--public-url", "https://mcp.example.com", "--instance-name", "a"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=serve_env(),
        )
    try:
        wait_until_serving(data_dir, 60, proc)
        banner = re.search(
            r"listening on (http://127\.0\.0\.1:\d+), public URL https://mcp\.example\.com ", log_path.read_text()
        )
        assert banner is not None, log_path.read_text()
        listen = banner.group(1)
        answered = httpx2.get(f"{listen}/api/instances", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30)
        assert answered.status_code == 200, answered.text
        assert [(i["name"], i["url"]) for i in answered.json()["instances"]] == [("a", listen)]
    finally:
        stop_process(proc)


def test_a_data_directory_whose_path_looks_like_markup_is_printed_as_written(tmp_path: Path) -> None:
    """The banner prints paths as text: `[/red]` in the data directory's path ended `serve` in a
    MarkupError traceback before it listened (R-10.2)."""
    data_dir, log_path = tmp_path / "data [/red][bold]", tmp_path / "serve.log"
    proc = spawn_serve(data_dir, 0, log_path)
    try:
        wait_until_serving(data_dir, 60, proc)
        assert f"(data: {data_dir}," in log_path.read_text()
    finally:
        stop_process(proc)
