"""Loopback ports for tests: a free one, waiting until one listens, and one that refuses connections."""

from __future__ import annotations

import socket
import time
from collections.abc import Generator
from contextlib import contextmanager

from tests.support.processes import Process

__all__ = ["closed_port_url", "free_port", "wait_for_port"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float, proc: Process | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


@contextmanager
def closed_port_url() -> Generator[str]:
    """A loopback URL whose port is bound but not listening: connecting is refused (no race)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        sock.close()
