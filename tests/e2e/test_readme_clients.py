"""README's gateway clients work as printed (issue 15): the Python SDK snippet and the Inspector CLI
line, copied from README.md with only the host's port changed, reach mcp-server-time (uvx) through
a real `mcp-center serve` with a gateway token; the SDK's call waits for an approval whose card
names the token and the client that asked (R-8.1, R-5.3)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.cli import run_cli
from tests.support.loopback import NO_TLS
from tests.support.mcp_servers import MCP_SERVER_TIME, NODE_DIR
from tests.support.readiness import add_ready_on_host
from tests.support.serve import VENV_BIN, Host

pytestmark = pytest.mark.e2e

README = Path(__file__).parents[2] / "README.md"
INSPECTOR = (
    NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
)
README_URL = "http://127.0.0.1:8765"
WAIT_S = 120.0
"""Bound on one step (a cold uvx install of mcp-server-time is the slow part)."""


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def _python_snippet() -> str:
    [snippet] = [block for block in _blocks("python") if "streamable_http_client" in block]
    return snippet


def _inspector_line() -> str:
    [block] = [block for block in _blocks("bash") if "@modelcontextprotocol/inspector" in block]
    return block.replace("\\\n", " ").strip()


def _ready_time_server(host: Host) -> None:
    body = {
        "name": "Time",
        "transport": "stdio",
        "command": str(VENV_BIN / "uvx"),
        "args": ["--isolated", "--from", MCP_SERVER_TIME, "mcp-server-time"],
        "startup_timeout_s": 120,
    }
    add_ready_on_host(host, body)


def _gateway_token(host: Host, name: str) -> str:
    """`mcp-center gateway token create NAME` on the serve's data directory, in process (issue 16)."""
    created = run_cli(None, "gateway", "token", "create", name, "--data-dir", str(host.data_dir))
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def _approve_when_asked(host: Host, proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Approve the snippet's call once its approval appears; return the approval as listed."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        pending = host.client.get("/api/approvals").json()["approvals"]
        if pending:
            decided = host.client.post(f"/api/approvals/{pending[0]['id']}", json={"decision": "approve"})
            assert decided.status_code == 200, decided.text
            return pending[0]
        time.sleep(0.1)
    raise AssertionError("the snippet's call never asked for an approval")


@pytest.mark.own_serve  # it leaves an approval
def test_readme_python_snippet_lists_and_calls_through_the_gateway(host: Host) -> None:
    _ready_time_server(host)
    token = _gateway_token(host, "readme-python")
    code = _python_snippet().replace(README_URL, host.url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env["MCP_CENTER_GATEWAY_TOKEN"] = token
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        approval = _approve_when_asked(host, proc)
        out, errors = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, errors
    names, text = out.splitlines()[0], "\n".join(out.splitlines()[1:])
    assert "mcp__time__get_current_time" in names
    assert json.loads(text)["timezone"] == "UTC"
    # The card names the gateway token and the client (the SDK's clientInfo) that asked.
    assert approval["caller"]["via"] == "gateway"
    assert approval["caller"]["token_name"] == "readme-python"
    assert approval["caller"]["client"]["name"]


def test_readme_inspector_cli_line_lists_the_gateway_tools(host: Host) -> None:
    if not INSPECTOR.exists():
        pytest.fail("the Inspector is missing from tests/e2e/node: run scripts/bootstrap --dev")
    _ready_time_server(host)
    token = _gateway_token(host, "readme-inspector")
    line = _inspector_line().replace(README_URL, host.url).replace("$GW", token)
    argv = shlex.split(line)
    assert argv[:3] == ["npx", "-y", "@modelcontextprotocol/inspector@2.12.0"], argv
    listed = subprocess.run(
        ["node", str(INSPECTOR), *argv[3:]], capture_output=True, text=True, timeout=WAIT_S, check=False
    )
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout[listed.stdout.index("{") :])["tools"]
    assert sorted(tool["name"] for tool in tools) == ["mcp__time__convert_time", "mcp__time__get_current_time"]


def test_readme_says_what_the_sdks_legacy_client_does_when_its_session_is_gone(host: Host) -> None:
    """The gateway answers a session it does not know (an instance that died, here ended by its
    DELETE) with the spec's 404; the SDK's legacy `Client` does not re-initialize by itself but
    raises `MCPError` on every later call, as docs/several-instances.md says of README.md's snippet, and a
    new `Client` carries on (R-10.2)."""
    page = (README.parent / "docs" / "several-instances.md").read_text(encoding="utf-8")
    assert '`Client(..., mode="legacy")` (the README\'s snippet) raises `MCPError` ("Session\nnot found")' in page
    token = _gateway_token(host, "readme-session-gone")

    async def main() -> list[object]:
        sessions: list[str] = []
        statuses: list[int] = []

        async def note(response: httpx2.Response) -> None:
            sessions.extend([response.headers["mcp-session-id"]] if "mcp-session-id" in response.headers else [])
            statuses.append(response.status_code)

        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(
            verify=NO_TLS, headers=headers, timeout=30, event_hooks={"response": [note]}
        ) as http:
            async with Client(streamable_http_client(f"{host.url}/mcp", http_client=http), mode="legacy") as client:
                await client.list_tools()
                ended = await http.delete(
                    f"{host.url}/mcp", headers={"Mcp-Session-Id": sessions[0], "MCP-Protocol-Version": "2025-11-25"}
                )
                assert ended.status_code == 200
                failures: list[object] = []
                for _ in range(2):
                    with pytest.raises(MCPError) as raised:
                        await client.list_tools()
                    failures.append((statuses[-1], raised.value.error.code, raised.value.error.message))
            async with Client(streamable_http_client(f"{host.url}/mcp", http_client=http), mode="legacy") as again:
                await again.list_tools()  # a new session on the same gateway: raises if it failed too
                failures.append("listed again")
        return failures

    assert anyio.run(main) == [(404, -32600, "Session not found")] * 2 + ["listed again"]
