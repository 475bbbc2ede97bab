"""Edges of `subscriptions/listen` (2026-07-28) and `resources/subscribe` at the gateway found by a
breaker (R-8.1, R-8.4, issue 12): a listen stream on `/mcp/{id}` whose server is deleted ends (after
the list changes) instead of staying open forever; a listen filter is typed strictly (-32602, not
coerced); and `/mcp` and `/mcp/{id}` answer a subscription the same way.

A real host (the composed app on loopback) fronts `tests/servers/growing_upstream.py`, a real SDK
server; the agents are the SDK's own `Client` (2026-07-28 and 2025-11-25) or raw HTTP for the wire.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
from mcp.client import Client
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.client.subscriptions import Subscription
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged

from tests.servers.growing_upstream import LIVE
from tests.support.cli import run_cli_process
from tests.support.listening import GrowingHost as Host
from tests.support.listening import growing_host, legacy_client, modern_client
from tests.support.readiness import add_ready, make_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-listen-edges-admin-token-0123"
SERVERS = "/api/mcp/servers"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with growing_host(tmp_path / "data", ADMIN_TOKEN) as running:
        yield running


async def events_until_end(sub: Subscription) -> list[ServerEvent]:
    """Every event of `sub` until the server closes it gracefully (SubscriptionLost: it dropped)."""
    with anyio.fail_after(10):
        return [event async for event in sub]


async def test_a_listen_stream_of_a_deleted_servers_endpoint_hears_the_change_then_ends(host: Host) -> None:
    async with modern_client(host, "/mcp/grow") as client, client.listen(tools_list_changed=True) as sub:
        assert sub.honored.tools_list_changed is True
        server = (await host.admin.get(f"{SERVERS}/grow")).json()
        deleted = await host.admin.delete(f"{SERVERS}/grow", params={"version": server["version"]})
        assert deleted.status_code == 204, deleted.text
        heard = await events_until_end(sub)  # ends: no SubscriptionLost, no hang
        assert heard and all(isinstance(event, ToolsListChanged) for event in heard), heard
        # Listening again is refused: the endpoint is gone.
        again = await host.http.post(
            "/mcp/grow",
            content=orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "subscriptions/listen",
                    "params": {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META},
                }
            ),
            headers=host.modern_headers("subscriptions/listen"),
        )
        assert again.status_code == 404, again.text
        assert again.json()["error"]["data"] == {"code": "MCP_SERVER_NOT_FOUND"}


async def test_a_listen_stream_of_a_disabled_servers_endpoint_hears_the_change_and_stays(host: Host) -> None:
    """Disabled is not gone: `/mcp/{id}` still exists (it lists nothing), so its stream stays open and
    hears the change; deleting the server then ends it, while the `/mcp` stream beside it stays."""
    async with (
        modern_client(host, "/mcp/grow") as client,
        client.listen(tools_list_changed=True) as sub,
        modern_client(host, "/mcp") as other,
        other.listen(tools_list_changed=True) as aggregate,
    ):
        assert (await host.admin.post(f"{SERVERS}/grow/disable")).status_code == 200
        with anyio.fail_after(10):
            assert isinstance(await anext(sub), ToolsListChanged)
            assert isinstance(await anext(aggregate), ToolsListChanged)
        assert (await client.list_tools()).tools == []
        # Still open: deleting the server now ends the per-server stream.
        server = (await host.admin.get(f"{SERVERS}/grow")).json()
        assert (await host.admin.delete(f"{SERVERS}/grow", params={"version": server["version"]})).status_code == 204
        await events_until_end(sub)
        # The aggregate stream stays: it hears the server come back (a re-list after an event shows it).
        await add_ready(host.admin, {**host.server, "tool_policies": {"grow": "allow"}})
        with anyio.fail_after(10):
            async for _event in aggregate:
                if (await other.list_tools()).tools:
                    break
            else:
                raise AssertionError("the /mcp listen stream ended with the server's endpoint")


BAD_FILTERS: list[Any] = [
    {"toolsListChanged": "yes"},
    {"toolsListChanged": 1},
    {"promptsListChanged": "true"},
    {"resourcesListChanged": {}},
    {"resourceSubscriptions": "notes://live"},
    {"resourceSubscriptions": [1]},
    [True],
]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/grow"])
@pytest.mark.parametrize("notifications", BAD_FILTERS, ids=repr)
async def test_a_listen_filter_that_is_not_strictly_typed_is_answered_invalid_params(
    host: Host, path: str, notifications: Any
) -> None:
    """The SDK's model took "yes" and 1 for true and acknowledged the stream; MCP types these
    fields boolean and string array: -32602 (HTTP 400 as the SDK's own), naming the field."""
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": MODERN_META},
    }
    response = await host.http.post(
        path, content=orjson.dumps(message), headers=host.modern_headers("subscriptions/listen")
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["id"] == 7
    assert body["error"]["code"] == -32602, body
    assert body["error"]["message"].startswith("Invalid request parameters: notifications"), body


async def test_a_listen_filter_with_an_extension_key_and_nulls_is_still_acknowledged(host: Host) -> None:
    """Unknown keys are extensions (the SDK's `SubscriptionFilter` keeps them) and null means "not
    asked": not refused; the ack is the stream's first frame."""
    notifications = {"toolsListChanged": True, "promptsListChanged": None, "taskIds": ["t1"]}
    message = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": MODERN_META},
    }
    async with host.http.stream(
        "POST", "/mcp", content=orjson.dumps(message), headers=host.modern_headers("subscriptions/listen")
    ) as response:
        assert response.status_code == 200
        with anyio.fail_after(10):
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    first = orjson.loads(line[5:])
                    break
            else:
                raise AssertionError("the stream ended before its ack")
    assert first["method"] == "notifications/subscriptions/acknowledged", first
    assert first["params"]["notifications"]["toolsListChanged"] is True


