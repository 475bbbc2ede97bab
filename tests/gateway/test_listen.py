"""List changes reach 2026-07-28 (sessionless) agents through `subscriptions/listen`, and a server's
resource updates reach the 2025-11-25 sessions that subscribed (R-8.1, issue 12).

A 2026-07-28 client has no session and so no pushed notifications: it opens a
`subscriptions/listen` stream and re-lists when told. A real host (the composed app on loopback)
fronts `tests/servers/growing_upstream.py`, a real SDK server whose tools change at run time; the
agent is the SDK's own `Client` in its 2026-07-28 mode and its `listen()`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.subscriptions import Subscription
from mcp.shared.subscriptions import ToolsListChanged

from tests.servers.growing_upstream import LIVE
from tests.support.listening import GrowingHost as Host
from tests.support.listening import growing_host, legacy_client, modern_client
from tests.support.readiness import make_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-listen-admin-token-0123456789"
SERVERS = "/api/mcp/servers"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with growing_host(tmp_path / "data", ADMIN_TOKEN) as running:
        yield running


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def told_until(sub: Subscription, client: Client, seen: Callable[[set[str]], bool]) -> set[str]:
    """Wait for tools-changed events until a re-list after one satisfies `seen` (10 s at most)."""
    with anyio.fail_after(10):
        async for event in sub:
            if isinstance(event, ToolsListChanged) and seen(listed := await names(client)):
                return listed
    raise AssertionError("the listen stream ended")


@pytest.mark.parametrize(("path", "prefix"), [("/mcp", "mcp__grow__"), ("/mcp/grow", "")])
async def test_a_2026_client_hears_every_change_of_the_tool_list(host: Host, path: str, prefix: str) -> None:
    """The catalog changes four ways; each reaches the listening client, which re-lists: the server's
    own list change, the server disabled, enabled again, and a tool set to `deny` (a policy change
    is a configuration change: the server needs trust, test and enable again, R-1.4)."""
    async with modern_client(host, path) as client:
        caps = client.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True  # as `initialize` says
        assert caps.resources is not None and caps.resources.subscribe is False  # no resource URIs on listen
        async with client.listen(tools_list_changed=True, resource_subscriptions=["x://y"]) as sub:
            assert sub.honored.tools_list_changed is True
            assert not sub.honored.resource_subscriptions  # the gateway relays no resource updates
            first = {f"{prefix}grow", f"{prefix}touch"}
            assert await names(client) == first
            await client.call_tool(f"{prefix}grow", {})
            grown = {*first, f"{prefix}grown_2"}
            await told_until(sub, client, lambda listed: listed == grown)

            assert (await host.admin.post(f"{SERVERS}/grow/disable")).status_code == 200
            await told_until(sub, client, lambda listed: listed == set())

            await make_ready(host.admin, "grow")
            await told_until(sub, client, lambda listed: listed == grown)

            server = (await host.admin.get(f"{SERVERS}/grow")).json()
            denied = await host.admin.put(
                f"{SERVERS}/grow/tools/grown_2/policy", json={"policy": "deny", "version": server["version"]}
            )
            assert denied.status_code == 200, denied.text
            await make_ready(host.admin, "grow")
            await told_until(sub, client, lambda listed: listed == first)


async def test_a_session_and_a_sessionless_client_agree_on_list_changed(host: Host) -> None:
    """`initialize` (2025-11-25) and `server/discover` (2026-07-28) declare the same `listChanged`."""
    async with legacy_client(host, "/mcp") as legacy, modern_client(host, "/mcp") as modern:
        declared = {}
        for era, client in (("legacy", legacy), ("modern", modern)):
            caps = client.server_capabilities
            assert caps.tools is not None and caps.prompts is not None and caps.resources is not None
            declared[era] = (caps.tools.list_changed, caps.prompts.list_changed, caps.resources.list_changed)
    assert declared == {"legacy": (True, True, True), "modern": (True, True, True)}


@pytest.mark.parametrize(("path", "prefix"), [("/mcp", "mcp__grow__"), ("/mcp/grow", "")])
async def test_a_session_that_subscribed_hears_the_servers_resource_update(host: Host, path: str, prefix: str) -> None:
    """`resources.subscribe: true` (2025-11-25) holds: the subscription goes to the server, and its
    `notifications/resources/updated` comes back to the session that subscribed."""
    updated: list[str] = []
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            heard.set()

    async with legacy_client(host, path, on_message) as client:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.resources.subscribe is True
        await client.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated] - a 2025-11-25 session
        assert (await client.call_tool(f"{prefix}touch", {})).is_error is not True
        with anyio.fail_after(10):
            await heard.wait()
    assert updated == [LIVE]
