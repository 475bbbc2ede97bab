"""Discovery exactly as R-4.2-R-4.4, against fake servers under https host names (in process).

Each test names the SDK deviation (docs/sdk-notes.md#oauth-deviations) it guards against where there
is one, and asserts on what the fake servers saw: a refused location must never have been requested.
"""

from __future__ import annotations

import anyio
import pytest

from mcp_center.auth import UrlPolicy, discover, select_issuer
from mcp_center.auth.discovery import Discovery
from mcp_center.errors import OAuthDiscoveryFailed, OAuthIssuerChoiceRequired
from tests.support.oauth_world import MCP_URL, World, challenge, make_world

pytestmark = pytest.mark.anyio


async def run_discovery(world: World, **options: object) -> Discovery:
    options.setdefault("challenge", challenge(world.resource.base_url + world.resource.prm_path))
    with anyio.fail_after(5):
        async with world.http.client() as client:
            # `options` are discover's keyword arguments, each test passing its own: untyped here.
            return await discover(world.http, client, mcp_url=MCP_URL, policy=world.policy(), **options)  # pyright: ignore[reportArgumentType]


def paths(world: World) -> list[str]:
    return [f"{r.url.host}{r.url.path}" for r in world.transport.requests]


async def test_the_announced_metadata_leads_to_the_issuer_and_its_rfc8414_metadata() -> None:
    world = make_world()
    found = await run_discovery(world)
    assert found.resource == MCP_URL
    assert found.server.issuer == "https://as.example.com"
    assert found.server.token_endpoint == "https://as.example.com/token"
    assert paths(world) == [
        "mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "as.example.com/.well-known/oauth-authorization-server",
    ]


async def test_a_resource_metadata_url_on_another_origin_is_never_fetched() -> None:
    """Dev. 1: discovery ignores it and reads the MCP origin's own well-known document instead."""
    world = make_world()
    found = await run_discovery(world, challenge=challenge("https://evil.example.com/prm"))
    assert world.evil.seen == []
    assert "evil.example.com" not in world.transport.hosts_contacted()
    assert found.server.issuer == "https://as.example.com"


async def test_a_plain_http_resource_metadata_url_for_an_https_server_is_never_fetched() -> None:
    world = make_world()
    await run_discovery(world, challenge=challenge("http://mcp.example.com/.well-known/oauth-protected-resource/mcp"))
    assert all(r.url.scheme == "https" for r in world.transport.requests)


async def test_a_redirect_during_discovery_is_an_error_and_its_target_is_never_requested() -> None:
    """Dev. 6: a 307 is not followed (R-4.2)."""
    world = make_world(prm_redirect="https://evil.example.com/prm")
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "redirect_refused"
    assert world.evil.seen == []


async def test_a_redirect_from_the_authorization_server_metadata_is_an_error_too() -> None:
    world = make_world()
    world.authorization.metadata_redirect = "https://evil.example.com/.well-known/oauth-authorization-server"
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "redirect_refused"
    assert world.evil.seen == []


async def test_several_issuers_on_first_discovery_are_an_explicit_error_naming_them() -> None:
    """Dev. 2: no silent choice (R-4.3)."""
    world = make_world(listed_issuers=["https://as.example.com", "https://as2.example.com"])
    with pytest.raises(OAuthIssuerChoiceRequired) as caught:
        await run_discovery(world)
    assert caught.value.details["issuers"] == ["https://as.example.com", "https://as2.example.com"]
    assert caught.value.code == "OAUTH_ISSUER_CHOICE_REQUIRED"
    assert not any(r.url.host.startswith("as") for r in world.transport.requests)


async def test_a_chosen_issuer_is_used_and_a_bound_issuer_still_listed_is_kept() -> None:
    world = make_world(listed_issuers=["https://as.example.com", "https://as2.example.com"])
    chosen = await run_discovery(world, chosen_issuer="https://as2.example.com")
    assert chosen.server.issuer == "https://as2.example.com"
    bound = await run_discovery(world, bound_issuer="https://as.example.com")
    assert bound.server.issuer == "https://as.example.com"


def test_a_chosen_issuer_that_is_not_listed_is_refused() -> None:
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        select_issuer(["https://as.example.com"], bound=None, chosen="https://evil.example.com")
    assert caught.value.details["rule"] == "issuer_not_listed"


async def test_metadata_naming_another_issuer_is_refused_before_any_registration() -> None:
    """R-4.4: the metadata `issuer` must be the chosen issuer, exactly."""
    world = make_world()
    world.authorization.issuer_override = "https://as.example.com/other"
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "issuer_mismatch"
    assert world.authorization.saw("/register") == []


async def test_an_issuer_differing_only_by_a_trailing_slash_is_still_a_mismatch() -> None:
    world = make_world()
    world.authorization.issuer_override = "https://as.example.com/"
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "issuer_mismatch"


