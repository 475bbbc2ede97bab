"""Fault injection against a real stdio MCP server (R-2.4, R-2.6, R-3.1, R-3.9, issue 3)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_center.config import Settings
from mcp_center.errors import ConnectionLost, ServerTimeout, ServerUnreachable
from mcp_center.runtime import TRUNCATION_META_KEY
from mcp_center.service import McpCenter
from tests.support.processes import alive
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

ECHO = str(Path(__file__).parent.parent / "servers" / "echo_stdio.py")


async def _enable(center: McpCenter, args: list[str], *, own_process: bool = False, **extra: Any) -> str:
    """Create, trust, test and enable the echo server. It runs in the fork server (`launch_command`,
    issue 16) unless the test is about its own process tree (`own_process`)."""
    command, *argv = [sys.executable, ECHO, *args] if own_process else launch_command(ECHO, *args)
    view = (
        await center.create_server({"name": "Echo", "transport": "stdio", "command": command, "args": argv, **extra})
    ).to_dict()
    await center.trust(view["id"], view["digest"])
    result = await center.test(view["id"])
    assert result.ok, result.error
    enabled = (await center.enable(view["id"])).to_dict()
    assert enabled["status"]["state"] == "ready"
    return str(view["id"])


async def test_a_server_dying_mid_call_fails_the_call_promptly_and_the_next_call_reconnects(center: McpCenter) -> None:
    server_id = await _enable(center, [])
    with anyio.fail_after(10), pytest.raises((ConnectionLost, ServerUnreachable)) as caught:
        await center.call_tool(server_id, "crash", {"code": 7})
    status = await center.wait_for_state(server_id, "error", timeout_s=10)
    assert status.error is not None
    assert status.error["details"]["reason"] == "process_exited"
    assert status.error["details"]["exit_code"] == 7
    assert caught.value.details["reason"] in {"process_exited", "closed"}
    with anyio.fail_after(30):
        answer = await center.call_tool(server_id, "echo", {"text": "back"})
    assert answer.text == "back"


async def test_a_ten_megabyte_result_is_truncated_and_marked(center: McpCenter) -> None:
    server_id = await _enable(center, [])
    with anyio.fail_after(30):
        result = await center.call_tool(server_id, "big", {"kib": 10 * 1024})
    assert result.result.meta is not None
    marker = result.result.meta[TRUNCATION_META_KEY]
    assert marker["original_bytes"] > 10 * 1024 * 1024
    assert marker["limit_bytes"] == 1024 * 1024
    first, *_, last = result.content
    assert isinstance(first, types.TextContent) and isinstance(last, types.TextContent)
    assert "truncated by mcp-center" in last.text
    assert len(first.text) < 1024 * 1024


async def test_a_banner_on_stdout_is_tolerated_and_recorded(center: McpCenter) -> None:
    server_id = await _enable(center, ["--banner"])
    assert (await center.call_tool(server_id, "echo", {"text": "hi"})).text == "hi"
    logs = await center.logs(server_id)
    assert any(line["line"].startswith("[stdout, not JSON-RPC] echo server 1.0") for line in logs.stderr)


async def test_a_server_that_only_prints_noise_times_out_with_a_clear_hint(center: McpCenter) -> None:
    script = "import sys, time\nprint('Listening on port 3000', flush=True)\nfor _ in sys.stdin:\n    pass\n"
    view = (
        await center.create_server(
            {
                "name": "Noisy",
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-c", script],
                "startup_timeout_s": 1,
            }
        )
    ).to_dict()
    await center.trust(view["id"], view["digest"])
    result = await center.test(view["id"])
    assert result.error is not None
    assert result.error.code == ServerTimeout.code
    assert result.error.details["noise_lines"] == 1
    assert "Listening on port 3000" in result.error.details["first_noise"]
    assert "not JSON-RPC" in result.error.message


async def test_disable_during_a_call_fails_it_and_kills_the_process_tree(center: McpCenter) -> None:
    server_id = await _enable(center, [], own_process=True)
    grandchild = (await center.call_tool(server_id, "spawn_grandchild", {})).structured_content["result"]
    assert alive(grandchild)
    await center.disable(server_id)
    assert not alive(grandchild)


async def test_host_shutdown_leaves_no_process_behind(settings: Settings) -> None:
    async with McpCenter.open(settings) as center:
        server_id = await _enable(center, [], own_process=True)
        grandchild = (await center.call_tool(server_id, "spawn_grandchild", {})).structured_content["result"]
        leader = center._manager.current(server_id).session.probe.stdio.pid  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
        assert leader is not None and alive(leader)
    assert not alive(grandchild)
    assert not alive(leader)
    assert os.getpid() > 0
