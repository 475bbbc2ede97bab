"""A remote server that goes away is noticed without waiting for the next request (R-3.11)."""

from __future__ import annotations

import anyio
import pytest

from mcp_center.runtime import manager as manager_module
from mcp_center.service import McpCenter
from tests.servers.http_echo import streamable_app
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


async def test_a_remote_server_that_went_away_leaves_ready_by_itself(
    center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "HEALTH_INTERVAL_S", 0.2)
    monkeypatch.setattr(manager_module, "HEALTH_TIMEOUT_S", 2.0)
    async with serve_loopback(streamable_app()) as base:
        view = await center.create_server({"name": "Echo", "transport": "streamable_http", "url": f"{base}/mcp"})
        await center.trust(view["id"], view["digest"])
        assert (await center.test(view["id"])).ok
        await center.enable(view["id"])
        await center.wait_for_state("echo", "ready", timeout_s=10)
        await anyio.sleep(0.5)  # a few pings answered while the server is up
        assert center.status("echo").state.value == "ready"
    status = await center.wait_for_state("echo", "error", timeout_s=15)
    assert status.error is not None
    assert status.error["details"]["reason"] in {"refused", "closed", "network", "timeout"}
