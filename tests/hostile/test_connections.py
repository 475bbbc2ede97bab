"""Issue 14: calls and connections that stay alive, wait, and come back by themselves (R-3.2, R-3.7,
R-3.8, R-3.11). Items 4, 7 and 12, through the REST API and the gateway of a real host."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from starlette.responses import Response

from mcp_center.runtime import manager as manager_module
from mcp_center.transports.backoff import Backoff
from tests.hostile._support import SERVERS, Host, quirky_body, remote_body, running_host, text_of
from tests.support.fakes.streamable_http import ECHO_TOOL, FakeStreamableServer, json_response, rpc_error, rpc_result
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio

PROGRESSING = {"name": "progressing", "inputSchema": {"type": "object"}}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


def _progress_scenario(count: int, interval_s: float) -> dict[str, Any]:
    return {
        "tools": [PROGRESSING],
        "calls": {
            "progressing": {
                "progress": {"count": count, "interval_s": interval_s},
                "result": {"content": [{"type": "text", "text": "finished"}]},
            }
        },
    }


async def test_progress_keeps_a_call_alive_past_its_timeout_and_is_visible(host: Host) -> None:
    """Item 4: progress every 0.4 s for 2.4 s against a 1 s call timeout; REST and gateway calls both
    finish, the REST call's progress is published as events and the agent receives it."""
    body = quirky_body("slow", _progress_scenario(6, 0.4), call_timeout_s=1, tool_policies={"progressing": "allow"})
    await host.ready(body)
    async with host.center.events.subscribe() as events:
        with anyio.fail_after(20):
            called = await host.call("slow", "progressing")
        assert called.status_code == 200, called.text
        assert text_of(called.json()) == "finished"
        seen: list[dict[str, Any]] = []
        while len(seen) < 6:
            with anyio.fail_after(5):
                event = await events.next()
            if event["type"] == "operation.progress":
                seen.append(event)
    assert [e["progress"] for e in seen] == [1, 2, 3, 4, 5, 6]
    assert {e["server_id"] for e in seen} == {"slow"} and {e["tool"] for e in seen} == {"progressing"}
    received: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        del total, message
        received.append(progress)

    async with host.agent() as agent:
        with anyio.fail_after(20):
            result = await agent.call_tool("mcp__slow__progressing", {}, progress_callback=on_progress)
    assert text_of(result) == "finished"
    assert received == [1, 2, 3, 4, 5, 6]


