"""`McpCenter` use cases against a real loopback MCP server (R-1.3, R-1.4, R-2, R-2.7, R-3.2, R-3.8)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_center.config import Settings
from mcp_center.errors import (
    CallCancelled,
    CenterError,
    ServerDisabled,
    ServerNotTested,
    ServerNotTrusted,
    ServerTimeout,
    ServerVersionConflict,
)
from mcp_center.runtime import SessionHooks
from mcp_center.service import McpCenter
from mcp_center.transports import ConnectionSpec
from tests.servers.http_echo import make_echo_server, streamable_app
from tests.support.loopback import serve_loopback
from tests.support.readiness import ready_in_center

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(shared_settings: Settings) -> Settings:
    """This module runs on both store backends: the data directory's files and PostgreSQL (R-10.1)."""
    return shared_settings


@pytest.fixture
async def echo_url() -> AsyncGenerator[str]:
    async with serve_loopback(streamable_app()) as base:
        yield f"{base}/mcp"


async def test_a_restart_keeps_configuration_secrets_trust_and_test_and_reconnects(
    settings: Settings, echo_url: str
) -> None:
    """R-2.7: nothing is lost across a restart; enabled connect_on_startup servers come back."""
    async with McpCenter.open(settings) as center:
        before = await ready_in_center(
            center,
            {
                "name": "Echo",
                "transport": "streamable_http",
                "url": echo_url,
                "secret_values": {"headers": {"X-Api-Key": "restart-secret-value"}},
            },
        )
    async with McpCenter.open(settings) as center:
        await center.wait_for_state("echo", "ready", timeout_s=10)
        after = (await center.get_server("echo")).to_dict()
        assert after["digest"] == before["digest"]
        assert after["trusted"] and after["tested"] and after["enabled"]
        assert after["secret_headers"] == {"X-Api-Key": {"configured": True}}
        headers = await center.call_tool("echo", "whoami", {})
        # The secret reached the server (it echoes the header) and was redacted on the way back.
        assert headers.structured_content["x-api-key"] == "[redacted]"


async def test_a_server_without_connect_on_startup_connects_lazily_on_first_use(
    settings: Settings, echo_url: str
) -> None:
    """R-3.2: only connect_on_startup servers connect at start-up; others on first catalog read or call."""
    async with McpCenter.open(settings) as center:
        await ready_in_center(
            center, {"name": "Lazy", "transport": "streamable_http", "url": echo_url, "connect_on_startup": False}
        )
    async with McpCenter.open(settings) as center:
        await anyio.sleep(0.3)
        assert center.status("lazy").state.value == "disconnected"
        tools = await center.list_tools("lazy")
        assert {t.name for t in tools} == {"echo", "add", "sleep", "whoami"}
        assert center.status("lazy").state.value == "ready"


