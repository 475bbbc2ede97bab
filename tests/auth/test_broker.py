"""The broker's interactive flow (R-4.1, R-4.5, R-4.8, R-4.9) against in-process fake servers.

The browser is played by following the authorize URL through the same in-process transport; the
broker's `complete` is then called with the redirect's query, as the callback route does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.auth import (
    MAX_CLIENT_ID_CHARS,
    PENDING_TTL_S,
    AuthorizationStart,
    Completion,
    OAuthBroker,
    valid_client_id,
)
from mcp_center.config import AuthOAuth, parse_server_config
from mcp_center.errors import OAuthCallbackInvalid, OAuthRegistrationFailed
from mcp_center.secrets import Redactor, SecretCipher
from mcp_center.store import JsonStore, ServerRecord
from tests.support.oauth_world import MCP_URL, REDIRECT_URI, World, make_broker, make_world, target

pytestmark = pytest.mark.anyio


def seed(data_dir: Path, auth: dict[str, Any] | None = None) -> None:
    """Store a server record for the broker's vault guard (the binding must still be current)."""
    config = parse_server_config(
        {"id": "srv", "name": "Srv", "transport": "streamable_http", "url": MCP_URL, "auth": auth or {"kind": "oauth"}}
    )
    now = datetime.now(UTC)
    with JsonStore(data_dir).transaction() as state:
        state.servers["srv"] = ServerRecord(config=config, version=1, created_at=now, updated_at=now)


async def browse(world: World, started: AuthorizationStart) -> dict[str, str]:
    """Follow the authorize URL like a browser that stops at our redirect URI; return its query."""
    assert started.authorization_url is not None
    async with httpx2.AsyncClient(transport=world.transport) as browser:
        answer = await browser.get(started.authorization_url)
    assert answer.status_code == 302, answer.text
    location = httpx2.URL(answer.headers["location"])
    assert str(location.copy_with(query=None)) == REDIRECT_URI
    return dict(location.params)


async def authorize(world: World, broker: OAuthBroker, auth: AuthOAuth | None = None, **secrets: str) -> Completion:
    with anyio.fail_after(5):
        started = await broker.start(target(auth, **secrets))
        query = await browse(world, started)
        return await broker.complete(state=query.get("state"), code=query.get("code"), iss=query.get("iss"))


def query_of(started: AuthorizationStart) -> dict[str, str]:
    assert started.authorization_url is not None
    return dict(httpx2.URL(started.authorization_url).params)


async def test_start_sends_pkce_s256_a_fresh_state_the_resource_and_the_challenged_scope(tmp_path: Path) -> None:
    world = make_world(challenge_scope="mcp:read")
    broker = make_broker(world, tmp_path)
    started = await broker.start(target())
    query = query_of(started)
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 43
    assert query["resource"] == MCP_URL
    assert query["scope"] == "mcp:read"
    assert query["redirect_uri"] == REDIRECT_URI
    assert started.issuer == "https://as.example.com"
    assert started.scopes == ("mcp:read",)
    other = await broker.start(target())
    assert query_of(other)["state"] != query["state"]
    assert query_of(other)["code_challenge"] != query["code_challenge"]


async def test_the_probe_carries_no_credentials_and_creates_no_session(tmp_path: Path) -> None:
    world = make_world()
    broker = make_broker(world, tmp_path)
    await broker.start(target())
    probe = world.resource.seen[0]
    assert probe.path == "/mcp"
    assert "authorization" not in probe.headers
    assert b'"ping"' in probe.body


@pytest.mark.parametrize(
    ("challenge_scope", "prm_scopes", "configured", "expected"),
    [
        ("mcp:read", ["a", "b"], ["c"], "mcp:read"),
        (None, ["a", "b"], ["c"], "a b"),
        (None, None, ["c"], "c"),
        (None, None, None, None),
    ],
)
async def test_the_challenge_scope_wins_then_protected_resource_scopes_then_configured_scopes(
    tmp_path: Path,
    challenge_scope: str | None,
    prm_scopes: list[str] | None,
    configured: list[str] | None,
    expected: str | None,
) -> None:
    """R-4.5."""
    world = make_world(challenge_scope=challenge_scope, scopes_supported=prm_scopes)
    started = await make_broker(world, tmp_path).start(target(AuthOAuth(scopes=configured)))
    assert query_of(started).get("scope") == expected


async def test_offline_access_is_added_when_the_authorization_server_lists_it(tmp_path: Path) -> None:
    """SEP-2207: a refresh token spares later logins; never requested when not listed."""
    world = make_world(challenge_scope="mcp:read")
    world.authorization.scopes_supported = ["mcp:read", "offline_access"]
    query = query_of(await make_broker(world, tmp_path).start(target()))
    assert query["scope"] == "mcp:read offline_access"
    assert query["prompt"] == "consent"