async def test_progress_cannot_keep_a_call_alive_beyond_its_maximum_total(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 4: a server that reports progress forever still ends, at PROGRESS_MAX_FACTOR x the timeout."""
    monkeypatch.setattr(manager_module, "PROGRESS_MAX_FACTOR", 2)
    await host.ready(quirky_body("endless", _progress_scenario(1000, 0.25), call_timeout_s=1))
    started = anyio.current_time()
    with anyio.fail_after(20):
        called = await host.call("endless", "progressing")
    elapsed = anyio.current_time() - started
    assert called.status_code == 504, called.text
    error = called.json()["error"]
    assert error["code"] == "MCP_SERVER_TIMEOUT"
    assert "maximum of 2 s" in error["message"]
    assert elapsed < 10


async def test_a_call_without_progress_still_times_out_at_call_timeout(host: Host) -> None:
    """Item 4, the control: silence is not progress."""
    body = quirky_body("silent", {"tools": [PROGRESSING], "calls": {"progressing": {"delay_s": 30}}}, call_timeout_s=1)
    await host.ready(body)
    with anyio.fail_after(15):
        called = await host.call("silent", "progressing")
    assert called.status_code == 504
    assert "call_timeout_s" in called.json()["error"]["message"]


async def test_an_agent_call_while_its_server_is_connecting_waits_for_the_connection(
    host: Host, tmp_path: Path
) -> None:
    """Item 7: the gateway call waits for a server in `connecting` instead of MCP_TOOL_NOT_FOUND."""
    slow = tmp_path / "slow"  # the server starts slowly once this file exists: after it is ready
    scenario = {"tools": [ECHO_TOOL], "initialize_delay_s": 1.5, "slow_while": str(slow)}
    await host.ready(quirky_body("lazy", scenario, tool_policies={"echo": "allow"}))
    slow.touch()
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage] - the runtime behind the API
    await manager.disconnect("lazy")
    results: list[types.CallToolResult] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.connect, "lazy")
        with anyio.fail_after(5):
            await manager.wait_for_status("lazy", lambda s: s.state.value == "connecting")
        async with host.agent() as agent:
            with anyio.fail_after(20):
                results.append(await agent.call_tool("mcp__lazy__echo", {"text": "waited"}))
    result = results[0]
    assert result.is_error is not True, text_of(result)
    assert text_of(result) == "waited"


async def test_a_cancel_while_a_call_waits_for_a_lazy_connection_ends_the_wait(host: Host, tmp_path: Path) -> None:
    """Item 7: the cancel is found (True) and the REST caller gets MCP_CALL_CANCELLED before the
    slow connection completes."""
    slow = tmp_path / "slow"  # the server starts slowly once this file exists: after it is ready
    scenario = {"tools": [ECHO_TOOL], "initialize_delay_s": 4, "slow_while": str(slow)}
    await host.ready(quirky_body("slowstart", scenario))
    slow.touch()
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
    await manager.disconnect("slowstart")
    answers: list[Any] = []

    async def call() -> None:
        answers.append(
            await host.admin.post(
                f"{SERVERS}/slowstart/tools/echo/call", json={"arguments": {"text": "x"}, "operation_id": "op-wait"}
            )
        )

    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(5):
            await manager.wait_for_status("slowstart", lambda s: s.state.value == "connecting")
        cancelled = await host.admin.post("/api/operations/op-wait/cancel")
        assert cancelled.json() == {"operation_id": "op-wait", "cancelled": True}
    assert anyio.current_time() - started < 3.5
    assert answers[0].status_code == 409, answers[0].text
    assert answers[0].json()["error"]["code"] == "MCP_CALL_CANCELLED"


def _prompting(fail: dict[str, bool]) -> FakeStreamableServer:
    """A Streamable HTTP fake that also offers one prompt; `fail["prompts"]` makes prompts/list fail."""
    fake = FakeStreamableServer(capabilities={"tools": {"listChanged": True}, "prompts": {}})

    async def prompts(server: FakeStreamableServer, message: dict[str, Any]) -> Response:
        del server
        if fail["prompts"]:
            return json_response(rpc_error(message["id"], -32603, "prompts are down"))
        return json_response(rpc_result(message["id"], {"prompts": [{"name": "greet"}]}))

    fake.handlers["prompts/list"] = prompts
    return fake


async def test_a_category_that_fails_after_a_reconnect_keeps_its_content_and_is_retried(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 7: after a reconnect whose first prompts/list fails, the prompts stay listed (with the
    error shown) and are listed again by themselves once the server recovers."""
    monkeypatch.setattr("mcp_center.runtime.connection.CATEGORY_RETRY", Backoff(floor_s=0.3, cap_s=0.6))
    fail = {"prompts": False}
    fake = _prompting(fail)
    async with serve_loopback(fake.app) as base:
        await host.ready(remote_body("prompty", f"{base}/mcp"))
        assert [p["name"] for p in (await host.catalog("prompty"))["prompts"]] == ["greet"]
        fail["prompts"] = True
        manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
        await manager.disconnect("prompty")
        catalog = await host.catalog("prompty")  # reconnects
        assert [p["name"] for p in catalog["prompts"]] == ["greet"]
        assert catalog["errors"]["prompts"] is not None
        assert (await host.admin.get(f"{SERVERS}/prompty")).json()["status"]["state"] == "ready"
        async with host.center.events.subscribe() as events:
            fail["prompts"] = False
            with anyio.fail_after(10):  # the retry worker lists prompts again by itself
                while not (
                    (event := await events.next())["type"] == "server.catalog" and "prompts" in event["categories"]
                ):
                    pass
        catalog = await host.catalog("prompty")
        assert catalog["errors"]["prompts"] is None
        assert [p["name"] for p in catalog["prompts"]] == ["greet"]
        # Agents see the prompt again while the server is up (it ran after the server stopped before,
        # where only the gateway's cached catalogue could have answered, issue 16).
        async with host.agent() as agent:
            assert "prompty:greet" in [p.name for p in (await agent.list_prompts()).prompts]


async def test_a_streamable_http_server_that_went_away_and_came_back_reconnects_by_itself(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 12: no click needed. While it is down the status is `error` with the next attempt's time;
    once it is back the status becomes `ready` again without any request, and agents can call it."""
    monkeypatch.setattr(manager_module, "RECONNECT", Backoff(floor_s=0.3, cap_s=1.0))
    monkeypatch.setattr("mcp_center.runtime.connection.EARLY_PING_MIN_INTERVAL_S", 0.1)
    fake = FakeStreamableServer()
    async with serve_loopback(fake.app) as base:
        port = int(base.rsplit(":", 1)[1])
        await host.ready(remote_body("flaky", f"{base}/mcp", tool_policies={"echo": "allow"}))
        fake.restart()
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
    with anyio.fail_after(15):
        down = await manager.wait_for_status(
            "flaky", lambda s: s.state.value == "error" and s.next_attempt_at is not None
        )
    view = (await host.admin.get(f"{SERVERS}/flaky")).json()
    assert view["status"]["state"] in {"error", "connecting"}
    assert down.attempt >= 1
    # The fake forgets its sessions (restart) before it stops, so the first failure seen may be the
    # session's 404 (re-initialize) as well as the refused connection after it.
    assert down.error is not None and down.error["details"]["reason"] in {
        "refused",
        "network",
        "closed",
        "timeout",
        "session_expired",
    }
    back = FakeStreamableServer()
    async with serve_loopback(back.app, port=port):
        with anyio.fail_after(15):
            await manager.wait_for_status("flaky", lambda s: s.state.value == "ready")
        assert (await host.admin.get(f"{SERVERS}/flaky")).json()["status"]["state"] == "ready"
        async with host.agent() as agent:
            with anyio.fail_after(15):
                result = await agent.call_tool("mcp__flaky__echo", {"text": "back"})
        assert text_of(result) == "back"


async def test_a_manual_refresh_of_a_server_in_error_connects_at_once(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 12: the automatic reconnect waits; "Refresh catalog" does not."""
    monkeypatch.setattr(manager_module, "RECONNECT", Backoff(floor_s=60.0, cap_s=60.0))
    fake = FakeStreamableServer()
    async with serve_loopback(fake.app) as base:
        port = int(base.rsplit(":", 1)[1])
        await host.ready(remote_body("manual", f"{base}/mcp"))
        fake.restart()
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
    with anyio.fail_after(15):
        await manager.wait_for_status("manual", lambda s: s.state.value == "error")
    async with serve_loopback(FakeStreamableServer().app, port=port):
        with anyio.fail_after(10):
            catalog = await host.catalog("manual", True)
    assert [t["name"] for t in catalog["tools"]] == ["echo"]


async def test_a_server_that_needs_authorization_is_not_reconnected_in_the_background(host: Host) -> None:
    """Item 12: only a user can fix `auth_required`; the status says so (no next attempt)."""
    fake = FakeStreamableServer()

    async def unauthorized(server: FakeStreamableServer, message: dict[str, Any]) -> Response:
        del server, message
        return Response(status_code=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})

    async with serve_loopback(fake.app) as base:
        await host.ready(remote_body("locked", f"{base}/mcp"))
        fake.handlers["initialize"] = unauthorized
        fake.restart()
        manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
        with anyio.fail_after(15):
            status = await manager.wait_for_status(
                "locked",
                lambda s: (
                    s.state.value == "error" and (s.error or {}).get("details", {}).get("reason") == "auth_required"
                ),
            )
    assert status.next_attempt_at is None


async def test_interleaved_disable_and_enable_leave_the_runtime_as_the_store_says(host: Host) -> None:
    """Item 6 through the REST API: whatever order concurrent disables and enables land in, a server
    is configured in the runtime exactly when it is enabled, and an enabled one connects."""
    await host.ready(quirky_body("toggled", {"tools": [ECHO_TOOL]}))
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage]
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(host.admin.post, f"{SERVERS}/toggled/{'disable' if n % 2 == 0 else 'enable'}")
        view = (await host.admin.get(f"{SERVERS}/toggled")).json()
        assert ("toggled" in manager.configured()) is view["enabled"]
        if not view["enabled"]:
            assert (await host.admin.post(f"{SERVERS}/toggled/enable")).status_code == 200
        called = await host.call("toggled", "echo", {"text": "on"})
    assert called.status_code == 200, called.text
    assert text_of(called.json()) == "on"
