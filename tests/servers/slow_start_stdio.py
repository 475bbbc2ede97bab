"""A real SDK MCP server over stdio that takes its time to start, as a cold `uvx` or `npx` does.

Tools: `echo(text)` returns `text`.

Args:
    DELAY_FILE: A file holding the seconds to sleep before speaking MCP (a float); a missing file
        means no delay. A file, not an argument, so a test can make the server slow after it was
        trusted and tested without changing its configuration (and so its digest).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("slow-start")


@mcp.tool()
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


def main() -> None:
    delay = Path(sys.argv[1])
    if delay.exists():
        time.sleep(float(delay.read_text(encoding="utf-8")))  # the quirk under test: a slow start
    anyio.run(mcp.run_stdio_async)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
