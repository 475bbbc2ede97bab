"""Token endpoint requests: client authentication, grants, and parsing token responses (RFC 6749 §3.2, §5).

Client authentication methods (RFC 6749 §2.3.1, RFC 7591 §2, RFC 7523 §2.2): `none` (client_id in the
form), `client_secret_basic` (HTTP Basic with the URL-encoded id and secret), `client_secret_post`
(both in the form), `private_key_jwt` (a JWT signed with the configured private key: `iss` = `sub` =
client id, `aud` = the issuer, five minutes of validity, a random `jti`).

Threats: a token response redirect carrying the code or refresh token elsewhere (redirects are
returned, never followed, and fail here); an authorization server's error text reaching the user
(only the RFC 6749 error code, restricted to a safe alphabet, is kept); secrets in a `repr`.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import httpx2

from mcp_center.auth.discovery import AuthorizationServer
from mcp_center.auth.http import OAuthHttp, OAuthResponse
from mcp_center.auth.urls import UrlPolicy, origin_of
from mcp_center.errors import ConfigInvalid, FieldError, OAuthTokenFailed

__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "ID_JAG_TOKEN_TYPE",
    "ClientIdentity",
    "TokenSet",
    "check_private_key",
    "exchange_identity_assertion",
    "request_token",
]

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# RFC 8693 / SEP-990 identifiers (URNs, not credentials).
TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105
ID_JAG_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"  # noqa: S105
ASSERTION_LIFETIME_S: Final = 300
"""Seconds a `private_key_jwt` client assertion is valid."""
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class ClientIdentity:
    """Who this host is at one authorization server. Secrets are excluded from `repr`.

    Attributes:
        client_id: Configured, registered (RFC 7591) or a CIMD URL.
        auth_method: `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`.
        client_secret: For the two `client_secret_*` methods.
        private_key: PEM, for `private_key_jwt`.
        signing_algorithm: JWT `alg` for `private_key_jwt`; None infers it from the key.
        source: `configured`, `registered` or `cimd` (shown in the server view).
        redirect_uri: For a registered client, the redirect URI it was registered with.
        registered_scope: For a registered client, the scope it was registered for.
    """

    client_id: str
    auth_method: str = "none"
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str | None = None
    source: str = "configured"
    redirect_uri: str | None = None
    """A registered client's redirect URI (a registration for another base URL is not reused)."""
    registered_scope: str | None = None
    """The scope a registration was made for (None: unknown or unrestricted)."""


@dataclass(frozen=True)
class TokenSet:
    """A token response. Only `refresh_token` is ever persisted (encrypted); the rest lives in memory.

    Attributes:
        access_token: The bearer token.
        expires_at: Wall-clock seconds (time.time) when it expires, or None when unknown.
        scope: The granted scope string, or None when the response did not say.
        refresh_token: A refresh token, or None.
    """

    access_token: str = field(repr=False)
    expires_at: float | None = None
    scope: str | None = None
    refresh_token: str | None = field(default=None, repr=False)


def check_private_key(pem: str, algorithm: str | None = None) -> str:
    """Validate a PEM private key for `private_key_jwt` and return the JWT algorithm to use.

    Args:
        pem: PKCS#8 or traditional PEM, unencrypted.
        algorithm: A configured algorithm, or None to infer ES256 (EC P-256), ES384 (P-384) or RS256.
    Raises:
        ConfigInvalid: not a usable key (code PRIVATE_KEY_INVALID; the message never quotes it).
    """
    # `cryptography` loads here, for a server configured with a private key only (R-8.3: idle RSS).
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise ConfigInvalid(
            [FieldError("auth.private_key", "PRIVATE_KEY_INVALID", "must be an unencrypted PEM private key")]
        ) from None
    if algorithm is not None:
        return algorithm
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return "ES384" if key.curve.name == "secp384r1" else "ES256"
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    raise ConfigInvalid([FieldError("auth.private_key", "PRIVATE_KEY_INVALID", "must be an EC or RSA private key")])


def _client_assertion(identity: ClientIdentity, audience: str) -> str:
    """RFC 7523 §2.2 client assertion for `audience` (the authorization server's issuer)."""
    assert identity.private_key is not None, "private_key_jwt needs a private key"
    algorithm = check_private_key(identity.private_key, identity.signing_algorithm)
    now = int(time.time())
    claims = {
        "iss": identity.client_id,
        "sub": identity.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_S,
        "jti": uuid.uuid4().hex,
    }
    # PyJWT (with cryptography's serialization stack, about 2 MB resident) is loaded by the first
    # `private_key_jwt` client only (R-8.3: idle RSS).
    import jwt

    return jwt.encode(claims, identity.private_key, algorithm=algorithm)


def apply_client_auth(
    identity: ClientIdentity, form: dict[str, str], headers: dict[str, str], *, audience: str
) -> None:
    """Add client authentication for `identity.auth_method` to a token request's form and headers."""
    method = identity.auth_method
    if method == "client_secret_basic" and identity.client_secret is not None:
        pair = f"{quote(identity.client_id, safe='')}:{quote(identity.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return
    form["client_id"] = identity.client_id
    if method == "client_secret_post" and identity.client_secret is not None:
        form["client_secret"] = identity.client_secret
    elif method == "private_key_jwt":
        form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
        form["client_assertion"] = _client_assertion(identity, audience)


