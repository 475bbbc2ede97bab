"""Run the ledger MCP server over Streamable HTTP on 127.0.0.1 until killed; the first line of stdout is its
port (`tests/servers/loopback_run.py`).

Tools: `pay(note)` appends `{"note": note, "session": <the caller's Mcp-Session-Id>}` to the ledger
in this process's memory, then works for 20 s (long enough for a test to kill the host instance
running it, never waited for to the end); `ledger()` returns the ledger (a JSON array); `session()` returns the
caller's Mcp-Session-Id (which host instance's connection a ledger line came from). One process
serves every instance of a cluster, so the ledger counts the runs of `pay` across them (R-10.2).
"""

from __future__ import annotations

import json

import anyio
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request

from tests.servers.loopback_run import run_on_os_port

PAY_SECONDS = 20.0
"""How long `pay` works after writing its line."""

_ledger: list[dict[str, str]] = []


def _session(ctx: Context) -> str:
    request = ctx.request_context.request
    return request.headers.get("mcp-session-id", "") if isinstance(request, Request) else ""


def make_ledger_server() -> MCPServer:
    """The server with `pay`, `ledger` and `session`."""
    server = MCPServer("ledger", version="1.0.0")

    @server.tool()
    async def pay(note: str, ctx: Context) -> str:
        """Write one ledger line for `note`, then work for `PAY_SECONDS` seconds."""
        _ledger.append({"note": note, "session": _session(ctx)})
        await anyio.sleep(PAY_SECONDS)
        return f"paid {note}"

    @server.tool()
    def ledger() -> str:
        """Every line `pay` wrote, oldest first, as a JSON array."""
        return json.dumps(_ledger)

    @server.tool()
    def session(ctx: Context) -> str:
        """The caller's Mcp-Session-Id."""
        return _session(ctx)

    return server


if __name__ == "__main__":
    run_on_os_port(make_ledger_server().streamable_http_app())
