"""ux35: what a user and an agent see when a stdio server writes non-JSON-RPC lines on stdout or
answers with a request id mcp-center never sent (R-3.1, R-3.11, R-1.5).

Both are tolerated (a banner is common) and written to the server's log; a request that then times
out says why in its message and details, and names the command that shows the log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hostile._support import SERVERS, Host, quirky_body, running_host, text_of
from tests.support.fakes.streamable_http import ECHO_TOOL

pytestmark = pytest.mark.anyio

SECRET = "sk-quirky-stdout-0123456789abcdef"
_WRONG_ID_ANSWER = (
    b"debug: echo called with key "
    + SECRET.encode()
    + b'\n{"jsonrpc": "2.0", "id": "x{id}", "result": {"content": []}}'
)
"""A debug line on stdout (quoting the server's secret), then the answer under an id nobody sent."""


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


def _secret_body(server_id: str, scenario: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return quirky_body(
        server_id, scenario, secret_env=["QUIRKY_KEY"], secret_values={"env": {"QUIRKY_KEY": SECRET}}, **extra
    )


def _assert_names_both(error: dict[str, Any], server_id: str) -> None:
    message = error["message"]
    assert "wrote 1 line on stdout that is not JSON-RPC" in message
    assert "debug: echo called with key [redacted]" in message
    assert "an MCP server must write only JSON-RPC on stdout" in message
    assert "answered once with a request id mcp-center never sent (first: 'x" in message
    assert f"'mcp-center logs {server_id}'" in message
    details = error["details"]
    assert details["noise_lines"] == 1
    assert details["unknown_id_answers"] == 1
    assert details["first_unknown_id"].startswith("x")
    assert details["log_command"] == f"mcp-center logs {server_id}"


async def test_a_call_answered_under_an_unknown_id_after_debug_output_says_both_when_it_times_out(host: Host) -> None:
    scenario = {"tools": [ECHO_TOOL], "calls": {"echo": {"raw_hex": _WRONG_ID_ANSWER.hex()}}}
    await host.ready(_secret_body("mixup", scenario, call_timeout_s=1, tool_policies={"echo": "allow"}))
    with anyio.fail_after(20):
        called = await host.call("mixup", "echo", {"text": "x"})
    assert called.status_code == 504, called.text
    error = called.json()["error"]
    assert error["code"] == "MCP_SERVER_TIMEOUT"
    _assert_names_both(error, "mixup")
    assert SECRET not in called.text

    logs = await host.admin.get(f"{SERVERS}/mixup/logs")
    assert logs.status_code == 200, logs.text
    assert SECRET not in logs.text
    lines = [line["line"] for line in logs.json()["stderr"]]
    assert "[stdout, not JSON-RPC] debug: echo called with key [redacted]" in lines
    assert any(line.startswith("[answer to an unknown request id 'x") for line in lines), lines
    unknown = [entry["request_id"] for entry in logs.json()["requests"] if entry["status"] == "unknown_id"]
    assert len(unknown) == 1 and unknown[0].startswith("x"), logs.json()["requests"]

    # The agent's call through the gateway (the session's own dispatcher for stdio) says the same.
    async with host.agent() as agent:
        with anyio.fail_after(20):
            result = await agent.call_tool("mcp__mixup__echo", {"text": "y"})
    assert result.is_error is True
    said = text_of(result) + json.dumps(result.structured_content)
    assert "not JSON-RPC" in said and "never sent" in said and "mcp-center logs mixup" in said
    assert SECRET not in said


async def test_an_initialize_answer_under_another_id_fails_the_test_naming_it(host: Host) -> None:
    scenario = {"stdout_on_start": ["Server v1 listening (key $QUIRKY_KEY)"], "initialize_id": 777}
    view = await host.create(_secret_body("mixstart", scenario, startup_timeout_s=1))
    tested = await host.test(view["id"])
    assert tested["ok"] is False
    error = tested["error"]
    assert error["code"] == "MCP_SERVER_TIMEOUT", error
    assert "answered once with a request id mcp-center never sent (first: '777')" in error["message"]
    assert (
        "wrote 1 line on stdout that is not JSON-RPC (first: 'Server v1 listening (key [redacted])')"
        in error["message"]
    )
    assert error["details"]["log_command"] == "mcp-center logs mixstart"
    assert SECRET not in json.dumps(tested)


async def test_a_banner_alone_is_tolerated_and_a_timeout_without_stray_output_adds_nothing(host: Host) -> None:
    scenario = {
        "tools": [ECHO_TOOL],
        "stdout_on_start": ["Welcome to the quirky server"],
        "calls": {"echo": {"delay_s": 5}},
    }
    await host.ready(quirky_body("banner", scenario, call_timeout_s=1, tool_policies={"echo": "allow"}))
    with anyio.fail_after(20):
        called = await host.call("banner", "echo", {"text": "x"})
    assert called.status_code == 504, called.text
    error = called.json()["error"]
    # The banner came before the call: it cannot have swallowed the answer, so it is not named.
    assert "noise_lines" not in error["details"] and "not JSON-RPC" not in error["message"], error
    assert "unknown_id_answers" not in error["details"]
    assert "never sent" not in error["message"]
