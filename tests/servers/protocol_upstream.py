"""A real SDK server (low level) for the gateway's protocol-fidelity tests (R-8.1, R-8.4, R-8.5).

Tools: `add(a, b)`; `fail()` answers a JSON-RPC error (-32042, with `data`); `sample(prompt)` asks
the client for `sampling/createMessage`; `roots()` asks the client for `roots/list`; `hold()` reports
progress 0 (when asked for progress), then runs until it is cancelled and says so on `HOLD`
(in-process servers only); `region(region)` declares its
argument as the `Mcp-Param-Region` header (`x-mcp-header`). Resource
templates with optional parts (`events://list{?topic,limit}`, `users://{id}/profile{#section}`),
one resource (`notes://readme`); reading any URI returns `read <uri>`. One prompt, `greet(name)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

FAIL_CODE = -32042
TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    ),
    types.Tool(name="fail", description="Answer a JSON-RPC error.", input_schema={"type": "object"}),
    types.Tool(
        name="sample",
        description="Ask the client's model.",
        input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ),
    types.Tool(name="roots", description="Ask the client's roots.", input_schema={"type": "object"}),
    types.Tool(name="hold", description="Run until cancelled.", input_schema={"type": "object"}),
    types.Tool(
        name="region",
        description="Say the region (its argument is mirrored as the Mcp-Param-Region header, 2026-07-28).",
        input_schema={"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
    ),
]


@dataclass
class Hold:
    """What the `hold` tool did: it started; it was cancelled (events of the test's event loop)."""

    started: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)


HOLD: list[Hold] = []
"""A test appends one `Hold` before calling `hold`; the tool reports on the last one."""
TEMPLATES = [
    types.ResourceTemplate(name="events", uri_template="events://list{?topic,limit}"),
    types.ResourceTemplate(name="profile", uri_template="users://{id}/profile{#section}"),
]
RESOURCES = [types.Resource(name="readme", uri="notes://readme")]
PROMPTS = [types.Prompt(name="greet", arguments=[types.PromptArgument(name="name", required=False)])]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def _call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "add":
        return _text(str(int(arguments["a"]) + int(arguments["b"])))
    if params.name == "fail":
        raise MCPError(code=FAIL_CODE, message="the planted failure", data={"why": "planted"})
    if params.name == "sample":
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=arguments["prompt"]))
        result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated] - a 2025-11-25 session
            [message], max_tokens=50, related_request_id=ctx.request_id
        )
        content = result.content
        return _text(f"model said: {content.text if isinstance(content, types.TextContent) else content}")
    if params.name == "roots":
        roots = await ctx.session.list_roots()  # pyright: ignore[reportDeprecated]
        return _text("roots: " + ",".join(str(root.uri) for root in roots.roots))
    if params.name == "region":
        return _text(f"region {arguments.get('region')}")
    if params.name == "hold" and HOLD:
        await ctx.session.report_progress(0, None, "holding")  # a no-op unless the caller asked for progress
        HOLD[-1].started.set()
        try:
            await anyio.sleep_forever()
        finally:
            HOLD[-1].cancelled.set()
    raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name}")


async def _list_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)


async def _list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def _list_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def _get_prompt(
    ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    if params.name != "greet":
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name}")
    who = (params.arguments or {}).get("name", "you")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"hello {who}"))
    return types.GetPromptResult(messages=[message])


async def _read(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"read {uri}")])


def make_protocol_server() -> Server[Any]:
    """Build the server (serve it with `.streamable_http_app()`)."""
    return Server(
        "protocol",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        on_list_resources=_list_resources,
        on_list_resource_templates=_list_templates,
        on_read_resource=_read,
        on_list_prompts=_list_prompts,
        on_get_prompt=_get_prompt,
    )
