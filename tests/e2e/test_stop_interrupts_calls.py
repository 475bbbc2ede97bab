"""Stopping a real `mcp-center serve` (SIGTERM) while tool calls run (issue 16, R-6.3, R-7.3).

Every running call ends at once with our envelope, 503 `MCP_CALL_INTERRUPTED` with a next step,
for the REST caller and, as an error result with the code in `_meta`, for the agent that called
through the gateway with the SDK's own client; the log has no traceback and serve does not wait
out uvicorn's graceful-shutdown timeout. Before the fix the REST caller got `500 text/plain`, the
agent a bare "Server returned an error response", and serve waited 5 s more.

The server is `tests/servers/hostile_stdio.py`, whose `slow` tool says on stderr that it started
(read back through the server's logs) and then sleeps for 30 s.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from tests.support.http import Background, check, wait_for
from tests.support.loopback import NO_TLS
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host, running_host

pytestmark = pytest.mark.anyio

HOSTILE = str(Path(__file__).parent.parent / "servers" / "hostile_stdio.py")
SLOW_CALL = "/api/mcp/servers/hostile/tools/slow/call"
STOP_BOUND_S = 4.5
"""serve stops within this after SIGTERM: the 2 s the busy stdio server gets to take its stdin's
end, and the rest; uvicorn's graceful-shutdown timeout (5 s) is never waited out."""


def _ready_slow_server(host: Host, policy: str = "allow") -> None:
    add_ready_on_host(
        host,
        {
            "name": "hostile",
            "transport": "stdio",
            "command": sys.executable,
            "args": [HOSTILE],
            "tool_policies": {"slow": policy},
        },
    )


def _wait_until_slow_runs(host: Host, count: int) -> None:
    """Until the server wrote `slow: started` `count` times on stderr (bounded: 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stderr = check(host.client.get("/api/mcp/servers/hostile/logs"), 200)["stderr"]
        if sum(entry["line"] == "slow: started" for entry in stderr) >= count:
            return
        time.sleep(0.05)
    raise TimeoutError("the slow calls did not start")


def _wait_in_log(host: Host, text: str) -> None:
    """Until serve's log has `text` (polled every 5 ms: the next step must come soon after; bounded: 10 s)."""
    deadline = time.monotonic() + 10
    while text not in host.log():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} never appeared in serve's log")
        time.sleep(0.005)


def _stop_and_time(host: Host) -> float:
    started = time.monotonic()
    host.proc.send_signal(signal.SIGTERM)
    host.proc.wait(30)
    return time.monotonic() - started


def _assert_clean_quick_stop(host: Host, took_s: float) -> None:
    log = host.log()
    assert "Traceback" not in log, log[-4000:]
    assert "graceful shutdown exceeded" not in log, log[-4000:]
    assert took_s < STOP_BOUND_S, f"serve took {took_s:.1f} s to stop"


def test_a_rest_call_running_at_sigterm_gets_503_call_interrupted_at_once(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        _ready_slow_server(host)
        caller = Background(lambda: host.client.post(SLOW_CALL, json={"arguments": {"seconds": 30}}))
        _wait_until_slow_runs(host, 1)
        took_s = _stop_and_time(host)
        answer = caller.result(10)
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "MCP_CALL_INTERRUPTED"
    # It reached the server, which may have done its work: never "retry" (break31b F1), say it may have run.
    assert "retry" not in error["message"]
    assert "may have run in part or in full, so check its effect" in error["message"]
    assert error["details"]["reached_server"] is True
    assert error["details"]["interrupted_by"] == "shutdown"
    assert error["details"]["delivered"] is False
    _assert_clean_quick_stop(host, took_s)


def test_an_agent_call_waiting_for_approval_at_sigterm_gets_503_call_interrupted_not_sent(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        _ready_slow_server(host, "ask")
        caller = Background(
            lambda: host.client.post("/api/tools/mcp__hostile__slow/call", json={"arguments": {"seconds": 30}})
        )
        wait_for(lambda: check(host.client.get("/api/approvals"), 200)["approvals"])
        took_s = _stop_and_time(host)
        answer = caller.result(10)
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["details"]["reached_server"]) == ("MCP_CALL_INTERRUPTED", False)
    _assert_clean_quick_stop(host, took_s)


async def test_a_gateway_call_running_at_sigterm_ends_with_call_interrupted(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        _ready_slow_server(host)
        token = check(host.client.post("/api/gateway/tokens", json={"name": "agent"}), 201)["token"]
        async with (
            httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(f"{host.url}/mcp", http_client=http), cache=None) as client,
        ):
            results: list[CallToolResult] = []
            stops: list[float] = []

            async def call() -> None:
                results.append(await client.call_tool("mcp__hostile__slow", {"seconds": 30}))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await anyio.to_thread.run_sync(_wait_until_slow_runs, host, 1)
                    stops.append(await anyio.to_thread.run_sync(_stop_and_time, host))
    [result], [took_s] = results, stops
    assert result.is_error is True
    assert result.meta is not None
    assert result.meta["mcp-center/error"]["code"] == "MCP_CALL_INTERRUPTED"
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text.startswith("MCP_CALL_INTERRUPTED: mcp-center stopped while the call of 'slow'")
    _assert_clean_quick_stop(host, took_s)


def test_ctrl_c_twice_while_a_call_runs_still_stops_the_servers_and_removes_the_record(tmp_path: Path) -> None:
    """break31b F7: a second SIGINT made uvicorn skip the app's shutdown: a CancelledError traceback,
    no "Application shutdown complete", and `process-groups.json` left behind."""
    with running_host(tmp_path) as host:
        _ready_slow_server(host)
        caller = Background(lambda: host.client.post(SLOW_CALL, json={"arguments": {"seconds": 30}}))
        _wait_until_slow_runs(host, 1)
        started = time.monotonic()
        host.proc.send_signal(signal.SIGINT)
        _wait_in_log(host, "Shutting down")
        host.proc.send_signal(signal.SIGINT)  # while uvicorn stops: before it ran the app's shutdown
        host.proc.wait(30)
        took_s = time.monotonic() - started
        answer = caller.result(10)
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "MCP_CALL_INTERRUPTED"
    assert "Application shutdown complete" in host.log(), host.log()[-4000:]
    assert not (host.data_dir / "process-groups.json").exists()
    _assert_clean_quick_stop(host, took_s)
