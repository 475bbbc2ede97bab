"""OAuth discovery exactly as R-4.2-R-4.4: protected resource metadata, then authorization server metadata.

Threats this module stops (docs/sdk-notes.md#oauth-deviations, where the SDK's provider deviates):

- dev. 1: a `resource_metadata` URL on another origin, or plain http, is never fetched. It is
  ignored, and discovery continues at the MCP origin's well-known locations (R-4.2).
- dev. 2: several `authorization_servers` on first discovery are never narrowed down silently.
  `OAuthIssuerChoiceRequired` names them; a bound issuer still listed is kept (R-4.3).
- dev. 3: authorization server metadata without `S256` in `code_challenge_methods_supported` is
  refused for the authorization code grant (R-4.4).
- dev. 4 and 7: no endpoint is ever guessed on the MCP origin. The 2025-03-26 fallback exists only as
  the per-server opt-in `auth.legacy_endpoint_fallback`.
- dev. 5: the PRM `resource` must be exactly the MCP URL (R-4.3), wherever the document was found —
  also the root well-known document (issue 14, item 17): a document describing the origin or a
  parent path describes another resource, and authorizing for it would give a token whose audience
  is not this server. The MCP URL, never the PRM's value, is what the broker sends as `resource`.
- dev. 6: no redirect is followed during discovery; a 3xx is an explicit error.

Order: the `resource_metadata` of the 401, then `/.well-known/oauth-protected-resource{path}`, then
`/.well-known/oauth-protected-resource` (RFC 9728 §3.1, SEP-985). For an issuer with a path: RFC 8414
path insertion, OIDC path insertion, OIDC path append; without a path: RFC 8414, then OIDC
(`build_oauth_authorization_server_metadata_discovery_urls`). A 4xx moves to the next location; a 5xx,
a 429 or a network failure stops with an error (it says nothing about where the metadata is).
The metadata `issuer` must be the chosen issuer, compared as exact strings (RFC 8414 §3.3).

Every refusal says where, what and what to do (issue 14, item 19): `details` carry the exact `url`
(with its path), the `field` and the `value` at fault where there is one, and `rule`; the message
ends with what the user or the server's operator can do about it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from pydantic import ValidationError

from mcp_center.auth.http import OAuthHttp, OAuthResponse
from mcp_center.auth.urls import UrlPolicy, canonical_resource, origin_of, resource_key, same_origin
from mcp_center.errors import OAuthDiscoveryFailed, OAuthIssuerChoiceRequired
from mcp_center.interchange.display import display_url
from mcp_center.models import is_array

__all__ = ["AuthorizationServer", "Challenge", "Discovery", "discover", "select_issuer"]

logger = logging.getLogger(__name__)

MAX_ISSUERS = 20
"""More `authorization_servers` than this makes the metadata invalid (nothing to choose from sensibly)."""


@dataclass(frozen=True)
class Challenge:
    """What a 401/403 `WWW-Authenticate` said (RFC 6750 §3, RFC 9728 §5.1): never a credential.

    Attributes:
        status: 401 or 403.
        scope: The challenged scope string, or None.
        resource_metadata: The announced protected resource metadata URL, or None (not yet vetted).
        error: `invalid_token`, `insufficient_scope`, ... or None.
    """

    status: int
    scope: str | None = None
    resource_metadata: str | None = None
    error: str | None = None

    @classmethod
    def from_response(cls, response: httpx2.Response) -> Challenge:
        """Parse the challenge of a 401/403 response with the SDK's WWW-Authenticate helpers."""
        return cls(
            status=response.status_code,
            scope=extract_scope_from_www_auth(response),
            resource_metadata=extract_resource_metadata_from_www_auth(response),
            error=extract_field_from_www_auth(response, "error"),
        )

    @classmethod
    def from_header(cls, status: int, www_authenticate: str | None) -> Challenge:
        """Parse a challenge from a status and a `WWW-Authenticate` value (None: no challenge)."""
        headers = {"WWW-Authenticate": www_authenticate} if www_authenticate else {}
        return cls.from_response(httpx2.Response(status, headers=headers))

    @property
    def insufficient_scope(self) -> bool:
        """A 403 asking for more scopes (step-up, R-4.5)."""
        return self.status == 403 and self.error == "insufficient_scope"


