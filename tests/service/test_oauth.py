"""OAuth servers end to end (R-4): the REST API, the broker, the runtime and fake servers on loopback.

The fake authorization server auto-approves `/authorize`; `login()` plays the browser (GET the
authorize URL without following redirects, hand the `Location` query to our `/oauth/callback`).
Assertions look at what each fake server saw, so "never sent" means never received.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.config import Settings
from mcp_center.service import McpCenter, OAuthAuthorized, OAuthForgotten, OAuthStarted
from tests.support.api import assert_error, open_api
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import STEP_TIMEOUT_S

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"


@asynccontextmanager
async def fakes(
    authorization: FakeAuthorizationServer | None = None,
    second: FakeAuthorizationServer | None = None,
    **resource_options: Any,
) -> AsyncGenerator[tuple[FakeAuthorizationServer, FakeAuthorizationServer, FakeProtectedResource]]:
    """Two authorization servers and a protected resource listing the first, all on loopback."""
    first = authorization or FakeAuthorizationServer()
    other = second or FakeAuthorizationServer()
    resource = FakeProtectedResource([first, other], **resource_options)
    async with (
        serve_loopback(first.app) as first_base,
        serve_loopback(other.app) as other_base,
        serve_loopback(resource.app) as resource_base,
    ):
        first.base_url, other.base_url, resource.base_url = first_base, other_base, resource_base
        if resource.listed_issuers is None:
            resource.listed_issuers = [first.issuer]
        yield first, other, resource


async def login(api: httpx2.AsyncClient, server_id: str = "o", **body: Any) -> dict[str, Any]:
    """Start an authorization and play the browser up to our callback; return the start answer."""
    with anyio.fail_after(STEP_TIMEOUT_S):
        started = await api.post(f"{SERVERS}/{server_id}/oauth/start", json=body or None)
        assert started.status_code == 200, started.text
        answer = started.json()
        async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
            redirect = await browser.get(answer["authorization_url"])
        assert redirect.status_code == 302, redirect.text
        location = httpx2.URL(redirect.headers["location"])
        callback = await api.get(location.path, params=dict(location.params), headers={"Accept": "application/json"})
        assert callback.status_code == 200, callback.text
    return answer


async def create(api: httpx2.AsyncClient, url: str, **auth: Any) -> dict[str, Any]:
    body = {"id": "o", "name": "OAuth", "transport": "streamable_http", "url": url, "auth": {"kind": "oauth", **auth}}
    created = await api.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    view = created.json()
    trusted = await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]})
    assert trusted.status_code == 200, trusted.text
    return trusted.json()


async def ready(api: httpx2.AsyncClient, url: str, **auth: Any) -> dict[str, Any]:
    """Create, trust, log in, test, enable; return the enabled view."""
    await create(api, url, **auth)
    await login(api)
    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = (await api.post(f"{SERVERS}/o/test")).json()
        assert tested["ok"], tested
        enabled = await api.post(f"{SERVERS}/o/enable")
    assert enabled.status_code == 200, enabled.text
    view = enabled.json()
    assert view["status"]["state"] == "ready", view["status"]
    return view


async def call(api: httpx2.AsyncClient, tool: str = "whoami") -> httpx2.Response:
    with anyio.fail_after(STEP_TIMEOUT_S):
        arguments = {"text": "hi"} if tool == "echo" else {}
        return await api.post(f"{SERVERS}/o/tools/{tool}/call", json={"arguments": arguments})


async def wait_state(api: httpx2.AsyncClient, state: str) -> dict[str, Any]:
    with anyio.fail_after(STEP_TIMEOUT_S):
        while True:
            status = (await api.get(f"{SERVERS}/o")).json()["status"]
            if status["state"] == state:
                return status
            await anyio.sleep(0.05)


def oauth_ids(settings: Settings) -> set[str]:
    secrets = json.loads((settings.mcp_dir / "secrets.json").read_text())["secrets"]
    return {key for key in secrets if key.startswith("mcp.oauth.")}


async def test_a_user_authorizes_in_the_browser_and_calls_carry_the_bearer_token(
    api: httpx2.AsyncClient,
) -> None:
    async with fakes(challenge_scope="mcp:read") as (authorization, _, resource):
        view = await ready(api, resource.url)
        assert view["auth"]["binding"] == {"resource": resource.url, "issuer": authorization.issuer}
        assert view["oauth"]["authorized"] is True
        assert view["oauth"]["scopes"] == ["mcp:read"]
        called = await call(api)
        assert called.status_code == 200, called.text
        echoed = called.json()["structuredContent"]["authorization"]
    # The server echoes the token it received; mcp-center redacts it on the way back.
    assert echoed == "Bearer [redacted]"
    sent = {s.headers["authorization"] for s in resource.seen if "authorization" in s.headers}
    assert sent
    assert all(token.startswith("Bearer at-") for token in sent)
    assert {token.removeprefix("Bearer ") for token in sent} <= set(authorization.access_tokens)
    authorize = authorization.saw("/authorize")[0].query
    assert authorize["resource"] == resource.url
    assert authorize["scope"] == "mcp:read"


async def test_recording_the_first_binding_keeps_the_trust_the_user_gave(api: httpx2.AsyncClient) -> None:
    """The user saw the issuer before logging in (R-4.9); the binding does not ask for a new trust."""
    async with fakes() as (_, _, resource):
        before = await create(api, resource.url)
        await login(api)
        after = (await api.get(f"{SERVERS}/o")).json()
    assert after["version"] == before["version"] + 1
    assert after["digest"] != before["digest"]
    assert after["trusted"] is True


async def test_starting_an_authorization_needs_the_confirmed_summary(api: httpx2.AsyncClient) -> None:
    async with fakes() as (authorization, _, resource):
        body = {"id": "o", "name": "O", "transport": "streamable_http", "url": resource.url, "auth": {"kind": "oauth"}}
        assert (await api.post(SERVERS, json=body)).status_code == 201
        assert_error(await api.post(f"{SERVERS}/o/oauth/start"), 409, "MCP_SERVER_NOT_TRUSTED")
    assert authorization.seen == []
    assert resource.seen == []


async def test_oauth_actions_on_a_server_without_oauth_are_refused(api: httpx2.AsyncClient) -> None:
    body = {"id": "p", "name": "P", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
    view = (await api.post(SERVERS, json=body)).json()
    await api.post(f"{SERVERS}/p/trust", json={"digest": view["digest"]})
    assert_error(await api.post(f"{SERVERS}/p/oauth/start"), 409, "OAUTH_NOT_CONFIGURED")
    assert_error(await api.delete(f"{SERVERS}/p/oauth"), 409, "OAUTH_NOT_CONFIGURED")
    assert "oauth" not in view


async def test_a_background_connection_never_starts_a_login_it_only_enters_auth_required(settings: Settings) -> None:
    """R-4.9: after a restart without a refresh token (and with the stored access token no longer
    accepted), start-up connects and fails; nobody logs in."""
    async with fakes(FakeAuthorizationServer(issue_refresh_tokens=False)) as (authorization, _, resource):
        async with open_api(settings) as api:
            await ready(api, resource.url)
        authorization.revoke_access_tokens()
        seen_before = len(authorization.seen)
        async with open_api(settings) as api:
            status = await wait_state(api, "error")
            view = (await api.get(f"{SERVERS}/o")).json()
    assert status["error"]["code"] == "OAUTH_AUTHORIZATION_REQUIRED"
    assert status["error"]["details"]["reason"] == "auth_required"
    assert view["oauth"]["needs"] == "authorization"
    assert view["oauth"]["pending"] is False
    assert authorization.seen[seen_before:] == []


async def test_after_a_restart_the_refresh_token_goes_to_the_bound_token_endpoint_only(settings: Settings) -> None:
    """Dev. 7: the refresh token never reaches the MCP server; no discovery is needed to find the endpoint."""
    async with fakes() as (authorization, _, resource):
        async with open_api(settings) as api:
            await ready(api, resource.url)
        refresh_tokens = set(authorization.refresh_tokens)
        authorization.revoke_access_tokens()
        resource_seen, authorization_seen = len(resource.seen), len(authorization.seen)
        async with open_api(settings) as api:
            await wait_state(api, "ready")
            called = await call(api, "echo")
        assert called.status_code == 200, called.text
    after = authorization.seen[authorization_seen:]
    assert [(s.method, s.path) for s in after] == [("POST", "/token")]
    assert after[0].form["grant_type"] == "refresh_token"
    assert after[0].form["refresh_token"] in refresh_tokens
    assert after[0].form["resource"] == resource.url
    for request in resource.seen:
        assert not any(token in request.text() for token in refresh_tokens)
        assert request.path in {"/mcp"} or request.path.startswith("/.well-known/")
    assert all(s.path == "/mcp" for s in resource.seen[resource_seen:])


async def test_invalid_grant_clears_the_refresh_token_and_a_new_login_works_without_a_restart(
    settings: Settings,
) -> None:
    async with fakes() as (authorization, _, resource):
        async with open_api(settings) as api:
            await ready(api, resource.url)
        authorization.revoke_access_tokens()
        authorization.refresh_error = "invalid_grant"
        async with open_api(settings) as api:
            status = await wait_state(api, "error")
            assert status["error"]["code"] == "OAUTH_AUTHORIZATION_REQUIRED"
            assert status["error"]["details"]["hint"] == "invalid_grant"
            view = (await api.get(f"{SERVERS}/o")).json()
            assert view["oauth"]["authorized"] is False
            assert view["oauth"]["needs"] == "authorization"
            assert len(oauth_ids(settings)) == 2  # metadata and client stay, the grant is gone
            authorization.refresh_error = None
            await login(api)
            await wait_state(api, "ready")
            called = await call(api, "echo")
    assert called.status_code == 200, called.text


async def test_insufficient_scope_asks_for_a_step_up_with_the_union_of_scopes_and_then_works(
    api: httpx2.AsyncClient,
) -> None:
    """R-4.5: the call fails with the scopes to request; the step-up authorization asks for them all."""
    async with fakes(challenge_scope="mcp:read", step_up_scope="mcp:write") as (authorization, _, resource):
        await ready(api, resource.url)
        refused = await call(api, "echo")
        error = assert_error(refused, 409, "OAUTH_STEP_UP_REQUIRED")
        assert error["details"]["scopes"] == ["mcp:read", "mcp:write"]
        status = await wait_state(api, "error")
        assert status["error"]["details"]["reason"] == "step_up_required"
        view = (await api.get(f"{SERVERS}/o")).json()
        assert view["oauth"]["needs"] == "step_up"
        assert view["oauth"]["step_up_scopes"] == ["mcp:read", "mcp:write"]
        started = await login(api)
        assert started["step_up"] is True
        await wait_state(api, "ready")
        called = await call(api, "echo")
        assert called.status_code == 200, called.text
        assert (await api.get(f"{SERVERS}/o")).json()["oauth"]["needs"] is None
    assert authorization.saw("/authorize")[-1].query["scope"] == "mcp:read mcp:write"


async def test_step_ups_that_never_satisfy_the_server_stop_after_a_bounded_number(api: httpx2.AsyncClient) -> None:
    """R-4.5, no authorization loops: at most three authorizations while one operation stays refused."""
    async with fakes(step_up_scope="mcp:never") as (authorization, _, resource):
        authorization.granted_scope = "mcp:other"  # the authorization server never grants the scope
        await ready(api, resource.url)
        codes: list[str] = []
        for _ in range(4):
            code = (await call(api, "echo")).json()["error"]["code"]
            codes.append(code)
            if code != "OAUTH_STEP_UP_REQUIRED":
                break
            await login(api)
            await wait_state(api, "ready")
        refused_start = await api.post(f"{SERVERS}/o/oauth/start")
    assert codes == ["OAUTH_STEP_UP_REQUIRED", "OAUTH_STEP_UP_REQUIRED", "OAUTH_STEP_UP_LIMIT_REACHED"]
    assert_error(refused_start, 409, "OAUTH_STEP_UP_LIMIT_REACHED")
    assert len(authorization.saw("/authorize")) == 3


async def test_a_changed_issuer_never_receives_the_old_credentials(api: httpx2.AsyncClient, settings: Settings) -> None:
    """R-4.6: the new authorization server sees a new registration, never the old client or tokens."""
    async with fakes() as (first, second, resource):
        await ready(api, resource.url)
        old_secrets = {c.client_id for c in first.clients.values()} | {
            c.secret for c in first.clients.values() if c.secret
        }
        old_ids = oauth_ids(settings)
        resource.listed_issuers = [second.issuer]
        resource.authorization_servers = [second]
        refused = await call(api, "echo")
        assert_error(refused, 409, "OAUTH_AUTHORIZATION_REQUIRED")
        started = await login(api)
        view = (await api.get(f"{SERVERS}/o")).json()
        old_tokens = set(first.refresh_tokens) | set(first.access_tokens)
    assert started["issuer"] == second.issuer
    assert started["previous_issuer"] == first.issuer
    assert view["auth"]["binding"]["issuer"] == second.issuer
    assert view["trusted"] is False and view["enabled"] is False  # another issuer is a high-risk change
    assert second.saw("/register"), "a new client was registered at the new issuer"
    for request in second.seen:
        assert not any(value in request.text() for value in old_secrets | old_tokens), request.text()
    for request in resource.seen:
        assert not any(token in request.text() for token in first.refresh_tokens)
    assert not old_ids & oauth_ids(settings), "the old binding's credentials are deleted"


async def test_a_changed_url_never_receives_the_old_token(api: httpx2.AsyncClient, settings: Settings) -> None:
    """R-4.6: the binding is for the old resource; the new server gets no token and asks for a login."""
    async with fakes() as (authorization, _, resource):
        moved = FakeProtectedResource([authorization], listed_issuers=[authorization.issuer])
        async with serve_loopback(moved.app) as moved_base:
            moved.base_url = moved_base
            await _change_url_and_test(api, settings, resource, moved)
        refreshes = [s for s in authorization.saw("/token") if s.form.get("grant_type") == "refresh_token"]
    assert moved.tokens_seen() == []
    assert refreshes == []


async def _change_url_and_test(
    api: httpx2.AsyncClient, settings: Settings, resource: FakeProtectedResource, moved: FakeProtectedResource
) -> None:
    await ready(api, resource.url)
    current = (await api.get(f"{SERVERS}/o")).json()
    patched = await api.patch(f"{SERVERS}/o", json={"version": current["version"], "url": moved.url})
    assert patched.status_code == 200, patched.text
    assert oauth_ids(settings) == set()
    view = patched.json()
    await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]})
    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = (await api.post(f"{SERVERS}/o/test")).json()
    assert tested["ok"] is False
    assert tested["error"]["code"] == "OAUTH_AUTHORIZATION_REQUIRED"


async def test_several_issuers_need_an_explicit_choice_which_becomes_the_binding(api: httpx2.AsyncClient) -> None:
    """R-4.3."""
    async with fakes() as (first, second, resource):
        resource.listed_issuers = [first.issuer, second.issuer]
        await create(api, resource.url)
        refused = await api.post(f"{SERVERS}/o/oauth/start")
        error = assert_error(refused, 409, "OAUTH_ISSUER_CHOICE_REQUIRED")
        assert error["details"]["issuers"] == [first.issuer, second.issuer]
        view = (await api.get(f"{SERVERS}/o")).json()
        assert view["oauth"]["needs"] == "issuer_choice"
        assert view["oauth"]["issuers"] == [first.issuer, second.issuer]
        started = await login(api, issuer=second.issuer)
        view = (await api.get(f"{SERVERS}/o")).json()
    assert started["issuer"] == second.issuer
    assert view["auth"]["binding"]["issuer"] == second.issuer
    assert first.saw("/register") == []


async def test_the_callback_refuses_a_replayed_or_forged_state(api: httpx2.AsyncClient) -> None:
    async with fakes() as (authorization, _, resource):
        await create(api, resource.url)
        started = (await api.post(f"{SERVERS}/o/oauth/start")).json()
        async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
            location = httpx2.URL((await browser.get(started["authorization_url"])).headers["location"])
        params = dict(location.params)
        first = await api.get("/oauth/callback", params=params)
        replay = await api.get("/oauth/callback", params=params, headers={"Accept": "application/json"})
        forged = await api.get("/oauth/callback", params={**params, "state": "forged"})
    assert first.status_code == 200
    assert "Authorized" in first.text
    error = assert_error(replay, 422, "OAUTH_CALLBACK_INVALID")
    assert error["details"]["reason"] == "state_unknown"
    assert forged.status_code == 400
    assert "OAUTH_CALLBACK_INVALID" in forged.text
    assert len(authorization.saw("/token")) == 1


async def test_a_pasted_redirect_url_completes_a_headless_authorization(api: httpx2.AsyncClient) -> None:
    async with fakes() as (_, _, resource):
        await create(api, resource.url)
        started = (await api.post(f"{SERVERS}/o/oauth/start")).json()
        async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
            location = (await browser.get(started["authorization_url"])).headers["location"]
        done = await api.post(f"{SERVERS}/o/oauth/complete", json={"callback_url": location})
    assert done.status_code == 200, done.text
    assert done.json()["authorized"] is True


async def test_invalid_client_at_the_code_exchange_drops_the_registration_and_the_next_start_registers_again(
    api: httpx2.AsyncClient,
) -> None:
    async with fakes() as (authorization, _, resource):
        await ready(api, resource.url)
        assert len(authorization.saw("/register")) == 1
        authorization.code_error = "invalid_client"
        started = (await api.post(f"{SERVERS}/o/oauth/start")).json()
        assert len(authorization.saw("/register")) == 1  # the stored registration is reused
        async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
            location = httpx2.URL((await browser.get(started["authorization_url"])).headers["location"])
        failed = await api.get(location.path, params=dict(location.params), headers={"Accept": "application/json"})
        error = assert_error(failed, 422, "OAUTH_CALLBACK_INVALID")  # the code was refused: a 4xx (issue 14)
        assert error["details"]["oauth_error"] == "invalid_client"
        assert error["details"]["reason"] == "code_rejected"
        assert error["details"]["hint"] == "registration_dropped"
        authorization.code_error = None
        await login(api)
    assert len(authorization.saw("/register")) == 2


async def test_forgetting_an_authorization_deletes_its_credentials(api: httpx2.AsyncClient, settings: Settings) -> None:
    async with fakes() as (_, _, resource):
        await ready(api, resource.url)
        assert oauth_ids(settings)
        forgotten = await api.delete(f"{SERVERS}/o/oauth")
        assert forgotten.status_code == 200, forgotten.text
        view = (await api.get(f"{SERVERS}/o")).json()
    assert oauth_ids(settings) == set()
    assert view["oauth"]["authorized"] is False
    assert view["oauth"]["access_token_in_memory"] is False


async def test_completing_and_forgetting_an_authorization_announce_server_oauth(
    api: httpx2.AsyncClient, center: McpCenter
) -> None:
    """R-3.11/R-4.9: the live event stream tells the settings page that the `oauth` block changed."""
    async with fakes() as (authorization, _, resource), center.events.subscribe() as events:
        await create(api, resource.url)
        await login(api)
        assert (await api.delete(f"{SERVERS}/o/oauth")).status_code == 200
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(STEP_TIMEOUT_S):
            while len(seen) < 2:
                event = await events.next()
                if event["type"] == "server.oauth":
                    seen.append(event)
    assert [e["server_id"] for e in seen] == ["o", "o"]
    assert all(set(e) == {"type", "seq", "at", "server_id"} for e in seen)
    assert not any(credential in json.dumps(seen) for credential in authorization.issued)


async def test_a_machine_grant_needs_no_browser_and_binds_the_issuer(api: httpx2.AsyncClient) -> None:
    """client_credentials (SEP-1046): `start` obtains the token at once with the configured secret."""
    authorization = FakeAuthorizationServer(preregistered={"machine": "machine-secret-value"})
    async with fakes(authorization) as (_, _, resource):
        body = {
            "id": "o",
            "name": "M",
            "transport": "streamable_http",
            "url": resource.url,
            "auth": {"kind": "oauth", "grant": "client_credentials", "client_id": "machine"},
            "secret_values": {"oauth": {"client_secret": "machine-secret-value"}},
        }
        view = (await api.post(SERVERS, json=body)).json()
        await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]})
        started = (await api.post(f"{SERVERS}/o/oauth/start")).json()
        assert started["authorized"] is True
        assert started["authorization_url"] is None
        with anyio.fail_after(STEP_TIMEOUT_S):
            tested = (await api.post(f"{SERVERS}/o/test")).json()
        view = (await api.get(f"{SERVERS}/o")).json()
    assert tested["ok"], tested
    assert view["auth"]["binding"]["issuer"] == authorization.issuer
    assert view["auth"]["client_secret"] == {"configured": True}
    assert authorization.saw("/authorize") == []
    grant = authorization.saw("/token")[0]
    assert grant.form["grant_type"] == "client_credentials"
    assert grant.headers["authorization"].startswith("Basic ")


async def test_oauth_client_secrets_are_stored_under_their_own_kind(
    api: httpx2.AsyncClient, settings: Settings
) -> None:
    """The secret kinds the API accepts include `oauth` (client_secret, private_key, idp_id_token):
    a client secret set through the API lands in the `oauth_client` slot of its server, encrypted,
    and the read shape only says it is configured (R-1.5, R-4.6)."""
    from mcp_center.secrets.ids import SecretKind, secret_id

    body = {"id": "o", "name": "O", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}
    created = await api.post(SERVERS, json={**body, "auth": {"kind": "oauth"}})
    assert created.status_code == 201, created.text
    value = "oauth-client-secret-value-0451"
    put = await api.put(f"{SERVERS}/o/secrets/client_secret", params={"kind": "oauth"}, json={"value": value})
    assert put.status_code == 200, put.text
    assert put.json()["auth"]["client_secret"] == {"configured": True}
    assert value not in put.text
    stored_file = settings.mcp_dir / "secrets.json"
    stored: dict[str, str] = json.loads(stored_file.read_text(encoding="utf-8"))["secrets"]
    assert [name for name in stored if ".o." in name] == [secret_id(SecretKind.OAUTH_CLIENT, "o", "client_secret")]
    assert value not in stored_file.read_text(encoding="utf-8")


async def test_a_legacy_sse_server_is_authorized_the_same_way(api: httpx2.AsyncClient) -> None:
    """The bearer auth covers the event stream GET and every message POST of HTTP+SSE."""
    async with fakes(sse=True) as (authorization, _, resource):
        body = {"id": "o", "name": "S", "transport": "sse", "url": resource.url, "auth": {"kind": "oauth"}}
        view = (await api.post(SERVERS, json=body)).json()
        await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]})
        await login(api)
        with anyio.fail_after(STEP_TIMEOUT_S):
            tested = (await api.post(f"{SERVERS}/o/test")).json()
            assert tested["ok"], tested
            assert (await api.post(f"{SERVERS}/o/enable")).status_code == 200
        called = await call(api)
    assert called.status_code == 200, called.text
    assert called.json()["structuredContent"]["authorization"] == "Bearer [redacted]"
    posts = [s for s in resource.seen if s.path.startswith("/messages/")]
    assert posts
    assert all(s.headers.get("authorization", "").startswith("Bearer at-") for s in posts)
    assert {s.headers["authorization"].removeprefix("Bearer ") for s in posts} <= set(authorization.access_tokens)


async def test_this_host_serves_its_client_id_metadata_document(api: httpx2.AsyncClient, settings: Settings) -> None:
    """R-4.10: served for CIMD; used only when a user configures its (public https) URL."""
    document = (await api.get("/oauth/client-metadata.json")).json()
    assert document["client_id"] == settings.base_url + "/oauth/client-metadata.json"
    assert document["redirect_uris"] == [settings.base_url + "/oauth/callback"]
    assert document["token_endpoint_auth_method"] == "none"


async def test_a_machine_client_secret_goes_to_a_changed_issuer_only_after_an_explicit_choice(
    api: httpx2.AsyncClient,
) -> None:
    """R-4.6: client_credentials sends the configured secret at once, so a new issuer is confirmed first."""
    first = FakeAuthorizationServer(preregistered={"machine": "machine-secret-value"})
    second = FakeAuthorizationServer(preregistered={"machine": "machine-secret-value"})
    async with fakes(first, second) as (_, _, resource):
        body = {
            "id": "o",
            "name": "M",
            "transport": "streamable_http",
            "url": resource.url,
            "auth": {"kind": "oauth", "grant": "client_credentials", "client_id": "machine"},
            "secret_values": {"oauth": {"client_secret": "machine-secret-value"}},
        }
        view = (await api.post(SERVERS, json=body)).json()
        await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]})
        assert (await api.post(f"{SERVERS}/o/oauth/start")).json()["authorized"] is True
        resource.listed_issuers = [second.issuer]
        refused = await api.post(f"{SERVERS}/o/oauth/start")
        error = assert_error(refused, 409, "OAUTH_ISSUER_CHOICE_REQUIRED")
        assert error["details"]["bound_issuer"] == first.issuer
        assert second.saw("/token") == []
        chosen = await api.post(f"{SERVERS}/o/oauth/start", json={"issuer": second.issuer})
        assert chosen.status_code == 200, chosen.text
    assert chosen.json()["previous_issuer"] == first.issuer
    assert len(second.saw("/token")) == 1


async def test_the_library_gets_typed_oauth_results_without_a_token(api: httpx2.AsyncClient, center: McpCenter) -> None:
    """issue 16: `center.oauth` answers OAuthStarted / OAuthAuthorized / OAuthForgotten, never a token."""
    async with fakes(challenge_scope="mcp:read") as (authorization, _, resource):
        await create(api, resource.url)
        with anyio.fail_after(STEP_TIMEOUT_S):
            started = await center.oauth.start("o")
            assert isinstance(started, OAuthStarted)
            assert (started.server_id, started.issuer, started.authorized) == ("o", authorization.issuer, False)
            assert started.authorization_url is not None and started.expires_at is not None
            assert started.expires_at.tzinfo is not None and started.client_id_source == "registered"
            async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
                redirect = await browser.get(started.authorization_url)
            assert redirect.status_code == 302, redirect.text
            callback_url = redirect.headers["location"]
            done = await center.oauth.complete_from_url("o", {"callback_url": callback_url})
        assert done == OAuthAuthorized(server_id="o", issuer=authorization.issuer, scopes=("mcp:read",))
        assert done.to_dict() == {
            "server_id": "o",
            "issuer": authorization.issuer,
            "scopes": ["mcp:read"],
            "authorized": True,
        }
        forgotten = await center.oauth.forget("o")
        assert forgotten == OAuthForgotten("o") and forgotten.authorized is False
        assert started.to_dict()["authorization_url"] == started.authorization_url
