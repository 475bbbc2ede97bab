"""End-to-end fixtures: a real `mcp-center serve` process and real MCP servers from npm and PyPI.

Everything binds 127.0.0.1 and is stopped by its fixture. The npm servers come from
`tests/e2e/node` (installed by `scripts/bootstrap --dev`); a Node preload script keeps servers
that listen on all interfaces on loopback. PyPI servers run through `uvx` from the venv.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.processes import descendants

E2E_DIR = Path(__file__).parent
NODE_DIR = E2E_DIR / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK_PRELOAD = NODE_DIR / "loopback-only.cjs"
VENV_BIN = Path(sys.executable).parent
ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef"
MCP_SERVER_TIME = "mcp-server-time==2026.10.19"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def serve_record(data_dir: Path) -> dict[str, Any]:
    """`<data dir>/serve.json` as written by the serve that owns it, or {} when there is none."""
    try:
        record = json.loads((data_dir / "serve.json").read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def wait_until_serving(data_dir: Path, timeout_s: float, proc: subprocess.Popen[bytes]) -> None:
    """Wait until `serve` has started: its record in `<data dir>/serve.json` names this process and
    its URL (the URL is announced once startup is done; it listens earlier, so an open port alone
    does not mean ready)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode} before it started")
        record = serve_record(data_dir)
        if record.get("pid") == proc.pid and record.get("url"):
            return
        time.sleep(0.05)
    raise TimeoutError(f"serve did not start within {timeout_s} s")


def wait_no_descendants(pid: int, timeout_s: float = 15.0) -> set[int]:
    """Wait until `pid` has no live descendants; return what is left after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    left = descendants(pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = descendants(pid)
    return left


@dataclass
class Host:
    """A running `mcp-center serve` and an API client for it."""

    url: str
    proc: subprocess.Popen[bytes]
    client: httpx2.Client
    data_dir: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    """SIGTERM (a graceful stop), then SIGKILL after `timeout_s` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def serve_env() -> dict[str, str]:
    """The environment `serve` and the CLI run with in tests: no MCP_CENTER_* of ours, a known admin token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(MCP_CENTER_ADMIN_TOKEN=ADMIN_TOKEN, PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def spawn_serve(data_dir: Path, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Start `mcp-center serve --data-dir DATA --port PORT`, stdout and stderr into `log_path`; not waited for."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=serve_env(),
        )


@contextmanager
def running_host(tmp_path: Path) -> Generator[Host]:
    """Run `mcp-center serve` on a free loopback port with a known admin token; stop it on exit."""
    port = free_port()
    data_dir = tmp_path / "data"
    log_path = tmp_path / "serve.log"
    proc = spawn_serve(data_dir, port, log_path)
    try:
        wait_until_serving(data_dir, 60, proc)
        url = f"http://127.0.0.1:{port}"
        with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=180) as client:
            yield Host(url, proc, client, data_dir, log_path)
    finally:
        stop_process(proc)
    log_text = log_path.read_text(errors="replace")
    assert "--- Logging error ---" not in log_text, log_text[-3000:]
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal (exit -15).
    assert "Application shutdown complete" in log_text, log_text[-3000:]


@contextmanager
def running_echo_http(module: str = "tests.servers.run_http_echo") -> Generator[str]:
    """The echo MCP server (`tests/servers/http_echo.py`) over Streamable HTTP on loopback; yields its /mcp URL.

    `module` runs another server the same way (`tests.servers.run_capabilities`).
    """
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, str(port)],
        cwd=E2E_DIR.parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 30, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc, timeout_s=10)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """`mcp-center serve` on a free loopback port with a known admin token."""
    with running_host(tmp_path) as running:
        yield running


def _node_server(mode: str) -> Generator[str]:
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


@pytest.fixture
def everything_http() -> Iterator[str]:
    """server-everything in Streamable HTTP mode; yields its base URL (endpoint at /mcp)."""
    yield from _node_server("streamableHttp")


@pytest.fixture
def everything_sse() -> Iterator[str]:
    """server-everything in legacy SSE mode; yields its base URL (endpoint at /sse)."""
    yield from _node_server("sse")