@dataclass(frozen=True)
class AuthorizationServer:
    """What the broker uses of an authorization server; serializable as a metadata snapshot (R-4.6).

    Attributes:
        issuer: The issuer identifier, exactly as the protected resource named it.
        token_endpoint: Where codes, refresh tokens and client credentials go (the bound token endpoint).
        authorization_endpoint: Where the user logs in (None for machine grants without one).
        registration_endpoint: RFC 7591 endpoint, or None (then no dynamic registration).
        scopes_supported: As announced, or None.
        code_challenge_methods: As announced (None when unknown: legacy fallback endpoints).
        token_endpoint_auth_methods: As announced, or None (RFC 8414 default: client_secret_basic).
        cimd_supported: `client_id_metadata_document_supported`.
        iss_parameter_supported: `authorization_response_iss_parameter_supported` (RFC 9207).
        metadata_url: Where the metadata was read; None for guessed legacy endpoints.
        legacy: Derived from the MCP origin under `legacy_endpoint_fallback` (2025-03-26).
    """

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    code_challenge_methods: tuple[str, ...] | None = None
    token_endpoint_auth_methods: tuple[str, ...] | None = None
    cimd_supported: bool = False
    iss_parameter_supported: bool = False
    metadata_url: str | None = None
    legacy: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON shape of the snapshot (lists instead of tuples)."""
        data = asdict(self)
        return {k: list(cast(tuple[Any, ...], v)) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuthorizationServer:
        """Rebuild from `to_json` output (a decrypted snapshot)."""

        def strings(value: Any) -> tuple[str, ...] | None:
            return tuple(str(v) for v in value) if isinstance(value, list) else None  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

        return cls(
            issuer=str(data["issuer"]),
            token_endpoint=str(data["token_endpoint"]),
            authorization_endpoint=_opt_str(data.get("authorization_endpoint")),
            registration_endpoint=_opt_str(data.get("registration_endpoint")),
            scopes_supported=strings(data.get("scopes_supported")),
            code_challenge_methods=strings(data.get("code_challenge_methods")),
            token_endpoint_auth_methods=strings(data.get("token_endpoint_auth_methods")),
            cimd_supported=bool(data.get("cimd_supported")),
            iss_parameter_supported=bool(data.get("iss_parameter_supported")),
            metadata_url=_opt_str(data.get("metadata_url")),
            legacy=bool(data.get("legacy")),
        )


@dataclass(frozen=True)
class Discovery:
    """The outcome of discovery for one MCP server.

    Attributes:
        resource: The canonical MCP resource (sent as `resource`, part of the binding).
        issuers: Every issuer the protected resource listed (one for the legacy path).
        server: The chosen authorization server.
        prm_url: Where the protected resource metadata was read (None on the legacy path).
        prm_scopes: The PRM `scopes_supported`, or None.
    """

    resource: str
    issuers: tuple[str, ...]
    server: AuthorizationServer
    prm_url: str | None = None
    prm_scopes: tuple[str, ...] | None = None


def select_issuer(issuers: Sequence[str], *, bound: str | None, chosen: str | None) -> str:
    """Pick the issuer to use from a protected resource's `authorization_servers` (R-4.3).

    Args:
        issuers: The listed issuers (non-empty).
        bound: The issuer of the existing binding, if any: kept when it is still listed.
        chosen: The issuer a user chose explicitly, if any: must be listed.
    Returns:
        `chosen` if given, else `bound` if listed, else the only issuer.
    Raises:
        OAuthDiscoveryFailed: rule `issuer_not_listed` (the chosen issuer is not listed).
        OAuthIssuerChoiceRequired: several issuers, none bound or chosen (no guessing).
    """
    if chosen is not None:
        for issuer in issuers:
            if issuers_match(issuer, chosen):
                return issuer
        raise OAuthDiscoveryFailed(
            f"the chosen issuer {chosen} is not one of the authorization servers the protected resource lists "
            f"({', '.join(issuers)}); start again with one of them",
            details={"rule": "issuer_not_listed", "issuers": list(issuers), "field": "issuer", "value": chosen},
        )
    if bound is not None:
        for issuer in issuers:
            if issuers_match(issuer, bound):
                return issuer
    if len(issuers) == 1:
        return issuers[0]
    raise OAuthIssuerChoiceRequired(
        f"the protected resource lists {len(issuers)} authorization servers ({', '.join(issuers)}); "
        "choose the issuer to log in with",
        details={"issuers": list(issuers)},
    )


async def discover(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    *,
    mcp_url: str,
    challenge: Challenge | None,
    policy: UrlPolicy,
    bound_issuer: str | None = None,
    chosen_issuer: str | None = None,
    legacy_fallback: bool = False,
    require_s256: bool = True,
) -> Discovery:
    """Run discovery for the server at `mcp_url` (R-4.2-R-4.4).

    Args:
        http: The broker's HTTP helper; `client` its client for this operation.
        mcp_url: The configured MCP URL.
        challenge: The last 401/403 challenge from the server (None: none seen).
        policy: Where requests may go.
        bound_issuer: The binding's issuer (kept when still listed).
        chosen_issuer: An issuer the user chose among several.
        legacy_fallback: `auth.legacy_endpoint_fallback` (2025-03-26 servers without PRM).
        require_s256: Refuse metadata without S256 (the authorization code grant uses PKCE).
    Returns:
        The `Discovery`; the caller compares `server.issuer` with the binding.
    Raises:
        OAuthDiscoveryFailed: a rule refused a location or a document (`details.rule`).
        OAuthIssuerChoiceRequired: several issuers and no choice.
    """
    resource = canonical_resource(mcp_url)
    tried: list[str] = []
    found = await _protected_resource_metadata(
        http, client, mcp_url=mcp_url, challenge=challenge, policy=policy, tried=tried
    )
    if found is None:
        if not legacy_fallback:
            raise OAuthDiscoveryFailed(
                f"{origin_of(mcp_url)} publishes no protected resource metadata (RFC 9728): "
                f"{', '.join(display_url(u) for u in tried)} answered no document; endpoints are never guessed. "
                "Ask the server's operator to publish it, or enable auth.legacy_endpoint_fallback only for a "
                "trusted 2025-03-26 server",
                details={"rule": "resource_metadata_not_found", "tried": [display_url(u) for u in tried]},
            )
        server = await _legacy_server(http, client, mcp_url=mcp_url, policy=policy)
        return Discovery(resource=resource, issuers=(server.issuer,), server=server)
    prm_url, prm, issuers = found
    issuer = select_issuer(issuers, bound=bound_issuer, chosen=chosen_issuer)
    server = await _authorization_server(http, client, issuer=issuer, policy=policy)
    if require_s256 and "S256" not in (server.code_challenge_methods or ()):
        announced = list(server.code_challenge_methods) if server.code_challenge_methods is not None else None
        raise OAuthDiscoveryFailed(
            f"the authorization server metadata at {display_url(server.metadata_url or issuer)} does not announce "
            f"PKCE S256 (code_challenge_methods_supported: {announced}); mcp-center logs in with PKCE S256 only, "
            "so the authorization server must support it",
            details={
                "rule": "pkce_s256_unsupported",
                "issuer": issuer,
                "url": display_url(server.metadata_url or issuer),
                "field": "code_challenge_methods_supported",
                "value": announced,
            },
        )
    scopes = tuple(prm.scopes_supported) if prm.scopes_supported is not None else None
    return Discovery(resource=resource, issuers=issuers, server=server, prm_url=prm_url, prm_scopes=scopes)


async def _fetch(
    http: OAuthHttp, client: httpx2.AsyncClient, url: str, policy: UrlPolicy, *, what: str
) -> OAuthResponse:
    shown = display_url(url)
    try:
        response = await http.get(client, url, policy, what=what)
    except httpx2.HTTPError as exc:
        raise OAuthDiscoveryFailed(
            f"cannot read the {what} at {shown} ({type(exc).__name__}); check that the server is reachable from "
            "this host, then try again",
            details={"rule": "network", "what": what, "origin": origin_of(url), "url": shown},
        ) from None
    if response.is_redirect:
        location = response.headers.get("location")
        target = f" to {display_url(location)}" if location else ""
        raise OAuthDiscoveryFailed(
            f"the {what} at {shown} answered a redirect (HTTP {response.status}{target}); redirects are never "
            "followed during discovery: the server must serve its metadata at the well-known location itself",
            details={
                "rule": "redirect_refused",
                "what": what,
                "status": response.status,
                "origin": origin_of(url),
                "url": shown,
                **({"location": display_url(location)} if location else {}),
            },
        )
    if response.status >= 500 or response.status == 429:
        raise OAuthDiscoveryFailed(
            f"the {what} at {shown} answered HTTP {response.status}; the server has a problem or is busy, "
            "try again later",
            details={
                "rule": "http_status",
                "what": what,
                "status": response.status,
                "origin": origin_of(url),
                "url": shown,
            },
        )
    return response


async def _protected_resource_metadata(
    http: OAuthHttp,
    client: httpx2.AsyncClient,
    *,
    mcp_url: str,
    challenge: Challenge | None,
    policy: UrlPolicy,
    tried: list[str],
) -> tuple[str, ProtectedResourceMetadata, tuple[str, ...]] | None:
    """Return `(url, metadata, issuers as listed)` of the first PRM found, or None when none exists.

    `tried` receives every location asked, in order.
    """
    well_known = build_protected_resource_metadata_discovery_urls(None, mcp_url)
    candidates: list[str] = []
    announced = challenge.resource_metadata if challenge is not None else None
    if announced:
        if same_origin(announced, mcp_url) and policy.allows(announced):
            candidates.append(announced)
        else:
            logger.warning(
                "oauth.resource_metadata_refused",
                extra={"origin": origin_of(announced), "mcp_origin": origin_of(mcp_url)},
            )
    candidates += [url for url in well_known if url not in candidates]
    mcp_resource = canonical_resource(mcp_url)
    for url in candidates:
        tried.append(url)
        response = await _fetch(http, client, url, policy, what="protected resource metadata")
        if response.status != 200:
            continue
        raw = response.json
        if raw is None:
            raise _invalid_prm(url, "is not a JSON object")
        servers = raw.get("authorization_servers")
        if not is_array(servers) or not servers:
            raise _invalid_prm(url, "must list at least one authorization server", "authorization_servers", servers)
        if len(servers) > MAX_ISSUERS or not all(isinstance(s, str) and s for s in servers):  # pyright: ignore[reportUnknownVariableType]
            raise _invalid_prm(url, f"must list at most {MAX_ISSUERS} issuer URLs", "authorization_servers", servers)
        try:
            prm = ProtectedResourceMetadata.model_validate(raw)
        except ValidationError as exc:
            field, value = _first_problem(exc)
            raise _invalid_prm(url, "does not follow RFC 9728", field, value) from None
        announced_resource = raw.get("resource")
        if not isinstance(announced_resource, str) or resource_key(announced_resource) != resource_key(mcp_resource):
            shown = announced_resource if isinstance(announced_resource, str) else None
            raise OAuthDiscoveryFailed(
                f"the protected resource metadata at {display_url(url)} describes the resource {shown!r}, not "
                f"this server's {mcp_resource!r}; refusing to authorize for it (the resource must be exactly "
                "the configured MCP URL). Check the server's URL, or ask its operator to publish metadata for "
                f"{mcp_resource} at {display_url(well_known[0])}",
                details={
                    "rule": "resource_mismatch",
                    "url": display_url(url),
                    "field": "resource",
                    "value": _shown(shown),
                    "expected": mcp_resource,
                },
            )
        issuers = tuple(str(s) for s in servers)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        for issuer in issuers:
            _check_issuer_url(issuer, policy, url)
        return url, prm, issuers
    return None


_MAX_SHOWN_CHARS = 120


def _shown(value: object) -> object:
    """A value at fault as it may appear in details: strings and lists cut, anything else by type."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= _MAX_SHOWN_CHARS else value[:_MAX_SHOWN_CHARS] + "…"
    text = json.dumps(value, default=str)
    return text if len(text) <= _MAX_SHOWN_CHARS else text[:_MAX_SHOWN_CHARS] + "…"


