"""Helpers for the capability tests: a loopback capability server, a ready server, event waits."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcp_center.runtime import Subscription
from mcp_center.service import McpCenter
from tests.servers.capabilities import Upstream, make_capability_server
from tests.support.loopback import serve_loopback

__all__ = ["capability_server", "next_event", "ready", "remote"]


@asynccontextmanager
async def capability_server(name: str = "capabilities") -> AsyncGenerator[tuple[str, Upstream]]:
    """Serve `tests/servers/capabilities.py` on loopback; yield its MCP URL and what reaches it."""
    upstream = Upstream()
    async with serve_loopback(make_capability_server(upstream, name).streamable_http_app()) as base:
        yield f"{base}/mcp", upstream


def remote(server_id: str, url: str, **extra: Any) -> dict[str, Any]:
    """A create body for a Streamable HTTP server."""
    return {"id": server_id, "name": f"Server {server_id}", "transport": "streamable_http", "url": url, **extra}


async def ready(center: McpCenter, body: dict[str, Any]) -> dict[str, Any]:
    """Create → trust → test → enable (bounded); return the enabled view."""
    with anyio.fail_after(15):
        view = await center.create_server(body)
        await center.trust(view["id"], view["digest"])
        result = await center.test(view["id"])
        assert result.ok, result.error
        enabled = await center.enable(view["id"])
    assert enabled["status"]["state"] == "ready", enabled["status"]
    return enabled


async def next_event(subscription: Subscription, kind: str) -> dict[str, Any]:
    """The next event of type `kind` (callers bound the wait with `fail_after`)."""
    while True:
        event = await subscription.next()
        if event["type"] == kind:
            return event
