"""Health and debugging over HTTP: the live event stream, per-server logs and catalogs (R-3.11)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.servers.http_echo import streamable_app
from tests.support.api import ADMIN_TOKEN, assert_error, create_remote, stdio_body
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import make_ready

pytestmark = pytest.mark.anyio

RAW_STDIO = Path(__file__).parents[1] / "servers" / "raw_stdio.py"


@pytest.fixture
async def echo_url() -> AsyncGenerator[str]:
    async with serve_loopback(streamable_app()) as base:
        yield f"{base}/mcp"


@pytest.fixture
async def host(center: McpCenter, settings: Settings) -> AsyncGenerator[httpx2.AsyncClient]:
    """The API on a real loopback port (streaming responses need a real server)."""
    app = create_api(settings, ADMIN_TOKEN)
    app.state.center = center
    async with (
        serve_loopback(app) as base,
        httpx2.AsyncClient(
            verify=NO_TLS, base_url=base, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=15
        ) as client,
    ):
        yield client


async def _next_event(lines: Any, wanted: str) -> dict[str, Any]:
    event_type = None
    async for line in lines:
        if line.startswith("event: "):
            event_type = line.removeprefix("event: ")
        elif line.startswith("data: ") and event_type == wanted:
            return json.loads(line.removeprefix("data: "))
    raise AssertionError("the stream ended")


async def test_the_event_stream_announces_configuration_and_state_changes(
    host: httpx2.AsyncClient, echo_url: str
) -> None:
    with anyio.fail_after(20):
        async with host.stream("GET", "/api/events") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.aiter_lines()
            created: dict[str, Any] = {}
            status: dict[str, Any] = {}
            async with anyio.create_task_group() as tg:
                tg.start_soon(create_remote, host, "echo", echo_url)
                created = await _next_event(lines, "server.created")
            assert created["server_id"] == "echo"
            async with anyio.create_task_group() as tg:
                tg.start_soon(make_ready, host, "echo")
                status = await _next_event(lines, "server.status")
                while status["status"]["state"] != "ready":
                    status = await _next_event(lines, "server.status")
            assert status["server_id"] == "echo"
            assert status["status"]["tool_count"] == 4


async def test_the_event_stream_needs_the_admin_token(host: httpx2.AsyncClient) -> None:
    response = await host.get("/api/events", headers={"Authorization": "Bearer wrong"})
    assert_error(response, 401, "ADMIN_AUTH_REQUIRED")


async def test_logs_list_request_summaries_and_export_as_a_download(host: httpx2.AsyncClient, echo_url: str) -> None:
    await create_remote(host, "echo", echo_url)
    await make_ready(host, "echo")
    call = await host.post("/api/mcp/servers/echo/tools/echo/call", json={"arguments": {"text": "secret-ish-argument"}})
    assert call.status_code == 200
    logs = (await host.get("/api/mcp/servers/echo/logs")).json()
    methods = [entry["method"] for entry in logs["requests"]]
    assert {"initialize", "tools/list", "tools/call"} <= set(methods)
    tools_call = next(entry for entry in logs["requests"] if entry["method"] == "tools/call")
    assert tools_call["status"] == "ok"
    assert tools_call["duration_ms"] is not None
    assert tools_call["response_bytes"] > 0
    assert "secret-ish-argument" not in json.dumps(logs)
    assert len(logs["requests"]) <= 50
    download = await host.get("/api/mcp/servers/echo/logs", params={"download": "true"})
    assert download.headers["content-disposition"] == 'attachment; filename="mcp-center-echo-logs.json"'
    assert download.json()["server_id"] == "echo"


async def test_logs_keep_only_the_last_fifty_requests(host: httpx2.AsyncClient, echo_url: str) -> None:
    await create_remote(host, "echo", echo_url)
    await make_ready(host, "echo")
    for n in range(60):
        await host.post("/api/mcp/servers/echo/tools/add/call", json={"arguments": {"a": n, "b": 1}})
    logs = (await host.get("/api/mcp/servers/echo/logs")).json()
    assert len(logs["requests"]) == 50


async def test_the_catalog_shows_every_category_with_generations(host: httpx2.AsyncClient, echo_url: str) -> None:
    await create_remote(host, "echo", echo_url)
    await make_ready(host, "echo")
    catalog = (await host.get("/api/mcp/servers/echo/catalog")).json()
    assert [tool["name"] for tool in catalog["tools"]] == ["echo", "add", "sleep", "whoami"]
    assert catalog["quarantined"] == []
    assert catalog["generation"]["tools"] == 1
    # The SDK server declares every category, even with no prompts or resources.
    assert catalog["capabilities"] == {"tools": True, "prompts": True, "resources": True}
    refreshed = (await host.get("/api/mcp/servers/echo/catalog", params={"refresh": "true"})).json()
    assert refreshed["generation"]["tools"] == 2


async def test_the_catalog_says_which_categories_a_server_did_not_declare(host: httpx2.AsyncClient) -> None:
    """The hand-written stdio server declares only tools: the settings page explains its empty prompts (R-5.4)."""
    created = await host.post("/api/mcp/servers", json=stdio_body("raw", sys.executable, [str(RAW_STDIO)]))
    assert created.status_code == 201, created.text
    await make_ready(host, "raw")
    catalog = (await host.get("/api/mcp/servers/raw/catalog")).json()
    assert catalog["capabilities"] == {"tools": True, "prompts": False, "resources": False}
    assert catalog["prompts"] == []


async def test_logs_of_an_unknown_server_are_not_found(host: httpx2.AsyncClient) -> None:
    assert_error(await host.get("/api/mcp/servers/nope/logs"), 404, "MCP_SERVER_NOT_FOUND")
    assert_error(await host.get("/api/mcp/servers/nope/catalog"), 404, "MCP_SERVER_NOT_FOUND")