def _first_problem(exc: ValidationError) -> tuple[str | None, object]:
    """`(field, value)` of the first error pydantic found in a metadata document."""
    first = exc.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    return field, first.get("input")


def _invalid_prm(url: str, why: str, field: str | None = None, value: object = None) -> OAuthDiscoveryFailed:
    where = f" ({field}: {_shown(value)!r})" if field else ""
    return OAuthDiscoveryFailed(
        f"the protected resource metadata at {display_url(url)} {why}{where}; ask the server's operator to fix it "
        "(RFC 9728)",
        details={"rule": "resource_metadata_invalid", "url": display_url(url), "field": field, "value": _shown(value)},
    )


def _check_issuer_url(issuer: str, policy: UrlPolicy, prm_url: str) -> None:
    parts = urlsplit(issuer)
    if parts.query or parts.fragment:
        raise _invalid_prm(
            prm_url,
            "lists an issuer with a query or fragment (RFC 8414 §2 forbids both)",
            "authorization_servers",
            issuer,
        )
    policy.check(issuer, what="authorization server")


async def _authorization_server(
    http: OAuthHttp, client: httpx2.AsyncClient, *, issuer: str, policy: UrlPolicy
) -> AuthorizationServer:
    tried: list[str] = []
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, issuer):
        tried.append(display_url(url))
        response = await _fetch(http, client, url, policy, what="authorization server metadata")
        if response.status != 200:
            continue
        return _parse_server(response, url=url, issuer=issuer, policy=policy, legacy=False)
    raise OAuthDiscoveryFailed(
        f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID Connect discovery): "
        f"{', '.join(tried)} answered no document; endpoints are never guessed. Ask its operator to publish it",
        details={"rule": "authorization_server_metadata_not_found", "issuer": issuer, "tried": tried},
    )


