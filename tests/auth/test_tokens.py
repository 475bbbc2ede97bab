"""Token endpoint client authentication and token responses (RFC 6749 §2.3.1, RFC 7523 §2.2)."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp_center.auth import AuthorizationServer, ClientIdentity, OAuthHttp, UrlPolicy, check_private_key
from mcp_center.auth.tokens import CLIENT_ASSERTION_TYPE, apply_client_auth, request_token
from mcp_center.errors import ConfigInvalid, OAuthTokenFailed

pytestmark = pytest.mark.anyio

ISSUER = "https://as.example.com"
SERVER = AuthorizationServer(issuer=ISSUER, token_endpoint=ISSUER + "/token")


def ec_key() -> tuple[str, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key.public_key()


def test_client_secret_basic_url_encodes_both_parts_and_keeps_the_secret_out_of_the_form() -> None:
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    identity = ClientIdentity("id with:colon", "client_secret_basic", client_secret="s3cr3t/+=&")
    apply_client_auth(identity, form, headers, audience=ISSUER)
    decoded = base64.b64decode(headers["Authorization"].removeprefix("Basic ")).decode()
    assert decoded == "id%20with%3Acolon:s3cr3t%2F%2B%3D%26"
    assert form == {}


def test_client_secret_post_sends_both_in_the_form_and_none_sends_only_the_id() -> None:
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    apply_client_auth(ClientIdentity("cid", "client_secret_post", client_secret="sec"), form, headers, audience=ISSUER)
    assert form == {"client_id": "cid", "client_secret": "sec"}
    assert headers == {}
    public: dict[str, str] = {}
    apply_client_auth(ClientIdentity("cid", "none"), public, headers, audience=ISSUER)
    assert public == {"client_id": "cid"}


def test_a_private_key_jwt_assertion_is_signed_for_the_issuer_with_iss_and_sub_the_client_id() -> None:
    pem, public = ec_key()
    form: dict[str, str] = {}
    apply_client_auth(ClientIdentity("cid", "private_key_jwt", private_key=pem), form, {}, audience=ISSUER)
    assert form["client_assertion_type"] == CLIENT_ASSERTION_TYPE
    claims = jwt.decode(form["client_assertion"], public, algorithms=["ES256"], audience=ISSUER)
    assert claims["iss"] == claims["sub"] == "cid"
    assert claims["exp"] - claims["iat"] == 300
    assert jwt.get_unverified_header(form["client_assertion"])["alg"] == "ES256"


def test_a_private_key_that_is_not_a_pem_key_is_refused_without_quoting_it() -> None:
    with pytest.raises(ConfigInvalid) as caught:
        check_private_key("-----BEGIN PRIVATE KEY-----\nnot-a-key-secret-material\n-----END PRIVATE KEY-----")
    assert caught.value.errors[0].code == "PRIVATE_KEY_INVALID"
    assert "secret-material" not in caught.value.message
    assert check_private_key(ec_key()[0]) == "ES256"


async def token_answer(status: int, body: dict[str, Any] | bytes) -> Any:
    """Send one token request to a MockTransport answering `status`/`body`; return the result or raise."""

    def handle(_request: httpx2.Request) -> httpx2.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx2.Response(status, content=content, headers={"Content-Type": "application/json"})

    http = OAuthHttp(transport=httpx2.MockTransport(handle))
    with anyio.fail_after(5):
        async with http.client() as client:
            return await request_token(
                http, client, SERVER, UrlPolicy(), ClientIdentity("cid"), {"grant_type": "refresh_token"}
            )


async def test_a_bearer_token_response_is_parsed_with_its_expiry_scope_and_refresh_token() -> None:
    tokens = await token_answer(
        200,
        {"access_token": "at-1", "token_type": "bearer", "expires_in": 60, "scope": "a b", "refresh_token": "rt-1"},
    )
    assert tokens.access_token == "at-1"
    assert tokens.refresh_token == "rt-1"
    assert tokens.scope == "a b"
    assert tokens.expires_at is not None
    assert "at-1" not in repr(tokens)
    assert "rt-1" not in repr(tokens)


@pytest.mark.parametrize(
    "body",
    [
        {"access_token": "", "token_type": "Bearer"},
        {"access_token": "at", "token_type": "mac"},
        {"access_token": "at", "token_type": "Bearer", "expires_in": "soon"},
        b"<html>",
    ],
    ids=["empty-token", "not-bearer", "bad-expiry", "not-json"],
)
async def test_a_response_that_is_not_a_bearer_token_response_is_refused(body: dict[str, Any] | bytes) -> None:
    with pytest.raises(OAuthTokenFailed) as caught:
        await token_answer(200, body)
    assert caught.value.details["rule"] == "invalid_response"


async def test_a_refusal_keeps_only_the_error_code_never_the_servers_text() -> None:
    with pytest.raises(OAuthTokenFailed) as caught:
        await token_answer(400, {"error": "invalid_grant", "error_description": "<script>steal()</script>"})
    assert caught.value.details["oauth_error"] == "invalid_grant"
    assert "script" not in caught.value.message
    with pytest.raises(OAuthTokenFailed) as weird:
        await token_answer(400, {"error": "evil <b>code</b> with spaces"})
    assert weird.value.details["oauth_error"] is None


async def test_a_redirect_from_the_token_endpoint_is_never_followed() -> None:
    calls: list[str] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        calls.append(str(request.url))
        return httpx2.Response(307, headers={"Location": "https://evil.example.com/token"})

    http = OAuthHttp(transport=httpx2.MockTransport(handle))
    async with http.client() as client:
        with pytest.raises(OAuthTokenFailed):
            await request_token(http, client, SERVER, UrlPolicy(), ClientIdentity("cid"), {"grant_type": "x"})
    assert calls == [ISSUER + "/token"]
