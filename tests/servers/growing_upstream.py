"""A real SDK server (low level) whose tool list grows on request, for the gateway's list-change
tests (R-8.1, R-3.7).

Tools: `grow()` adds the tool `grown_<n>` (n = 1, 2, ...) and announces it with
`notifications/tools/list_changed` to the calling (2025-11-25) session, as a server whose
tools change at run time does; `touch()` announces `notifications/resources/updated` for
`LIVE` (its one resource) to the sessions subscribed to it, as a server honouring
subscriptions does (a session that never subscribed, or whose subscription was lost with its
session, hears nothing). Each `make_growing_server()` keeps its own list and subscribers.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

__all__ = ["LIVE", "make_growing_server"]

OBJECT: dict[str, Any] = {"type": "object"}
LIVE = "notes://live"


def _session_key(ctx: ServerRequestContext[Any, Any]) -> object:
    """What identifies the client session behind a request: the SDK's `ctx.session` is a view per
    request, its connection is the session's own (as mcp-center's gateway tells sessions apart)."""
    return getattr(ctx.session, "_connection", None) or ctx.session


def make_growing_server() -> Server[Any]:
    """Build the server (serve it with `.streamable_http_app()`); it starts with `grow` only."""
    tools = [
        types.Tool(name="grow", description="Add a tool and announce it.", input_schema=OBJECT),
        types.Tool(name="touch", description="Announce that the live note changed.", input_schema=OBJECT),
    ]
    subscribers: dict[object, Any] = {}
    """The sessions subscribed to `LIVE` (`_session_key` → the `ctx.session` to notify it through)."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "grow":
            name = f"grown_{len(tools)}"
            tools.append(types.Tool(name=name, description="Added at run time.", input_schema=OBJECT))
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(type="text", text=name)])
        if params.name == "touch":
            told = 0
            for key, session in list(subscribers.items()):
                try:
                    await session.send_resource_updated(LIVE)
                    told += 1
                except Exception:  # noqa: BLE001 - a session that went away is forgotten
                    del subscribers[key]
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"touched ({told} told)")])
        if any(tool.name == params.name for tool in tools):
            return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name}")

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(name="live", uri=LIVE)])

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text="live")])

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        if str(params.uri) == LIVE:
            subscribers[_session_key(ctx)] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) == LIVE:
            subscribers.pop(_session_key(ctx), None)
        return types.EmptyResult()

    return Server(
        "growing",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
    )