def _parse_server(
    response: OAuthResponse, *, url: str, issuer: str, policy: UrlPolicy, legacy: bool
) -> AuthorizationServer:
    raw = response.json
    shown = display_url(url)
    if raw is None:
        raise OAuthDiscoveryFailed(
            f"the authorization server metadata at {shown} is not a JSON object; ask its operator to fix it (RFC 8414)",
            details={"rule": "authorization_server_metadata_invalid", "issuer": issuer, "url": shown},
        )
    announced = raw.get("issuer")
    exact = announced == issuer or (legacy and isinstance(announced, str) and issuers_match(announced, issuer))
    if not exact:
        raise OAuthDiscoveryFailed(
            f"the authorization server metadata at {shown} names the issuer "
            f"{announced if isinstance(announced, str) else 'none'!r} instead of {issuer!r}; it must be identical "
            "(RFC 8414 §3.3), so the metadata is not trusted. Ask the operator to fix the issuer, or check which "
            "authorization server the protected resource lists",
            details={
                "rule": "issuer_mismatch",
                "issuer": issuer,
                "url": shown,
                "field": "issuer",
                "value": _shown(announced),
            },
        )
    try:
        metadata = OAuthMetadata.model_validate(raw)
    except ValidationError as exc:
        field, value = _first_problem(exc)
        raise OAuthDiscoveryFailed(
            f"the authorization server metadata at {shown} does not follow RFC 8414 ({field}: {_shown(value)!r}); "
            "ask its operator to fix it",
            details={
                "rule": "authorization_server_metadata_invalid",
                "issuer": issuer,
                "url": shown,
                "field": field,
                "value": _shown(value),
            },
        ) from None
    token_endpoint = str(raw["token_endpoint"])
    authorization_endpoint = str(raw["authorization_endpoint"])
    registration = raw.get("registration_endpoint")
    registration_endpoint = str(registration) if isinstance(registration, str) and registration else None
    for endpoint, what in (
        (token_endpoint, "token endpoint"),
        (authorization_endpoint, "authorization endpoint"),
        (registration_endpoint, "registration endpoint"),
    ):
        if endpoint is not None:
            policy.check(endpoint, what=what)
    return AuthorizationServer(
        issuer=str(announced),
        token_endpoint=token_endpoint,
        authorization_endpoint=authorization_endpoint,
        registration_endpoint=registration_endpoint,
        scopes_supported=_tuple(metadata.scopes_supported),
        code_challenge_methods=_tuple(metadata.code_challenge_methods_supported),
        token_endpoint_auth_methods=_tuple(metadata.token_endpoint_auth_methods_supported),
        cimd_supported=metadata.client_id_metadata_document_supported is True,
        iss_parameter_supported=metadata.authorization_response_iss_parameter_supported is True,
        metadata_url=url,
        legacy=legacy,
    )


async def _legacy_server(
    http: OAuthHttp, client: httpx2.AsyncClient, *, mcp_url: str, policy: UrlPolicy
) -> AuthorizationServer:
    """2025-03-26: the MCP origin is the authorization server; its RFC 8414 metadata, else fixed paths."""
    parts = urlsplit(canonical_resource(mcp_url))
    origin = f"{parts.scheme}://{parts.netloc}"
    url = f"{origin}/.well-known/oauth-authorization-server"
    response = await _fetch(http, client, url, policy, what="authorization server metadata")
    if response.status == 200:
        return _parse_server(response, url=url, issuer=origin, policy=policy, legacy=True)
    logger.warning("oauth.legacy_endpoint_fallback", extra={"origin": origin})
    return AuthorizationServer(
        issuer=origin,
        token_endpoint=policy.check(f"{origin}/token", what="token endpoint"),
        authorization_endpoint=f"{origin}/authorize",
        registration_endpoint=f"{origin}/register",
        metadata_url=None,
        legacy=True,
    )


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
