"""Dynamic client registration (RFC 7591) with a validated client id (R-4.8).

Threats: a registration response whose `client_id` is empty, not a string, 10 kB long or full of
control characters being stored and later echoed into URLs, logs and pages (R-4.8: it must be a
non-empty string of bounded length *before* it is stored or used); a registration whose token
endpoint auth method this host cannot apply, found out only at the token endpoint (the SDK's
`check_registration_usable` refuses it first); a registration endpoint reached through a redirect.
Registration happens only through the metadata's `registration_endpoint`, never a guessed `/register`
(except the explicit 2025-03-26 opt-in, where discovery itself supplies that endpoint).
"""

from __future__ import annotations

import re
from typing import Final

import httpx2
from mcp.client.auth import OAuthRegistrationError
from mcp.client.auth.oauth2 import check_registration_usable
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from pydantic import AnyUrl, ValidationError

from mcp_center.auth.discovery import AuthorizationServer
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.tokens import ClientIdentity
from mcp_center.auth.urls import UrlPolicy
from mcp_center.errors import OAuthRegistrationFailed
from mcp_center.interchange.display import display_url
from mcp_center.secrets import default_redactor

__all__ = ["CLIENT_NAME", "MAX_CLIENT_ID_CHARS", "choose_auth_method", "register_client", "valid_client_id"]

CLIENT_NAME: Final = "mcp-center"
MAX_CLIENT_ID_CHARS: Final = 255
"""R-4.8 bound on a registered `client_id` (the same bound as a configured one)."""
MAX_CLIENT_SECRET_CHARS: Final = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PREFERENCE: Final = ("client_secret_basic", "client_secret_post", "none")


def valid_client_id(value: object) -> str | None:
    """The client id if it is a non-empty printable string of at most 255 characters (R-4.8), else None."""
    if not isinstance(value, str) or not value or len(value) > MAX_CLIENT_ID_CHARS or _CONTROL.search(value):
        return None
    return value


def choose_auth_method(server: AuthorizationServer) -> str:
    """The token endpoint auth method to request: a confidential method when offered, else `none`.

    mcp-center keeps secrets encrypted at rest, so it registers as a confidential client when it can;
    without `token_endpoint_auth_methods_supported` RFC 8414 §2 implies `client_secret_basic`.
    """
    offered = server.token_endpoint_auth_methods or ("client_secret_basic",)
    for method in _PREFERENCE:
        if method in offered:
            return method
    return "none"


def _failed(message: str, rule: str, server: AuthorizationServer, **extra: object) -> OAuthRegistrationFailed:
    """A registration error: `details` carry `rule`, `issuer` and, where known, the `url`, `field` and `value`."""
    return OAuthRegistrationFailed(message, details={"rule": rule, "issuer": server.issuer, **extra})


