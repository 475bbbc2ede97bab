"""OAuth settings in the configuration: write-only client secrets, the summary and its digest (R-1.4, R-1.5, R-2.1)."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp_center.errors import ConfigInvalid, SecretKeyInvalid
from mcp_center.service import McpCenter

pytestmark = pytest.mark.anyio

SECRET = "oauth-client-secret-value-1"


def body(**auth: Any) -> dict[str, Any]:
    return {
        "id": "o",
        "name": "O",
        "transport": "streamable_http",
        "url": "https://mcp.example.com/mcp",
        "auth": {"kind": "oauth", **auth},
    }


async def test_a_client_secret_given_in_auth_is_stored_as_a_secret_and_never_shown(center: McpCenter) -> None:
    view = (await center.create_server(body(client_id="pre", client_secret=SECRET))).to_dict()
    assert view["auth"]["client_secret"] == {"configured": True}
    assert view["auth"]["private_key"] == {"configured": False}
    assert view["summary"]["auth"]["client_secret"]["configured"] is True
    assert SECRET not in repr(view)
    again = (await center.update_server("o", view)).to_dict()  # the read shape round-trips without losing the secret
    assert again["auth"]["client_secret"] == {"configured": True}
    assert again["digest"] == view["digest"]


@pytest.mark.parametrize(
    "change",
    [
        {"grant": "client_credentials", "client_id": "pre"},
        {"client_id": "other"},
        {"scopes": ["read"]},
        {"client_metadata_url": None, "client_id": None, "legacy_endpoint_fallback": True},
        {"binding": {"resource": "https://mcp.example.com/mcp", "issuer": "https://as.example.com"}},
    ],
)
async def test_every_oauth_setting_is_part_of_the_digest_so_changing_it_needs_a_new_trust(
    center: McpCenter, change: dict[str, Any]
) -> None:
    """R-1.4: auth changes are high-risk."""
    view = (await center.create_server(body(client_id="pre"))).to_dict()
    await center.trust("o", view["digest"])
    auth = {**view["auth"], **change}
    changed = (await center.update_server("o", {"version": view["version"], "auth": auth}, partial=True)).to_dict()
    assert changed["digest"] != view["digest"]
    assert changed["trusted"] is False


async def test_changing_the_client_secret_value_changes_the_digest_through_its_keyed_fingerprint(
    center: McpCenter,
) -> None:
    view = (await center.create_server(body(client_id="pre", client_secret=SECRET))).to_dict()
    first = view["summary"]["auth"]["client_secret"]["fingerprint"]
    changed = (await center.set_secret("o", "oauth", "client_secret", SECRET + "-rotated")).to_dict()
    assert changed["summary"]["auth"]["client_secret"]["fingerprint"] != first
    assert changed["digest"] != view["digest"]


async def test_oauth_secrets_are_refused_where_they_do_not_belong(center: McpCenter) -> None:
    plain = {"id": "p", "name": "P", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}
    await center.create_server(plain)
    with pytest.raises(SecretKeyInvalid):
        await center.set_secret("p", "oauth", "client_secret", SECRET)
    await center.create_server(body())
    with pytest.raises(SecretKeyInvalid):
        await center.set_secret("o", "oauth", "password", SECRET)
    with pytest.raises(ConfigInvalid) as caught:
        await center.create_server({**plain, "id": "q", "secret_values": {"oauth": {"client_secret": SECRET}}})
    assert caught.value.errors[0].code == "SECRET_KIND_INVALID"


async def test_a_private_key_must_be_a_usable_pem_key(center: McpCenter) -> None:
    auth = {"grant": "client_credentials", "client_id": "m", "token_endpoint_auth_method": "private_key_jwt"}
    with pytest.raises(ConfigInvalid) as caught:
        await center.create_server({**body(**auth), "secret_values": {"oauth": {"private_key": "not a key at all"}}})
    assert caught.value.errors[0].code == "PRIVATE_KEY_INVALID"
    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    view = (await center.create_server({**body(**auth), "secret_values": {"oauth": {"private_key": pem}}})).to_dict()
    assert view["auth"]["private_key"] == {"configured": True}


async def test_switching_away_from_oauth_deletes_the_oauth_secrets(center: McpCenter) -> None:
    view = (await center.create_server(body(client_id="pre", client_secret=SECRET))).to_dict()
    switched = (
        await center.update_server("o", {"version": view["version"], "auth": {"kind": "none"}}, partial=True)
    ).to_dict()
    assert "client_secret" not in switched["auth"]
    state = center._store.read()  # pyright: ignore[reportPrivateUsage]
    assert state.secret_ids_of("o") == []
