"""Run the echo MCP server over Streamable HTTP on 127.0.0.1 until killed; the first line of stdout is its
port (picked by the OS, `tests/servers/loopback_run.py`)."""

from __future__ import annotations

from tests.servers.http_echo import streamable_app
from tests.servers.loopback_run import run_on_os_port

if __name__ == "__main__":
    run_on_os_port(streamable_app())
