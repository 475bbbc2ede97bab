"""The era a forwarded `tools/call` travels in upstream (R-8.3, R-8.5; `runtime/eras.py`).

A real host (the composed app on loopback) fronts `tests/servers/era_upstream.py`, a real SDK
server that speaks both eras and records every request POSTed to it. The agent is the SDK's
`Client` over a 2025-11-25 session to the gateway.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_center.runtime import eras
from tests.servers.era_upstream import HOLD, STATE, Hold, Post, make_era_server, recorded
from tests.support.composed import composed_host
from tests.support.gateway import gateway_client
from tests.support.loopback import serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-eras-admin-token-0123456789"
MODERN = "2026-07-28"


@dataclass
class Host:
    base: str
    admin: httpx2.AsyncClient
    token: str
    posts: list[Post]

    def calls(self, name: str) -> list[Post]:
        return [post for post in self.posts if post.method == "tools/call" and post.name == name]


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    posts: list[Post] = []
    async with (
        serve_loopback(recorded(make_era_server().streamable_http_app(), posts)) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        policies = {"add": "allow", "hold": "allow", "maybe": "allow", "confirm": "allow"}
        body = {"id": "eras", "name": "Eras", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        assert (await add_ready(composed.admin, {**body, "tool_policies": policies}))["status"]["state"] == "ready"
        yield Host(composed.base, composed.admin, composed.token, posts)


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.ErrorData:
    del context, params
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="blue"), model="m")


async def test_a_tool_that_needs_nothing_of_the_session_goes_as_a_2026_request_after_its_first_call(
    host: Host,
) -> None:
    async with gateway_client(host.base, host.token) as client:
        with anyio.fail_after(20):
            results = [await client.call_tool("mcp__eras__add", {"a": 1, "b": i}) for i in range(3)]
    assert [text(result) for result in results] == ["1", "2", "3"]
    # The result is in the session era's shape: no upstream identity, no resultType.
    assert all(types.SERVER_INFO_META_KEY not in (result.meta or {}) for result in results)
    calls = host.calls("add")
    assert [(post.version, post.session) for post in calls] == [
        ("2025-11-25", True),
        (MODERN, False),
        (MODERN, False),
    ]
    discover = [post for post in host.posts if post.method == "server/discover"]
    assert [(post.version, post.session) for post in discover] == [(MODERN, False)]


async def test_a_tool_that_asked_the_client_on_the_session_stays_on_the_session(host: Host) -> None:
    async with gateway_client(host.base, host.token, sampling_callback=_sample) as client:
        with anyio.fail_after(20):
            first = await client.call_tool("mcp__eras__maybe", {"prompt": "colour?"})
            second = await client.call_tool("mcp__eras__maybe", {"prompt": "colour?"})
            plain = await client.call_tool("mcp__eras__maybe", {})
    assert [text(first), text(second), text(plain)] == ["model said: blue", "model said: blue", "nothing asked"]
    assert all(post.session and post.version == "2025-11-25" for post in host.calls("maybe"))


async def test_input_required_is_answered_by_the_agent_and_the_call_sent_again(host: Host) -> None:
    """The 2026-07-28 multi round-trip: the server's question goes to the agent through the same
    elicitation forwarding as on a session, and the call is re-sent with the answer and the state."""
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    async with gateway_client(host.base, host.token, elicitation_callback=elicit) as client:
        with anyio.fail_after(20):
            first = await client.call_tool("mcp__eras__confirm", {})
            second = await client.call_tool("mcp__eras__confirm", {"ask": True})
    assert text(first) == "nothing asked"
    assert asked == ["Proceed?"]
    assert text(second) == f"confirmed: yes (state {STATE})"
    assert [(post.version, post.session) for post in host.calls("confirm")] == [
        ("2025-11-25", True),
        (MODERN, False),
        (MODERN, False),
    ]


async def test_input_required_becomes_a_card_when_the_agent_cannot_answer(host: Host) -> None:
    """An agent whose client declared no elicitation: the 2026-07-28 question becomes a card, as a
    session-era elicitation does (R-6.1); the card's answer is sent back with the call."""
    outcome: list[types.CallToolResult] = []
    async with gateway_client(host.base, host.token) as client:
        with anyio.fail_after(20):
            assert text(await client.call_tool("mcp__eras__confirm", {})) == "nothing asked"
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    outcome.append(await client.call_tool("mcp__eras__confirm", {"ask": True}))

                tg.start_soon(call)
                cards: list[dict[str, Any]] = []
                while not cards:
                    listed = await host.admin.get("/api/interactions", params={"state": "pending"})
                    cards = listed.json()["interactions"]
                    await anyio.sleep(0.05)
                assert cards[0]["message"] == "Proceed?"
                answer = {"action": "accept", "content": {"answer": "card"}}
                answered = await host.admin.post(f"/api/interactions/{cards[0]['id']}", json=answer)
                assert answered.status_code == 200, answered.text
    assert text(outcome[0]) == f"confirmed: card (state {STATE})"


