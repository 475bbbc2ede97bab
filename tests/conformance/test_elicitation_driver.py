"""The conformance driver itself, against a loopback stand-in for the harness's mock server.

The real check is `shared/conformance/run-client-suite --scenarios elicitation-sep1034-client-defaults`
(needs the npm harness); this keeps the driver working in the ordinary suite.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from tests.conformance.elicitation_driver import TOOL, run
from tests.service.test_forms import SEP1034
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


@pytest.fixture
async def mock_url() -> AsyncGenerator[tuple[str, list[dict[str, Any]]]]:
    answers: list[dict[str, Any]] = []
    server = MCPServer("elicitation-defaults-test-server")

    @server.tool(name=TOOL)
    async def defaults(ctx: Context) -> str:  # pyright: ignore[reportUnusedFunction]
        result = await ctx.request_context.session.elicit_form(
            "Please review and update the form fields with defaults", SEP1034, ctx.request_context.request_id
        )
        answers.append({"action": result.action, "content": result.content})
        return "ok"

    async with serve_loopback(server.streamable_http_app()) as base:
        yield f"{base}/mcp", answers


async def test_the_driver_accepts_the_card_with_every_default_typed(mock_url: tuple[str, list[dict[str, Any]]]) -> None:
    url, answers = mock_url
    result = await run(url)
    assert result["isError"] is False
    assert answers == [
        {
            "action": "accept",
            "content": {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True},
        }
    ]
    assert isinstance(answers[0]["content"]["age"], int)
