"""Run an ASGI app on 127.0.0.1 on a port the OS picks, and say which: for the test servers' `run_*` scripts.

The socket is bound to port 0 here, before anything else, and its number is printed as the first line
of stdout; uvicorn then listens on that very socket. A test reads the line and waits until the port
accepts connections (`tests/support/mcp_servers.py`). Nothing picks a "free" port and binds it later,
so test processes running side by side (pytest-xdist workers, issue 16) can never race for one.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from starlette.types import ASGIApp

__all__ = ["run_on_os_port"]


def run_on_os_port(app: ASGIApp) -> None:
    """Bind 127.0.0.1:0, print the port on stdout (one line), serve `app` on it until killed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sys.stdout.write(f"{sock.getsockname()[1]}\n")
    sys.stdout.flush()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
