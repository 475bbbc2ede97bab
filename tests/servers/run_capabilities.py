"""Run the capability MCP server (`tests/servers/capabilities.py`) over Streamable HTTP on 127.0.0.1:<argv[1]>."""

from __future__ import annotations

import sys

import uvicorn

from tests.servers.capabilities import Upstream, make_capability_server

if __name__ == "__main__":
    app = make_capability_server(Upstream(), "capabilities").streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
