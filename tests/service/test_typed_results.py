"""What a library caller gets back from calls, prompts, resources and cards: typed objects with
attributes and `Literal` values, whose `to_dict()` is the JSON the REST API sends (issue 16)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_center.registry import PromptEntry, ResourceEntry
from mcp_center.runtime import ActivityEntry
from mcp_center.service import (
    InteractionAnswer,
    InteractionCard,
    McpCenter,
    PromptBlock,
    PromptMessageKind,
    ResourceBlock,
    ResourceSearch,
    ToolCallResult,
)
from mcp_center.service.forms import FormField
from mcp_center.store import CallRef
from tests.servers.rich_upstream import make_rich_server
from tests.support.capabilities import capability_server, ready, remote, while_waiting
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


async def test_a_user_call_answers_a_tool_call_result_with_the_sdks_typed_blocks(center: McpCenter) -> None:
    async with capability_server() as (url, _upstream):
        await ready(center, remote("caps", url))
        result = await center.call_tool("caps", "echo", {"text": "typed"})
        assert isinstance(result, ToolCallResult)
        [block] = result.content
        assert isinstance(block, types.TextContent) and block.text == "typed"
        assert result.text == "typed" and result.is_error is False
        assert result.structured_content == {"result": "typed"}
        assert result.to_dict() == {
            "content": [{"type": "text", "text": "typed"}],
            "structuredContent": {"result": "typed"},
            "isError": False,
            "resultType": "complete",
        }

        failed = await center.call_tool("caps", "echo", {"text": ["x"]})  # the server refuses: a tool error
        assert failed.is_error is True and failed.structured_content is None
        assert "text" in failed.text and failed.to_dict()["isError"] is True


async def test_an_agent_call_answers_a_tool_call_result_after_its_approval(center: McpCenter) -> None:
    async with capability_server() as (url, _upstream):
        await ready(center, remote("caps", url))
        answers: list[ToolCallResult] = []

        async def call() -> None:
            answers.append(await center.call_agent_tool("mcp__caps__record", {"note": "typed"}))

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                approval = await center.wait_for_approval(tool="record", timeout_s=10)
                await center.decide_approval(approval.id, "approve")
        [answer] = answers
        assert answer.text == "recorded typed" and not answer.is_error


async def test_prompts_and_resources_answer_typed_entries_and_untrusted_blocks(center: McpCenter) -> None:
    async with capability_server() as (url, _upstream):
        await ready(center, remote("caps", url))
        [greet] = [p for p in await center.list_prompts() if p.name == "caps:greet"]
        assert isinstance(greet, PromptEntry) and greet.server_id == "caps" and greet.prompt.name == "greet"
        assert [(a.name, a.required) for a in greet.arguments] == [("name", True)]

        prompt = await center.get_prompt(greet.name, {"name": "Ada"})
        assert isinstance(prompt, PromptBlock) and prompt.name == "caps:greet"
        assert prompt.messages == (PromptMessageKind(role="user", kind="text"),)
        assert prompt.block.truncated is False and "Please greet Ada warmly." in prompt.text
        assert prompt.text.startswith("[mcp-center] Untrusted content: prompt ")

        search = await center.search_resources("item")
        assert isinstance(search, ResourceSearch) and search.query == "item"
        [template] = search.resources
        assert isinstance(template, ResourceEntry) and template.kind == "template"
        assert isinstance(template.item, types.ResourceTemplate) and template.mention == "@caps:test://items/{item_id}"

        read = await center.read_resource("caps", "test://items/7")
        assert isinstance(read, ResourceBlock) and read.provenance.uri == "test://items/7"
        [item] = read.contents
        assert item.kind == "text" and item.size_bytes == len(b"item 7")
        assert "item 7" in read.text and read.block.included_bytes == item.size_bytes


async def test_a_card_is_an_interaction_card_with_literal_states_and_typed_fields(center: McpCenter) -> None:
    async with capability_server() as (url, _upstream):
        await ready(center, remote("caps", url))
        seen: list[InteractionCard] = []

        async def answer(event: dict[str, Any]) -> None:
            card = await center.get_interaction(event["id"])
            seen.append(card)
            answered = await center.answer_interaction(card.id, "decline")
            assert isinstance(answered, InteractionAnswer) and answered.result is None
            assert answered.interaction.state == "declined" and answered.interaction.actions == ()
            assert answered.to_dict() == {"interaction": answered.interaction.to_dict()}

        [result] = await while_waiting(
            center, lambda: center.call_tool("caps", "ask", {"question": "Who?"}), "interaction", answer
        )
        assert isinstance(result, ToolCallResult) and result.text == "decline: None"
        [pending] = seen
        assert isinstance(pending, InteractionCard)
        assert (pending.kind, pending.mode, pending.state) == ("elicitation", "form", "pending")
        assert pending.actions == ("accept", "decline", "cancel") and pending.message == "Who?"
        assert all(isinstance(f, FormField) for f in pending.fields)
        assert {f.name for f in pending.fields} >= {"name", "password"}
        assert isinstance(pending.calls[0], CallRef) and pending.calls[0].caller == "user"
        assert pending.created_at.tzinfo is not None and pending.closed_at is None
        [closed] = await center.list_interactions(state="declined")
        assert closed.id == pending.id and closed.closed_at is not None
        assert closed.to_dict()["closed_at"] == closed.closed_at.isoformat()


async def test_the_debuggers_activity_is_typed_entries(center: McpCenter) -> None:
    async with serve_loopback(make_rich_server().streamable_http_app()) as base:
        await ready(center, remote("rich", f"{base}/mcp"))
        with anyio.fail_after(15):
            await center.call_tool("rich", "count", {"n": 2}, operation_id="op-count")
        entries = await center.debugger.activity("rich")
        progress = [e for e in entries if e.kind == "progress"]
        assert all(isinstance(e, ActivityEntry) for e in entries)
        assert [(e.operation_id, e.progress, e.total, e.message) for e in progress] == [
            ("op-count", 1, 2, "step 1"),
            ("op-count", 2, 2, "step 2"),
        ]
        assert (
            await center.debugger.activity("rich", after=progress[0].seq) == entries[entries.index(progress[0]) + 1 :]
        )
        assert progress[0].to_dict()["kind"] == "progress"
