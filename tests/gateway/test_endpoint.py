"""Gateway session hygiene at `/mcp` (R-8.1, R-7.3): a session limit per token, and a session table
that shrinks whenever a session ends (DELETE, idle, revocation).

Our policy, not spec. A real host (the composed app on loopback) with no servers: sessions need none.
The limit and the idle timeout are lowered through the endpoint's module constants.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastapi import FastAPI
from mcp.shared.exceptions import MCPError

from mcp_center.gateway import GatewayEndpoint
from mcp_center.gateway import endpoint as endpoint_module
from tests.support.composed import composed_host
from tests.support.gateway import SESSION_INITIALIZE, gateway_client

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-sessions-admin-token-0123456789"
INITIALIZE = SESSION_INITIALIZE
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Host:
    app: FastAPI
    base: str
    http: httpx2.AsyncClient
    admin: httpx2.AsyncClient
    token: str
    token_id: str

    @property
    def endpoint(self) -> GatewayEndpoint:
        endpoint: GatewayEndpoint = self.app.state.gateway_endpoint
        return endpoint

    async def new_token(self, name: str) -> dict[str, Any]:
        created = await self.admin.post("/api/gateway/tokens", json={"name": name})
        assert created.status_code == 201, created.text
        return created.json()

    async def initialize(self, token: str | None = None) -> httpx2.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {token or self.token}"}
        return await self.http.post("/mcp", json=INITIALIZE, headers=headers)

    async def request(self, method: str, session_id: str, body: dict[str, Any] | None = None) -> httpx2.Response:
        headers = {
            **ACCEPT,
            "Authorization": f"Bearer {self.token}",
            "Mcp-Session-Id": session_id,
            "Mcp-Protocol-Version": "2025-11-25",
        }
        return await self.http.request(method, "/mcp", json=body, headers=headers)


def _limit(monkeypatch: pytest.MonkeyPatch, sessions: int, *, idle_s: float = 3600.0) -> None:
    monkeypatch.setattr(endpoint_module, "MAX_SESSIONS_PER_TOKEN", sessions)
    monkeypatch.setattr(endpoint_module, "SESSION_IDLE_TIMEOUT_S", idle_s)
    monkeypatch.setattr(endpoint_module, "SESSION_CHECK_S", 0.05)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with composed_host(tmp_path / "data", ADMIN_TOKEN) as c:
        yield Host(c.app, c.base, c.http, c.admin, c.token, c.token_id)


def _assert_limit_refusal(response: httpx2.Response, limit: int) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["data"] == {"code": "GATEWAY_SESSION_LIMIT", "limit": limit}
    assert error["message"].startswith("GATEWAY_SESSION_LIMIT")


async def test_a_token_holds_at_most_the_limit_and_its_clients_delete_frees_a_place(
    monkeypatch: pytest.MonkeyPatch, host: Host
) -> None:
    _limit(monkeypatch, 2)
    first, second = await host.initialize(), await host.initialize()
    assert (first.status_code, second.status_code) == (200, 200)
    _assert_limit_refusal(await host.initialize(), 2)
    other = await host.new_token("other")
    assert (await host.initialize(other["token"])).status_code == 200  # the limit is per token
    assert host.endpoint.open_sessions(host.token_id) == 2

    assert (await host.request("DELETE", first.headers["mcp-session-id"])).status_code == 200
    assert host.endpoint.open_sessions(host.token_id) == 1
    assert (await host.initialize()).status_code == 200
    assert (await host.request("POST", second.headers["mcp-session-id"], LIST_TOOLS)).status_code == 200


async def test_an_sdk_client_over_the_limit_gets_the_stable_code(monkeypatch: pytest.MonkeyPatch, host: Host) -> None:
    """The SDK client surfaces the 429's JSON-RPC error from `initialize`, code and limit in `data`."""
    _limit(monkeypatch, 1)
    assert (await host.initialize()).status_code == 200
    limited = pytest.RaisesExc(MCPError, check=lambda e: e.error.data == {"code": "GATEWAY_SESSION_LIMIT", "limit": 1})
    with anyio.fail_after(10), pytest.RaisesGroup(limited, flatten_subgroups=True):
        async with gateway_client(host.base, host.token):
            pytest.fail("initialize cannot succeed")


async def test_concurrent_initializes_open_no_more_sessions_than_the_limit(
    monkeypatch: pytest.MonkeyPatch, host: Host
) -> None:
    _limit(monkeypatch, 2)
    statuses: list[int] = []

    async def open_one() -> None:
        statuses.append((await host.initialize()).status_code)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(open_one)
    assert sorted(statuses) == [200, 200, 429, 429, 429, 429]
    assert host.endpoint.open_sessions(host.token_id) == 2


async def test_an_idle_session_ends_and_frees_its_place(monkeypatch: pytest.MonkeyPatch, host: Host) -> None:
    """The session table follows the SDK: an idle session's id answers 404 and no longer counts."""
    _limit(monkeypatch, 1, idle_s=0.2)
    idle = await host.initialize()
    assert idle.status_code == 200
    with anyio.fail_after(10):
        again = await host.initialize()
        while again.status_code == 429:  # until the check (every 0.05 s) ends the idle session
            await anyio.sleep(0.05)
            again = await host.initialize()
    assert again.status_code == 200
    assert (await host.request("POST", idle.headers["mcp-session-id"], LIST_TOOLS)).status_code == 404
    assert host.endpoint.open_sessions(host.token_id) == 1


async def test_a_session_with_an_open_stream_is_not_idle(monkeypatch: pytest.MonkeyPatch, host: Host) -> None:
    """The SDK client keeps a GET stream open: its session outlives many idle timeouts (a wait, not a speed test)."""
    _limit(monkeypatch, 1, idle_s=0.2)
    async with gateway_client(host.base, host.token) as client:
        await anyio.sleep(1.0)
        with anyio.fail_after(10):
            assert (await client.list_tools()).tools == []
        assert host.endpoint.open_sessions(host.token_id) == 1


async def test_revoking_a_token_forgets_its_sessions(monkeypatch: pytest.MonkeyPatch, host: Host) -> None:
    _limit(monkeypatch, 4)
    doomed = await host.new_token("doomed")
    for _ in range(3):
        assert (await host.initialize(doomed["token"])).status_code == 200
    assert host.endpoint.open_sessions(doomed["id"]) == 3
    assert (await host.admin.delete(f"/api/gateway/tokens/{doomed['id']}")).status_code == 204
    with anyio.fail_after(10):
        while host.endpoint.open_sessions(doomed["id"]):  # noqa: ASYNC110 - a count to watch, not an event
            await anyio.sleep(0.05)


async def test_requests_of_the_sessionless_protocol_are_not_counted_as_sessions(
    monkeypatch: pytest.MonkeyPatch, host: Host
) -> None:
    """2026-07-28 clients send no `initialize` and hold no session: the limit does not apply to them."""
    _limit(monkeypatch, 1)
    assert (await host.initialize()).status_code == 200
    envelope: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listing: dict[str, Any] = {**LIST_TOOLS, "params": {"_meta": envelope}}
    headers = {
        **ACCEPT,
        "Authorization": f"Bearer {host.token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
    }
    response = await host.http.post("/mcp", json=listing, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["tools"] == []
    assert host.endpoint.open_sessions(host.token_id) == 1