async def refusal_of(client: Client, method: str, uri: str) -> tuple[int, Any, str]:
    """The JSON-RPC error (code, data, message) of a 2025-11-25 session's (un)subscription of `uri`."""
    session = client.session
    call = session.subscribe_resource if method == "subscribe" else session.unsubscribe_resource  # pyright: ignore[reportDeprecated]
    with pytest.raises(MCPError) as refused:
        await call(uri)
    return refused.value.error.code, refused.value.error.data, refused.value.error.message


@pytest.mark.parametrize("method", ["subscribe", "unsubscribe"])
async def test_both_endpoints_refuse_a_subscription_to_a_uri_the_server_does_not_offer(host: Host, method: str) -> None:
    """`/mcp` cannot route a URI no server offers; `/mcp/{id}` forwarded it and the server said `{}`
    (a subscription that can never fire). Both now answer -32602 REQUEST_INVALID, field `uri`
    RESOURCE_UNKNOWN (MCP's code for a resource not found, SEP-2164), `/mcp` also for a URI scoped
    to a server that does not offer it; a URI the server offers is still subscribed on both."""
    async with legacy_client(host, "/mcp") as aggregate, legacy_client(host, "/mcp/grow") as scoped:
        refusals = {
            "/mcp": await refusal_of(aggregate, method, "nope://x"),
            "/mcp scoped": await refusal_of(aggregate, method, "mcp-center+grow:nope://x"),
            "/mcp/grow": await refusal_of(scoped, method, "nope://x"),
        }
        assert {(code, orjson.dumps(data)) for code, data, _message in refusals.values()} == {
            (-32602, b'{"code":"REQUEST_INVALID"}')
        }, refusals
        assert all("offer" in message and "uri" in message for _code, _data, message in refusals.values()), refusals
        for client in (aggregate, scoped):
            await client.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]
            await client.session.unsubscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]


@pytest.mark.parametrize(("path", "prefix"), [("/mcp", "mcp__grow__"), ("/mcp/grow", "")])
async def test_a_subscription_outlives_the_upstream_session_it_was_sent_on(host: Host, path: str, prefix: str) -> None:
    """A 2025-11-25 session subscribed to a resource keeps hearing its updates after the server's
    upstream session was replaced (disabled and enabled again, a policy change's trust, test and
    enable): the gateway subscribes the new upstream session too. The upstream server tells only
    its subscribed sessions (`growing_upstream`), as a server honouring subscriptions does."""
    updates = 0
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        nonlocal updates, heard
        if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == LIVE:
            updates += 1
            heard.set()

    async def touched() -> None:
        nonlocal heard
        heard = anyio.Event()
        result = await client.call_tool(f"{prefix}touch", {})
        assert result.is_error is not True, result
        with anyio.fail_after(10):
            await heard.wait()

    async with legacy_client(host, path, on_message) as client:
        await client.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated] - a 2025-11-25 session
        await touched()
        for _cycle in range(3):
            assert (await host.admin.post(f"{SERVERS}/grow/disable")).status_code == 200
            await make_ready(host.admin, "grow")
            await touched()
        server = (await host.admin.get(f"{SERVERS}/grow")).json()
        policy = await host.admin.put(
            f"{SERVERS}/grow/tools/grow/policy", json={"policy": "ask", "version": server["version"]}
        )
        assert policy.status_code == 200, policy.text
        await make_ready(host.admin, "grow")
        await touched()
    assert updates == 5


