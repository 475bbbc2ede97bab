"""Issue 14: answers a user can act on — a capability the server does not offer, a refused code, a
metadata document for another resource, a refused refresh token, discovery and registration errors
that name where, what and what to do (R-4.3, R-4.7, R-4.8, R-7.3). Items 16 to 19, through the REST API
against the fake OAuth servers of `tests/fakes/oauth.py` and our quirky stdio server, on loopback."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import pytest

from mcp_center.config import Settings
from mcp_center.runtime import manager as manager_module
from mcp_center.transports.backoff import Backoff
from tests.hostile._support import Host, quirky_body, running_host
from tests.service.test_oauth import SERVERS, call, create, fakes, oauth_ids, ready, wait_state
from tests.support.api import assert_error, open_api
from tests.support.fakes.oauth import FakeAuthorizationServer
from tests.support.fakes.streamable_http import ECHO_TOOL
from tests.support.loopback import NO_TLS

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


# ----- item 16 ---------------------------------------------------------------------------------------


async def test_reading_a_resource_of_a_server_that_offers_none_is_a_4xx_without_asking_it(host: Host) -> None:
    """Item 16: MCP_CAPABILITY_NOT_OFFERED (404) names the capability; no resources/read was sent."""
    await host.ready(quirky_body("toolsonly", {"tools": [ECHO_TOOL]}))
    answer = await host.admin.post("/api/resources/read", json={"server_id": "toolsonly", "uri": "file:///etc/hosts"})
    error = assert_error(answer, 404, "MCP_CAPABILITY_NOT_OFFERED")
    assert error["details"] == {"server_id": "toolsonly", "capability": "resources"}
    logs = (await host.admin.get(f"{SERVERS}/toolsonly/logs")).json()
    assert "resources/read" not in {entry["method"] for entry in logs["requests"]}


async def test_a_code_the_authorization_server_rejects_is_a_4xx_naming_the_reason(settings: Settings) -> None:
    """Item 16: the callback answers 422 OAUTH_CALLBACK_INVALID (reason code_rejected, the OAuth error),
    not 502; the browser page says the same with a 400."""
    async with fakes() as (authorization, _, resource), open_api(settings) as api:
        await create(api, resource.url)
        authorization.code_error = "invalid_grant"
        for accept in ("application/json", "text/html"):
            started = (await api.post(f"{SERVERS}/o/oauth/start")).json()
            async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
                location = httpx2.URL((await browser.get(started["authorization_url"])).headers["location"])
            answer = await api.get(location.path, params=dict(location.params), headers={"Accept": accept})
            if accept == "application/json":
                error = assert_error(answer, 422, "OAUTH_CALLBACK_INVALID")
                assert error["details"]["reason"] == "code_rejected"
                assert error["details"]["oauth_error"] == "invalid_grant"
                assert error["details"]["status"] == 400
            else:
                assert answer.status_code == 400
                assert "invalid_grant" in answer.text and "OAUTH_CALLBACK_INVALID" in answer.text


# ----- item 17 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("announced_path", ["/", ""])
async def test_root_metadata_for_the_origin_is_refused_and_nothing_is_registered(
    settings: Settings, announced_path: str
) -> None:
    """Item 17: after the path-aware document answered 404, the root one says `resource: http://HOST:PORT/`
    for the configured `.../mcp`: refused with both values shown, no registration, no login."""
    async with fakes(prm_path="/.well-known/oauth-protected-resource") as (authorization, _, resource):
        origin = resource.base_url + announced_path
        resource.resource_override = origin
        async with open_api(settings) as api:
            await create(api, resource.url)
            started = await api.post(f"{SERVERS}/o/oauth/start")
        error = assert_error(started, 502, "OAUTH_DISCOVERY_FAILED")
        assert error["details"]["rule"] == "resource_mismatch"
        assert error["details"]["value"] == origin and error["details"]["expected"] == resource.url
        assert error["details"]["url"] == f"{resource.base_url}/.well-known/oauth-protected-resource"
        assert repr(origin) in error["message"] and repr(resource.url) in error["message"]
        assert authorization.saw("/register") == []
        assert authorization.saw("/authorize") == []
        assert authorization.seen == []


# ----- item 18 ---------------------------------------------------------------------------------------


async def test_a_refresh_refused_with_400_ends_the_refresh_token_and_it_is_never_presented_again(
    settings: Settings,
) -> None:
    """Item 18: `400 {"error": "invalid_request"}` clears the refresh token (state: authorization
    required); later calls and a restart do not present it again."""
    async with fakes() as (authorization, _, resource):
        async with open_api(settings) as api:
            await ready(api, resource.url)
        before = len(oauth_ids(settings))
        authorization.revoke_access_tokens()
        authorization.refresh_error = "invalid_request"
        async with open_api(settings) as api:
            status = await wait_state(api, "error")
            assert status["error"]["code"] == "OAUTH_AUTHORIZATION_REQUIRED"
            assert status["error"]["details"]["hint"] == "refresh_refused"
            assert status["next_attempt_at"] is None  # only a user can help now
            view = (await api.get(f"{SERVERS}/o")).json()
            assert view["oauth"]["needs"] == "authorization"
            refused = await call(api, "echo")
            assert refused.status_code == 409, refused.text
        assert len(oauth_ids(settings)) == before - 1  # the grant (refresh token) is gone
        async with open_api(settings) as api:  # a restart
            await wait_state(api, "error")
            await call(api, "echo")
    refreshes = [
        s for s in authorization.seen if s.path.endswith("/token") and s.form.get("grant_type") == "refresh_token"
    ]
    assert len(refreshes) == 1


async def test_a_refresh_that_meets_a_5xx_keeps_the_token_and_is_retried_with_backoff(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 18: a 503 says nothing about the token: it is kept, the status shows the next attempt, and
    the refresh succeeds by itself once the authorization server is back."""
    monkeypatch.setattr(manager_module, "RECONNECT", Backoff(floor_s=0.2, cap_s=0.5))
    async with fakes() as (authorization, _, resource):
        async with open_api(settings) as api:
            await ready(api, resource.url)
        before = len(oauth_ids(settings))
        authorization.revoke_access_tokens()
        authorization.refresh_status = 503
        async with open_api(settings) as api:
            status = await wait_state(api, "error")
            assert status["error"]["details"]["hint"] == "renewal_failed"
            assert status["error"]["details"]["retryable"] is True
            assert status["next_attempt_at"] is not None
            assert len(oauth_ids(settings)) == before
            authorization.refresh_status = None
            await wait_state(api, "ready")
            called = await call(api, "echo")
    assert called.status_code == 200, called.text