async def test_metadata_without_s256_is_refused_for_the_authorization_code_grant() -> None:
    """Dev. 3: PKCE S256 must be announced (R-4.4)."""
    world = make_world()
    world.authorization.code_challenge_methods = ["plain"]
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "pkce_s256_unsupported"
    world.authorization.code_challenge_methods = None
    with pytest.raises(OAuthDiscoveryFailed):
        await run_discovery(world)
    machine = await run_discovery(world, require_s256=False)
    assert machine.server.issuer == "https://as.example.com"


async def test_a_parent_resource_in_path_aware_metadata_is_refused() -> None:
    """Dev. 5: the PRM must describe the MCP URL itself, not a parent (R-4.3)."""
    world = make_world(resource_override="https://mcp.example.com/")
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "resource_mismatch"
    assert not any(r.url.host == "as.example.com" for r in world.transport.requests)


async def test_a_foreign_resource_in_the_metadata_is_refused() -> None:
    world = make_world(resource_override="https://evil.example.com/mcp")
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "resource_mismatch"


@pytest.mark.parametrize("announced", ["https://mcp.example.com", "https://mcp.example.com/"])
async def test_a_root_document_describing_the_origin_is_refused_with_both_values(announced: str) -> None:
    """R-4.3 exact match (issue 14 item 17): the root well-known document describes another resource than
    the MCP URL; nothing is asked of the authorization server, and the error shows both values."""
    world = make_world(resource_override=announced, prm_path="/.well-known/oauth-protected-resource")
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world, challenge=challenge())
    assert paths(world) == [
        "mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "mcp.example.com/.well-known/oauth-protected-resource",
    ]
    details = caught.value.details
    assert details["rule"] == "resource_mismatch"
    assert (details["field"], details["value"], details["expected"]) == ("resource", announced, MCP_URL)
    assert details["url"] == "https://mcp.example.com/.well-known/oauth-protected-resource"
    assert announced in caught.value.message and MCP_URL in caught.value.message


async def test_a_root_document_describing_the_mcp_url_itself_is_accepted() -> None:
    world = make_world(prm_path="/.well-known/oauth-protected-resource")
    found = await run_discovery(world, challenge=challenge())
    assert found.resource == MCP_URL
    assert found.prm_url == "https://mcp.example.com/.well-known/oauth-protected-resource"


async def test_without_protected_resource_metadata_no_endpoint_is_guessed_on_the_mcp_origin() -> None:
    """Dev. 4: no /authorize, /token or /register on the MCP origin unless the user opted in."""
    world = make_world(prm_path="/nowhere")
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world, challenge=challenge())
    assert caught.value.details["rule"] == "resource_metadata_not_found"
    assert all("/.well-known/" in p for p in paths(world))
    legacy = await run_discovery(world, challenge=challenge(), legacy_fallback=True, require_s256=False)
    assert legacy.server.legacy
    assert legacy.server.token_endpoint == "https://mcp.example.com/token"


async def test_an_issuer_with_a_path_is_tried_rfc8414_then_oidc_insertion_then_oidc_append() -> None:
    world = make_world(listed_issuers=["https://as.example.com/tenant1"])
    world.authorization.issuer_path = "/nowhere"  # metadata is served nowhere the broker looks
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "authorization_server_metadata_not_found"
    assert [p for p in paths(world) if p.startswith("as.")] == [
        "as.example.com/.well-known/oauth-authorization-server/tenant1",
        "as.example.com/.well-known/openid-configuration/tenant1",
        "as.example.com/tenant1/.well-known/openid-configuration",
    ]


async def test_a_plain_http_authorization_server_of_an_https_resource_is_refused() -> None:
    world = make_world(listed_issuers=["http://as.example.com"])
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "url_refused"
    assert all(r.url.scheme == "https" for r in world.transport.requests)


def test_plain_http_is_allowed_only_for_loopback_and_only_for_a_loopback_server() -> None:
    loopback = UrlPolicy.for_server("http://127.0.0.1:9000/mcp")
    remote = UrlPolicy.for_server("https://mcp.example.com/mcp")
    assert loopback.allows("http://localhost:9001/token")
    assert not loopback.allows("http://10.0.0.1/token")
    assert not remote.allows("http://127.0.0.1:9001/token")
    assert remote.allows("https://as.example.com/token")
    for bad in ("https://user:pw@as.example.com/token", "https://as.example.com/token#x", "ftp://as.example.com/"):
        assert not remote.allows(bad)


async def test_a_server_error_during_discovery_stops_it_instead_of_trying_further_locations() -> None:
    world = make_world(prm_status=503)
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "http_status"
    assert paths(world) == ["mcp.example.com/.well-known/oauth-protected-resource/mcp"]


async def test_an_unreachable_authorization_server_is_a_network_error() -> None:
    world = make_world(listed_issuers=["https://down.example.com"])
    with pytest.raises(OAuthDiscoveryFailed) as caught:
        await run_discovery(world)
    assert caught.value.details["rule"] == "network"
