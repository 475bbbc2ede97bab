"""Two `serve` instances on one PostgreSQL database with the same `--instance-name` (R-10.2).

Names tell instances apart (the `X-MCP-Center-Instance` header, `/api/instances`, the balancer's
logs): the second start with a live instance's name is refused before it serves, exit code 4,
`SERVE_INSTANCE_NAME_IN_USE` naming the live one; the first goes on serving.
"""

from __future__ import annotations

from pathlib import Path

import httpx2

from tests.e2e.cluster import cluster_env, spawn_instance, start_instance
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN


def test_a_second_instance_with_a_live_instance_s_name_is_refused_at_start(database_url: str, tmp_path: Path) -> None:
    env = cluster_env()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = spawn_instance("a", tmp_path / "one", env, database_url)
    try:
        second = start_instance("a", tmp_path / "two", env, database_url)
        try:
            assert second.proc.wait(timeout=60) == 4
        finally:
            stop_process(second.proc)
        log = second.log()
        assert "SERVE_INSTANCE_NAME_IN_USE" in log, log[-2000:]
        assert f"pid {first.proc.pid}" in log, log[-2000:]
        with httpx2.Client(base_url=first.url, timeout=30, trust_env=False) as http:
            board = http.get("/api/instances", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert [i["name"] for i in board.json()["instances"]] == ["a"]
    finally:
        stop_process(first.proc)
