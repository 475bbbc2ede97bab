"""What a library caller gets back from calls, prompts, resources and cards: typed objects with
attributes and `Literal` values, whose `to_dict()` is the JSON the REST API sends (issue 16)."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from mcp_center.service import McpCenter, ToolCallResult
from tests.support.capabilities import capability_server, ready, remote

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

        failed = await center.call_tool("caps", "echo", {})  # the server refuses: a tool error, not an exception
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
