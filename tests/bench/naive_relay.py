"""The naive relay peer of the gateway benchmark (`scripts/bench --peers`): the SDK's low-level
server in front of 4 pooled SDK client sessions to one upstream, nothing else (no policy, no names).

Usage: `python -m tests.bench.naive_relay --upstream URL --port N` (loopback only).
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import mcp_types as types
import uvicorn
from mcp.client import Client
from mcp.server import Server
from mcp.server.context import ServerRequestContext

POOL = 4


def build(upstream: str) -> Any:
    """The relay's ASGI app: each request goes to the next of `POOL` upstream sessions."""
    clients: list[Client] = []
    turn = itertools.count()

    def next_client() -> Client:
        return clients[next(turn) % len(clients)]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await next_client().list_tools(cursor=params.cursor if params else None)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await next_client().call_tool(params.name, params.arguments or {})

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncGenerator[dict[str, Any]]:
        async with AsyncExitStack() as stack:
            clients.extend(
                [await stack.enter_async_context(Client(upstream, mode="legacy", cache=None)) for _ in range(POOL)]
            )
            yield {}

    server: Server[Any] = Server("naive-relay", on_list_tools=list_tools, on_call_tool=call_tool, lifespan=lifespan)
    return server.streamable_http_app()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.upstream), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
