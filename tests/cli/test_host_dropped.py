"""A serve that takes a request and closes the connection without answering is not "nothing
answers": the CLI must not redo the request in its own process (break39, R-9.2, R-7.3).

A loopback listener reads the request whole, then closes; a second one refuses (nothing listens).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_center.cli.host import HostClient
from mcp_center.config import Settings
from mcp_center.errors import ServerUnreachable

TOKEN = "admin-token-for-dropped-0123456789"


@pytest.fixture
def dropping_url() -> Iterator[str]:
    """A loopback HTTP listener that reads one request's head and closes without a byte of answer."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_one() -> None:
        connection, _ = listener.accept()
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received += chunk

    worker = threading.Thread(target=serve_one, daemon=True)
    worker.start()
    yield f"http://127.0.0.1:{port}"
    worker.join(timeout=10)
    listener.close()


def _settings(tmp_path: Path) -> Settings:
    return Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_ADMIN_TOKEN": TOKEN})


def test_a_connection_closed_before_the_answer_is_dropped_not_refused(tmp_path: Path, dropping_url: str) -> None:
    with (
        HostClient(_settings(tmp_path), dropping_url, timeout_s=10) as client,
        pytest.raises(ServerUnreachable) as caught,
    ):
        client.call("POST", "/api/mcp/servers/x/enable")
    assert caught.value.details["reason"] == "dropped", caught.value
    assert "closed the connection before it answered" in caught.value.message
    assert "may have happened there" in caught.value.message
    assert TOKEN not in caught.value.message


def test_a_refused_connection_is_still_refused(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        HostClient(_settings(tmp_path), f"http://127.0.0.1:{port}", timeout_s=10) as client,
        pytest.raises(ServerUnreachable) as caught,
    ):
        client.call("GET", "/api/mcp/servers")
    assert caught.value.details["reason"] == "refused", caught.value
