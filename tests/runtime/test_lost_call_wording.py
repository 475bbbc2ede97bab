"""A tool call whose session ends before its answer says the same thing over HTTP and stdio: the tool
may have run in part, and what to do next (R-3.1, R-6.3, trial35 MED 6).

trial35: an HTTP server that died mid-call answered MCP_CONNECTION_LOST "the connection closed during
tools/call 'die'", with neither "may have run" nor a next step; a call is never re-sent, so the user
has to know to check its effect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.responses import Response

from mcp_center.errors import ConnectionLost, ServerUnreachable
from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.service import McpCenter
from mcp_center.transports import ConnectionSpec
from tests.support.fakes.streamable_http import FakeStreamableServer, serve_fake, sse_event, sse_response
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

MAY_HAVE_RUN = "the tool may have run in part or in full; check its effect before calling it again"
ECHO = str(Path(__file__).parent.parent / "servers" / "echo_stdio.py")


async def test_an_http_call_cut_off_mid_answer_says_the_tool_may_have_run() -> None:
    async def cut_off(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "busy"}}
        return sse_response([sse_event(json.dumps(progress))])  # then the stream ends, no answer

    fake = FakeStreamableServer(get_status=405, handlers={"tools/call": cut_off})
    async with serve_fake(fake) as url, ConnectionManager() as manager:
        spec = ConnectionSpec(
            server_id="fake", transport=TransportKind.STREAMABLE_HTTP, digest="d", url=url, call_timeout_s=5.0
        )
        await manager.configure("fake", spec)
        with anyio.fail_after(5), pytest.raises(ConnectionLost) as caught:
            await manager.call_tool("fake", "die", {})
    assert caught.value.message == f"the connection closed during tools/call 'die': {MAY_HAVE_RUN}"


async def test_a_stdio_server_that_exits_mid_call_says_the_same(center: McpCenter) -> None:
    command, *argv = launch_command(ECHO)
    view = (
        await center.create_server({"name": "Echo", "transport": "stdio", "command": command, "args": argv})
    ).to_dict()
    await center.trust(view["id"], view["digest"])
    assert (await center.test(view["id"])).ok
    await center.enable(view["id"])
    with anyio.fail_after(10), pytest.raises((ConnectionLost, ServerUnreachable)) as caught:
        await center.call_tool(view["id"], "crash", {"code": 7})
    assert caught.value.code == "MCP_CONNECTION_LOST"
    assert caught.value.message.endswith(MAY_HAVE_RUN), caught.value.message
    assert "during tools/call 'crash'" in caught.value.message
