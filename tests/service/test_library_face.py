"""The library as a face of its own (issue 16): waiting for an approval, cancelling a call that is
not at the server yet, and the tool exports saying which calls need approval (R-3.8, R-5.3, R-5.6)."""

from __future__ import annotations

import anyio
import pytest
from starlette.types import Receive, Scope, Send

from mcp_center.config import Settings
from mcp_center.errors import CallCancelled, CenterError
from mcp_center.service import McpCenter, ToolCallResult
from tests.servers.http_echo import streamable_app
from tests.support.capabilities import capability_server, ready, remote
from tests.support.loopback import serve_loopback
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


async def test_wait_for_approval_returns_one_created_before_it_was_called(center: McpCenter) -> None:
    """No subscription race: the approval existed before `wait_for_approval` started (R-5.3)."""
    async with capability_server() as (url, _upstream):
        await ready(center, remote("caps", url))
        tools = await center.agent_tools("openai")
        name = next(t["function"]["name"] for t in tools.tools if t["function"]["name"].endswith("__echo"))
        assert name in tools.approval_required  # policy ask: the export says the call waits
        outcome: list[object] = []

        async def call() -> None:
            try:
                outcome.append(await center.call_agent_tool(name, {"text": "hi"}, operation_id="op-a"))
            except CenterError as exc:
                outcome.append(exc)

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await eventually(center.list_approvals)  # created, before anyone waits for it
                with pytest.raises(TimeoutError):
                    await center.wait_for_approval(server_id="other", timeout_s=0.2)
                approval = await center.wait_for_approval(tool=name, timeout_s=5)
                assert approval.state == "pending" and approval.operation_id == "op-a"
                with pytest.raises(TimeoutError):
                    await center.wait_for_approval(exclude=[approval.id], timeout_s=0.2)
                await center.decide_approval(approval.id, "approve")
        assert len(outcome) == 1 and isinstance(outcome[0], ToolCallResult), outcome
        assert outcome[0].text == "hi"


async def test_an_allowed_tool_is_not_listed_as_needing_approval(center: McpCenter) -> None:
    async with capability_server() as (url, _upstream):
        view = await ready(center, remote("caps", url))
        await center.set_tool_policy("caps", "echo", "allow", version=view["version"])
        await ready_again(center, "caps")
        tools = await center.agent_tools("anthropic")
        names = {t["name"] for t in tools.tools}
        assert "mcp__caps__echo" in names and "mcp__caps__echo" not in tools.approval_required
        assert set(tools.approval_required) == names - {"mcp__caps__echo"}


async def ready_again(center: McpCenter, server_id: str) -> None:
    """A policy change is high-risk (R-1.4): trust, test and enable again."""
    with anyio.fail_after(15):
        view = await center.get_server(server_id)
        await center.trust(server_id, view.digest)
        assert (await center.test(server_id)).ok
        await center.enable(server_id)


async def test_cancel_is_true_for_a_call_waiting_for_its_lazy_connection(settings: Settings) -> None:
    """R-3.8: the call was accepted but is not at the server yet; `cancel` ends it and says so."""
    inner = streamable_app()
    hold = {"on": False}
    arrived, release = anyio.Event(), anyio.Event()

    async def gated(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and hold["on"]:
            arrived.set()
            await release.wait()
        await inner(scope, receive, send)

    async with serve_loopback(gated) as base:
        async with McpCenter.open(settings) as first:
            await ready(first, remote("echo", f"{base}/mcp", connect_on_startup=False))
        hold["on"] = True
        async with McpCenter.open(settings, connect=False) as center:
            outcome: list[object] = []

            async def call() -> None:
                try:
                    outcome.append(await center.call_tool("echo", "add", {"a": 1, "b": 1}, operation_id="op-lazy"))
                except CenterError as exc:
                    outcome.append(exc)

            with anyio.fail_after(15):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await arrived.wait()  # connecting: the server has not seen the call
                    assert center.cancel("op-lazy") is True
                    hold["on"] = False
                    release.set()
            assert len(outcome) == 1 and isinstance(outcome[0], CallCancelled), outcome
