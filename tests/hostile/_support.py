"""Shared harness of the issue 14 tests ("quirky and hostile servers, round 3").

Each test runs a real host — the composed app (`mcp_center.app.create_app`) served by uvicorn on
127.0.0.1 — and talks to it the way users and agents do: the REST API with the admin token, and the
gateway at `/mcp` with the SDK's client and a gateway token. The servers under test are loopback
fakes of our own: `tests/servers/quirky_stdio.py` (a scriptable raw stdio server) and
`tests/fakes/streamable_http.py` (a scriptable Streamable HTTP server).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from fastapi import FastAPI
from mcp.client import Client

from mcp_center.app import create_app, gateway_first
from mcp_center.config import Settings
from mcp_center.gateway.wire import CoalescingHttpToolsProtocol
from mcp_center.service import McpCenter
from tests.support.gateway import gateway_client
from tests.support.loopback import NO_TLS, serve_loopback

# A step's bound is a hang guard, the suite's one (20 s of its own here: a 7,000-tool enable passed it under load).
from tests.support.readiness import STEP_TIMEOUT_S

__all__ = [
    "QUIRKY",
    "SERVERS",
    "Host",
    "quirky_body",
    "remote_body",
    "running_host",
    "text_of",
]

ADMIN_TOKEN = "hostile-admin-token-0123456789abcdef"
SERVERS = "/api/mcp/servers"
QUIRKY = str(Path(__file__).parents[1] / "servers" / "quirky_stdio.py")


def quirky_body(server_id: str, scenario: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A create body for `tests/servers/quirky_stdio.py` playing `scenario`, every tool set to `allow`."""
    return {
        "id": server_id,
        "name": f"Quirky {server_id}",
        "transport": "stdio",
        "command": sys.executable,
        "args": [QUIRKY, json.dumps(scenario)],
        **extra,
    }


def remote_body(server_id: str, url: str, *, transport: str = "streamable_http", **extra: Any) -> dict[str, Any]:
    """A create body for a remote server at `url`."""
    return {"id": server_id, "name": f"Remote {server_id}", "transport": transport, "url": url, **extra}


def text_of(result: types.CallToolResult | dict[str, Any]) -> str:
    """The text blocks of a result (an SDK model or REST JSON), joined by newlines."""
    if isinstance(result, dict):
        return "\n".join(b["text"] for b in result.get("content", []) if b.get("type") == "text")
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@dataclass
class Host:
    """A running host: its base URL, an admin REST client and a gateway token."""

    app: FastAPI
    base: str
    admin: httpx2.AsyncClient
    gateway_token: str

    @property
    def center(self) -> McpCenter:
        center: McpCenter = self.app.state.center
        return center

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create and trust a server; return its view."""
        with anyio.fail_after(STEP_TIMEOUT_S):
            created = await self.admin.post(SERVERS, json=body)
            assert created.status_code == 201, created.text
            view = created.json()
            trusted = await self.admin.post(f"{SERVERS}/{view['id']}/trust", json={"digest": view["digest"]})
            assert trusted.status_code == 200, trusted.text
        return trusted.json()

    async def test(self, server_id: str) -> dict[str, Any]:
        """Run the server's test through the REST API and return the result."""
        with anyio.fail_after(STEP_TIMEOUT_S * 4):
            tested = await self.admin.post(f"{SERVERS}/{server_id}/test")
        assert tested.status_code == 200, tested.text
        return tested.json()

    async def ready(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create, trust, test (asserting success) and enable a server; return the enabled view."""
        view = await self.create(body)
        tested = await self.test(view["id"])
        assert tested["ok"], tested
        with anyio.fail_after(STEP_TIMEOUT_S):
            enabled = await self.admin.post(f"{SERVERS}/{view['id']}/enable")
        assert enabled.status_code == 200, enabled.text
        return enabled.json()

    async def catalog(self, server_id: str, refresh: bool = False) -> dict[str, Any]:
        """`GET .../catalog` through the REST API."""
        with anyio.fail_after(STEP_TIMEOUT_S):
            answer = await self.admin.get(f"{SERVERS}/{server_id}/catalog", params={"refresh": str(refresh).lower()})
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def call(self, server_id: str, tool: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        """A user call through the REST API (no approval)."""
        return await self.admin.post(f"{SERVERS}/{server_id}/tools/{tool}/call", json={"arguments": arguments or {}})

    @asynccontextmanager
    async def agent(self, **callbacks: Any) -> AsyncGenerator[Client]:
        """The SDK client of an agent at the gateway."""
        async with gateway_client(self.base, self.gateway_token, **callbacks) as client:
            yield client


@asynccontextmanager
async def running_host(data_dir: Path, **environ: str) -> AsyncGenerator[Host]:
    """Run the composed app on loopback as `serve` does (`gateway_first`, the host's HTTP protocol) with a fresh
    data directory; yield a `Host`."""
    settings = Settings.load(data_dir=data_dir, environ={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN, **environ})
    app, _token, _created = create_app(settings)
    async with (
        serve_loopback(gateway_first(app), http=CoalescingHttpToolsProtocol) as base,
        httpx2.AsyncClient(
            verify=NO_TLS, base_url=base, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60
        ) as admin,
    ):
        created = await admin.post("/api/gateway/tokens", json={"name": "hostile-tests"})
        assert created.status_code == 201, created.text
        yield Host(app, base, admin, created.json()["token"])
