"""An npx/uvx server with no package version is accepted with a PACKAGE_NOT_PINNED warning (issue 16).

`npx -y some-pkg` runs the newest release at each start: not the code the user trusted. Adding or
importing it is not refused; the REST answers (create, read, import preview) carry the warning.
"""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.support.api import stdio_body

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"


async def test_a_created_server_with_an_unpinned_package_is_warned_and_a_pinned_one_is_not(
    api: httpx2.AsyncClient,
) -> None:
    loose = await api.post(SERVERS, json=stdio_body("loose", "npx", ["-y", "some-pkg"]))
    assert loose.status_code == 201, loose.text
    pinned = await api.post(SERVERS, json=stdio_body("pinned", "npx", ["-y", "some-pkg@1.4.2"]))
    assert pinned.status_code == 201, pinned.text
    warned = [w for w in loose.json()["warnings"] if w["code"] == "PACKAGE_NOT_PINNED"]
    assert [w["message"] for w in warned] == [
        "'some-pkg' names no fixed version: npx runs whatever release is newest at each start, "
        "not the code you trusted; pin one, e.g. 'some-pkg@1.2.3'"
    ]
    assert (await api.get(f"{SERVERS}/loose")).json()["warnings"] == loose.json()["warnings"]
    assert not [w for w in pinned.json()["warnings"] if w["code"] == "PACKAGE_NOT_PINNED"]


async def test_an_import_preview_warns_of_the_unpinned_entry_only(api: httpx2.AsyncClient) -> None:
    content = json.dumps(
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"]},
                "fetch": {"command": "uvx", "args": ["mcp-server-fetch==2025.4.7"]},
            }
        }
    )
    response = await api.post("/api/mcp/import/preview", json={"content": content})
    assert response.status_code == 200, response.text
    warnings = {s["id"]: [(w["field"], w["code"]) for w in s["warnings"]] for s in response.json()["servers"]}
    assert warnings == {"time": [("args.0", "PACKAGE_NOT_PINNED")], "fetch": []}