# ----- item 19 ---------------------------------------------------------------------------------------


async def test_a_registration_error_names_the_endpoint_the_field_the_value_and_what_to_do(settings: Settings) -> None:
    """Item 19: an empty client_id from registration."""
    authorization = FakeAuthorizationServer(registered_client_id=lambda: "")
    async with fakes(authorization) as (_, _, resource), open_api(settings) as api:
        await create(api, resource.url)
        started = await api.post(f"{SERVERS}/o/oauth/start")
    error = assert_error(started, 502, "OAUTH_REGISTRATION_FAILED")
    details = error["details"]
    assert details["url"] == f"{authorization.issuer}/register"
    assert (details["field"], details["value"]) == ("client_id", "")
    assert details["url"] in error["message"] and "auth.client_id" in error["message"]


async def test_discovery_errors_name_the_document_the_field_the_value_and_what_to_do(settings: Settings) -> None:
    """Item 19: an issuer that is not the one listed; then authorization server metadata without S256."""
    authorization = FakeAuthorizationServer(issuer_override="https://impostor.example")
    async with fakes(authorization) as (_, _, resource), open_api(settings) as api:
        await create(api, resource.url)
        mismatch = assert_error(await api.post(f"{SERVERS}/o/oauth/start"), 502, "OAUTH_DISCOVERY_FAILED")
        authorization.issuer_override = None
        authorization.code_challenge_methods = ["plain"]
        no_s256 = assert_error(await api.post(f"{SERVERS}/o/oauth/start"), 502, "OAUTH_DISCOVERY_FAILED")
    metadata_url = f"{authorization.issuer}/.well-known/oauth-authorization-server"
    assert mismatch["details"]["url"] == metadata_url
    assert (mismatch["details"]["field"], mismatch["details"]["value"]) == ("issuer", "https://impostor.example")
    assert "impostor.example" in mismatch["message"] and metadata_url in mismatch["message"]
    assert no_s256["details"]["url"] == metadata_url
    assert (no_s256["details"]["field"], no_s256["details"]["value"]) == ("code_challenge_methods_supported", ["plain"])
    assert "must support it" in no_s256["message"]


async def test_no_metadata_anywhere_lists_every_location_tried(settings: Settings) -> None:
    """Item 19: which URLs were asked, and what the user can do."""
    async with fakes(prm_path="/nowhere", resource_metadata_override="") as (_, _, resource), open_api(settings) as api:
        await create(api, resource.url)
        error = assert_error(await api.post(f"{SERVERS}/o/oauth/start"), 502, "OAUTH_DISCOVERY_FAILED")
    assert error["details"]["tried"] == [
        f"{resource.base_url}/.well-known/oauth-protected-resource/mcp",
        f"{resource.base_url}/.well-known/oauth-protected-resource",
    ]
    assert "legacy_endpoint_fallback" in error["message"]
