"""OAuth use cases (R-4): start an authorization, complete it from the callback, forget it, show its status.

The broker (`mcp_center.auth`) runs the protocol; this module connects it to the store and the trust
rules. Threats handled here:

- Authorizing a configuration the user has not confirmed: `start` needs the current connection
  summary digest to be trusted, because it sends the configured client credentials (R-2.1).
- A completion landing on a changed server: the authorization is committed only if the server still
  exists with the same canonical resource; otherwise nothing is stored.
- A silent change of issuer: the first recorded binding (after the user saw the issuer, R-4.9) keeps
  the trust confirmation; a binding that replaces another issuer is a high-risk change (R-1.4): trust
  and the last test are cleared and the server is disabled until confirmed again.
- Stale credentials: recording a binding deletes every credential of other bindings of the server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import httpx2

from mcp_center.auth import (
    AuthorizationStart,
    Binding,
    Completion,
    CredentialVault,
    OAuthBroker,
    OAuthTarget,
    canonical_resource,
)
from mcp_center.auth.registration import CLIENT_NAME
from mcp_center.config import (
    OAUTH_CLIENT_SECRET_KEYS,
    AuthOAuth,
    OAuthBinding,
    ServerConfig,
    Settings,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
)
from mcp_center.errors import (
    FieldError,
    OAuthAuthorizationRequired,
    OAuthNotConfigured,
    RequestInvalid,
    ServerNotFound,
    did_you_mean,
)
from mcp_center.models import TransportKind, is_mapping
from mcp_center.secrets import Redactor, SecretCipher, SecretKind, secret_id
from mcp_center.service.readiness import Readiness
from mcp_center.service.store_threads import in_read_thread, in_write_thread
from mcp_center.store import ServerRecord, Store, StoreState

__all__ = [
    "CALLBACK_PATH",
    "CLIENT_METADATA_PATH",
    "OAuthAuthorized",
    "OAuthForgotten",
    "OAuthService",
    "OAuthStarted",
    "client_metadata_document",
]

CALLBACK_PATH = "/oauth/callback"
"""Where the authorization server sends the browser back (R-4.9): `<public base URL>/oauth/callback`."""
CLIENT_METADATA_PATH = "/oauth/client-metadata.json"
"""Where this host serves its client ID metadata document (R-4.10; used only when configured)."""
MAX_PARAM_CHARS = 4096


def client_metadata_document(settings: Settings) -> dict[str, Any]:
    """This host's OAuth client ID metadata document (draft-ietf-oauth-client-id-metadata-document).

    Its `client_id` is the URL it is served at; configure that URL as `auth.client_metadata_url` only
    when `--public-url` is a public https URL (R-4.10).
    """
    return {
        "client_id": settings.base_url + CLIENT_METADATA_PATH,
        "client_name": CLIENT_NAME,
        "redirect_uris": [settings.base_url + CALLBACK_PATH],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


RemoteConfig = StreamableHttpServerConfig | SseServerConfig


@dataclass(frozen=True, slots=True)
class OAuthStarted:
    """An authorization begun (R-4.9): show `issuer` and `scopes` to the user, then open `authorization_url`.

    Never holds a token: a machine grant's tokens were stored already (`authorized` is then True).

    Attributes:
        server_id: The server.
        issuer: The authorization server's issuer (R-4.3).
        scopes: The scopes asked for.
        resource: The canonical MCP resource the tokens are bound to (RFC 8707).
        authorization_url: The URL to open in a browser; None for a machine grant (done at once).
        expires_at: When the pending authorization lapses (aware UTC), or None.
        step_up: True when it asks for more scopes than the last grant (R-4.7).
        client_id_source: `configured`, `registered` (RFC 7591) or `cimd` (R-4.10); a plain string,
            as the auth layer's `ClientIdentity.source` is (stored registrations carry it).
        previous_issuer: The issuer of the binding this one would replace, or None.
        authorized: True when it completed already (a machine grant).
    """

    server_id: str
    issuer: str
    scopes: tuple[str, ...]
    resource: str
    authorization_url: str | None
    expires_at: datetime | None
    step_up: bool
    client_id_source: str
    previous_issuer: str | None
    authorized: bool

    @classmethod
    def of(cls, start: AuthorizationStart) -> OAuthStarted:
        """The result of the broker's start, without the completion it may hold."""
        return cls(
            server_id=start.server_id,
            issuer=start.issuer,
            scopes=start.scopes,
            resource=start.resource,
            authorization_url=start.authorization_url,
            expires_at=start.expires_at,
            step_up=start.step_up,
            client_id_source=start.client_id_source,
            previous_issuer=start.previous_issuer,
            authorized=start.completion is not None,
        )

    def to_dict(self) -> dict[str, Any]:
        """`{"server_id", "issuer", "scopes", "resource", "authorization_url", "expires_at", "step_up",
        "client_id_source", "previous_issuer", "authorized"}` (ISO 8601 time)."""
        return {
            "server_id": self.server_id,
            "issuer": self.issuer,
            "scopes": list(self.scopes),
            "resource": self.resource,
            "authorization_url": self.authorization_url,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "step_up": self.step_up,
            "client_id_source": self.client_id_source,
            "previous_issuer": self.previous_issuer,
            "authorized": self.authorized,
        }


