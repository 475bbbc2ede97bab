"""The main job on real input (issue 2): a real `mcp-center serve`, real MCP servers from npm and
PyPI, driven only through the REST API. Create, trust, test, enable, list tools, call a tool and
get the right result; disable; delete; and no child process is left behind (R-2.4, R-2.6).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway import gateway_client
from tests.support.http import check
from tests.support.mcp_servers import EVERYTHING, MCP_SERVER_TIME
from tests.support.ports import free_port
from tests.support.processes import descendants, wait_no_descendants
from tests.support.readiness import add_ready_on_host
from tests.support.serve import VENV_BIN, Host

pytestmark = pytest.mark.e2e

SERVERS = "/api/mcp/servers"
HANG_SCRIPT = Path(__file__).parent / "scripts" / "hang_on_initialize.py"


def call_text(host: Host, server_id: str, tool: str, arguments: dict[str, Any]) -> str:
    result = check(host.client.post(f"{SERVERS}/{server_id}/tools/{tool}/call", json={"arguments": arguments}), 200)
    assert result.get("isError") is not True, result
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def disable_and_delete(host: Host, server_id: str) -> None:
    view = check(host.client.post(f"{SERVERS}/{server_id}/disable"), 200)
    assert view["enabled"] is False
    assert view["status"]["state"] == "disconnected"
    call = host.client.post(f"{SERVERS}/{server_id}/tools/echo/call", json={"arguments": {}})
    assert call.status_code == 409
    assert call.json()["error"]["code"] == "MCP_SERVER_DISABLED"
    check(host.client.delete(f"{SERVERS}/{server_id}"), 204)
    assert host.client.get(f"{SERVERS}/{server_id}").status_code == 404


def test_server_everything_over_stdio_runs_end_to_end_and_leaves_no_process(host: Host) -> None:
    view = add_ready_on_host(
        host,
        {"name": "Everything (stdio)", "transport": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]},
    )
    assert view["summary"]["command_path"].endswith("/node")
    assert descendants(host.proc.pid), "the enabled stdio server runs as a child of the host"
    tools = check(host.client.get(f"{SERVERS}/{view['id']}/tools"), 200)["tools"]
    assert {"echo", "get-sum"} <= {t["name"] for t in tools}
    assert call_text(host, view["id"], "echo", {"message": "hello from mcp-center"}) == "Echo: hello from mcp-center"
    assert call_text(host, view["id"], "get-sum", {"a": 2, "b": 3}) == "The sum of 2 and 3 is 5."
    disable_and_delete(host, view["id"])
    assert wait_no_descendants(host.proc.pid) == set()


def test_server_everything_over_streamable_http(host: Host, everything_http: str) -> None:
    view = add_ready_on_host(
        host, {"name": "Everything (http)", "transport": "streamable_http", "url": f"{everything_http}/mcp"}
    )
    assert view["status"]["protocol_version"] == "2025-11-25"
    assert call_text(host, view["id"], "get-sum", {"a": 20, "b": 22}) == "The sum of 20 and 22 is 42."
    disable_and_delete(host, view["id"])


def test_server_everything_over_legacy_sse(host: Host, everything_sse: str) -> None:
    view = add_ready_on_host(host, {"name": "Everything (sse)", "transport": "sse", "url": f"{everything_sse}/sse"})
    assert call_text(host, view["id"], "echo", {"message": "legacy"}) == "Echo: legacy"
    disable_and_delete(host, view["id"])


def test_python_server_from_pypi_through_uvx(host: Host) -> None:
    uvx = str(VENV_BIN / "uvx")
    view = add_ready_on_host(
        host,
        {
            "name": "Time",
            "transport": "stdio",
            "command": uvx,
            "args": ["--isolated", "--from", MCP_SERVER_TIME, "mcp-server-time"],
            "startup_timeout_s": 120,
        },
    )
    text = call_text(host, view["id"], "get_current_time", {"timezone": "UTC"})
    assert '"timezone": "UTC"' in text
    disable_and_delete(host, view["id"])
    assert wait_no_descendants(host.proc.pid) == set()


def _failed_test(host: Host, body: dict[str, Any]) -> dict[str, Any]:
    view = check(host.client.post(SERVERS, json=body), 201)
    server = f"{SERVERS}/{view['id']}"
    check(host.client.post(f"{server}/trust", json={"digest": view["digest"]}), 200)
    result = check(host.client.post(f"{server}/test"), 200)
    assert result["ok"] is False
    enable = host.client.post(f"{server}/enable")
    assert enable.status_code == 409
    assert enable.json()["error"]["code"] == "MCP_SERVER_NOT_TESTED"
    after = check(host.client.get(server), 200)
    assert after["enabled"] is False
    assert after["last_test"]["ok"] is False
    return result["error"]


def test_a_command_that_does_not_exist_fails_the_test_clearly(host: Host) -> None:
    error = _failed_test(
        host, {"name": "Missing", "transport": "stdio", "command": "/nonexistent/bin/mcp-server-nothing"}
    )
    assert error["reason"] == "spawn_failed"


def test_a_refused_connection_fails_the_test_clearly(host: Host) -> None:
    error = _failed_test(
        host, {"name": "Refused", "transport": "streamable_http", "url": f"http://127.0.0.1:{free_port()}/mcp"}
    )
    assert error["reason"] == "refused"


def test_a_server_that_exits_at_once_reports_its_exit_code_and_stderr(host: Host) -> None:
    error = _failed_test(
        host,
        {
            "name": "Crash",
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-c", "import sys; print('fatal: no config', file=sys.stderr); sys.exit(3)"],
        },
    )
    assert error["reason"] == "process_exited"
    assert error["details"]["exit_code"] == 3
    assert "fatal: no config" in error["details"]["stderr_tail"]


def test_a_server_answering_garbage_is_a_protocol_error(host: Host) -> None:
    script = 'import sys\nfor line in sys.stdin:\n    print(\'{"jsonrpc": "2.0", "id": 0, "oops": 1}\', flush=True)\n'
    error = _failed_test(
        host,
        {
            "name": "Garbage",
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-c", script],
            "startup_timeout_s": 5,
        },
    )
    assert error["reason"] in {"protocol", "timeout"}


def test_a_server_that_hangs_in_initialize_times_out_without_an_orphan(host: Host) -> None:
    error = _failed_test(
        host,
        {
            "name": "Hang",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(HANG_SCRIPT)],
            "startup_timeout_s": 2,
        },
    )
    assert error["code"] == "MCP_SERVER_TIMEOUT"
    assert error["reason"] == "timeout"
    assert wait_no_descendants(host.proc.pid) == set()


def test_an_agent_uses_server_everything_through_the_gateway(host: Host) -> None:
    """R-8.1 on real input: an MCP client (the SDK's) reaches server-everything via /mcp."""
    import anyio

    add_ready_on_host(
        host,
        {
            "name": "Everything",
            "transport": "stdio",
            "command": "node",
            "args": [str(EVERYTHING), "stdio"],
            "tool_policies": {"echo": "allow", "get-sum": "allow"},
        },
    )
    token = check(host.client.post("/api/gateway/tokens", json={"name": "e2e"}), 201)["token"]

    async def run() -> tuple[set[str], str, set[str]]:
        async with gateway_client(host.url, token, timeout_s=60) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("mcp__everything__get-sum", {"a": 19, "b": 23})
            prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
            text = "".join(getattr(block, "text", "") for block in result.content)
            return names, text, prompts

    names, text, prompts = anyio.run(run)
    assert {"mcp__everything__echo", "mcp__everything__get-sum"} <= names
    assert text == "The sum of 19 and 23 is 42."
    assert "everything:simple-prompt" in prompts
