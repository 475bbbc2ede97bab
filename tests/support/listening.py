"""A host in front of the growing upstream, and the SDK's 2026-07-28 client on it: what the
`subscriptions/listen` tests share (tests/gateway/test_listen*.py, R-8.1, issue 12).

The host is the composed app on loopback; its one server `grow` is `tests/servers/growing_upstream.py`,
a real SDK server whose tools and resources change at run time, ready with `grow` and `touch` allowed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from fastapi import FastAPI
from mcp.client import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client

from tests.servers.growing_upstream import make_growing_server
from tests.support.composed import composed_host
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import add_ready

__all__ = ["GrowingHost", "growing_host", "legacy_client", "modern_client"]


@dataclass
class GrowingHost:
    """The running host: its URL, an admin client, a plain client, a gateway token, the body that
    created the server `grow` (the upstream's URL in it), and the composed app (its `state`) and the token's id."""

    base: str
    admin: httpx2.AsyncClient
    http: httpx2.AsyncClient
    token: str
    server: dict[str, Any]
    app: FastAPI
    token_id: str

    def modern_headers(self, method: str) -> dict[str, str]:
        """Headers of a raw 2026-07-28 request for `method` with the gateway token."""
        return {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.token}",
            "Mcp-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }


@asynccontextmanager
async def growing_host(data_dir: Path, admin_token: str) -> AsyncGenerator[GrowingHost]:
    """Start the growing upstream and a host on `data_dir` with `grow` ready; stop both on exit."""
    async with (
        serve_loopback(make_growing_server().streamable_http_app()) as upstream,
        composed_host(data_dir, admin_token) as composed,
    ):
        body = {"id": "grow", "name": "Grow", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        ready = await add_ready(composed.admin, {**body, "tool_policies": {"grow": "allow", "touch": "allow"}})
        assert ready["status"]["state"] == "ready"
        yield GrowingHost(
            composed.base, composed.admin, composed.http, composed.token, body, composed.app, composed.token_id
        )


@asynccontextmanager
async def modern_client(host: GrowingHost, path: str) -> AsyncGenerator[Client]:
    """The SDK's client in its default mode (it negotiates 2026-07-28 with the gateway) on `path`."""
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {host.token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{host.base}{path}", http_client=http), cache=None) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client


@asynccontextmanager
async def legacy_client(
    host: GrowingHost, path: str, message_handler: MessageHandlerFnT | None = None
) -> AsyncGenerator[Client]:
    """The SDK's client in a 2025-11-25 session on `path`; `message_handler` hears what the gateway
    pushes on it (list changes, resource updates)."""
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {host.token}"}, timeout=30) as http,
        Client(
            streamable_http_client(f"{host.base}{path}", http_client=http),
            mode="legacy",
            cache=None,
            message_handler=message_handler,
        ) as client,
    ):
        yield client