async def test_a_2026_call_the_agent_gives_up_is_cancelled_upstream_by_closing_its_request(host: Host) -> None:
    async with gateway_client(host.base, host.token) as client:
        with anyio.fail_after(20), pytest.raises(MCPError):
            await client.call_tool("mcp__eras__hold", {})  # no Hold waiting: an error at once, over the session
        hold = Hold()
        HOLD.append(hold)
        try:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await client.call_tool("mcp__eras__hold", {})

                tg.start_soon(call)
                with anyio.fail_after(10):
                    await hold.started.wait()
                tg.cancel_scope.cancel()  # the agent gives up: notifications/cancelled to the gateway
            with anyio.fail_after(10):
                await hold.cancelled.wait()
        finally:
            HOLD.remove(hold)
    assert [(post.version, post.session) for post in host.calls("hold")] == [("2025-11-25", True), (MODERN, False)]


async def test_a_tool_that_asks_only_sometimes_answers_the_servers_error_once_then_uses_the_session(
    host: Host,
) -> None:
    """The documented limit: a call is never silently re-run (it may not be idempotent). A tool
    that learned the 2026-07-28 way and then asks through the session era's back-channel fails with
    the server's own error; its later calls go over the session and work."""
    async with gateway_client(host.base, host.token, sampling_callback=_sample) as client:
        with anyio.fail_after(20):
            assert text(await client.call_tool("mcp__eras__maybe", {})) == "nothing asked"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("mcp__eras__maybe", {"prompt": "colour?"})
            again = await client.call_tool("mcp__eras__maybe", {"prompt": "colour?"})
    assert caught.value.error.code == types.INVALID_REQUEST
    assert "back-channel" in caught.value.error.message
    assert text(again) == "model said: blue"
    assert [(post.version, post.session) for post in host.calls("maybe")] == [
        ("2025-11-25", True),
        (MODERN, False),
        ("2025-11-25", True),
    ]
    logs = (await host.admin.get("/api/mcp/servers/eras/logs")).json()
    assert [entry["method"] for entry in logs["requests"] if entry["status"] == "era_fallback"] == ["tools/call"]


def test_a_2026_result_is_answered_in_the_session_eras_shape() -> None:
    result: dict[str, Any] = {
        "content": [],
        "resultType": "complete",
        "_meta": {types.SERVER_INFO_META_KEY: {"name": "up", "version": "1"}, "other": 1},
    }
    assert eras.session_shaped(result) == {"content": [], "_meta": {"other": 1}}
    assert eras.session_shaped({"content": [], "_meta": {types.SERVER_INFO_META_KEY: {}}}) == {"content": []}
    plain: dict[str, Any] = {"content": []}
    assert eras.session_shaped(plain) is plain


def test_only_refusals_before_the_tool_ran_are_sent_again_over_the_session() -> None:
    assert eras.refused_before_running(types.HEADER_MISMATCH)
    assert eras.refused_before_running(types.UNSUPPORTED_PROTOCOL_VERSION)
    assert not eras.refused_before_running(types.INVALID_REQUEST)
    assert not eras.refused_before_running(types.INTERNAL_ERROR)
    choice = eras.EraChoice()
    choice.speaks_modern = True
    choice.learned("t", needs_session=False)
    assert choice.modern_for("t")
    choice.pin("t")
    choice.learned("t", needs_session=False)
    assert not choice.modern_for("t")
