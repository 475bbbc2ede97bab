"""MCP servers in their own processes for tests: our echo and capability servers over Streamable
HTTP, and the npm `server-everything` (installed in `tests/e2e/node` by `scripts/bootstrap --dev`).

Everything binds 127.0.0.1 (a Node preload script keeps servers that listen on all interfaces on
loopback) and is stopped by the context that started it. PyPI servers run through `uvx` from the venv.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from tests.support.ports import wait_for_port
from tests.support.processes import Process, stop_process
from tests.support.waiting import eventually_sync
from tests.support.zygote import fork_enabled, zygote

__all__ = ["EVERYTHING", "MCP_SERVER_TIME", "NODE_DIR", "node_server", "running_echo_http"]

REPO = Path(__file__).parents[2]
NODE_DIR = REPO / "tests" / "e2e" / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK_PRELOAD = NODE_DIR / "loopback-only.cjs"
MCP_SERVER_TIME = "mcp-server-time==2026.10.19"


@contextmanager
def running_echo_http(module: str = "tests.servers.run_http_echo") -> Generator[str]:
    """The echo MCP server (`tests/servers/http_echo.py`) over Streamable HTTP on loopback; yields its /mcp URL.

    `module` runs another server the same way (`tests.servers.run_capabilities`). The server binds a
    port the OS picks and prints it first thing (`tests/servers/loopback_run.py`), so servers started
    by tests running side by side never race for a port. It is forked by this process's fork server
    (`tests/support/zygote.py`), or started as `python -m MODULE` with `MCP_CENTER_TEST_FORK=0`.
    """
    argv = [sys.executable, "-m", module]
    read_fd, write_fd = os.pipe()
    try:
        if fork_enabled():  # the fork server has imported what these servers import (the SDK)
            proc: Process = zygote().spawn(
                argv, env=os.environ, cwd=REPO, entry=f"module:{module}", stdout=write_fd, stderr=subprocess.DEVNULL
            )
        else:
            proc = subprocess.Popen(argv, cwd=REPO, stdout=write_fd, stderr=subprocess.DEVNULL)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    with open(read_fd, "rb") as announced:
        try:
            port = _announced_port(proc, announced, timeout_s=30)
            wait_for_port(port, 30, proc)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop_process(proc, timeout_s=10)


def _announced_port(proc: Process, announced: IO[bytes], timeout_s: float) -> int:
    """The port a `tests/servers/run_*` process prints as its first line of stdout.

    Raises:
        RuntimeError: it exited, or printed something else, or nothing within `timeout_s` seconds.
    """
    ready, _, _ = select.select([announced], [], [], timeout_s)
    line = announced.readline() if ready else b""
    if not line.strip().isdigit():
        raise RuntimeError(f"{proc!r} announced no port within {timeout_s} s (exit code {proc.poll()}): {line!r}")
    return int(line)


@contextmanager
def node_server(mode: str) -> Generator[str]:
    """server-everything in `mode` (`streamableHttp`, `sse`) on a loopback port; yields its base URL.

    It starts with PORT=0 (the OS picks) and the loopback preload writes the port it bound to a file
    (`tests/e2e/node/loopback-only.cjs`), so servers started side by side never race for a port.
    """
    if not EVERYTHING.exists():
        pytest.fail("the npm test servers are missing: run scripts/bootstrap --dev")
    with tempfile.TemporaryDirectory(prefix="mcp-center-node-") as scratch:
        port_file = Path(scratch) / "port"
        env = {**os.environ, "PORT": "0", "MCP_CENTER_TEST_PORT_FILE": str(port_file)}
        proc = subprocess.Popen(
            ["node", "--require", str(LOOPBACK_PRELOAD), str(EVERYTHING), mode],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = int(eventually_sync(lambda: _port_in(port_file, proc), timeout_s=30))
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


def _port_in(port_file: Path, proc: subprocess.Popen[bytes]) -> str:
    """The port written to `port_file` ("" while there is none yet).

    Raises:
        RuntimeError: the process exited before writing it.
    """
    if port_file.exists():
        return port_file.read_text().strip()
    if proc.poll() is not None:
        raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before it listened")
    return ""
