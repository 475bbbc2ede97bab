"""MCP servers in their own processes for tests: our echo and capability servers over Streamable
HTTP, and the npm `server-everything` (installed in `tests/e2e/node` by `scripts/bootstrap --dev`).

Everything binds 127.0.0.1 (a Node preload script keeps servers that listen on all interfaces on
loopback) and is stopped by the context that started it. PyPI servers run through `uvx` from the venv.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.ports import free_port, wait_for_port
from tests.support.processes import stop_process

__all__ = ["EVERYTHING", "MCP_SERVER_TIME", "NODE_DIR", "node_server", "running_echo_http"]

REPO = Path(__file__).parents[2]
NODE_DIR = REPO / "tests" / "e2e" / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK_PRELOAD = NODE_DIR / "loopback-only.cjs"
MCP_SERVER_TIME = "mcp-server-time==2026.10.19"


@contextmanager
def running_echo_http(module: str = "tests.servers.run_http_echo") -> Generator[str]:
    """The echo MCP server (`tests/servers/http_echo.py`) over Streamable HTTP on loopback; yields its /mcp URL.

    `module` runs another server the same way (`tests.servers.run_capabilities`).
    """
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 30, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc, timeout_s=10)


@contextmanager
def node_server(mode: str) -> Generator[str]:
    """server-everything in `mode` (`streamableHttp`, `sse`) on a free loopback port; yields its base URL."""
    if not EVERYTHING.exists():
        pytest.fail("the npm test servers are missing: run scripts/bootstrap --dev")
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    proc = subprocess.Popen(
        ["node", "--require", str(LOOPBACK_PRELOAD), str(EVERYTHING), mode],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, 30, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
