"""A real `mcp-center serve` process for a test: start it on a loopback port the OS picks, wait until it
has started, talk to it with an admin client, stop it gracefully and check its log.

Every serve binds 127.0.0.1 and is stopped by the context that started it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from tests.support.loopback import NO_TLS
from tests.support.processes import Process, stop_process
from tests.support.wire import object_or_empty
from tests.support.zygote import fork_enabled, zygote

__all__ = [
    "ADMIN_TOKEN",
    "VENV_BIN",
    "Host",
    "running_host",
    "serve_env",
    "serve_record",
    "serving",
    "spawn_serve",
    "wait_until_serving",
]

VENV_BIN = Path(sys.executable).parent
ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef"
"""The admin token every test serve runs with (MCP_CENTER_ADMIN_TOKEN)."""


def serve_record(data_dir: Path) -> dict[str, Any]:
    """`<data dir>/serve.json` as written by the serve that owns it, or {} when there is none."""
    try:
        record: object = json.loads((data_dir / "serve.json").read_text())
    except (OSError, ValueError):
        return {}
    return object_or_empty(record)


def wait_until_serving(data_dir: Path, timeout_s: float, proc: Process) -> str:
    """Wait until `serve` has started: its record in `<data dir>/serve.json` names this process and
    its URL (the URL is announced once startup is done; it listens earlier, so an open port alone
    does not mean ready). Returns where this machine reaches it (no trailing slash): the listen
    address (`local_url`, the real port when serve was started with `--port 0`), else `url`.

    Raises:
        RuntimeError: serve exited first. TimeoutError: no record within `timeout_s` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode} before it started")
        record = serve_record(data_dir)
        if record.get("pid") == proc.pid and record.get("url"):
            return str(record.get("local_url") or record["url"]).rstrip("/")
        time.sleep(0.05)
    raise TimeoutError(f"serve did not start within {timeout_s} s")


@dataclass
class Host:
    """A running `mcp-center serve` and an API client for it."""

    url: str
    proc: Process
    client: httpx2.Client
    data_dir: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def serve_env() -> dict[str, str]:
    """The environment `serve` and the CLI run with in tests: no MCP_CENTER_* of ours, a known admin token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(MCP_CENTER_ADMIN_TOKEN=ADMIN_TOKEN, PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def spawn_serve(
    data_dir: Path, port: int, log_path: Path, extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> Process:
    """Start `mcp-center serve --data-dir DATA --port PORT [EXTRA_ARGS]`, stdout and stderr into
    `log_path`, with `serve_env()` plus `env`; not waited for.

    It is forked by this process's fork server (`tests/support/zygote.py`: the host imported once),
    or, with `MCP_CENTER_TEST_FORK=0`, started as the console script in a new interpreter.
    """
    argv = [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", str(port), *extra_args]
    with log_path.open("ab") as log:
        if fork_enabled():
            return zygote().spawn(argv, env={**serve_env(), **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**serve_env(), **(env or {})})


@contextmanager
def running_host(
    tmp_path: Path, port: int | None = None, extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> Generator[Host]:
    """Run `mcp-center serve` on a loopback port the OS picks (`--port 0`: serve binds first and records
    its URL in serve.json), or on `port` when given, with a known admin token; stop it on exit. No port
    is picked here and bound later, so serves started by tests side by side (pytest-xdist workers)
    never race for one. `extra_args` are more `serve` options, `env` more variables.

    `Host.url` is where this machine reaches it: the listen address (serve.json's `local_url`),
    also when `--public-url` is among `extra_args`."""
    data_dir = tmp_path / "data"
    log_path = tmp_path / "serve.log"
    proc = spawn_serve(data_dir, 0 if port is None else port, log_path, extra_args, env)
    with serving(proc, data_dir, log_path) as host:
        yield host


@contextmanager
def serving(proc: Process, data_dir: Path, log_path: Path) -> Generator[Host]:
    """The serve `proc` (from `spawn_serve` with `data_dir` and `log_path`) once it has started, with an
    admin client; on exit it is stopped gracefully and its log checked, as `running_host` does (which
    spawns and enters it at once; a serve can also be spawned ahead of the test that enters it).

    Raises:
        RuntimeError, TimeoutError: the serve did not start (`wait_until_serving`).
        AssertionError: its log has a logging error, or no graceful shutdown.
    """
    try:
        url = wait_until_serving(data_dir, 60, proc)
        with httpx2.Client(
            verify=NO_TLS, base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=180
        ) as client:
            yield Host(url, proc, client, data_dir, log_path)
    finally:
        stop_process(proc)
    log_text = log_path.read_text(errors="replace")
    assert "--- Logging error ---" not in log_text, log_text[-3000:]
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal (exit -15).
    assert "Application shutdown complete" in log_text, log_text[-3000:]
