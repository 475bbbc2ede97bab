"""An MCP client of mcp-center's gateway, as agents connect to it (R-8.1)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.loopback import NO_TLS

__all__ = ["gateway_client"]


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