def _oauth_error(response: OAuthResponse) -> str | None:
    value = response.json.get("error") if response.json else None
    return value if isinstance(value, str) and _ERROR_CODE.fullmatch(value) else None


def _refused(response: OAuthResponse, *, what: str, url: str) -> OAuthTokenFailed:
    error = _oauth_error(response)
    if response.is_redirect:
        reason = "a redirect (never followed)"
    else:
        reason = f"HTTP {response.status}" + (f", {error}" if error else "")
    return OAuthTokenFailed(
        f"the {what} at {origin_of(url)} refused the request ({reason})",
        details={"oauth_error": error, "status": response.status, "origin": origin_of(url)},
    )


async def _post_form(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    url: str,
    policy: UrlPolicy,
    form: Mapping[str, str],
    headers: Mapping[str, str],
    *,
    what: str,
) -> OAuthResponse:
    try:
        response = await http.post(client, url, policy, what=what, form=form, headers=headers)
    except httpx2.HTTPError as exc:
        raise OAuthTokenFailed(
            f"cannot reach the {what} at {origin_of(url)} ({type(exc).__name__})",
            details={"oauth_error": None, "rule": "network", "origin": origin_of(url)},
        ) from None
    if response.status != 200:
        raise _refused(response, what=what, url=url)
    return response


async def request_token(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    server: AuthorizationServer,
    policy: UrlPolicy,
    identity: ClientIdentity,
    form: Mapping[str, str],
) -> TokenSet:
    """POST a grant to the server's token endpoint (the bound one, R-4.7) with client authentication.

    Args:
        form: The grant parameters (`grant_type`, `code`, `refresh_token`, `resource`, `scope`, ...).
    Returns:
        The parsed token response.
    Raises:
        OAuthTokenFailed: a non-200 answer (`details.oauth_error`), a redirect, a network failure, or
            a response that is not a bearer token response.
        OAuthDiscoveryFailed: the token endpoint breaks the URL policy (nothing was sent).
    """
    data = dict(form)
    headers: dict[str, str] = {}
    apply_client_auth(identity, data, headers, audience=server.issuer)
    response = await _post_form(http, client, server.token_endpoint, policy, data, headers, what="token endpoint")
    return _parse_token_response(response, url=server.token_endpoint)


def _parse_token_response(response: OAuthResponse, *, url: str) -> TokenSet:
    body: dict[str, Any] = response.json or {}
    access = body.get("access_token")
    token_type = body.get("token_type")
    expires_in = body.get("expires_in")
    scope = body.get("scope")
    refresh = body.get("refresh_token")
    if (
        not isinstance(access, str)
        or not access
        or not isinstance(token_type, str)
        or token_type.lower() != "bearer"
        or (expires_in is not None and (not isinstance(expires_in, int | float) or isinstance(expires_in, bool)))
        or (scope is not None and not isinstance(scope, str))
        or (refresh is not None and (not isinstance(refresh, str) or not refresh))
    ):
        raise OAuthTokenFailed(
            f"the token endpoint at {origin_of(url)} sent a response that is not a bearer token response",
            details={"oauth_error": None, "rule": "invalid_response", "origin": origin_of(url)},
        )
    expires_at = time.time() + float(expires_in) if expires_in is not None else None
    return TokenSet(access_token=access, expires_at=expires_at, scope=scope, refresh_token=refresh)


async def exchange_identity_assertion(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    *,
    token_endpoint: str,
    policy: UrlPolicy,
    id_token: str,
    idp_client_id: str | None,
    audience: str,
    resource: str,
    scope: str | None,
) -> str:
    """SEP-990 leg 1: exchange an identity provider ID token for an ID-JAG (RFC 8693 token exchange).

    Args:
        token_endpoint: The identity provider's token endpoint (configured, `auth.idp_token_endpoint`).
        id_token: The user's ID token at the identity provider (a configured secret).
        idp_client_id: This host's client id at the identity provider, sent as `client_id`.
        audience: The MCP authorization server's issuer (the ID-JAG `aud`).
        resource: The canonical MCP resource (the ID-JAG `resource`).
    Returns:
        The ID-JAG (a JWT), presented next with the jwt-bearer grant.
    Raises:
        OAuthTokenFailed: the identity provider refused or answered something else.
    """
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
    }
    if idp_client_id is not None:
        form["client_id"] = idp_client_id
    if scope:
        form["scope"] = scope
    response = await _post_form(http, client, token_endpoint, policy, form, {}, what="identity provider token endpoint")
    body = response.json or {}
    assertion = body.get("access_token")
    issued = body.get("issued_token_type")
    if not isinstance(assertion, str) or not assertion or (issued is not None and issued != ID_JAG_TOKEN_TYPE):
        raise OAuthTokenFailed(
            f"the identity provider at {origin_of(token_endpoint)} did not issue an ID-JAG",
            details={"oauth_error": None, "rule": "invalid_response", "origin": origin_of(token_endpoint)},
        )
    return assertion