async def test_a_change_made_by_another_process_is_reconciled_into_the_running_host(
    settings: Settings, echo_url: str
) -> None:
    """R-3.3: the CLI writes servers.json; the running host notices and disconnects."""
    async with McpCenter.open(settings) as host:
        await ready_in_center(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
        assert host.status("echo").state.value == "ready"
        async with McpCenter.open(settings, connect=False) as cli:
            await cli.disable("echo")
        await host.wait_for_state("echo", "disconnected", timeout_s=10)
        with pytest.raises(ServerDisabled):
            await host.call_tool("echo", "echo", {"text": "x"})


async def test_a_high_risk_change_disconnects_and_requires_trust_test_and_enable_again(
    center: McpCenter, echo_url: str
) -> None:
    """R-1.4: changing a header invalidates trust and test at once and closes the session."""
    view = await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    changed = (
        await center.update_server("echo", {"version": view["version"], "headers": {"X-Team": "blue"}}, partial=True)
    ).to_dict()
    assert changed["trusted"] is False and changed["tested"] is False and changed["enabled"] is False
    assert changed["needs"] == ["trust", "test", "enable"]
    assert center.status("echo").state.value == "disconnected"
    with pytest.raises(ServerNotTrusted):
        await center.test("echo")
    await center.trust("echo", changed["digest"])
    with pytest.raises(ServerNotTested):
        await center.enable("echo")


async def test_a_low_risk_change_keeps_the_session(center: McpCenter, echo_url: str) -> None:
    view = await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    connection_id = center.status("echo").connection_id
    renamed = (
        await center.update_server("echo", {"version": view["version"], "name": "Echo 2"}, partial=True)
    ).to_dict()
    assert renamed["enabled"] and renamed["trusted"] and renamed["tested"]
    assert renamed["version"] == view["version"] + 1
    assert center.status("echo").connection_id == connection_id


async def test_a_stale_version_changes_nothing(center: McpCenter, echo_url: str) -> None:
    """R-1.3: two pages never overwrite each other."""
    view = (await center.create_server({"name": "Echo", "transport": "streamable_http", "url": echo_url})).to_dict()
    await center.update_server("echo", {"version": view["version"], "name": "First"}, partial=True)
    with pytest.raises(ServerVersionConflict) as caught:
        await center.update_server("echo", {**view, "name": "Second"})
    assert caught.value.details["current_version"] == view["version"] + 1
    assert ((await center.get_server("echo")).to_dict())["name"] == "First"


async def test_a_test_result_of_a_configuration_that_changed_meanwhile_is_not_stored(
    center: McpCenter, echo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = (await center.create_server({"name": "Echo", "transport": "streamable_http", "url": echo_url})).to_dict()
    await center.trust("echo", view["digest"])
    original_probe = center._manager.probe  # pyright: ignore[reportPrivateUsage]

    async def probe_then_edit(spec: Any) -> Any:
        result = await original_probe(spec)
        async with McpCenter.open(center.settings, connect=False) as other:
            await other.update_server("echo", {"version": view["version"], "headers": {"X-A": "b"}}, partial=True)
        return result

    monkeypatch.setattr(center._manager, "probe", probe_then_edit)  # pyright: ignore[reportPrivateUsage]
    result = await center.test("echo")
    assert result.ok
    after = (await center.get_server("echo")).to_dict()
    assert after["last_test"] is None
    assert after["tested"] is False


async def test_a_call_is_bounded_by_the_server_call_timeout(center: McpCenter, echo_url: str) -> None:
    """R-3.8: tool calls time out (per server setting)."""
    await ready_in_center(
        center, {"name": "Echo", "transport": "streamable_http", "url": echo_url, "call_timeout_s": 1}
    )
    with anyio.fail_after(10), pytest.raises(ServerTimeout) as caught:
        await center.call_tool("echo", "sleep", {"seconds": 30})
    assert caught.value.details["reason"] == "timeout"
    assert (await center.call_tool("echo", "add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_a_changed_call_timeout_applies_to_the_next_call_on_the_same_session(
    center: McpCenter, echo_url: str
) -> None:
    """R-3.8 with R-3.3: the timeout is low-risk, so the session stays and the new value applies at once."""
    view = await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    connection_id = center.status("echo").connection_id
    await center.update_server("echo", {"version": view["version"], "call_timeout_s": 1}, partial=True)
    with anyio.fail_after(10), pytest.raises(ServerTimeout):
        await center.call_tool("echo", "sleep", {"seconds": 30})
    assert center.status("echo").connection_id == connection_id


async def test_a_call_is_cancelled_by_its_operation_id_while_running(center: McpCenter) -> None:
    """R-3.8: aborting by operation id reaches the running call."""
    sleep_started = anyio.Event()
    async with serve_loopback(streamable_app(make_echo_server(sleep_started=sleep_started))) as base:
        await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": f"{base}/mcp"})
        await _cancel_running_call(center, sleep_started)


async def _cancel_running_call(center: McpCenter, sleep_started: anyio.Event) -> None:
    outcome: list[CallCancelled] = []

    async def call() -> None:
        try:
            await center.call_tool("echo", "sleep", {"seconds": 30}, operation_id="op-1")
        except CallCancelled as exc:
            outcome.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await sleep_started.wait()
            assert center.is_running("op-1")
            assert center.cancel("op-1") is True
    assert len(outcome) == 1
    assert outcome[0].details["operation_id"] == "op-1"


async def test_a_cancel_that_arrives_before_the_call_refuses_it(center: McpCenter, echo_url: str) -> None:
    """R-3.8: cancellation records cover a cancel that arrives before admission."""
    await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    assert center.cancel("op-early") is False
    with pytest.raises(CallCancelled):
        await center.call_tool("echo", "sleep", {"seconds": 30}, operation_id="op-early")
    assert (await center.call_tool("echo", "add", {"a": 2, "b": 2}, operation_id="op-early")).is_error is False


async def test_the_stderr_tail_of_a_failed_stdio_server_is_redacted(center: McpCenter, tmp_path: Path) -> None:
    """R-1.5: a server printing its secret env to stderr does not leak it through the test result."""
    script = tmp_path / "leak.py"
    script.write_text("import os, sys\nprint('token is', os.environ['API_TOKEN'], file=sys.stderr)\nsys.exit(4)\n")

    view = (
        await center.create_server(
            {
                "name": "Leaky",
                "transport": "stdio",
                "command": sys.executable,
                "args": [str(script)],
                "secret_values": {"env": {"API_TOKEN": "very-secret-token-42"}},
            }
        )
    ).to_dict()
    await center.trust(view["id"], view["digest"])
    result = await center.test(view["id"])
    assert not result.ok
    assert result.error is not None
    assert result.error.details["exit_code"] == 4
    assert result.error.details["stderr_tail"] == ["token is [redacted]"]
    assert "very-secret-token-42" not in result.model_dump_json()


RAW_STDIO = Path(__file__).parents[1] / "servers" / "raw_stdio.py"


async def test_a_stdio_server_that_exits_puts_its_exit_code_in_the_status_and_closes_its_log(
    center: McpCenter,
) -> None:
    """R-3.1, R-3.11: the status of a session the server ended says why, and its unanswered call
    is logged as an error, not left pending; the stderr line quoting a secret is redacted."""
    view = await ready_in_center(
        center,
        {
            "name": "Raw",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(RAW_STDIO)],
            "secret_values": {"env": {"RAW_TOKEN": "raw-secret-token-42"}},
        },
    )
    await center.wait_for_state(view["id"], "ready", timeout_s=10)
    with pytest.raises(CenterError) as caught:
        await center.call_tool(view["id"], "exit", {"code": 7})
    # The call lost its session (it may have run in part); the server's own state says unreachable.
    assert (caught.value.code, caught.value.details["reason"]) == ("MCP_CONNECTION_LOST", "process_exited")
    assert caught.value.details["exit_code"] == 7
    status = await center.wait_for_state(view["id"], "error", timeout_s=10)
    assert status.error is not None
    assert (status.error["code"], status.error["details"]["reason"]) == ("MCP_SERVER_UNREACHABLE", "process_exited")
    assert status.error["details"]["exit_code"] == 7
    logs = await center.logs(view["id"])
    call = [e for e in logs.requests if e["method"] == "tools/call"]
    assert [(e["status"], e["error"]["message"]) for e in call] == [("error", "no answer: the connection closed")]
    assert "raw-stdio starting; RAW_TOKEN=[redacted]" in [line["line"] for line in logs.stderr]
    assert "raw-secret-token-42" not in str(logs.to_dict())


async def test_the_host_advertises_form_mode_elicitation_only(center: McpCenter) -> None:
    """R-6.1: URL-mode requests would be declined, so the `initialize` a server receives says form mode only."""
    await ready_in_center(
        center,
        {
            "name": "Raw",
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(RAW_STDIO), "--report-capabilities"],
        },
    )
    result = await center.call_tool("raw", "client_capabilities", {})
    advertised = json.loads(result.text)
    assert advertised["elicitation"] == {"form": {}}


async def test_the_stop_grace_setting_reaches_the_stdio_connections_it_starts(tmp_path: Path) -> None:
    """R-2.6, R-9.3: `MCP_CENTER_STOP_GRACE_S` is the grace of every stdio connection's stop."""
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_STOP_GRACE_S": "0.3"})
    graces: list[tuple[str, float]] = []

    def hooks_for(spec: ConnectionSpec, _connection_id: str) -> SessionHooks:
        graces.append((spec.server_id, spec.stop_grace_s))
        return SessionHooks()

    async with McpCenter.open(settings, connect=False, hooks_for=hooks_for) as center:
        view = await ready_in_center(
            center, {"name": "Raw", "transport": "stdio", "command": sys.executable, "args": [str(RAW_STDIO)]}
        )
        await center.wait_for_state(view["id"], "ready", timeout_s=10)
    assert graces == [("raw", 0.3)]
