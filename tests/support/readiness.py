"""Make a server ready the way a user does: create, trust the digest read back, test, enable (R-2.1).

One home for "make this server ready" (issue 16 counted twelve copies). Three faces, one rule:

- `ready_in_center`: through the library (`McpCenter`), in process.
- `make_ready` / `add_ready`: through the REST API with an async client (the app in process or a
  loopback host).
- `add_ready_on_host`: through the REST API of a running `serve` process with its sync client.

Each step is bounded by `STEP_TIMEOUT_S`, a hang guard, never the thing measured: a stdio test
starts a Python or Node process, which takes seconds on a loaded 2-core machine.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from mcp_center.service import McpCenter
from tests.support.http import check
from tests.support.serve import Host

__all__ = ["STEP_TIMEOUT_S", "add_ready", "add_ready_on_host", "make_ready", "ready_in_center"]

SERVERS = "/api/mcp/servers"

STEP_TIMEOUT_S = 60.0
"""Bound on one step that may start or connect to a server (seconds): generous, a hang guard."""


async def ready_in_center(center: McpCenter, body: dict[str, Any]) -> dict[str, Any]:
    """Create `body`, trust it, test it (asserting success), enable it; return the enabled view as JSON."""
    view = await center.create_server(body)
    await center.trust(view.id, view.digest)
    with anyio.fail_after(STEP_TIMEOUT_S):
        result = await center.test(view.id)
    assert result.ok, result.error
    with anyio.fail_after(STEP_TIMEOUT_S):
        enabled = (await center.enable(view.id)).to_dict()
    assert enabled["enabled"] is True, enabled
    assert enabled["needs"] == [], enabled
    return enabled


async def make_ready(api: httpx2.AsyncClient, server_id: str) -> dict[str, Any]:
    """Trust the current digest, test, enable a created server; assert each step and return the enabled view."""
    current = (await api.get(f"{SERVERS}/{server_id}")).json()
    trusted = await api.post(f"{SERVERS}/{server_id}/trust", json={"digest": current["digest"]})
    assert trusted.status_code == 200, trusted.text
    assert trusted.json()["trusted"] is True
    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = await api.post(f"{SERVERS}/{server_id}/test")
    assert tested.status_code == 200, tested.text
    assert tested.json()["ok"] is True, tested.json()
    with anyio.fail_after(STEP_TIMEOUT_S):
        enabled = await api.post(f"{SERVERS}/{server_id}/enable")
    assert enabled.status_code == 200, enabled.text
    view = enabled.json()
    assert view["enabled"] is True
    assert view["needs"] == []
    return view


async def add_ready(api: httpx2.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    """Create `body` through the API, then `make_ready`; return the enabled view."""
    created = await api.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    return await make_ready(api, created.json()["id"])


def add_ready_on_host(host: Host, body: dict[str, Any]) -> dict[str, Any]:
    """Create → trust (the digest read back) → test → enable through `host`'s REST API; return the enabled view.

    Asserts every step, a tool count above zero and the `ready` state (`serve` answers `enable`
    once connected). The host's client bounds each request (its timeout).
    """
    view = check(host.client.post(SERVERS, json=body), 201)
    assert view["needs"] == ["trust", "test", "enable"], view
    server = f"{SERVERS}/{view['id']}"
    check(host.client.post(f"{server}/trust", json={"digest": view["digest"]}), 200)
    result = check(host.client.post(f"{server}/test"), 200)
    assert result["ok"], result["error"]
    assert result["tool_count"] and result["tool_count"] > 0, result
    enabled = check(host.client.post(f"{server}/enable"), 200)
    assert enabled["enabled"] is True, enabled
    assert enabled["status"]["state"] == "ready", enabled["status"]
    assert enabled["needs"] == [], enabled
    return enabled
