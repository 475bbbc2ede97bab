"""A real SDK MCP server with every capability the gateway forwards (tests of R-8.1).

Tools: `add(a, b)`; `count(n)` reports progress n times; `ask(question)` asks the client a form
elicitation and returns the answer; `shout(text)` logs a message to the client. A prompt
`greet(name)`, a resource `demo://info` and a resource template `demo://item/{item_id}`.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel


class Answer(BaseModel):
    answer: str = "forty-two"


def make_rich_server(name: str = "rich") -> MCPServer:
    """Build the server."""
    server = MCPServer(name, version="2.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def count(n: int, ctx: Context) -> str:
        """Report progress `n` times, then answer."""
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i}")
        return f"counted to {n}"

    @server.tool()
    async def ask(question: str, ctx: Context) -> str:
        """Ask the client, return what it answered."""
        result = await ctx.elicit(question, schema=Answer)
        if result.action == "accept":
            return f"the answer is {result.data.answer}"
        return f"no answer ({result.action})"

    @server.tool()
    async def shout(text: str, ctx: Context) -> str:
        """Send a log message to the client."""
        # Deprecated in the 2026 protocol era; the gateway still forwards it for 2025-11-25 sessions.
        await ctx.session.send_log_message("warning", f"shouted: {text}", logger=None)  # pyright: ignore[reportDeprecated]
        return text.upper()

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."

    @server.resource("demo://info", mime_type="text/plain")
    def info() -> str:
        """A fixed resource."""
        return "the info"

    @server.resource("demo://item/{item_id}", mime_type="text/plain")
    def item(item_id: str) -> str:
        """A templated resource."""
        return f"item {item_id}"

    return server