def told_count(result: types.CallToolResult) -> int:
    """How many subscribed sessions the growing server's `touch` told ("touched (N told)")."""
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    return int(content.text.removeprefix("touched (").removesuffix(" told)"))


async def test_one_agent_unsubscribing_leaves_anothers_subscription_in_place(host: Host) -> None:
    """Two sessions (on `/mcp` and on `/mcp/grow`) subscribe to the same resource through the one
    upstream session; the first unsubscribes. The server's subscription stays while the second
    holds it (the gateway answers the first `{}` itself): the second still hears updates, the first
    no longer, even after the upstream session is replaced; the last unsubscribe reaches the server."""
    heard: dict[str, int] = {"/mcp": 0, "/mcp/grow": 0}
    told = {path: anyio.Event() for path in heard}

    def counting(path: str) -> MessageHandlerFnT:
        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, types.ResourceUpdatedNotification) and str(message.params.uri) == LIVE:
                heard[path] += 1
                told[path].set()

        return on_message

    async with (
        legacy_client(host, "/mcp", counting("/mcp")) as first,
        legacy_client(host, "/mcp/grow", counting("/mcp/grow")) as second,
    ):
        await first.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated] - a 2025-11-25 session
        await second.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]
        await first.session.unsubscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]

        async def touch_and_hear_second() -> None:
            told["/mcp/grow"] = anyio.Event()
            result = await second.call_tool("touch", {})
            assert result.is_error is not True, result
            with anyio.fail_after(10):
                await told["/mcp/grow"].wait()

        await touch_and_hear_second()
        assert (await host.admin.post(f"{SERVERS}/grow/disable")).status_code == 200
        await make_ready(host.admin, "grow")
        await touch_and_hear_second()
        # The server counts the sessions it tells (a replaced session it was never told about included).
        before = told_count(await second.call_tool("touch", {}))
        await second.session.unsubscribe_resource(LIVE)  # pyright: ignore[reportDeprecated] - the last one
        assert told_count(await second.call_tool("touch", {})) == before - 1
    assert heard["/mcp"] == 0  # unsubscribed before the first touch


async def test_a_listen_stream_ends_when_another_process_deletes_its_server(host: Host, tmp_path: Path) -> None:
    """`mcp-center delete` runs the library in-process on the data directory (another process):
    this host hears of it only through the store, and the stream on `/mcp/grow` still ends."""
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(tmp_path / "data"), "MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
    async with modern_client(host, "/mcp/grow") as client, client.listen(tools_list_changed=True) as sub:
        assert sub.honored.tools_list_changed is True
        done = await anyio.to_thread.run_sync(lambda: run_cli_process("delete", "grow", "--yes", env=env))
        assert done.returncode == 0, done.stderr
        heard = await events_until_end(sub)  # ends: no SubscriptionLost, no hang
    assert all(isinstance(event, ToolsListChanged) for event in heard), heard


async def test_a_session_that_ends_without_unsubscribing_releases_its_subscription(host: Host) -> None:
    """An agent's session that ends (its DELETE) while subscribed releases the subscription, as its
    `resources/unsubscribe` would: the other agent's later unsubscribe, now the last, reaches the server."""
    async with legacy_client(host, "/mcp/grow") as staying:
        async with legacy_client(host, "/mcp") as leaving:
            await leaving.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated] - a 2025-11-25 session
        # `leaving` sent its DELETE on exit, still subscribed.
        await staying.session.subscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]
        before = told_count(await staying.call_tool("touch", {}))
        await staying.session.unsubscribe_resource(LIVE)  # pyright: ignore[reportDeprecated]
        assert told_count(await staying.call_tool("touch", {})) == before - 1
