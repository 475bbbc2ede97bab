"""Run the capability MCP server (`tests/servers/capabilities.py`) over Streamable HTTP on 127.0.0.1 until
killed; the first line of stdout is its port (picked by the OS, `tests/servers/loopback_run.py`)."""

from __future__ import annotations

from tests.servers.capabilities import Upstream, make_capability_server
from tests.servers.loopback_run import run_on_os_port

if __name__ == "__main__":
    run_on_os_port(make_capability_server(Upstream(), "capabilities").streamable_http_app())
