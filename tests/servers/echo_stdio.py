"""A real SDK MCP server over stdio.

Tools: `echo(text)` returns `text`; `spawn_grandchild()` starts `sleep 300` inside the server's
process group and returns its pid (the process tree a close must not leak); `crash(code)` exits
the process in the middle of the call; `big(kib)` returns `kib` KiB of text.

Flags:
    --banner: print a non-protocol line on stdout before speaking MCP.
    --stderr-bytes N: write N bytes to stderr (lines of 1023 "e" plus a newline) before serving.
    --echo-fails: `echo` answers a tool error (`isError: true`, "echo refused: TEXT") instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import anyio
from mcp.server.mcpserver import MCPServer

BANNER = "echo server 1.0 starting (this line is not JSON-RPC)"

mcp = MCPServer("echo")
_grandchildren: list[subprocess.Popen[bytes]] = []
_echo_fails = False


@mcp.tool()
def echo(text: str) -> str:
    """Return `text` unchanged (or fail with a tool error under `--echo-fails`)."""
    if _echo_fails:
        raise ValueError(f"echo refused: {text}")
    return text


@mcp.tool()
def spawn_grandchild() -> int:
    """Start `sleep 300` in our process group and return its pid."""
    child = subprocess.Popen(
        ["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _grandchildren.append(child)
    return child.pid


@mcp.tool()
def crash(code: int) -> str:
    """Exit the whole process at once with `code` (the call never gets an answer)."""
    sys.stdout.flush()
    os._exit(code)


@mcp.tool()
def big(kib: int) -> str:
    """Return `kib` KiB of text, one character repeated: enough of it is more than a host keeps of a result."""
    return "x" * (kib * 1024)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--banner", action="store_true")
    parser.add_argument("--stderr-bytes", type=int, default=0)
    parser.add_argument("--echo-fails", action="store_true")
    args = parser.parse_args()
    global _echo_fails
    _echo_fails = args.echo_fails
    if args.banner:
        sys.stdout.write(BANNER + "\n")
        sys.stdout.flush()
    line = b"e" * 1023 + b"\n"
    for _ in range(args.stderr_bytes // len(line)):
        sys.stderr.buffer.write(line)
    sys.stderr.buffer.flush()
    anyio.run(mcp.run_stdio_async)
    # Stdin ended and every answer is written: leave without the interpreter's teardown, whose final
    # garbage collection of the SDK's and pydantic's objects took ~0.3 s of CPU (2-3 s under load)
    # that every close of this server waited for (issue 16). Nothing is left to flush or clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
