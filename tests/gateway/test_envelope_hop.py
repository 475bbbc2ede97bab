"""The agent's 2026-07-28 `_meta` envelope is hop-by-hop (R-8.1, R-8.5; `runtime/eras.py`).

An agent on 2026-07-28 puts its protocol version, client info and capabilities in every request's
`params._meta`. They describe the agent's exchange with the gateway, not the gateway's with the
server: a server the gateway reaches over a 2025-11-25 session (stdio, here the real SDK server
`tests/servers/echo_stdio.py`) refuses a request carrying them ("this connection serves the
handshake protocol era"). A new user's first call from the SDK's default client failed so.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_center.runtime import eras
from tests.support.composed import composed_host
from tests.support.loopback import NO_TLS
from tests.support.readiness import add_ready
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-envelope-admin-token-0123456789"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so the host below can be module-wide too (anyio runs its tests in one loop)."""
    return "asyncio"


@pytest.fixture(scope="module")
async def base_and_token(tmp_path_factory: pytest.TempPathFactory) -> AsyncGenerator[tuple[str, str]]:
    """One host and one ready echo for both parametrised calls: a call changes neither (issue 16: a
    host with the SDK's echo made ready is ~4 s of CPU; tests/support/ordering.py keeps the module on
    one worker)."""
    command, *args = launch_command(Path(__file__).parents[1] / "servers" / "echo_stdio.py")  # the fork server's
    async with composed_host(tmp_path_factory.mktemp("envelope") / "data", ADMIN_TOKEN) as composed:
        body = {
            "id": "echo",
            "name": "Echo",
            "transport": "stdio",
            "command": command,
            "args": args,
            "tool_policies": {"echo": "allow"},
        }
        assert (await add_ready(composed.admin, body))["status"]["state"] == "ready"
        yield composed.base, composed.token


@pytest.mark.parametrize(("path", "tool"), [("/mcp", "mcp__echo__echo"), ("/mcp/echo", "echo")])
async def test_a_2026_agent_calls_a_tool_of_a_server_reached_over_a_session(
    base_and_token: tuple[str, str], path: str, tool: str
) -> None:
    base, token = base_and_token
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{base}{path}", http_client=http), cache=None) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool(tool, {"text": "hop"})
    assert result.is_error is False, result
    assert [block.text for block in result.content if isinstance(block, types.TextContent)] == ["hop"]


def test_only_the_envelope_leaves_the_meta() -> None:
    meta = {
        types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
        types.CLIENT_INFO_META_KEY: {"name": "a", "version": "1"},
        types.CLIENT_CAPABILITIES_META_KEY: {},
        "progressToken": 7,
        "io.modelcontextprotocol/related-task": {"taskId": "t"},
        "example.com/trace": "x",
    }
    params = {"name": "echo", "arguments": {}, "_meta": meta}
    assert eras.without_envelope(params) == {
        "name": "echo",
        "arguments": {},
        "_meta": {
            "progressToken": 7,
            "io.modelcontextprotocol/related-task": {"taskId": "t"},
            "example.com/trace": "x",
        },
    }
    only = {"name": "echo", "_meta": {types.PROTOCOL_VERSION_META_KEY: "2026-07-28"}}
    assert eras.without_envelope(only) == {"name": "echo"}
    plain = {"name": "echo", "_meta": {"progressToken": 1}}
    assert eras.without_envelope(plain) is plain
