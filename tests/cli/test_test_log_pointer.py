"""`mcp-center test` runs the test in its own process, so the log its error points at is that
process's: it prints that log itself instead of "see the server's log with 'mcp-center logs X'",
which asks a running serve whose log never saw the test ("requests: none yet") (trial35 MED 5, R-3.11).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.cli import run_cli

QUIRKY = str(Path(__file__).parents[1] / "servers" / "quirky_stdio.py")


def test_a_failed_test_prints_its_own_log_instead_of_pointing_at_logs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    scenario = {"stdout_on_start": ["Server v1 listening"], "initialize_id": 777}

    async def create() -> None:
        async with McpCenter.open(Settings.load(data_dir=data, environ={})) as center:
            view = await center.create_server(
                {
                    "id": "mix",
                    "name": "Mix",
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": [QUIRKY, json.dumps(scenario)],
                    "startup_timeout_s": 1,
                }
            )
            await center.trust(view.id, view.digest)

    anyio.run(create)
    tested = run_cli(data, "test", "mix")
    assert tested.returncode == 1
    said, first, *rest = tested.stderr.splitlines()
    assert said == "testing mix: starting it (a first start may download packages)..."  # at once (trialfix36)
    assert first.startswith("failed [MCP_SERVER_TIMEOUT]: "), tested.stderr
    assert "mcp-center logs" not in tested.stderr
    assert first.endswith("; the server's log of this test follows"), first
    log = rest[rest.index("  server log (kept by this command only):") + 1 :]
    assert "    stderr:" in log, log
    assert any(line.endswith("[stdout, not JSON-RPC] Server v1 listening") for line in log), log
    as_json = json.loads(run_cli(data, "test", "mix", "--json").stdout)
    assert "log_command" not in as_json["error"]["details"]
