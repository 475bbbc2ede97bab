"""A server that answers a forwarded `tools/call` with HTTP 2xx but no JSON-RPC answer (a 204, a 200
whose body is cut or is not JSON-RPC, a 202) gives the agent our stable MCP_PROTOCOL_ERROR naming
the status, not what would pass for the server's own JSON-RPC error (R-8.3, R-7.3). A break of
issue 12 found such answers reaching agents as a bare -32603 "Server returned an error response
(HTTP 200)"; the calls after them still work.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import orjson
import pytest

from tests.servers.era_upstream import buffered, make_era_server
from tests.support.composed import composed_host
from tests.support.gateway import gateway_client
from tests.support.loopback import serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-non-answers-admin-0123456789"
Scope = MutableMapping[str, Any]

NON_ANSWERS: dict[int, tuple[int, bytes]] = {
    204: (204, b""),
    200: (200, b'{"jsonrpc": "2.0", "id": '),  # cut short
    201: (200, b'{"hello": "not JSON-RPC"}'),
    202: (202, b""),
}
"""`add`'s argument `b` -> the status and body the server answers instead of the result."""


def _call_argument_b(body: bytes) -> object:
    """The argument `b` of the tools/call in `body`, or None."""
    try:
        request: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(request, dict) or cast(dict[str, Any], request).get("method") != "tools/call":
        return None
    params: Any = cast(dict[str, Any], request).get("params")
    arguments: Any = cast(dict[str, Any], params).get("arguments") if isinstance(params, dict) else None
    return cast(dict[str, Any], arguments).get("b") if isinstance(arguments, dict) else None


def _misanswering(app: Any) -> Any:
    """`app`, answering a tools/call whose `b` is a key of `NON_ANSWERS` with that status and body."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body, replayed = await buffered(receive)
        b = _call_argument_b(body)
        if isinstance(b, int) and b in NON_ANSWERS:
            status, reply = NON_ANSWERS[b]
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers if reply else []})
            await send({"type": "http.response.body", "body": reply})
            return

        await app(scope, replayed, send)

    return wrapped


@dataclass
class Host:
    base: str
    token: str


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with (
        serve_loopback(_misanswering(make_era_server().streamable_http_app())) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        body = {"id": "eras", "name": "Eras", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        ready = await add_ready(composed.admin, {**body, "tool_policies": {"add": "allow"}})
        assert ready["status"]["state"] == "ready"
        yield Host(composed.base, composed.token)


def _shown(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_a_2xx_without_a_json_rpc_answer_is_our_protocol_error_and_the_next_call_works(host: Host) -> None:
    """R-8.3, R-7.3: each non-answer is an error result with MCP_PROTOCOL_ERROR and the status; a
    normal call after each is answered."""
    async with gateway_client(host.base, host.token) as client:
        for b, (status, _reply) in NON_ANSWERS.items():
            with anyio.fail_after(20):
                refused = await client.call_tool("mcp__eras__add", {"a": 1, "b": b})
                after = await client.call_tool("mcp__eras__add", {"a": 1, "b": 1})
            assert refused.is_error, _shown(refused)
            assert _shown(refused).startswith("MCP_PROTOCOL_ERROR: "), _shown(refused)
            assert f"HTTP {status}" in _shown(refused)
            assert not after.is_error and _shown(after) == "2", _shown(after)
