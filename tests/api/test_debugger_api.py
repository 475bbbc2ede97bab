"""The debugger of a server over the REST API (R-12.1): server info, live activity (log messages,
notifications, call progress), `logging/setLevel`, the JSON-RPC console and completion — against
@modelcontextprotocol/server-everything over stdio, the Inspector's own test server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.service import McpCenter
from tests.support.api import assert_error, stdio_body
from tests.support.mcp_servers import EVERYTHING
from tests.support.readiness import make_ready

pytestmark = pytest.mark.anyio

WAIT_S = 30.0
"""Bound on one step against node (a cold start of server-everything is the slow part)."""


@pytest.fixture
async def everything(api: httpx2.AsyncClient) -> str:
    """server-everything over stdio, trusted, tested and enabled; returns its id."""
    if not EVERYTHING.exists():
        pytest.fail("the npm test servers are missing: run scripts/bootstrap --dev")
    created = await api.post("/api/mcp/servers", json=stdio_body("everything", "node", [str(EVERYTHING), "stdio"]))
    assert created.status_code == 201, created.text
    with anyio.fail_after(WAIT_S):
        await make_ready(api, "everything")
    return "everything"


async def _activity(api: httpx2.AsyncClient, server_id: str) -> list[dict[str, Any]]:
    response = await api.get(f"/api/mcp/servers/{server_id}/activity")
    assert response.status_code == 200, response.text
    return response.json()["entries"]


async def _wait_for_entry(
    api: httpx2.AsyncClient, center: McpCenter, server_id: str, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first activity entry `wanted(entry)` accepts, waiting on the event bus (bounded)."""
    with anyio.fail_after(WAIT_S):
        async with center.events.subscribe() as subscription:
            for entry in await _activity(api, server_id):
                if wanted(entry):
                    return entry
            while True:
                event = await subscription.next()
                if event["type"] == "server.activity" and event["server_id"] == server_id and wanted(event["entry"]):
                    return event["entry"]


async def test_server_info_names_the_server_its_protocol_capabilities_and_console_methods(
    api: httpx2.AsyncClient, everything: str
) -> None:
    with anyio.fail_after(WAIT_S):
        response = await api.get(f"/api/mcp/servers/{everything}/info")
    assert response.status_code == 200, response.text
    info = response.json()
    assert info["server_info"]["name"] == "mcp-servers/everything"
    assert info["protocol_version"] == "2025-11-25"
    assert {"tools", "prompts", "resources", "logging", "completions"} <= set(info["capabilities"])
    assert isinstance(info["instructions"], str) and info["instructions"]
    assert {"ping", "tools/call", "completion/complete", "logging/setLevel", "resources/subscribe"} <= set(
        info["methods"]
    )
    assert info["log_level"] is None


