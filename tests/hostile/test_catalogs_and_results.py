"""Issue 14, "catalogs and results": one bad tool never sinks a server, and structured output that
breaks its schema is reported with the result instead of losing it (R-3.6, R-3.9, R-5.1).

Through the REST API and the gateway of a real host, against loopback fakes of our own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hostile._support import QUIRKY, SERVERS, Host, quirky_body, remote_body, running_host, text_of
from tests.support.fakes.streamable_http import ECHO_TOOL, FakeStreamableServer, serve_fake

pytestmark = pytest.mark.anyio

GOOD: dict[str, Any] = {"name": "good", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
BAD_TOOLS: list[dict[str, Any]] = [
    {"name": "string_args", "inputSchema": {"type": "string"}},
    {"name": "mixed_union", "inputSchema": {"anyOf": [{"type": "object"}, {"type": "string"}]}},
    {"name": "not_json_schema", "inputSchema": {"type": "object", "properties": {"x": {"type": 5}}}},
    {"name": "unsatisfiable", "inputSchema": {"type": "object", "required": ["x"], "additionalProperties": False}},
    {"name": "no_schema"},
]
NORMALISED_TOOLS: list[dict[str, Any]] = [
    {
        "name": "object_union",
        "inputSchema": {"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "object"}]},
    },
    {"name": "undefined_required", "inputSchema": {"type": "object", "required": ["x"]}},
    {
        "name": "bad_output_schema",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}},
    },
]
ALLOW = {t["name"]: "allow" for t in [GOOD, *NORMALISED_TOOLS, {"name": "typed"}]}


@pytest.fixture
async def host(tmp_path: Path) -> Any:
    async with running_host(tmp_path / "data") as running:
        yield running


async def _check_catalog_and_gateway(host: Host, server_id: str) -> None:
    catalog = await host.catalog(server_id)
    assert sorted(t["name"] for t in catalog["tools"]) == [
        "bad_output_schema",
        "good",
        "object_union",
        "undefined_required",
    ]
    reasons = {q["name"]: q["reason"] for q in catalog["quarantined"]}
    assert set(reasons) == {t["name"] for t in BAD_TOOLS}
    assert reasons["string_args"].startswith("inputSchema.type:")
    assert reasons["mixed_union"].startswith("inputSchema.anyOf[1]:")
    assert "not valid JSON Schema" in reasons["not_json_schema"]
    assert reasons["unsatisfiable"].startswith("inputSchema.required:")
    changed = {n["name"]: " ".join(n["changes"]) for n in catalog["normalized"]}
    assert set(changed) == {"object_union", "undefined_required", "bad_output_schema"}
    tools = {t["name"]: t for t in catalog["tools"]}
    assert tools["object_union"]["inputSchema"]["type"] == "object"
    assert tools["undefined_required"]["inputSchema"]["properties"] == {"x": {}}
    assert "outputSchema" not in tools["bad_output_schema"]
    called = await host.call(server_id, "good", {"text": "still here"})
    assert called.status_code == 200, called.text
    assert text_of(called.json()) == "still here"
    async with host.agent() as agent:
        listed = {t.name: t for t in (await agent.list_tools()).tools}
        assert not any(name.endswith(("string_args", "mixed_union", "not_json_schema", "no_schema")) for name in listed)
        exposed = listed[f"mcp__{server_id}__bad_output_schema"]
        assert exposed.output_schema is None
        with anyio.fail_after(15):
            result = await agent.call_tool(f"mcp__{server_id}__good", {"text": "via gateway"})
        assert text_of(result) == "via gateway"


async def test_bad_tools_are_quarantined_or_normalised_and_the_rest_stay_usable_over_stdio(host: Host) -> None:
    """Item 1: each class of broken tool definition, on a stdio server."""
    scenario = {"tools": [GOOD, *BAD_TOOLS, *NORMALISED_TOOLS]}
    view = await host.create(quirky_body("quirky", scenario, tool_policies=ALLOW))
    tested = await host.test(view["id"])
    assert tested["ok"], tested
    assert tested["tool_count"] == 4
    assert (await host.admin.post(f"{SERVERS}/quirky/enable")).json()["status"]["state"] == "ready"
    await _check_catalog_and_gateway(host, "quirky")


async def test_bad_tools_are_quarantined_or_normalised_and_the_rest_stay_usable_over_http(host: Host) -> None:
    """Item 1: the same catalog on a Streamable HTTP server."""
    fake = FakeStreamableServer(tools=[GOOD, *BAD_TOOLS, *NORMALISED_TOOLS])
    async with serve_fake(fake) as url:
        await host.ready(remote_body("remote", url, tool_policies=ALLOW))
        await _check_catalog_and_gateway(host, "remote")


async def test_a_failing_tools_list_is_attributed_to_tools_list_not_initialize(host: Host) -> None:
    """Item 1: the step that failed is named, and a server we closed is not said to have exited."""
    fake = FakeStreamableServer(tools_result={"tools": "not a list"})
    async with serve_fake(fake) as url:
        view = await host.create(remote_body("broken", url))
        tested = await host.test(view["id"])
    assert tested["ok"] is False
    assert "tools/list" in tested["error"]["message"]
    assert "initialize" not in tested["error"]["message"]
    stdio = await host.create(quirky_body("broken-stdio", {"tools": {"not": "a list"}}))
    tested = await host.test(stdio["id"])
    assert tested["ok"] is False
    assert "tools/list" in tested["error"]["message"]
    assert tested["error"]["reason"] != "process_exited"


TYPED: dict[str, Any] = {
    "name": "typed",
    "inputSchema": {"type": "object"},
    "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (
            {"content": [{"type": "text", "text": "n is seven"}], "structuredContent": {"n": "seven"}},
            "structuredContent.n",
        ),
        ({"content": [{"type": "text", "text": "no structure"}]}, "no structuredContent"),
        ({"content": [{"type": "text", "text": "a list"}], "structuredContent": [1, 2]}, "no structuredContent"),
    ],
)
async def test_structured_output_that_breaks_the_schema_keeps_the_content_and_is_reported(
    host: Host, answer: dict[str, Any], problem: str
) -> None:
    """Item 3: the text survives to the REST caller and the agent, marked and recorded."""
    await host.ready(
        quirky_body("typed", {"tools": [TYPED], "calls": {"typed": {"result": answer}}}, tool_policies=ALLOW)
    )
    called = await host.call("typed", "typed")
    assert called.status_code == 200, called.text
    body = called.json()
    assert answer["content"][0]["text"] in text_of(body)
    assert body["isError"] is True
    assert problem in body["_meta"]["mcp-center/output_schema_mismatch"]["problem"]
    logs = (await host.admin.get(f"{SERVERS}/typed/logs")).json()
    findings = [e for e in logs["requests"] if e["status"] == "output_invalid"]
    assert findings and problem in findings[-1]["error"]["message"]
    async with host.agent() as agent:
        with anyio.fail_after(15):
            result = await agent.call_tool("mcp__typed__typed", {})
    assert result.is_error is True
    assert answer["content"][0]["text"] in text_of(result)
    assert "outputSchema" in text_of(result)


async def test_conforming_structured_output_passes_unchanged(host: Host) -> None:
    """Item 3, the control: a result that matches its schema is neither marked nor an error."""
    answer = {"content": [{"type": "text", "text": "7"}], "structuredContent": {"n": 7}}
    await host.ready(
        quirky_body("typed", {"tools": [TYPED], "calls": {"typed": {"result": answer}}}, tool_policies=ALLOW)
    )
    body = (await host.call("typed", "typed")).json()
    assert body.get("isError") is not True
    assert body["structuredContent"] == {"n": 7}
    assert "mcp-center/output_schema_mismatch" not in body.get("_meta", {})


async def test_overlapping_catalog_refreshes_keep_an_unchanged_catalog(host: Host) -> None:
    """Item 5: concurrent `?refresh=true` reads each validate their own answer; nothing is
    quarantined as a duplicate and no tool disappears."""
    tools = [ECHO_TOOL, *({"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(20))]
    fake = FakeStreamableServer(tools=tools)
    async with serve_fake(fake) as url:
        await host.ready(remote_body("busy", url))
        answers: list[dict[str, Any]] = []

        async def refresh() -> None:
            answers.append(await host.catalog("busy", refresh=True))

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(refresh)
        final = await host.catalog("busy")
        # listed while the server still runs: once it stops, the gateway drops its tools (not ready)
        async with host.agent() as agent:
            listed = (await agent.list_tools()).tools
    assert len(final["tools"]) == 21
    assert final["quarantined"] == []
    assert final["errors"]["tools"] is None
    for answer in answers:
        assert answer["quarantined"] == []
        assert len(answer["tools"]) == 21
    assert len([t for t in listed if t.name.startswith("mcp__busy__")]) == 21


async def test_two_runtime_refreshes_of_a_stdio_server_started_together_keep_every_tool(host: Host) -> None:
    """Item 5, as filed: `ConnectionManager.refresh(id, ("tools",))` twice at once on a plain stdio server."""
    tools = [GOOD, *({"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(10))]
    await host.ready(quirky_body("stdio", {"tools": tools}))
    manager = host.center._manager  # pyright: ignore[reportPrivateUsage] - the runtime behind the API
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(manager.refresh, "stdio", ("tools",))
        tg.start_soon(host.catalog, "stdio", True)
    catalog = await host.catalog("stdio")
    assert [t["name"] for t in catalog["tools"]] == [t["name"] for t in tools]
    assert catalog["quarantined"] == []
    assert catalog["generation"]["tools"] >= 2
    status = (await host.admin.get(f"{SERVERS}/stdio")).json()["status"]
    assert status["tool_count"] == len(tools)
    async with host.agent() as agent:
        listed = (await agent.list_tools()).tools
    assert len([t for t in listed if t.name.startswith("mcp__stdio__")]) == len(tools)


async def test_a_list_changed_refresh_beside_manual_refreshes_keeps_every_tool(host: Host) -> None:
    """Item 5: `notifications/tools/list_changed` arriving while `?refresh=true` reads run."""
    tools = [ECHO_TOOL, *({"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(10))]
    fake = FakeStreamableServer(tools=tools)
    async with serve_fake(fake) as url:
        await host.ready(remote_body("pushy", url))
        with anyio.fail_after(10):
            await fake.wait_until(lambda: fake.open_streams > 0)
        before = len(fake.posts("tools/list"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.catalog, "pushy", True)
            await fake.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            tg.start_soon(host.catalog, "pushy", True)
        with anyio.fail_after(10):
            await fake.wait_until(lambda: len(fake.posts("tools/list")) >= before + 3)
        catalog = await host.catalog("pushy")
    assert len(catalog["tools"]) == len(tools)
    assert catalog["quarantined"] == []


BIG = {"name": "big", "inputSchema": {"type": "object"}}


async def test_a_huge_result_is_cut_while_it_streams_and_comes_back_marked(host: Host) -> None:
    """Item 2: a 24 MiB stdio line and a 24 MiB HTTP answer (JSON and SSE) end as a result within
    max_result_bytes, marked both as cut while read and as truncated; the session goes on. The memory
    this costs is measured by `scripts/memcheck`, not here."""
    await host.ready(
        quirky_body("bigstdio", {"tools": [BIG], "calls": {"big": {"big": True}}}, tool_policies={"big": "allow"})
    )
    targets = ["bigstdio"]
    fakes: list[FakeStreamableServer] = []

    async def big(fake: FakeStreamableServer, message: dict[str, Any]) -> Any:
        size = int(message["params"]["arguments"]["text_bytes"])
        return await fake.reply(message, {"content": [{"type": "text", "text": "x" * size}]})

    async with (
        serve_fake(json_fake := FakeStreamableServer(tools=[BIG], handlers={"tools/call": big})) as json_url,
        serve_fake(
            sse_fake := FakeStreamableServer(tools=[BIG], handlers={"tools/call": big}, response_mode="sse")
        ) as sse_url,
    ):
        fakes += [json_fake, sse_fake]
        for server_id, url in (("bigjson", json_url), ("bigsse", sse_url)):
            # 256 KiB results: the agent's SDK client refuses SSE events over 1 MiB (its default)
            await host.ready(remote_body(server_id, url, tool_policies={"big": "allow"}, max_result_bytes=262144))
            targets.append(server_id)
        for server_id in targets:
            with anyio.fail_after(60):
                called = await host.call(server_id, "big", {"text_bytes": 24 * 1024 * 1024})
            assert called.status_code == 200, called.text
            body = called.json()
            assert body["_meta"]["mcp-center/clipped"]["string_bytes_not_read"] > 20 * 1024 * 1024
            assert body["_meta"]["mcp-center/truncated"]["original_bytes"] > 24 * 1024 * 1024
            assert len(json.dumps(body)) < 1024 * 1024 + 4096  # max_result_bytes (1 MiB, or 256 KiB)
            small = await host.call(server_id, "big", {"text_bytes": 10})
            assert text_of(small.json()) == "x" * 10
        async with host.agent() as agent:
            with anyio.fail_after(60):
                result = await agent.call_tool("mcp__bigsse__big", {"text_bytes": 24 * 1024 * 1024})
    assert "truncated by mcp-center" in text_of(result)
    assert (result.meta or {})["mcp-center/clipped"]["strings_cut"] == 1


async def test_a_catalog_page_beyond_an_answers_read_cap_is_read_whole(host: Host, tmp_path: Path) -> None:
    """Item 2: catalog pages have their own, larger cap (`clip.LIST_LIMITS`): 7,000 tools in one page
    (over 75,000 JSON tokens) are all listed, over stdio and over HTTP."""
    tools = [{"name": f"t{n}", "description": f"tool {n}", "inputSchema": {"type": "object"}} for n in range(7000)]
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"tools": tools}))
    body = {**quirky_body("many", {}), "args": [QUIRKY, str(scenario)]}
    await host.ready(body)
    fake = FakeStreamableServer(tools=tools)
    async with serve_fake(fake) as url:
        await host.ready(remote_body("manyhttp", url))
        for server_id in ("many", "manyhttp"):
            catalog = await host.catalog(server_id)
            assert len(catalog["tools"]) == 7000
            assert catalog["quarantined"] == []
