"""ux35: a quarantined tool (listed by its server with an invalid definition, R-3.6) is shown to the
user with why, stays out of agents' tools/list (R-5.1, R-8.1), and a call to it gets its own refusal,
MCP_TOOL_QUARANTINED, never MCP_TOOL_NOT_FOUND with a misleading "did you mean" (R-7.3)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_center.cli.servers import quarantine_note
from tests.hostile._support import QUIRKY, SERVERS, Host, quirky_body, running_host, text_of
from tests.support.cli import run_cli
from tests.support.fakes.streamable_http import ECHO_TOOL

pytestmark = pytest.mark.anyio

BROKEN = {"name": "broken", "description": "A tool without an inputSchema."}
SCENARIO = {"tools": [ECHO_TOOL, BROKEN]}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


async def test_a_call_to_a_quarantined_tool_is_refused_as_quarantined_by_rest_and_gateway(host: Host) -> None:
    await host.ready(quirky_body("quar", SCENARIO, tool_policies={"echo": "allow"}))

    listed = await host.admin.get(f"{SERVERS}/quar/tools")
    assert listed.status_code == 200, listed.text
    assert [t["name"] for t in listed.json()["tools"]] == ["echo"]
    [item] = listed.json()["quarantined"]
    assert item["name"] == "broken" and "inputSchema" in item["reason"]

    with anyio.fail_after(20):
        called = await host.call("quar", "broken")
    assert called.status_code == 403, called.text
    error = called.json()["error"]
    assert error["code"] == "MCP_TOOL_QUARANTINED"
    assert "inputSchema" in error["message"] and "quarantined" in error["message"]
    assert error["details"]["server_tool"] == "broken"
    assert error["details"]["catalog"] == "/api/mcp/servers/quar/catalog"

    async with host.agent() as agent:
        with anyio.fail_after(20):
            names = [tool.name for tool in (await agent.list_tools()).tools]
            assert "mcp__quar__echo" in names and "mcp__quar__broken" not in names
            refused = await agent.call_tool("mcp__quar__broken", {})
        assert refused.is_error is True
        said = text_of(refused)
        assert said.startswith("MCP_TOOL_QUARANTINED: tool 'mcp__quar__broken' of server 'quar' is quarantined")
        assert "inputSchema" in said and "did you mean" not in said
        # A name no server lists is still not found, with its suggestions.
        with anyio.fail_after(20), pytest.raises(MCPError) as unknown:
            await agent.call_tool("mcp__quar__echoo", {})
        assert "MCP_TOOL_NOT_FOUND" in unknown.value.error.message


def test_cli_test_tools_and_show_name_the_quarantined_tool_and_why(tmp_path: Path) -> None:
    data = tmp_path / "data"
    added = run_cli(data, "add", "quar", "--", sys.executable, QUIRKY, json.dumps(SCENARIO))
    assert added.returncode == 0, added.stderr
    assert run_cli(data, "trust", "quar", "--yes").returncode == 0
    tested = run_cli(data, "test", "quar")
    assert tested.returncode == 0, tested.stderr
    lines = tested.stdout.splitlines()
    assert "1 tool" in lines[0]
    start = next(i for i, line in enumerate(lines) if "quarantined" in line)
    assert lines[start].startswith("1 tool quarantined (the server's definition is invalid: not offered to agents")
    assert lines[start + 1].startswith("  broken: inputSchema")
    assert "mcp-center test quar" in lines[start + 2]

    shown = run_cli(data, "show", "quar")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert [q["name"] for q in view["last_test"]["quarantined"]] == ["broken"]
    assert "1 tool quarantined" in shown.stderr and "broken" in shown.stderr

    assert run_cli(data, "enable", "quar").returncode == 0
    listed = run_cli(data, "tools", "quar")
    assert listed.returncode == 0, listed.stderr
    assert "1 tool quarantined" in listed.stdout and "  broken: inputSchema" in listed.stdout


async def test_the_quarantine_follows_the_live_catalog_once_the_server_is_fixed(host: Host, tmp_path: Path) -> None:
    """fix38: after the server was fixed and reconnected, the server's view (REST, `mcp-center show`)
    still said its tool was quarantined: only the last test's list was shown. The view now carries the
    live session's quarantine, which `show` prefers; `last_test.quarantined` stays what the test saw."""
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO), encoding="utf-8")
    await host.ready({**quirky_body("quar", {}), "args": [QUIRKY, str(scenario)], "tool_policies": {"echo": "allow"}})
    view = (await host.admin.get(f"{SERVERS}/quar")).json()
    assert [q["name"] for q in view["quarantined"]] == ["broken"]
    assert (quarantine_note("quar", view) or "").startswith("note: its live session lists 1 tool quarantined")

    scenario.write_text(json.dumps({"tools": [ECHO_TOOL, {**BROKEN, "inputSchema": {"type": "object"}}]}))
    with anyio.fail_after(20):
        assert (await host.admin.post(f"{SERVERS}/quar/disable")).status_code == 200
        assert (await host.admin.post(f"{SERVERS}/quar/enable")).status_code == 200
        listed = (await host.admin.get(f"{SERVERS}/quar/tools")).json()
    assert ([t["name"] for t in listed["tools"]], listed["quarantined"]) == (["echo", "broken"], [])
    view = (await host.admin.get(f"{SERVERS}/quar")).json()
    assert view["quarantined"] == []
    assert [q["name"] for q in view["last_test"]["quarantined"]] == ["broken"]  # what that test saw
    note = quarantine_note("quar", view) or ""
    assert note.endswith("its live session lists no quarantined tool now (the server was fixed since)"), note