async def test_the_code_is_exchanged_with_the_verifier_and_resource_and_the_state_is_single_use(tmp_path: Path) -> None:
    seed(tmp_path)
    world = make_world(challenge_scope="mcp:read")
    broker = make_broker(world, tmp_path)
    started = await broker.start(target())
    query = await browse(world, started)
    completion = await broker.complete(state=query["state"], code=query["code"])
    assert completion.binding.issuer == "https://as.example.com"
    assert completion.binding.resource == MCP_URL
    assert completion.refresh_token is not None
    exchange = world.authorization.saw("/token")[-1].form
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["resource"] == MCP_URL
    assert len(exchange["code_verifier"]) >= 43
    with pytest.raises(OAuthCallbackInvalid) as caught:
        await broker.complete(state=query["state"], code=query["code"])
    assert caught.value.details["reason"] == "state_unknown"
    assert len(world.authorization.saw("/token")) == 1


async def test_an_unknown_state_is_refused_without_contacting_anyone(tmp_path: Path) -> None:
    world = make_world()
    broker = make_broker(world, tmp_path)
    with pytest.raises(OAuthCallbackInvalid) as caught:
        await broker.complete(state="forged", code="code-1")
    assert caught.value.code == "OAUTH_CALLBACK_INVALID"
    assert world.transport.requests == []


async def test_an_expired_authorization_is_refused(tmp_path: Path) -> None:
    world = make_world()
    now = [1_000_000.0]
    broker = OAuthBroker(
        store=JsonStore(tmp_path),
        cipher=SecretCipher(b"k" * 32),
        redactor=Redactor(),
        redirect_uri=REDIRECT_URI,
        http=world.http,
        clock=lambda: now[0],
    )
    query = await browse(world, await broker.start(target()))
    now[0] += PENDING_TTL_S + 1
    with pytest.raises(OAuthCallbackInvalid) as caught:
        await broker.complete(state=query["state"], code=query["code"])
    assert caught.value.details["reason"] == "state_unknown"
    assert world.authorization.saw("/token") == []


async def test_an_iss_naming_another_issuer_is_refused_and_a_missing_announced_one_too(tmp_path: Path) -> None:
    """RFC 9207 (mix-up defence)."""
    world = make_world()
    broker = make_broker(world, tmp_path)
    query = await browse(world, await broker.start(target()))
    with pytest.raises(OAuthCallbackInvalid) as caught:
        await broker.complete(state=query["state"], code=query["code"], iss="https://evil.example.com")
    assert caught.value.details["reason"] == "iss_mismatch"
    world.authorization.send_iss = True
    query = await browse(world, await broker.start(target()))
    assert query["iss"] == "https://as.example.com"
    with pytest.raises(OAuthCallbackInvalid):
        await broker.complete(state=query["state"], code=query["code"])
    assert world.authorization.saw("/token") == []


async def test_an_error_from_the_authorization_server_is_reported_without_its_text(tmp_path: Path) -> None:
    world = make_world()
    broker = make_broker(world, tmp_path)
    query = await browse(world, await broker.start(target()))
    with pytest.raises(OAuthCallbackInvalid) as caught:
        await broker.complete(state=query["state"], code=None, error="access_denied")
    assert caught.value.details["reason"] == "authorization_denied"
    assert caught.value.details["oauth_error"] == "access_denied"


@pytest.mark.parametrize(
    "client_id", ["", "x" * 10_000, 42, None, "line\nbreak"], ids=["empty", "10kB", "number", "null", "control"]
)
async def test_a_registration_with_an_unusable_client_id_is_refused_before_it_is_stored_or_used(
    tmp_path: Path, client_id: object
) -> None:
    """R-4.8: non-empty, printable, at most 255 characters."""
    world = make_world()
    world.authorization.registered_client_id = lambda: client_id
    broker = make_broker(world, tmp_path)
    with pytest.raises(OAuthRegistrationFailed) as caught:
        await broker.start(target())
    assert caught.value.details["rule"] == "client_id_invalid"
    assert world.authorization.saw("/authorize") == []
    assert JsonStore(tmp_path).read().secrets == {}
    assert broker.status(target(), JsonStore(tmp_path).read())["pending"] is False


def test_client_ids_up_to_255_printable_characters_are_valid() -> None:
    assert valid_client_id("c" * MAX_CLIENT_ID_CHARS) == "c" * MAX_CLIENT_ID_CHARS
    assert valid_client_id("c" * (MAX_CLIENT_ID_CHARS + 1)) is None


