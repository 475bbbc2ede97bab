"""What a running `serve` writes to its log (newcomer trial, issue 16): a balancer's passing health
checks are not logged, failing ones and every other request are (R-10.2); a clean stop with a
2025-11-25 gateway session's GET stream open ends that stream and logs no ERROR (R-8.1, R-3.11)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2

from tests.support.serve import running_host


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