async def test_did_you_mean_never_offers_a_quarantined_tool(host: Host) -> None:
    """fix38: an unknown tool's suggestions are callable tools only: `search` is close to the
    quarantined `search_docs` (a name that contains it), which is never offered (R-7.3, R-3.6)."""
    broken = {"name": "search_docs", "description": "A tool without an inputSchema."}
    await host.ready(quirky_body("quar", {"tools": [ECHO_TOOL, broken]}, tool_policies={"echo": "allow"}))
    refused = await host.call("quar", "search")
    assert refused.status_code == 404, refused.text
    assert "search_docs" not in refused.json()["error"]["details"]["did_you_mean"]
    async with host.agent() as agent:
        for name in ("mcp__quar__search", "mcp__quar__search_doc"):
            with anyio.fail_after(20), pytest.raises(MCPError) as unknown:
                await agent.call_tool(name, {})
            assert "MCP_TOOL_NOT_FOUND" in unknown.value.error.message
            assert "search_docs" not in json.dumps(unknown.value.error.data), unknown.value.error


async def test_gateway_suggestions_compare_the_tool_part_within_a_server(host: Host) -> None:
    """An unknown exposed name on a known server is compared with that server's tools by the part
    after `mcp__{id}__`: compared whole, the shared prefix made any name look close (`mcp__quar__zzz`
    offered `mcp__quar__echo`). A misspelled server id in a well-formed name offers the close servers'
    tools by their part after the prefix (break38: `mcp__rw__echo` offered every tool of `raw`), and
    every server's when no id is close; a name of another shape is matched whole (R-7.3)."""
    tools = [ECHO_TOOL, {**ECHO_TOOL, "name": "fetch_weather"}]
    await host.ready(quirky_body("quar", {"tools": tools}, tool_policies={"echo": "allow"}))
    expected = {
        "mcp__quar__zzz": [],
        "mcp__quar__list_files": [],
        "mcp__quar__ecko": ["mcp__quar__echo"],
        "mcp__qaur__echo": ["mcp__quar__echo"],
        "mcp__QUAR__fetch_weather": ["mcp__quar__fetch_weather"],
        "mcp__qua__fetch_wether": ["mcp__quar__fetch_weather"],
        "mcp__zzzz__echo": ["mcp__quar__echo"],  # no server close: the tool part against every server's
    }
    seen: dict[str, list[str]] = {}
    async with host.agent() as agent:
        for name in expected:
            with anyio.fail_after(20), pytest.raises(MCPError) as unknown:
                await agent.call_tool(name, {})
            data = cast(dict[str, Any], unknown.value.error.data)
            assert data["code"] == "MCP_TOOL_NOT_FOUND", unknown.value.error
            seen[name] = list(data.get("did_you_mean", []))
    assert seen == expected