async def test_log_messages_arrive_at_the_chosen_level_and_the_level_is_kept(
    api: httpx2.AsyncClient, center: McpCenter, everything: str
) -> None:
    with anyio.fail_after(WAIT_S):
        level = await api.put(f"/api/mcp/servers/{everything}/logging/level", json={"level": "debug"})
        assert level.status_code == 200, level.text
        assert level.json()["level"] == "debug"
        started = await api.post(
            f"/api/mcp/servers/{everything}/tools/toggle-simulated-logging/call", json={"arguments": {}}
        )
        assert started.status_code == 200, started.text
    entry = await _wait_for_entry(api, center, everything, lambda e: e["kind"] == "log")
    assert entry["method"] == "notifications/message"
    assert entry["level"] in {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
    assert "message" in str(entry["data"])
    info = (await api.get(f"/api/mcp/servers/{everything}/info")).json()
    assert info["log_level"] == "debug"
    # The request log has the setLevel request like any other.
    logs = (await api.get(f"/api/mcp/servers/{everything}/logs")).json()
    assert any(e["method"] == "logging/setLevel" and e["status"] == "ok" for e in logs["requests"])
    with anyio.fail_after(WAIT_S):
        await api.post(f"/api/mcp/servers/{everything}/tools/toggle-simulated-logging/call", json={"arguments": {}})


async def test_an_unknown_level_is_refused_before_anything_is_sent(api: httpx2.AsyncClient, everything: str) -> None:
    response = await api.put(f"/api/mcp/servers/{everything}/logging/level", json={"level": "loud"})
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert error["details"]["errors"][0]["field"] == "level"


async def test_a_call_s_progress_is_recorded_under_its_operation_id(
    api: httpx2.AsyncClient, center: McpCenter, everything: str
) -> None:
    operation_id = uuid.uuid4().hex
    with anyio.fail_after(WAIT_S):
        called = await api.post(
            f"/api/mcp/servers/{everything}/tools/trigger-long-running-operation/call",
            json={"arguments": {"duration": 0.6, "steps": 3}, "operation_id": operation_id},
        )
    assert called.status_code == 200, called.text
    progress = [e for e in await _activity(api, everything) if e["kind"] == "progress"]
    assert [(e["operation_id"], e["progress"], e["total"]) for e in progress] == [
        (operation_id, 1, 3),
        (operation_id, 2, 3),
        (operation_id, 3, 3),
    ]


async def test_the_console_sends_a_request_and_shows_the_answer_and_its_timing(
    api: httpx2.AsyncClient, everything: str
) -> None:
    with anyio.fail_after(WAIT_S):
        ping = await api.post(f"/api/mcp/servers/{everything}/rpc", json={"method": "ping"})
        listed = await api.post(f"/api/mcp/servers/{everything}/rpc", json={"method": "prompts/list", "params": {}})
        wrong = await api.post(
            f"/api/mcp/servers/{everything}/rpc", json={"method": "tools/call", "params": {"name": "no-such-tool"}}
        )
    assert ping.status_code == 200, ping.text
    assert ping.json()["response"] == {"result": {}}
    assert ping.json()["elapsed_ms"] >= 0
    names = [p["name"] for p in listed.json()["response"]["result"]["prompts"]]
    assert "completable-prompt" in names
    assert listed.json()["request"] == {"method": "prompts/list", "params": {}}
    # The server's JSON-RPC error (or isError result) is the answer, shown as it came.
    answer = wrong.json()["response"]
    assert wrong.status_code == 200
    assert "error" in answer or answer["result"].get("isError") is True
    logs = (await api.get(f"/api/mcp/servers/{everything}/logs")).json()
    assert any(e["method"] == "ping" and e["status"] == "ok" for e in logs["requests"])


async def test_the_console_refuses_initialize_notifications_and_non_object_params(
    api: httpx2.AsyncClient, everything: str
) -> None:
    bodies: list[tuple[dict[str, Any], str]] = [
        ({"method": "initialize", "params": {}}, "method"),
        ({"method": "notifications/initialized"}, "method"),
        ({"method": "has space"}, "method"),
        ({"method": "tools/list", "params": [1, 2]}, "params"),
    ]
    for body, field in bodies:
        error = assert_error(await api.post(f"/api/mcp/servers/{everything}/rpc", json=body), 422, "REQUEST_INVALID")
        assert error["details"]["errors"][0]["field"] == field, body


async def test_completion_suggests_values_for_a_prompt_argument(api: httpx2.AsyncClient, everything: str) -> None:
    with anyio.fail_after(WAIT_S):
        response = await api.post(
            f"/api/mcp/servers/{everything}/complete",
            json={
                "ref": {"type": "ref/prompt", "name": "completable-prompt"},
                "argument": {"name": "department", "value": "E"},
            },
        )
    assert response.status_code == 200, response.text
    assert response.json()["values"] == ["Engineering"]
    bad = await api.post(f"/api/mcp/servers/{everything}/complete", json={"ref": {"type": "ref/tool"}})
    assert_error(bad, 422, "REQUEST_INVALID")


async def test_unknown_server_ids_are_answered_with_the_closest_ones(api: httpx2.AsyncClient, everything: str) -> None:
    error = assert_error(await api.get("/api/mcp/servers/everythng/info"), 404, "MCP_SERVER_NOT_FOUND")
    assert error["details"]["did_you_mean"] == [everything]
    tool = assert_error(
        await api.post(f"/api/mcp/servers/{everything}/tools/get_sum/call", json={"arguments": {}}),
        404,
        "MCP_TOOL_NOT_FOUND",
    )
    assert tool["details"]["did_you_mean"][0] == "get-sum"
