"""Run the echo MCP server over Streamable HTTP on 127.0.0.1:<port> (argv[1]) until killed."""

from __future__ import annotations

import sys

import uvicorn

from tests.servers.http_echo import streamable_app

if __name__ == "__main__":
    uvicorn.run(streamable_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
