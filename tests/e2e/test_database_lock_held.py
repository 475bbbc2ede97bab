"""A real `serve --database-url` while another session holds the database's write lock (R-10.1, R-10.2;
store40, break40's t26): a psql session's `pg_advisory_xact_lock(1, 1)` stalled every write without an
error or a log line, and twelve waiting writes took the connections that `GET /api/approvals` needed.

Now the first write answers `503 STORAGE_BUSY` after its 5 s budget and the others after 0.1 s each,
naming the holder's backend pid and application (and logged); a read is answered once the process's
event loop is free again (the API calls the store on that thread: a waiting write holds it up).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import psycopg

from tests.e2e.cluster import cluster_env, spawn_instance
from tests.support.loopback import NO_TLS
from tests.support.postgres import waiting_for_advisory_lock
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually_sync

WRITES = 12


def _client(url: str) -> httpx2.Client:
    return httpx2.Client(
        verify=NO_TLS, base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60, trust_env=False
    )


def test_writes_behind_a_held_write_lock_answer_storage_busy_and_reads_go_on(database_url: str, tmp_path: Path) -> None:
    instance = spawn_instance("a", tmp_path, cluster_env(), database_url)
    holder = psycopg.connect(database_url, application_name="operator-psql")
    try:
        holder.execute("SELECT pg_advisory_xact_lock(1, 1)")
        answers: list[tuple[int, str, float]] = []
        messages: list[str] = []

        def write(i: int) -> None:
            with _client(instance.url) as api:
                started = time.monotonic()
                response = api.post("/api/gateway/tokens", json={"name": f"w{i}"})
                error: dict[str, Any] = response.json().get("error", {}) if response.status_code >= 400 else {}
                code = str(error.get("code", ""))
                messages.append(str(error.get("message", "")))
                answers.append((response.status_code, code, time.monotonic() - started))

        writers = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(WRITES)]
        for writer in writers:
            writer.start()
        eventually_sync(lambda: waiting_for_advisory_lock(database_url) >= 1)
        with _client(instance.url) as api:
            started = time.monotonic()
            listed = api.get("/api/approvals")
            read_s = time.monotonic() - started
        for writer in writers:
            writer.join(timeout=30)
        holder.rollback()
        slowest = max((s for _, _, s in answers), default=0.0)
        sys.stderr.write(f"held write lock: a read in {read_s:.2f} s, {len(answers)} writes within {slowest:.2f} s\n")
        assert listed.status_code == 200, listed.text
        # The API waits on its event loop's thread: one whole 5 s budget, then 0.1 s per write.
        assert read_s < 5.0 + 0.1 * WRITES + 1.5, read_s
        assert len(answers) == WRITES, answers  # none still waiting
        assert {(status, code) for status, code, _ in answers} == {(503, "STORAGE_BUSY")}, answers
        assert max(s for _, _, s in answers) < 5.0 + 0.1 * WRITES + 1.5, answers
        assert all("'operator-psql'" in m for m in messages), messages  # the holder, named
        assert instance.log().count("store.write_lock_busy") == WRITES
        with _client(instance.url) as api:  # the lock is free: writes go through again
            assert api.post("/api/gateway/tokens", json={"name": "after"}).status_code in (200, 201)
    finally:
        holder.close()
        stop_process(instance.proc)