async def test_a_configured_client_is_used_without_registration_and_authenticates_with_basic(tmp_path: Path) -> None:
    world = make_world()
    world.authorization.preregistered = {"pre-client": "pre-secret-value"}
    broker = make_broker(world, tmp_path)
    completion = await authorize(world, broker, AuthOAuth(client_id="pre-client"), client_secret="pre-secret-value")
    assert completion.client is None
    assert world.authorization.saw("/register") == []
    token_request = world.authorization.saw("/token")[-1]
    assert token_request.headers["authorization"].startswith("Basic ")
    assert "client_secret" not in token_request.form


async def test_a_client_metadata_document_is_used_only_when_configured_and_supported(tmp_path: Path) -> None:
    """R-4.10: the CIMD URL is the client id only when the user configured one and the server supports CIMD."""
    world = make_world()
    broker = make_broker(world, tmp_path)
    cimd = "https://host.example.com/oauth/client-metadata.json"
    unsupported = await broker.start(target(AuthOAuth(client_metadata_url=cimd)))
    assert query_of(unsupported)["client_id"] != cimd
    assert len(world.authorization.saw("/register")) == 1
    world.authorization.cimd_supported = True
    supported = await broker.start(target(AuthOAuth(client_metadata_url=cimd)))
    assert query_of(supported)["client_id"] == cimd
    assert supported.client_id_source == "cimd"
    unconfigured = await make_broker(world, tmp_path / "other").start(target())
    assert query_of(unconfigured)["client_id"] != cimd
    assert len(world.authorization.saw("/register")) == 2


async def test_the_status_says_what_is_needed_and_never_holds_a_token(tmp_path: Path) -> None:
    seed(tmp_path)
    world = make_world()
    broker = make_broker(world, tmp_path)
    before = broker.status(target(), JsonStore(tmp_path).read())
    assert before["needs"] == "authorization"
    assert before["authorized"] is False
    completion = await authorize(world, broker)
    assert completion.refresh_token is not None
    access = next(iter(world.authorization.access_tokens))
    # A config's binding as JSON gives it; pydantic validates the dict into an OAuthBinding.
    bound = target(AuthOAuth(binding={"resource": MCP_URL, "issuer": completion.binding.issuer}))  # pyright: ignore[reportArgumentType]
    with JsonStore(tmp_path).transaction() as state:
        broker.vault.write(state, completion.binding, server=completion.server, grant=(completion.refresh_token, None))
    after = broker.status(bound, JsonStore(tmp_path).read())
    assert after["authorized"] is True
    assert after["needs"] is None
    assert after["access_token_in_memory"] is True
    rendered = repr(after)
    assert access not in rendered
    assert completion.refresh_token not in rendered


async def test_a_stored_registration_is_reused_only_for_the_same_redirect_uri_and_registered_scopes(
    tmp_path: Path,
) -> None:
    seed(tmp_path)
    world = make_world(challenge_scope="mcp:read")
    broker = make_broker(world, tmp_path)
    completion = await authorize(world, broker)
    assert completion.client is not None
    with JsonStore(tmp_path).transaction() as state:
        broker.vault.write(state, completion.binding, server=completion.server, client=completion.client)
    await broker.start(target())
    assert len(world.authorization.saw("/register")) == 1  # same redirect URI and scopes: reused
    moved = OAuthBroker(
        store=JsonStore(tmp_path),
        cipher=SecretCipher(b"k" * 32),
        redactor=Redactor(),
        redirect_uri="https://public.example.com/oauth/callback",
        http=world.http,
    )
    await moved.start(target())
    assert len(world.authorization.saw("/register")) == 2  # another public URL: registered again
    world.resource.challenge_scope = "mcp:read mcp:write"
    broker.drop_server("srv")  # forget the remembered challenge: the next start probes again
    await broker.start(target())
    assert len(world.authorization.saw("/register")) == 3  # scopes beyond the registration: registered again


async def test_a_configured_secret_goes_in_the_form_when_the_server_offers_only_client_secret_post(
    tmp_path: Path,
) -> None:
    world = make_world()
    world.authorization.preregistered = {"pre-client": "pre-secret-value"}
    world.authorization.auth_methods = ["client_secret_post"]
    await authorize(
        world, make_broker(world, tmp_path), AuthOAuth(client_id="pre-client"), client_secret="pre-secret-value"
    )
    token_request = world.authorization.saw("/token")[-1]
    assert "authorization" not in token_request.headers
    assert token_request.form["client_secret"] == "pre-secret-value"