@dataclass(frozen=True, slots=True)
class OAuthAuthorized:
    """An authorization completed and stored (R-4.9): the issuer and the granted scopes, never a token."""

    server_id: str
    issuer: str
    scopes: tuple[str, ...]
    authorized: Literal[True] = True

    def to_dict(self) -> dict[str, Any]:
        """`{"server_id", "issuer", "scopes", "authorized": true}`."""
        return {"server_id": self.server_id, "issuer": self.issuer, "scopes": list(self.scopes), "authorized": True}


@dataclass(frozen=True, slots=True)
class OAuthForgotten:
    """An authorization forgotten (log out): the stored credentials and in-memory tokens are gone."""

    server_id: str
    authorized: Literal[False] = False

    def to_dict(self) -> dict[str, Any]:
        """`{"server_id", "authorized": false}`."""
        return {"server_id": self.server_id, "authorized": False}


def _now() -> datetime:
    return datetime.now(UTC)


def _record(state: StoreState, server_id: str) -> ServerRecord:
    record = state.servers.get(server_id)
    if record is None:
        raise ServerNotFound(
            f"no server with id '{server_id}'",
            details={"server_id": server_id, "did_you_mean": did_you_mean(server_id, state.servers)},
        )
    return record


def _oauth_config(record: ServerRecord) -> tuple[RemoteConfig, AuthOAuth]:
    config = record.config
    if not isinstance(config, StreamableHttpServerConfig | SseServerConfig) or not isinstance(config.auth, AuthOAuth):
        raise OAuthNotConfigured(
            f"server '{record.id}' does not use OAuth (auth.kind is not 'oauth')", details={"server_id": record.id}
        )
    return config, config.auth


def _invalid(field: str, message: str) -> RequestInvalid:
    return RequestInvalid(
        f"{field}: {message}", details={"errors": [FieldError(field, "FIELD_INVALID", message).to_dict()]}
    )


def _optional_text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_PARAM_CHARS:
        raise _invalid(key, f"must be a string of 1-{MAX_PARAM_CHARS} characters")
    return value


