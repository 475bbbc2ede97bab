"""One host, two answers: a request sent with the gateway's lean paths on, then with them off (issue 12).

The host is the composed app as `serve` serves it, in front of `tests/servers/protocol_upstream.py`
(added as `proto`). With `GatewayEndpoint.lean` on, a sessionless 2026-07-28 request to `/mcp` is
offered to the direct path, one to `/mcp/{id}` and a session's request go to the lean path; with
it off, the SDK's stack serves the same request. `Host.both` returns both answers (HTTP status,
JSON-RPC body, whether an `mcp-session-id` header came with it) for the tests to compare.

An "ASGI callable returned without completing response." line from uvicorn when the host closes
comes from the upstream, not the gateway: both servers share one event loop here, and
`sse_starlette` (under the SDK's SSE responses) ends every SSE stream of the loop once it sees a
uvicorn server exiting, here the composed host's; the upstream's answer to the host's last GET
stream, opened just then, ends before its response starts. Separate processes do not share that.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from mcp_center.gateway.endpoint import GatewayEndpoint
from tests.servers.protocol_upstream import make_protocol_server
from tests.support.composed import composed_host
from tests.support.gateway import SESSION_INITIALIZE, spy_direct_takes
from tests.support.loopback import serve_loopback
from tests.support.readiness import add_ready

__all__ = ["ACCEPT", "ENVELOPE", "MODERN", "Answer", "Headers", "Host", "answer_body", "open_session", "parity_host"]

ADMIN_TOKEN = "gateway-parity-admin-token-0123456789"
ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
}
"""A good 2026-07-28 request's `params._meta`: the version, no capabilities, a client."""
Headers = list[tuple[str, str]]
Answer = tuple[int, Any, bool]
"""HTTP status, the JSON-RPC message (or the body's text), whether `mcp-session-id` came with it."""


@dataclass
class Host:
    http: httpx2.AsyncClient
    token: str
    endpoint: GatewayEndpoint
    taken: list[bool]
    """Per request offered to the direct route: whether it took it."""

    async def both(self, path: str, body: bytes, headers: Headers) -> tuple[Answer, Answer]:
        """The answer with the lean paths on, then the SDK stack's answer to the same request."""
        lean = await self._answer(path, body, headers)
        self.endpoint.lean = False
        try:
            sdk = await self._answer(path, body, headers)
        finally:
            self.endpoint.lean = True
        return lean, sdk

    async def sdk(self, path: str, body: bytes, headers: Headers) -> Answer:
        """The SDK stack's answer alone (the lean paths off for this one request)."""
        self.endpoint.lean = False
        try:
            return await self._answer(path, body, headers)
        finally:
            self.endpoint.lean = True

    async def _answer(self, path: str, body: bytes, headers: Headers) -> Answer:
        response = await self.http.post(
            path, content=body, headers=[("Authorization", f"Bearer {self.token}"), *headers]
        )
        return response.status_code, answer_body(response), "mcp-session-id" in response.headers


def answer_body(response: httpx2.Response) -> Any:
    """The JSON-RPC message of a response (JSON or one SSE event), else its text."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return orjson.loads([line for line in data if line][-1])
    if kind.startswith("application/json") and response.content:
        return orjson.loads(response.content)
    return response.text


@asynccontextmanager
async def parity_host(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    """A composed host (data in `data_dir`) with the protocol upstream added as `proto` (its `add` and
    `region` tools allowed), its direct route spied on (`Host.taken`)."""
    async with (
        serve_loopback(make_protocol_server().streamable_http_app()) as upstream,
        composed_host(data_dir, ADMIN_TOKEN, token_name="parity") as composed,
    ):
        body = {"id": "proto", "name": "Proto", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        ready = await add_ready(composed.admin, {**body, "tool_policies": {"add": "allow", "region": "allow"}})
        assert ready["status"]["state"] == "ready"
        taken = spy_direct_takes(composed.app.state.direct_gateway, monkeypatch)
        yield Host(composed.http, composed.token, composed.app.state.gateway_endpoint, taken)


async def open_session(host: Host, path: str) -> str:
    """Open a 2025-11-25 session on `path` (initialize, then initialized); returns its id."""
    opened = await host.http.post(
        path, json={**SESSION_INITIALIZE, "id": 0}, headers={"Accept": ACCEPT, "Authorization": f"Bearer {host.token}"}
    )
    assert opened.status_code == 200, opened.text
    session_id = opened.headers["mcp-session-id"]
    headers = {"Accept": ACCEPT, "Authorization": f"Bearer {host.token}", "Mcp-Session-Id": session_id}
    done = await host.http.post(path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert done.status_code == 202, done.text
    return session_id
