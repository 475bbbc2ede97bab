"""An unreachable host's message names where its address came from (cli40, R-9.2, R-8.1): the
`--url` given, `MCP_CENTER_URL`, or the serve.json of the data directory (whose serve may have
stopped, or restarted elsewhere, since it was read). The stdio bridge said "the default address"
for a port it had read from serve.json, and "the --url given" for one set in the environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_center.cli._where import unreachable_why
from mcp_center.config import Settings
from mcp_center.store.owner import FileOwnerLock, ServeOwner
from tests.support.cli import run_cli_process
from tests.support.ports import closed_port_url

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _bridge(tmp_path: Path, *args: str, **env: str) -> str:
    """The stdio bridge's stderr, one line of whitespace (it exited 7: nothing answers)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    clean.update(MCP_CENTER_DATA_DIR=str(tmp_path), MCP_CENTER_GATEWAY_TOKEN="mcpg_origin-token-0123", COLUMNS="300")
    clean.update(env)
    done = run_cli_process("gateway", "--stdio", *args, input=(json.dumps(INITIALIZE) + "\n").encode(), env=clean)
    assert done.returncode == 7, done.stderr
    assert "mcpg_origin" not in done.stderr + done.stdout
    return " ".join(done.stderr.split())


@pytest.mark.parametrize("given", ["option", "environment"])
def test_the_bridge_says_whether_its_address_was_the_option_or_the_environment(tmp_path: Path, given: str) -> None:
    with closed_port_url() as url:
        said = _bridge(tmp_path, "--url", url) if given == "option" else _bridge(tmp_path, MCP_CENTER_URL=url)
    assert f"the gateway at {url} is not reachable" in said
    origin, other = ("the --url given", "MCP_CENTER_URL") if given == "option" else ("MCP_CENTER_URL", "--url given")
    assert f"nothing answers at {origin}:" in said
    assert other not in said.split("not reachable", 1)[1].split("If serve runs")[0]
    assert "default" not in said


def test_an_address_read_from_serve_json_is_said_to_be_so_once_its_serve_is_gone(tmp_path: Path) -> None:
    """No serve owns the directory any more (the bridge read its address before it stopped)."""
    settings = Settings.load(data_dir=tmp_path, environ={})
    said = unreachable_why(settings, None, "http://127.0.0.1:9")
    assert f"the serve of the data directory {tmp_path} recorded in its serve.json" in said
    assert "no longer runs" in said
    assert f"mcp-center serve --data-dir {tmp_path}" in said
    assert "default" not in said


def test_a_serve_that_restarted_elsewhere_is_named_with_its_new_address(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path, environ={})
    owner = FileOwnerLock(tmp_path)
    owner.claim(ServeOwner.this_process())
    owner.announce("http://127.0.0.1:8799")  # this live test process is the serve, now on 8799
    try:
        moved = unreachable_why(settings, None, "http://127.0.0.1:8765")
        same = unreachable_why(settings, None, "http://127.0.0.1:8799")
    finally:
        owner.release()
    assert f"(pid {os.getpid()}) now listens at http://127.0.0.1:8799: run the command again" in moved
    assert "serve.json" in moved
    assert f"(pid {os.getpid()}), and it does not answer there" in same
