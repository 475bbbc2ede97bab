"""A serve that takes connections and never answers is hung, not busy: `enable`, `disable`, `test`
and `tools` beside it say so within seconds (cli40, R-9.2, R-7.3), where they used to wait the
whole change timeout (120 s, or a server's start-up timeout plus a minute) for each command.

A loopback listener that accepts every connection and never sends a byte stands for the hung serve;
this test process claims the data directory as its "serve" (`FileOwnerLock`), at that listener's URL.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_center.cli.host import ANSWER_TIMEOUT_S
from mcp_center.store.owner import FileOwnerLock, ServeOwner
from tests.support.cli import run_cli

TOKEN = "admin-token-for-hung-serve-0123456789"


@pytest.fixture
def hung_url() -> Iterator[str]:
    """`http://127.0.0.1:PORT` of a listener that accepts connections, reads nothing, answers nothing."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(connection)

    worker = threading.Thread(target=accept, daemon=True)
    worker.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
    worker.join(timeout=10)
    for connection in accepted:
        connection.close()


def test_commands_beside_a_hung_serve_end_in_seconds_with_the_unreachable_code(tmp_path: Path, hung_url: str) -> None:
    """Each command first asks the serve for the server's record (answered from its store, never
    waiting for a start) within `ANSWER_TIMEOUT_S`; a serve silent for that long is hung: exit 7,
    MCP_SERVER_UNREACHABLE, the next step, and nothing done in this process instead."""
    data = tmp_path / "data"
    env = {"MCP_CENTER_ADMIN_TOKEN": TOKEN}
    assert run_cli(data, "add", "Local", "--", sys.executable, "-c", "pass", env=env).returncode == 0
    owner = FileOwnerLock(data)
    owner.claim(ServeOwner.this_process())
    owner.announce(hung_url)  # this live test process is the serve, listening there
    try:
        for command in (["tools", "local"], ["enable", "local"], ["test", "local"], ["disable", "local"]):
            started = time.monotonic()
            result = run_cli(data, *command, env=env)
            elapsed_s = time.monotonic() - started
            assert result.returncode == 7, (command, result.stdout, result.stderr)
            first = result.stderr.splitlines()[0]
            assert first.startswith("error [MCP_SERVER_UNREACHABLE]: "), (command, result.stderr)
            assert "did not answer within 5 s" in first, first
            # cli36: a loop blocked for 5 s is busy, not dead: said so, and "run it again" comes first
            assert "it may be busy, or hung or stopped" in first, first
            assert "nothing was asked of it" in first and "Run this command again in a moment" in first, first
            assert first.index("Run this command again") < first.index("restart it"), first
            assert f"runs on it at {hung_url}" in result.stderr  # which serve, by pid and address
            assert TOKEN not in result.stderr
            assert elapsed_s < ANSWER_TIMEOUT_S + 10, (command, elapsed_s)  # not the 120 s of a change
    finally:
        owner.release()
