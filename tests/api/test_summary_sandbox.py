"""The connection summary says how a stdio server will run: its sandbox policy, or `null` for
unconfined, in REST's `.summary` as in `mcp-center trust` and the page (trial40, R-2.1, R-11.1).

`trust` and `GET .../servers/ID` showed an unconfined server's summary with no sandbox field while the
page said "Sandbox: off": what the user confirmed did not say the server runs with their rights.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx2
import pytest

from tests.support.api import remote_body, stdio_body

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"


async def created(api: httpx2.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post(SERVERS, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def test_an_unconfined_stdio_servers_summary_says_sandbox_null_and_trusting_it_works(
    api: httpx2.AsyncClient,
) -> None:
    view = await created(api, stdio_body("plain", sys.executable, ["-c", "pass"]))
    assert "sandbox" in view["summary"] and view["summary"]["sandbox"] is None
    read = (await api.get(f"{SERVERS}/plain")).json()
    assert read["summary"] == view["summary"] and read["digest"] == view["digest"]
    trusted = await api.post(f"{SERVERS}/plain/trust", json={"digest": view["digest"]})
    assert trusted.status_code == 200, trusted.text


async def test_a_sandboxed_stdio_servers_summary_holds_what_its_sandbox_allows(api: httpx2.AsyncClient) -> None:
    body = stdio_body("boxed", sys.executable, ["-c", "pass"], sandbox={"network": "egress", "memory_mb": 512})
    policy = (await created(api, body))["summary"]["sandbox"]
    assert (policy["network"], policy["memory_mb"]) == ("egress", 512)
    assert {"max_processes", "max_open_files", "paths"} <= set(policy)


async def test_a_remote_servers_summary_has_no_sandbox_field(api: httpx2.AsyncClient) -> None:
    """A remote server is not a process of this host: nothing to confine."""
    assert "sandbox" not in (await created(api, remote_body("far", "https://mcp.example.com/mcp")))["summary"]
