"""A real `serve --database-url` while another session holds the database's write lock (R-10.1, R-10.2;
store40, break40's t26; storeloop36): a psql session's `pg_advisory_xact_lock(1, 1)` stalled every
write without an error or a log line, and twelve waiting writes took the connections that
`GET /api/approvals` needed; then, with the writes bounded, the instance still answered nothing else
while a write waited (the API called the store on its event loop's thread: a read in 6.4 s).

Now the first write answers `503 STORAGE_BUSY` after its 5 s budget and the others after 0.1 s each,
naming the holder's backend pid and application (and logged), and the store work runs in worker
threads (`service/store_threads.py`): while the writes still wait, the same instance answers
`/healthz`, the REST API's reads and a gateway `tools/call`.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import psycopg

from tests.e2e.cluster import GatewayClient, cluster_env, spawn_instance
from tests.support.api import create_gateway_token, register_ready
from tests.support.loopback import NO_TLS
from tests.support.mcp_servers import running_echo_http
from tests.support.postgres import waiting_for_advisory_lock
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually_sync

WRITES = 12
ECHO = "mcp__echo__echo"


def _client(url: str) -> httpx2.Client:
    return httpx2.Client(
        verify=NO_TLS, base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60, trust_env=False
    )


def _echo_server(api: httpx2.Client, echo_url: str) -> str:
    """Register the echo server, trust, test and enable it; a gateway token for it."""
    body = {"name": "Echo", "transport": "streamable_http", "url": echo_url, "tool_policies": {"echo": "allow"}}
    register_ready(api, body)
    return str(create_gateway_token(api, "agent")["token"])


def _text(message: dict[str, Any]) -> str:
    assert "result" in message, message
    return "".join(c.get("text", "") for c in message["result"]["content"])


def test_while_writes_wait_for_a_held_write_lock_the_instance_answers_reads_health_and_gateway_calls(
    database_url: str, tmp_path: Path
) -> None:
    """Ordered by events, not by a time bound: every answer below arrives while the first write still
    waits in PostgreSQL (it answers only after its 5 s budget) and before any write has answered."""
    with running_echo_http() as echo_url:
        instance = spawn_instance("a", tmp_path, cluster_env(), database_url)
        holder = psycopg.connect(database_url, application_name="operator-psql")
        agent: GatewayClient | None = None
        try:
            with _client(instance.url) as api:
                token = _echo_server(api, echo_url)
            agent = GatewayClient(instance.url, token, "2026-07-28")
            assert _text(agent.call(ECHO, {"text": "before"})) == "before"
            holder.execute("SELECT pg_advisory_xact_lock(1, 1)")
            answers: list[tuple[int, str, float]] = []
            messages: list[str] = []

            def write(i: int) -> None:
                with _client(instance.url) as api:
                    started = time.monotonic()
                    response = api.post("/api/gateway/tokens", json={"name": f"w{i}"})
                    error: dict[str, Any] = response.json().get("error", {}) if response.status_code >= 400 else {}
                    messages.append(str(error.get("message", "")))
                    answers.append((response.status_code, str(error.get("code", "")), time.monotonic() - started))

            writers = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(WRITES)]
            for writer in writers:
                writer.start()
            eventually_sync(lambda: waiting_for_advisory_lock(database_url) >= 1)
            started = time.monotonic()
            with _client(instance.url) as api:
                health = api.get("/healthz")
                servers = api.get("/api/mcp/servers")
                approvals = api.get("/api/approvals")
            called = _text(agent.call(ECHO, {"text": "during"}))
            answered_s = time.monotonic() - started
            still_waiting = waiting_for_advisory_lock(database_url)
            written = list(answers)
            for writer in writers:
                writer.join(timeout=30)
            holder.rollback()
            slowest = max((s for _, _, s in answers), default=0.0)
            sys.stderr.write(
                f"held write lock: health, two reads and a gateway call in {answered_s:.2f} s while writes waited;"
                f" {len(answers)} writes within {slowest:.2f} s\n"
            )
            assert health.status_code == 200, health.text
            assert servers.status_code == 200, servers.text
            assert [s["name"] for s in servers.json()["servers"]] == ["Echo"], servers.text
            assert approvals.status_code == 200, approvals.text
            assert called == "during"
            assert written == [], written  # no write had answered: the first one still waited ...
            assert still_waiting >= 1  # ... in PostgreSQL, for the lock the operator's session holds
            assert len(answers) == WRITES, answers  # none still waiting
            assert {(status, code) for status, code, _ in answers} == {(503, "STORAGE_BUSY")}, answers
            # One write waits at a time: one whole 5 s budget, then 0.1 s per write.
            assert slowest < 5.0 + 0.1 * WRITES + 1.5, answers
            assert all("'operator-psql'" in m for m in messages), messages  # the holder, named
            assert instance.log().count("store.write_lock_busy") == WRITES
            with _client(instance.url) as api:  # the lock is free: writes go through again
                assert api.post("/api/gateway/tokens", json={"name": "after"}).status_code in (200, 201)
        finally:
            if agent is not None:
                agent.close()
            holder.close()
            stop_process(instance.proc)
