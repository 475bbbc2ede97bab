"""OAuth refresh is single-flight across instances (R-10.1, R-4.7): two real `serve` processes on one
PostgreSQL database both hold an access token the server stopped accepting, against an authorization
server with single-use rotating refresh tokens; its first refresh is held open until both instances
have been refused. Exactly one refresh reaches it, both instances' calls succeed, both stay authorized.
The lock is PostgreSQL's advisory lock per binding (`PgStore.lock`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.e2e.cluster import cluster_env, start_instance, wait_serving
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource, Seen
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually, until

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

STEP_TIMEOUT_S = 60.0
SERVERS = "/api/mcp/servers"


def _ok(response: httpx2.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def _authorize(api: httpx2.AsyncClient, server_id: str) -> None:
    """Start an authorization on the instance `api` talks to and play the browser up to its callback."""
    started = _ok(await api.post(f"{SERVERS}/{server_id}/oauth/start"))
    async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
        redirect = await browser.get(started["authorization_url"])
        assert redirect.status_code == 302, redirect.text
        callback = await browser.get(redirect.headers["location"], headers={"Accept": "application/json"})
        assert callback.status_code == 200, callback.text


def _refused(seen: Seen) -> bool:
    return seen.method == "POST" and seen.path == "/mcp" and "authorization" in seen.headers


async def test_two_instances_refresh_a_rotating_refresh_token_once_and_both_stay_authorized(
    tmp_path: Path, database_url: str
) -> None:
    authorization = FakeAuthorizationServer(rotate_refresh_tokens=True)
    resource = FakeProtectedResource([authorization])
    env = cluster_env()
    async with serve_loopback(authorization.app) as auth_base, serve_loopback(resource.app) as resource_base:
        authorization.base_url, resource.base_url = auth_base, resource_base
        a = start_instance("a", tmp_path, env, database_url)  # both start at once, then both must serve
        try:
            b = start_instance("b", tmp_path, env, database_url)
            try:
                await anyio.to_thread.run_sync(wait_serving, a)
                await anyio.to_thread.run_sync(wait_serving, b)
                headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
                async with (
                    httpx2.AsyncClient(
                        verify=NO_TLS, base_url=a.url, headers=headers, timeout=STEP_TIMEOUT_S, trust_env=False
                    ) as on_a,
                    httpx2.AsyncClient(
                        verify=NO_TLS, base_url=b.url, headers=headers, timeout=STEP_TIMEOUT_S, trust_env=False
                    ) as on_b,
                ):
                    await _race(authorization, resource, on_a, on_b)
            finally:
                await anyio.to_thread.run_sync(stop_process, b.proc)
        finally:
            await anyio.to_thread.run_sync(stop_process, a.proc)


async def _race(
    authorization: FakeAuthorizationServer,
    resource: FakeProtectedResource,
    on_a: httpx2.AsyncClient,
    on_b: httpx2.AsyncClient,
) -> None:
    body = {"id": "o", "name": "O", "transport": "streamable_http", "url": resource.url, "auth": {"kind": "oauth"}}
    _ok(await on_a.post(SERVERS, json=body), 201)
    view = _ok(await on_a.get(f"{SERVERS}/o"))
    _ok(await on_a.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]}))
    await _authorize(on_a, "o")  # the browser returns to instance a, where the authorization started
    assert _ok(await on_b.post(f"{SERVERS}/o/test"))["ok"] is True  # b uses the token a stored
    _ok(await on_b.post(f"{SERVERS}/o/enable"))

    async def connected_on_both() -> bool:
        board = _ok(await on_a.get("/api/instances"))
        return all(i["servers"].get("o", {}).get("state") == "ready" for i in board["instances"])

    await eventually(connected_on_both, timeout_s=30)
    first_refresh_token = next(iter(authorization.refresh_tokens))

    authorization.revoke_access_tokens()
    mark = len(resource.seen)
    both_refused = anyio.Event()

    def refused_by_both() -> bool:
        sessions = {s.headers.get("mcp-session-id") for s in resource.seen[mark:] if _refused(s)}
        return len(sessions - {None}) >= 2

    async def hold_until_both_refused() -> None:
        # Without the advisory lock the second instance would now present the same, already used,
        # refresh token and get invalid_grant.
        with anyio.move_on_after(30):
            await until(refused_by_both, timeout_s=30)
            both_refused.set()

    authorization.before_refresh_answer = hold_until_both_refused
    outcomes: dict[str, Any] = {}

    async def call(name: str, api: httpx2.AsyncClient) -> None:
        response = await api.post(f"{SERVERS}/o/tools/echo/call", json={"arguments": {"text": f"from-{name}"}})
        outcomes[name] = (response.status_code, response.text)

    with anyio.fail_after(STEP_TIMEOUT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a", on_a)
            tg.start_soon(call, "b", on_b)
    assert both_refused.is_set(), ("the instances did not race: one was never refused", outcomes)
    for name in ("a", "b"):
        assert outcomes[name][0] == 200, outcomes[name]
        assert f"from-{name}" in outcomes[name][1]
    assert authorization.refreshes == 1
    refreshes = [s for s in authorization.saw("/token") if s.form.get("grant_type") == "refresh_token"]
    assert [s.form["refresh_token"] for s in refreshes] == [first_refresh_token]
    for api in (on_a, on_b):
        after = _ok(await api.get(f"{SERVERS}/o"))
        assert after["oauth"]["authorized"] is True
        assert after["oauth"]["needs"] is None
