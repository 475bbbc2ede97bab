"""`/healthz` of an instance on PostgreSQL says whether it can use its database (R-10.2).

A real `serve` on a real PostgreSQL 15 database, connecting as a role of its own; the test forbids
that role to log in and ends its connections (as a changed password would): every request then
fails with STORAGE_UNAVAILABLE, and `/healthz` — what `deploy/haproxy.cfg` checks — must fail too,
naming the cause, so a balancer takes the instance out of rotation. Allowed again, it recovers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import psycopg
import pytest
from psycopg import sql

from tests.e2e.cluster import Instance, cluster_env, spawn_instance
from tests.support.postgres import PgCluster
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually_sync


@pytest.fixture
def role_database(pg_cluster: PgCluster) -> Iterator[tuple[str, str]]:
    """A fresh database owned by a new login role; yields (the role's URL, the role's name)."""
    url = pg_cluster.database()
    name = urlsplit(url).path.lstrip("/")
    role = "r_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(name), sql.Identifier(role)))
    try:
        yield url.replace("postgresql://mcp@", f"postgresql://{role}@"), role
    finally:
        pg_cluster.drop(url)
        with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def _lock_out(pg_cluster: PgCluster, role: str, login: bool) -> None:
    """Forbid (`login` False: and end every session of) or allow `role` to log in."""
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        option = sql.SQL("LOGIN" if login else "NOLOGIN")
        conn.execute(sql.SQL("ALTER ROLE {} {}").format(sql.Identifier(role), option))
        if not login:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))


def test_healthz_fails_with_the_cause_while_the_database_refuses_the_instance(
    pg_cluster: PgCluster, role_database: tuple[str, str], tmp_path: Path
) -> None:
    """200 while the database answers; 503 STORAGE_UNAVAILABLE naming "not permitted to log in" (and
    no password) within seconds of the role being locked out, as the API's own 503; 200 again after."""
    url, role = role_database
    instance: Instance = spawn_instance("solo", tmp_path, cluster_env(), url)
    try:
        with httpx2.Client(base_url=instance.url, timeout=30, trust_env=False) as http:
            assert http.get("/healthz").status_code == 200
            _lock_out(pg_cluster, role, login=False)

            def failing() -> httpx2.Response | None:
                response = http.get("/healthz")
                return response if response.status_code == 503 else None

            refused = eventually_sync(failing, timeout_s=20, interval_s=0.2)
            assert refused is not None
            error = refused.json()["error"]
            assert error["code"] == "STORAGE_UNAVAILABLE", error
            assert "not permitted to log in" in error["message"], error
            api = http.get("/api/mcp/servers", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            assert api.status_code == 503, api.text
            assert "not permitted to log in" in api.json()["error"]["message"], api.text
            _lock_out(pg_cluster, role, login=True)
            eventually_sync(lambda: http.get("/healthz").status_code == 200, timeout_s=30, interval_s=0.2)
    finally:
        stop_process(instance.proc)
