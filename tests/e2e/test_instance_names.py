"""Two `serve` instances on one PostgreSQL database with the same `--instance-name` (R-10.2).

Names tell instances apart (the `X-MCP-Center-Instance` header, `/api/instances`, the balancer's
logs): the second start with a live instance's name is refused before it serves, exit code 4,
`SERVE_INSTANCE_NAME_IN_USE` naming the live one; the first goes on serving. Two started at the same
moment both pass the early check (neither has a name yet); their claims of the name meet in the
database, where exactly one gets it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import httpx2
import psycopg

from mcp_center.store.pg_feed import INSTANCE_LOCK_CLASS, NAME_LOCK_CLASS, lock_key
from tests.e2e.cluster import Instance, cluster_env, spawn_instance, start_instance, wait_serving
from tests.support.postgres import advisory_lock_waiters
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually_sync


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


def test_two_instances_started_at_once_with_one_name_exactly_one_serves(database_url: str, tmp_path: Path) -> None:
    """R-10.2 (inst36): both pass the early check, then the test holds the name's claim lock until both
    claims wait on it and lets them go together: one serves, the other exits 4 naming it."""
    env = cluster_env()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    started: list[Instance] = []
    with psycopg.connect(database_url, autocommit=True) as barrier:
        try:
            barrier.execute("SELECT pg_advisory_lock(%s, %s)", (NAME_LOCK_CLASS, lock_key("a")))
            started.append(start_instance("a", tmp_path / "one", env, database_url))
            started.append(start_instance("a", tmp_path / "two", env, database_url))
            eventually_sync(lambda: advisory_lock_waiters(barrier, NAME_LOCK_CLASS, lock_key("a")) == 2, timeout_s=60)
            barrier.execute("SELECT pg_advisory_unlock(%s, %s)", (NAME_LOCK_CLASS, lock_key("a")))

            def one_exited() -> list[Instance]:
                return [i for i in started if i.proc.poll() is not None]

            refused = eventually_sync(one_exited, timeout_s=60)
            assert len(refused) == 1, [i.log()[-1000:] for i in refused]
            assert refused[0].proc.returncode == 4, refused[0].log()[-2000:]
            serving = next(i for i in started if i is not refused[0])
            wait_serving(serving)
            assert serving.proc.poll() is None
            log = refused[0].log()
            assert "SERVE_INSTANCE_NAME_IN_USE" in log, log[-2000:]
            assert f"pid {serving.proc.pid}" in log, log[-2000:]
            with httpx2.Client(base_url=serving.url, timeout=30, trust_env=False) as http:
                board = http.get("/api/instances", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            assert [i["name"] for i in board.json()["instances"]] == ["a"]
        finally:
            for instance in started:
                stop_process(instance.proc)


def test_an_instance_whose_name_was_taken_while_it_was_away_stops_with_exit_4(
    database_url: str, tmp_path: Path
) -> None:
    """R-10.2 (fixa36 F1): serve 'a' is paused (SIGSTOP) and its presence ends (its listening
    connection is terminated, as a database restart does); a second serve 'a' is then accepted. When
    the first resumes and takes its presence again, it claims its name again, finds the second, logs
    SERVE_INSTANCE_NAME_IN_USE and exits 4; the second goes on serving, the only 'a' listed."""
    env = cluster_env()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = spawn_instance("a", tmp_path / "one", env, database_url)
    second: Instance | None = None
    try:
        with psycopg.connect(database_url, autocommit=True) as conn:
            row = conn.execute("SELECT id FROM mcp_center.instances WHERE name = 'a'").fetchone()
            assert row is not None
            os.kill(first.proc.pid, signal.SIGSTOP)
            ended = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND objsubid = 2",
                (INSTANCE_LOCK_CLASS, lock_key(str(row[0]))),
            ).fetchall()
            assert ended == [(True,)]
        second = spawn_instance("a", tmp_path / "two", env, database_url)  # the name was free: accepted
        os.kill(first.proc.pid, signal.SIGCONT)
        assert first.proc.wait(timeout=60) == 4, first.log()[-2000:]
        log = first.log()
        assert "SERVE_INSTANCE_NAME_IN_USE" in log and "serve.instance_name_lost" in log, log[-2000:]
        assert f"pid {second.proc.pid}" in log, log[-2000:]
        assert second.proc.poll() is None
        with httpx2.Client(base_url=second.url, timeout=30, trust_env=False) as http:
            board = http.get("/api/instances", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert [i["name"] for i in board.json()["instances"]] == ["a"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(first.proc.pid, signal.SIGCONT)
        stop_process(first.proc)
        if second is not None:
            stop_process(second.proc)
