"""Helpers for the capability tests: a loopback capability server, a ready server, event waits."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcp_center.errors import CenterError
from mcp_center.runtime import Subscription
from mcp_center.service import McpCenter
from tests.servers.capabilities import Upstream, make_capability_server
from tests.support.loopback import serve_loopback
from tests.support.readiness import ready_in_center

__all__ = ["capability_server", "next_event", "ready", "remote", "while_waiting"]


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
    enabled = await ready_in_center(center, body)
    assert enabled["status"]["state"] == "ready", enabled["status"]
    return enabled


async def next_event(subscription: Subscription, kind: str) -> dict[str, Any]:
    """The next event of type `kind` (callers bound the wait with `fail_after`)."""
    while True:
        event = await subscription.next()
        if event["type"] == kind:
            return event


async def while_waiting(
    center: McpCenter,
    call: Callable[[], Awaitable[Any]],
    kind: str,
    act: Callable[[dict[str, Any]], Awaitable[Any]],
) -> list[object]:
    """Run `call` in a task; when it waits for a human (`kind`: `approval` or `interaction`: the
    `<kind>.created` event), run `act(item)`; return what the call gave or raised (bounded: 15 s)."""
    outcome: list[object] = []

    async def run() -> None:
        try:
            outcome.append(await call())
        except CenterError as exc:
            outcome.append(exc)

    with anyio.fail_after(15):
        async with center.events.subscribe() as subscription, anyio.create_task_group() as tg:
            tg.start_soon(run)
            await act((await next_event(subscription, f"{kind}.created"))[kind])
    return outcome
