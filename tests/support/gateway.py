"""An MCP client of mcp-center's gateway, as agents connect to it (R-8.1)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_center.gateway.wire import DirectHandler
from tests.support.loopback import NO_TLS

__all__ = ["SESSION_INITIALIZE", "gateway_client", "spy_direct_takes"]

SESSION_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
"""The `initialize` request (id 1) a raw 2025-11-25 agent sends to open a session (R-8.1)."""


def spy_direct_takes(route: Any, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for each POST the host's direct route (`app.state.direct_gateway`) is offered, whether it
    took it (True: answered on the direct path, issue 12) or left it to the ASGI cycle (False).

    Returns:
        The list the spy appends to, in request order.
    """
    taken: list[bool] = []
    real_take = route.take

    def take(
        url: bytes, headers: Sequence[tuple[bytes, bytes]], body: bytes, read: Mapping[bytes, str]
    ) -> DirectHandler | None:
        handler = real_take(url, headers, body, read)
        taken.append(handler is not None)
        return handler

    monkeypatch.setattr(route, "take", take)
    return taken


@asynccontextmanager
async def gateway_client(
    base_url: str, token: str, *, timeout_s: float = 30.0, **callbacks: Any
) -> AsyncGenerator[Client]:
    """The SDK's client (legacy mode, no cache) at `<base_url>/mcp`, sending `token` as its bearer.

    Args:
        base_url: The host's base URL, without `/mcp`.
        token: A gateway token.
        timeout_s: The HTTP client's timeout, in seconds.
        callbacks: Passed to `Client` (`message_handler`, `logging_callback`, `elicitation_callback`).
    """
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s) as http,
        Client(
            streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy", cache=None, **callbacks
        ) as client,
    ):
        yield client
