"""An OAuth authorization started through the balancer by an API client completes (R-4.9, R-10.2).

The authorization in progress (its `state`, PKCE verifier, client) lives in the memory of the
instance that started it. An API client with the admin token carries no instance cookie, and neither
does the browser it hands the authorization URL to: without more, the browser's `/oauth/callback`
went round-robin and half the authorizations ended "unknown state". `deploy/haproxy.cfg` stores the
`state` of each start (`X-MCP-Center-OAuth-State`) and sends its callback to that instance.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

from tests.e2e.cluster import INSTANCE_HEADER, running_cluster
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.postgres import PgCluster
from tests.support.serve import ADMIN_TOKEN

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SERVERS = "/api/mcp/servers"


async def test_a_callback_through_the_balancer_reaches_the_instance_that_started_it(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """Two authorizations started through the balancer without a cookie; the browser comes back
    through the balancer without one too: each callback is answered 200 by the starting instance."""
    authorization = FakeAuthorizationServer()
    resource = FakeProtectedResource([authorization])
    database_url = pg_cluster.database()
    try:
        async with serve_loopback(authorization.app) as auth_base, serve_loopback(resource.app) as resource_base:
            authorization.base_url, resource.base_url = auth_base, resource_base
            with running_cluster(tmp_path, database_url) as cluster:
                headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
                async with (
                    httpx2.AsyncClient(
                        verify=NO_TLS, base_url=cluster.lb_url, headers=headers, timeout=60, trust_env=False
                    ) as api,
                    httpx2.AsyncClient(verify=NO_TLS, timeout=60, trust_env=False) as browser,
                ):
                    body = {"id": "o", "name": "O", "transport": "streamable_http", "url": resource.url}
                    created = await api.post(SERVERS, json={**body, "auth": {"kind": "oauth"}})
                    assert created.status_code == 201, created.text
                    api.cookies.clear()
                    trusted = await api.post(f"{SERVERS}/o/trust", json={"digest": created.json()["digest"]})
                    assert trusted.status_code == 200, trusted.text
                    starters: list[str] = []
                    for _ in range(2):
                        api.cookies.clear()
                        started = await api.post(f"{SERVERS}/o/oauth/start")
                        assert started.status_code == 200, started.text
                        api.cookies.clear()
                        starters.append(started.headers[INSTANCE_HEADER])
                        redirect = await browser.get(started.json()["authorization_url"])
                        assert redirect.status_code == 302, redirect.text
                        back = urlsplit(redirect.headers["location"])  # the instance's own URL: via the balancer
                        browser.cookies.clear()
                        callback = await browser.get(
                            f"{cluster.lb_url}{back.path}?{back.query}", headers={"Accept": "application/json"}
                        )
                        assert callback.status_code == 200, (starters, callback.text)
                        assert callback.headers[INSTANCE_HEADER] == starters[-1]
    finally:
        pg_cluster.drop(database_url)