def _shown(value: object) -> object:
    """A value at fault as details may carry it: short strings as they are, anything else cut or by type."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 120 else text[:120] + "…"


def _registration_error(body: dict[str, object] | None) -> str:
    """`, invalid_client_metadata: <description>` from an RFC 7591 §3.2.2 error answer, cut; else empty."""
    if not body:
        return ""
    error, description = body.get("error"), body.get("error_description")
    if not isinstance(error, str) or not error.replace("_", "").isalnum() or len(error) > 64:
        return ""
    said = f", {error}"
    if isinstance(description, str) and description:
        said += f": {default_redactor.redact(description)[:200]}"
    return said


async def register_client(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    server: AuthorizationServer,
    policy: UrlPolicy,
    *,
    redirect_uri: str,
    scope: str | None,
) -> ClientIdentity:
    """Register this host at `server` (RFC 7591) and return the validated client identity.

    Args:
        redirect_uri: `<base URL>/oauth/callback` (R-4.9).
        scope: The scopes about to be requested (some servers accept only registered scopes).
    Returns:
        A `ClientIdentity` with `source="registered"`; nothing is stored here.
    Raises:
        OAuthRegistrationFailed: no registration endpoint, a non-2xx answer, a malformed response,
            an invalid `client_id` (R-4.8), or an auth method this host cannot apply.
        OAuthDiscoveryFailed: the endpoint breaks the URL policy (nothing was sent).
    """
    endpoint = server.registration_endpoint
    if endpoint is None:
        where = display_url(server.metadata_url) if server.metadata_url else server.issuer
        raise _failed(
            f"the authorization server {server.issuer} offers no dynamic client registration (its metadata at "
            f"{where} has no registration_endpoint); register mcp-center with it yourself and set auth.client_id "
            "(and the client_secret secret, if it issues one)",
            "no_registration_endpoint",
            server,
            url=where,
            field="registration_endpoint",
            value=None,
        )
    method = choose_auth_method(server)
    shown = display_url(endpoint)
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method=method,  # pyright: ignore[reportArgumentType]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name=CLIENT_NAME,
        scope=scope,
        application_type="native" if redirect_uri.startswith("http://") else "web",
    )
    try:
        response = await http.post(
            client,
            endpoint,
            policy,
            what="registration endpoint",
            json_body=metadata.model_dump(mode="json", exclude_none=True),
        )
    except httpx2.HTTPError as exc:
        raise _failed(
            f"cannot reach the registration endpoint at {shown} ({type(exc).__name__}); check that it is reachable "
            "from this host, then try again",
            "network",
            server,
            url=shown,
        ) from None
    if response.status not in (200, 201):
        said = _registration_error(response.json)
        reason = "a redirect (never followed)" if response.is_redirect else f"HTTP {response.status}{said}"
        raise _failed(
            f"the registration endpoint at {shown} refused the registration ({reason}); if the authorization "
            "server does not accept dynamic registration from this host, register mcp-center with it yourself and "
            "set auth.client_id",
            "http_status",
            server,
            status=response.status,
            url=shown,
        )
    body = dict(response.json or {})
    if not body:
        raise _failed(
            f"the registration response of {shown} is not a JSON object (RFC 7591 §3.2.1); configure auth.client_id "
            "instead",
            "invalid_response",
            server,
            url=shown,
        )
    if valid_client_id(body.get("client_id")) is None:
        raise _failed(
            f"the registration response of {shown} carries no usable client_id (a non-empty printable string of at "
            f"most {MAX_CLIENT_ID_CHARS} characters is required); configure auth.client_id instead",
            "client_id_invalid",
            server,
            url=shown,
            field="client_id",
            value=_shown(body.get("client_id")),
        )
    secret = body.get("client_secret")
    if secret is not None and (not isinstance(secret, str) or len(secret) > MAX_CLIENT_SECRET_CHARS):
        raise _failed(
            f"the registration response of {shown} carries a malformed client_secret (the value is not shown); "
            "configure auth.client_id and its secret instead",
            "invalid_response",
            server,
            url=shown,
            field="client_secret",
        )
    body.pop("issuer", None)  # SEP-2352: an SDK-side stamp, never read from the wire
    try:
        info = OAuthClientInformationFull.model_validate(body)
        check_registration_usable(info)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        value = None if field == "client_secret" else _shown(first.get("input"))
        raise _failed(
            f"the registration response of {shown} does not follow RFC 7591 ({field}: {value!r}); configure "
            "auth.client_id instead",
            "invalid_response",
            server,
            url=shown,
            field=field,
            value=value,
        ) from None
    except OAuthRegistrationError:
        raise _failed(
            f"the authorization server registered the client with a token endpoint auth method this host cannot use "
            f"(token_endpoint_auth_method: {body.get('token_endpoint_auth_method')!r}); configure auth.client_id and "
            "auth.token_endpoint_auth_method instead",
            "unusable_auth_method",
            server,
            url=shown,
            field="token_endpoint_auth_method",
            value=_shown(body.get("token_endpoint_auth_method")),
        ) from None
    # RFC 7591 §3.2.1 echoes the registered method; when it does not, the requested one applies.
    assigned = info.token_endpoint_auth_method or (method if info.client_secret is not None else "none")
    return ClientIdentity(
        client_id=info.client_id,
        auth_method=assigned,
        client_secret=info.client_secret,
        source="registered",
        redirect_uri=redirect_uri,
        registered_scope=info.scope if info.scope is not None else scope,
    )