class OAuthService:
    """The OAuth use cases of `McpCenter` (reached as `center.oauth`).

    Args:
        settings: Host settings (the redirect URI is built from `base_url`).
        store: The host's store.
        cipher: The host's secret cipher (decrypts configured OAuth client secrets).
        redactor: Receives every decrypted client credential.
        broker: The OAuth broker.
        digest: `(config, state) -> connection summary digest` (R-2.1).
        after_authorization: Called with the server id after a commit: reconcile and reconnect.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        cipher: SecretCipher,
        redactor: Redactor,
        broker: OAuthBroker,
        digest: Callable[[ServerConfig, StoreState], str],
        after_authorization: Callable[[str], Awaitable[None]],
    ) -> None:
        self.settings = settings
        self.broker = broker
        self._store = store
        self._cipher = cipher
        self._redactor = redactor
        self._digest = digest
        self._after_authorization = after_authorization

    # ----- hooks used by McpCenter ----------------------------------------------------------------

    def target(self, config: RemoteConfig, state: StoreState, *, secrets: bool = True) -> OAuthTarget:
        """The broker's view of a server; `secrets=False` skips decrypting the configured credentials.

        Raises:
            OAuthNotConfigured: the server does not use OAuth.
            SecretStoreError: a configured credential does not decrypt.
        """
        if not isinstance(config.auth, AuthOAuth):
            raise OAuthNotConfigured(f"server '{config.id}' does not use OAuth", details={"server_id": config.id})
        values: dict[str, str | None] = dict.fromkeys(OAUTH_CLIENT_SECRET_KEYS)
        if secrets:
            for key in OAUTH_CLIENT_SECRET_KEYS:
                internal = secret_id(SecretKind.OAUTH_CLIENT, config.id, key)
                sealed = state.secrets.get(internal)
                if sealed is not None:
                    values[key] = self._cipher.open(sealed, associated_data=internal)
                    self._redactor.add(values[key] or "")
        return OAuthTarget(
            server_id=config.id,
            url=config.url,
            transport=TransportKind(config.transport),
            auth=config.auth,
            client_secret=values["client_secret"],
            private_key=values["private_key"],
            idp_id_token=values["idp_id_token"],
        )

    def runtime_auth(self, config: RemoteConfig, state: StoreState) -> httpx2.Auth:
        """The `httpx2.Auth` for a connection spec of an OAuth server (`BoundBearerAuth`)."""
        return self.broker.runtime_auth(self.target(config, state))

    def status(self, config: RemoteConfig, state: StoreState) -> dict[str, Any]:
        """The `oauth` block of a server view: status only, never a token or secret."""
        return self.broker.status(self.target(config, state, secrets=False), state)

    @staticmethod
    def kept_binding(config: ServerConfig) -> Binding | None:
        """The binding whose stored credentials stay when a configuration is saved (None: none stay)."""
        if isinstance(config, StdioServerConfig) or not isinstance(config.auth, AuthOAuth):
            return None
        if config.auth.binding is None:
            return None
        resource = canonical_resource(config.url)
        if canonical_resource(config.auth.binding.resource) != resource:
            return None
        return Binding(config.id, resource, config.auth.binding.issuer)

    @staticmethod
    def purge_stale(state: StoreState, config: ServerConfig) -> None:
        """Delete stored OAuth credentials that do not belong to the configuration's binding (R-4.6)."""
        CredentialVault.purge(state, config.id, keep=OAuthService.kept_binding(config))

    # ----- use cases ------------------------------------------------------------------------------

    async def start(self, server_id: str, body: object = None) -> OAuthStarted:
        """`POST /api/mcp/servers/{id}/oauth/start`: begin an authorization (a user action, R-4.9).

        Args:
            body: None or `{"issuer": "..."}` (the issuer chosen among several, R-4.3).
        Returns:
            An `OAuthStarted`: show its `issuer` and `scopes`, then open `authorization_url`. Machine
            grants return `authorized` True and no URL. `to_dict()` is the REST JSON.
        Raises:
            ServerNotFound, OAuthNotConfigured, RequestInvalid (bad body), ServerNotTrusted (confirm the
            summary first), OAuthDiscoveryFailed, OAuthIssuerChoiceRequired, OAuthRegistrationFailed,
            OAuthTokenFailed, OAuthStepUpLimitReached, ConfigInvalid (a configured secret is missing).
        """
        await self._require_oauth(server_id)
        if body is None:
            body = {}
        if not is_mapping(body):
            raise _invalid("body", "must be a JSON object")
        extra = sorted(str(k) for k in body if k != "issuer")
        if extra:
            raise RequestInvalid(
                f"{extra[0]}: is not a known field (send 'issuer' or nothing)",
                details={"errors": [FieldError(extra[0], "FIELD_UNKNOWN", "is not a known field").to_dict()]},
            )
        issuer = _optional_text(body, "issuer")

        def prepare() -> OAuthTarget:
            state = self._store.read()
            record = _record(state, server_id)
            config, _ = _oauth_config(record)
            Readiness(record, self._digest(config, state), self.settings.profile).require_trusted(
                "authorizing (authorization contacts the server and its authorization server with the "
                "configured client)"
            )
            return self.target(config, state)

        target = await in_read_thread(prepare)
        started = await self.broker.start(target, issuer=issuer)
        if started.completion is not None:
            await self._commit(started.completion)
        return OAuthStarted.of(started)

    async def complete(self, params: Mapping[str, str | None]) -> OAuthAuthorized:
        """`GET /oauth/callback`: finish an authorization from its query parameters (R-4.9).

        Protected by the single-use, unguessable `state` (no admin token: the browser arrives here).

        Returns:
            An `OAuthAuthorized`: the server, the issuer and the granted scopes.
        Raises:
            OAuthCallbackInvalid, OAuthTokenFailed, OAuthAuthorizationRequired (the server changed meanwhile).
        """
        completion = await self.broker.complete(
            state=params.get("state"), code=params.get("code"), iss=params.get("iss"), error=params.get("error")
        )
        await self._commit(completion)
        return OAuthAuthorized(
            server_id=completion.server_id,
            issuer=completion.binding.issuer,
            scopes=tuple((completion.scope or "").split()),
        )

    async def complete_from_url(self, server_id: str, body: object) -> OAuthAuthorized:
        """`POST /api/mcp/servers/{id}/oauth/complete`: the headless variant of the callback.

        Args:
            body: `{"callback_url": "<the URL the browser was redirected to>"}`, for a browser that could
                not reach this host (the CLI pastes it).
        Returns:
            An `OAuthAuthorized`, as `complete`.
        Raises:
            RequestInvalid, OAuthCallbackInvalid (also when the state belongs to another server), and
            what `complete` raises.
        """
        await self._require_oauth(server_id)
        if not is_mapping(body) or set(body) - {"callback_url"}:
            raise _invalid("body", "send {'callback_url': '<the redirected URL>'}")
        url = _optional_text(body, "callback_url")
        if url is None:
            raise _invalid("callback_url", "is required")
        params = dict(parse_qsl(urlsplit(url).query))
        owner = self.broker.pending_server(params.get("state"))
        if owner is not None and owner != server_id:
            params["state"] = ""  # a state of another server is treated as unknown (and not consumed)
        return await self.complete(params)

    async def forget(self, server_id: str) -> OAuthForgotten:
        """`DELETE /api/mcp/servers/{id}/oauth`: delete stored credentials and in-memory tokens (log out).

        The binding (issuer pin) in the configuration stays. Raises ServerNotFound, OAuthNotConfigured.
        """

        def prepare() -> OAuthTarget:
            state = self._store.read()
            config, _ = _oauth_config(_record(state, server_id))
            return self.target(config, state, secrets=False)

        target = await in_read_thread(prepare)
        await self.broker.forget(target)
        await self._after_authorization(server_id)
        return OAuthForgotten(server_id)

    def drop_server(self, server_id: str) -> None:
        """Forget in-memory OAuth state of a deleted server."""
        self.broker.drop_server(server_id)

    # ----- internals ---------------------------------------------------------------------------------

    async def _require_oauth(self, server_id: str) -> None:
        """Raise ServerNotFound / OAuthNotConfigured before looking at a request body."""
        await in_read_thread(lambda: _oauth_config(_record(self._store.read(), server_id)))

    async def _commit(self, completion: Completion) -> None:
        """Persist a completion and record its binding in one transaction, then reconnect."""
        binding = completion.binding

        def run() -> None:
            with self._store.transaction() as state:
                record = state.servers.get(completion.server_id)
                config = record.config if record is not None else None
                if (
                    record is None
                    or not isinstance(config, StreamableHttpServerConfig | SseServerConfig)
                    or not isinstance(config.auth, AuthOAuth)
                    or canonical_resource(config.url) != binding.resource
                ):
                    raise OAuthAuthorizationRequired(
                        f"server '{completion.server_id}' changed while it was being authorized; nothing was stored, "
                        "start the authorization again",
                        details={"reason": "auth_required", "hint": "changed_meanwhile"},
                    )
                old_digest = self._digest(config, state)
                self.broker.vault.write(
                    state,
                    binding,
                    server=completion.server,
                    client=completion.client,
                    grant=(completion.refresh_token, completion.scope),
                    access=(completion.access_token, completion.expires_at) if completion.access_token else None,
                )
                CredentialVault.purge(state, completion.server_id, keep=binding)
                auth = config.auth
                recorded = OAuthBinding(resource=binding.resource, issuer=binding.issuer)
                if auth.binding == recorded:
                    return
                new_config = config.model_copy(update={"auth": auth.model_copy(update={"binding": recorded})})
                new_digest = self._digest(new_config, state)
                update: dict[str, Any] = {"config": new_config, "version": record.version + 1, "updated_at": _now()}
                replaced = auth.binding is not None and canonical_resource(auth.binding.resource) == binding.resource
                if replaced:
                    update.update(trusted_digest=None, last_test=None, enabled=False)  # another issuer
                else:
                    if record.trusted_digest == old_digest:
                        update["trusted_digest"] = new_digest
                    if record.last_test is not None and record.last_test.digest == old_digest:
                        update["last_test"] = record.last_test.model_copy(update={"digest": new_digest})
                state.servers[completion.server_id] = record.model_copy(update=update)

        await in_write_thread(run)
        await self._after_authorization(completion.server_id)
