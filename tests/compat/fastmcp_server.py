"""A FastMCP server of our own for the compatibility matrix (R-11.3): a tool, a prompt and a resource.

Run with the `fastmcp` package from PyPI (not mcp-center's SDK), over Streamable HTTP or legacy SSE:
`uvx --from fastmcp==X python tests/compat/fastmcp_server.py {http|sse} PORT`. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import sys

# fastmcp is not installed in our venv (uvx brings it), so pyright knows neither the module nor FastMCP.
from fastmcp import FastMCP  # pyright: ignore[reportMissingImports, reportUnknownVariableType]

mcp = FastMCP("compat-fastmcp")  # pyright: ignore[reportUnknownVariableType]


@mcp.tool  # pyright: ignore[reportUntypedFunctionDecorator, reportUnknownMemberType]
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.prompt  # pyright: ignore[reportUntypedFunctionDecorator, reportUnknownMemberType]
def review(topic: str) -> str:
    """Ask for a short review of `topic`."""
    return f"Review {topic} in two sentences."


@mcp.resource("compat://greeting")  # pyright: ignore[reportUntypedFunctionDecorator, reportUnknownMemberType]
def greeting() -> str:
    """A fixed greeting."""
    return "hello from fastmcp"


if __name__ == "__main__":
    transport, port = sys.argv[1], int(sys.argv[2])
    mcp.run(transport=transport, host="127.0.0.1", port=port, show_banner=False)  # pyright: ignore[reportUnknownMemberType]
