"""Sandboxed stdio servers under a real `mcp-center serve` (R-11.1, R-11.2).

- A hostile server of our own (`tests/servers/escape_stdio.py`) tries to read serve's key file and
  secrets.json, write outside its home, connect to serve's own port, fork 10,000 processes and
  allocate beyond its limit. Every attempt fails inside the sandbox, serve keeps serving (its API,
  another server's calls, the hostile server's next call), and each refusal is attributed: the
  tool result names the errno, the request log marks it as a sandbox violation of its kind.
- A real PyPI server with `network: none` cannot start on a cold cache (an attributed, quick
  failure, not a minutes-long retry); the warm-up fills its cache inside its sandbox; then it starts
  offline and answers a call.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.mcp_servers import MCP_SERVER_TIME
from tests.support.sandbox import escape_command, require_sandbox
from tests.support.serve import Host

# A serve of each test's own: the hostile test reads its data directory, the warm-up test needs a
# cold cache (not one a sandboxed server of an earlier test filled).
pytestmark = [pytest.mark.e2e, pytest.mark.own_serve]

SERVERS = "/api/mcp/servers"


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


def make_ready(host: Host, body: dict[str, Any]) -> dict[str, Any]:
    created = host.client.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    view = created.json()
    server_id = view["id"]
    assert host.client.post(f"{SERVERS}/{server_id}/trust", json={"digest": view["digest"]}).status_code == 200
    tested = host.client.post(f"{SERVERS}/{server_id}/test").json()
    assert tested["ok"], tested
    enabled = host.client.post(f"{SERVERS}/{server_id}/enable")
    assert enabled.status_code == 200, enabled.text
    return enabled.json()


def call(host: Host, server_id: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    answer = host.client.post(f"{SERVERS}/{server_id}/tools/{tool}/call", json={"arguments": arguments})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    return not result.get("isError", False), result["content"][0]["text"]


def still_serving(host: Host, echo_url: str | None = None) -> None:
    """serve answers its API, and the other server and the hostile one still answer calls."""
    assert host.client.get(SERVERS).status_code == 200
    if echo_url is not None:
        added = host.client.post(f"{SERVERS}/echo/tools/add/call", json={"arguments": {"a": 2, "b": 3}})
        assert added.json()["structuredContent"] == {"result": 5}
    assert call(host, "escape", "echo", {"text": "alive"}) == (True, "alive")


def test_a_hostile_server_fails_every_escape_and_serve_keeps_serving(host: Host, echo_url: str) -> None:
    argv, paths = escape_command()
    make_ready(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    make_ready(
        host,
        {
            "name": "Escape",
            "transport": "stdio",
            "command": argv[0],
            "args": argv[1:],
            "secret_values": {"env": {"ESCAPE_TOKEN": "e2e-sandbox-secret-value"}},  # so secrets.json exists
            "sandbox": {"paths": [p.model_dump() for p in paths], "memory_mb": 512, "max_processes": 64},
        },
    )
    data = host.data_dir
    assert (data / "secret.key").exists() and (data / "mcp" / "secrets.json").exists()
    serve_port = urlsplit(host.url).port
    attempts: list[tuple[str, dict[str, Any], str]] = [
        ("read_file", {"path": str(data / "secret.key")}, "ENOENT"),
        ("read_file", {"path": str(data / "mcp" / "secrets.json")}, "ENOENT"),
        ("write_file", {"path": "/usr/lib/escape"}, "EROFS"),
        ("write_file", {"path": str(data / "mcp" / "servers.json")}, "ENOENT"),
        ("connect", {"host": "127.0.0.1", "port": serve_port}, "ECONNREFUSED"),
        ("fork_bomb", {"count": 10_000}, "EAGAIN"),
        ("allocate", {"mb": 2048}, "MemoryError"),
    ]
    for tool, arguments, refusal in attempts:
        ok, text = call(host, "escape", tool, arguments)
        assert not ok and text.startswith(refusal), (tool, text)
        still_serving(host, echo_url)
    assert "e2e-sandbox-secret-value" not in host.log()

    logs = host.client.get(f"{SERVERS}/escape/logs").json()
    refused = [e["violation"] for e in logs["requests"] if e["method"] == "tools/call" and e["violation"]]
    assert {"kind": "filesystem", "errno": "EROFS"} in refused
    assert {"kind": "network", "errno": "ECONNREFUSED"} in refused
    assert {"kind": "processes", "errno": "EAGAIN"} in refused
    assert {"kind": "memory", "errno": "ENOMEM"} in refused
    status = host.client.get(f"{SERVERS}/escape").json()["status"]
    assert status["state"] == "ready"


def test_warm_up_lets_a_network_none_pypi_server_start_offline(host: Host) -> None:
    body = {
        "name": "Time",
        "transport": "stdio",
        "command": "uvx",
        "args": ["--isolated", "--from", MCP_SERVER_TIME, "mcp-server-time"],
        "sandbox": {"network": "none"},
    }
    view = host.client.post(SERVERS, json=body).json()
    assert host.client.post(f"{SERVERS}/time/trust", json={"digest": view["digest"]}).status_code == 200
    cold = host.client.post(f"{SERVERS}/time/test").json()
    assert cold["ok"] is False and cold["error"]["reason"] == "process_exited"
    assert any("network was disabled" in line for line in cold["error"]["details"]["stderr_tail"])
    stderr = host.client.get(f"{SERVERS}/time/logs").json()["stderr"]
    assert any(line.get("violation") == {"kind": "network", "errno": "OFFLINE"} for line in stderr)

    warmed = host.client.post(f"{SERVERS}/time/sandbox/warm-up")
    assert warmed.status_code == 200, warmed.text
    result = warmed.json()
    assert result["ok"] is True and result["argv"][-3:] == ["python", "-c", "pass"], result

    tested = host.client.post(f"{SERVERS}/time/test").json()
    assert tested["ok"] is True, tested
    assert host.client.post(f"{SERVERS}/time/enable").status_code == 200
    ok, text = call(host, "time", "get_current_time", {"timezone": "UTC"})
    assert ok and '"timezone": "UTC"' in text, text
