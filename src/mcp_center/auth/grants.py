"""What the broker asks for and how: the unauthenticated probe, scope selection (R-4.5), machine grants.

Machine grants obtain tokens without a browser, so the runtime may run them in the background:
`client_credentials` (SEP-1046; client secret or `private_key_jwt`) and `cross_app_access` (SEP-990:
the identity provider's ID token is exchanged for an ID-JAG, RFC 8693, which is presented to the
authorization server with the jwt-bearer grant, RFC 7523). The token request always carries the
RFC 8707 `resource` of the MCP server.
"""

from __future__ import annotations

import logging
from typing import Final

import httpx2
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from mcp_center.auth.discovery import AuthorizationServer, Challenge, Discovery
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.target import OAuthTarget
from mcp_center.auth.tokens import TokenSet, exchange_identity_assertion, request_token
from mcp_center.errors import ConfigInvalid, FieldError
from mcp_center.models import TransportKind
from mcp_center.secrets import Redactor

__all__ = ["OFFLINE_ACCESS", "machine_grant", "missing_secret", "probe_challenge", "select_scope"]

logger = logging.getLogger(__name__)

OFFLINE_ACCESS: Final = "offline_access"
PROBE_REQUEST_ID: Final = "mcp-center-oauth-probe"


async def probe_challenge(http: OAuthHttp, client: httpx2.AsyncClient, target: OAuthTarget) -> Challenge | None:
    """Ask the MCP endpoint, without credentials, for its 401/403 challenge (only on a user action).

    Streamable HTTP gets a JSON-RPC `ping` POST (no `initialize`, so no session is created), legacy SSE
    a GET; the body of the answer is never read.

    Returns:
        The challenge, or None when the server answered anything else or could not be reached
        (discovery then proceeds without one and reports its own error).
    """
    try:
        if target.transport is TransportKind.SSE:
            response = await http.status_only(
                client, "GET", target.url, target.policy, what="MCP server", headers={"Accept": "text/event-stream"}
            )
        else:
            response = await http.status_only(
                client,
                "POST",
                target.url,
                target.policy,
                what="MCP server",
                headers={"Accept": "application/json, text/event-stream"},
                json_body={"jsonrpc": "2.0", "id": PROBE_REQUEST_ID, "method": "ping"},
            )
    except httpx2.HTTPError:
        logger.info("oauth.probe_failed", extra={"server_id": target.server_id})
        return None
    if response.status_code in (401, 403):
        return Challenge.from_response(response)
    return None


def select_scope(
    target: OAuthTarget,
    discovery: Discovery,
    challenge: Challenge | None,
    step_up_scopes: str | None,
    granted: str | None,
) -> str | None:
    """The scope string to request (R-4.5), or None to omit the parameter.

    The challenge scope is authoritative; without one, the PRM `scopes_supported`; without those, the
    configured `auth.scopes`. A step-up asks for the union of what was granted and what the 403
    challenged (SEP-2350). `offline_access` is added when the authorization server lists it
    (SEP-2207): a refresh token spares the user later logins.
    """
    if step_up_scopes is not None:
        scope = union_scopes(granted, step_up_scopes)
    elif challenge is not None and challenge.scope:
        scope = challenge.scope
    elif discovery.prm_scopes:
        scope = " ".join(discovery.prm_scopes)
    elif target.auth.scopes:
        scope = " ".join(target.auth.scopes)
    else:
        scope = None
    supported = discovery.server.scopes_supported or ()
    if scope is not None and target.interactive and OFFLINE_ACCESS in supported and OFFLINE_ACCESS not in scope.split():
        scope = f"{scope} {OFFLINE_ACCESS}"
    return scope


def missing_secret(key: str, what: str) -> ConfigInvalid:
    """The error for a configured OAuth credential that is needed but not set."""
    return ConfigInvalid(
        [
            FieldError(
                f"secret_values.oauth.{key}",
                "SECRET_REQUIRED",
                f"{what} needs the '{key}' OAuth secret (PUT .../secrets/{key}?kind=oauth)",
            )
        ]
    )


async def machine_grant(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    target: OAuthTarget,
    server: AuthorizationServer,
    scope: str | None,
    redactor: Redactor,
) -> TokenSet:
    """Obtain a token with `client_credentials` or `cross_app_access` from `server` (no browser).

    Raises:
        ConfigInvalid: a needed configured credential is missing (code SECRET_REQUIRED).
        OAuthTokenFailed: the identity provider or the token endpoint refused.
        OAuthDiscoveryFailed: an endpoint breaks the URL policy.
    """
    identity = target.configured_identity(server.token_endpoint_auth_methods)
    assert identity is not None, "machine grants require a configured client_id (config validation)"
    if identity.auth_method == "private_key_jwt" and not identity.private_key:
        raise missing_secret("private_key", "private_key_jwt")
    if identity.auth_method in ("client_secret_basic", "client_secret_post") and not identity.client_secret:
        raise missing_secret("client_secret", f"the {identity.auth_method} token endpoint auth method")
    form: dict[str, str] = {"resource": target.resource}
    if scope:
        form["scope"] = scope
    if target.auth.grant == "client_credentials":
        form["grant_type"] = "client_credentials"
    else:
        if not target.idp_id_token:
            raise missing_secret("idp_id_token", "the cross_app_access grant")
        assert target.auth.idp_token_endpoint is not None, "config validation requires it"
        assertion = await exchange_identity_assertion(
            http,
            client,
            token_endpoint=target.auth.idp_token_endpoint,
            policy=target.policy,
            id_token=target.idp_id_token,
            idp_client_id=target.auth.idp_client_id,
            audience=server.issuer,
            resource=target.resource,
            scope=scope,
        )
        redactor.add(assertion)
        form["grant_type"] = JWT_BEARER_GRANT_TYPE
        form["assertion"] = assertion
    return await request_token(http, client, server, target.policy, identity, form)
