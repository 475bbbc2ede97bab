"""The composed app (`mcp_center.app.create_app`) on loopback with an admin client and a gateway
token: the in-process host the gateway tests talk to over real HTTP (R-8.1, R-9.2)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
from fastapi import FastAPI

from mcp_center.app import create_app, gateway_first
from mcp_center.config import Settings
from mcp_center.gateway.wire import CoalescingHttpToolsProtocol
from tests.support.loopback import NO_TLS, serve_loopback

__all__ = ["ComposedHost", "composed_host"]


@dataclass
class ComposedHost:
    """A running composed app: its base URL (no trailing slash), clients, and one gateway token."""

    app: FastAPI
    base: str
    admin: httpx2.AsyncClient
    """Sends the admin token (the REST API)."""
    http: httpx2.AsyncClient
    """Sends no credentials (requests that bring their own headers)."""
    token: str
    """A gateway token (`mcpg_...`) created through the API."""
    token_id: str


@asynccontextmanager
async def composed_host(
    data_dir: Path,
    admin_token: str,
    *,
    token_name: str = "tests",  # noqa: S107 - the token's name, not a secret
    timeout_s: float = 30.0,
) -> AsyncGenerator[ComposedHost]:
    """Serve `create_app` as `serve` does (`gateway_first`, the host's HTTP protocol) for a fresh
    `data_dir` on 127.0.0.1 (a port the OS picks) with `admin_token`, create the gateway token
    `token_name`, and stop everything on exit.

    Args:
        timeout_s: Both clients' timeout, in seconds.
    Raises:
        AssertionError: the token was not created (the API's answer in the message).
    """
    settings = Settings.load(data_dir=data_dir, environ={"MCP_CENTER_ADMIN_TOKEN": admin_token})
    app, _token, _created = create_app(settings)
    async with (
        serve_loopback(gateway_first(app), http=CoalescingHttpToolsProtocol) as base,
        httpx2.AsyncClient(
            verify=NO_TLS, base_url=base, headers={"Authorization": f"Bearer {admin_token}"}, timeout=timeout_s
        ) as admin,
        httpx2.AsyncClient(verify=NO_TLS, base_url=base, timeout=timeout_s) as http,
    ):
        created = await admin.post("/api/gateway/tokens", json={"name": token_name})
        assert created.status_code == 201, created.text
        yield ComposedHost(app, base, admin, http, created.json()["token"], created.json()["id"])
