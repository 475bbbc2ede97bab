"""The OAuth broker: our own authorization flow for remote MCP servers (R-4, docs/sdk-notes.md#oauth-broker).

The SDK's `OAuthClientProvider` is not used (docs/sdk-notes.md#oauth-deviations lists where it deviates
from R-4). The broker owns the flow and reuses the SDK's models and helpers (PKCE, WWW-Authenticate
parsing, discovery URL lists, registration checks, scope union):

- `start()` is the only way an interactive authorization begins, and only a user action calls it
  (R-4.9): discovery (`discovery.discover`), the client identity (configured, CIMD, a stored
  registration, or dynamic registration), the scopes (R-4.5), PKCE S256 and `state`. It returns the
  authorize URL with the issuer and scopes to show before the browser opens. Machine grants
  (`client_credentials`, `cross_app_access`) have no browser step; `start()` obtains the token at once.
- `complete()` is the callback: single-use `state`, RFC 9207 `iss`, the code exchange with the RFC 8707
  `resource`. It returns a `Completion`; the service persists it and records the binding.
- `token_for_request()` / `after_unauthorized()` serve the runtime (`BoundBearerAuth`). They renew at
  most once per request, only against the bound token endpoint from the encrypted metadata snapshot,
  and never start an interactive login: a background connection can only fail with
  `OAuthAuthorizationRequired` (R-4.9).
- Renewal is single-flight per binding across processes (R-9.2): inside a process an `anyio.Lock`,
  across processes the store's lock for the binding (`Store.lock`). Whoever holds both re-reads the
  stored grant first: when another process already renewed (a fresh access token it did not send,
  stored with the rotated refresh token), that token is used and no refresh is sent — a single-use
  refresh token is presented once. A renewal stores the new refresh and access tokens together only
  if the refresh token it presented is still the stored one, and `invalid_grant` clears the grant
  only under the same condition (compare-and-clear), so a late loser never deletes a winner's grant.
- `step_up_error()` turns `403 insufficient_scope` into `OAuthStepUpRequired` with the union of the
  granted and challenged scopes, or `OAuthStepUpLimitReached` once `MAX_STEP_UP_AUTHORIZATIONS`
  step-ups were completed while the same operation kept being refused (no loops; the bookkeeping is
  reset when a refused operation succeeds).

Access tokens are kept in this object's memory and, encrypted under the binding, in the grant the
`CredentialVault` stores (so other processes can use them, see `auth/vault.py`).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import anyio.to_thread
import httpx2
from mcp.client.auth import PKCEParameters
from mcp.client.auth.utils import union_scopes

from mcp_center.auth.bearer import BoundBearerAuth
from mcp_center.auth.discovery import AuthorizationServer, Challenge, discover
from mcp_center.auth.grants import OFFLINE_ACCESS, machine_grant, missing_secret, probe_challenge, select_scope
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.registration import register_client
from mcp_center.auth.target import OAuthTarget
from mcp_center.auth.tokens import ClientIdentity, TokenSet, request_token
from mcp_center.auth.vault import Binding, CredentialVault, StoredCredentials
from mcp_center.errors import (
    CenterError,
    ConfigInvalid,
    OAuthAuthorizationRequired,
    OAuthCallbackInvalid,
    OAuthDiscoveryFailed,
    OAuthIssuerChoiceRequired,
    OAuthStepUpLimitReached,
    OAuthStepUpRequired,
    OAuthTokenFailed,
)
from mcp_center.models import ErrorReason
from mcp_center.secrets import Redactor, SecretCipher
from mcp_center.store import Store, StoreState

__all__ = [
    "MAX_STEP_UP_AUTHORIZATIONS",
    "PENDING_TTL_S",
    "AuthorizationStart",
    "Completion",
    "OAuthBroker",
]

logger = logging.getLogger(__name__)

PENDING_TTL_S: Final = 600.0
"""Seconds a started authorization waits for its callback (the user logs in meanwhile)."""
MAX_PENDING: Final = 64
"""Started authorizations kept at once; the oldest is dropped beyond this."""
MAX_STEP_UP_AUTHORIZATIONS: Final = 2
"""Step-up authorizations in a row that may fail to satisfy the server before the broker stops (R-4.5).
With the first authorization that makes at most three authorizations, as SEP-835's retry limit asks."""
EXPIRY_SKEW_S: Final = 60.0
"""An access token this close (seconds) to its expiry is renewed before use."""


@dataclass(frozen=True)
class Completion:
    """A finished authorization, ready to persist (the service writes it in one transaction).

    Attributes:
        url: The MCP URL it was obtained for (the service checks the configuration did not change).
        binding: The (server, canonical resource, issuer) it belongs to.
        server: The metadata snapshot of the authorization server.
        client: A registered client to store, or None (configured or CIMD identities are not stored).
        refresh_token: The refresh token, or None.
        scope: The granted scope string, or None.
        previous_issuer: The issuer of the binding this one replaces, if it differs.
    """

    server_id: str
    url: str
    binding: Binding
    server: AuthorizationServer
    client: ClientIdentity | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    previous_issuer: str | None = None
    access_token: str | None = field(default=None, repr=False)
    """The access token the grant returned (stored with it, for other processes)."""
    expires_at: float | None = None
    """When `access_token` expires (wall-clock seconds)."""


@dataclass(frozen=True)
class AuthorizationStart:
    """What `start()` returns: show `issuer` and `scopes` to the user before opening `authorization_url`.

    `authorization_url` is None for machine grants, which completed at once (`completion`).
    """

    server_id: str
    issuer: str
    scopes: tuple[str, ...]
    resource: str
    authorization_url: str | None
    expires_at: datetime | None
    step_up: bool
    client_id_source: str
    previous_issuer: str | None = None
    completion: Completion | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The API shape (no secret: the URL holds only public parameters and the one-time state)."""
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
            "authorized": self.completion is not None,
        }


@dataclass
class _Pending:
    state: str = field(repr=False)
    target: OAuthTarget
    binding: Binding
    server: AuthorizationServer
    identity: ClientIdentity
    store_client: ClientIdentity | None
    verifier: str = field(repr=False)
    redirect_uri: str
    scope: str | None
    step_up: bool
    previous_issuer: str | None
    expires: float


@dataclass
class _Access:
    token: str = field(repr=False)
    expires_at: float | None
    scope: str | None


@dataclass
class _StepUp:
    """Step-up bookkeeping of one binding: the scopes to ask for, the refused operations, and how many
    step-up authorizations were completed while one of those operations kept being refused."""

    scopes: str
    operations: set[str] = field(default_factory=set[str])
    authorizations: int = 0


class OAuthBroker:
    """The host's OAuth client for every remote server (see the module docstring).

    Args:
        store: Where the vault keeps ciphertexts.
        cipher: The host's secret cipher.
        redactor: Receives every token, secret and code the broker handles.
        redirect_uri: `<public base URL>/oauth/callback` (R-4.9).
        http: The broker's HTTP helper (tests pass one with an in-process transport).
        clock: Wall-clock seconds (`time.time`), for expiries.
    """

    def __init__(
        self,
        *,
        store: Store,
        cipher: SecretCipher,
        redactor: Redactor,
        redirect_uri: str,
        http: OAuthHttp | None = None,
        clock: Any = time.time,
    ) -> None:
        self.vault = CredentialVault(store, cipher, redactor)
        self._store = store
        self.redirect_uri = redirect_uri
        self._redactor = redactor
        self._http = http or OAuthHttp()
        self._clock = clock
        self._tokens: dict[Binding, _Access] = {}
        self._locks: dict[Binding, anyio.Lock] = {}
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._challenges: dict[str, tuple[str, Challenge]] = {}
        self._step_up: dict[Binding, _StepUp] = {}
        self._issuer_choices: dict[str, tuple[str, ...]] = {}
        self._last_error: dict[str, dict[str, Any]] = {}

    # ----- runtime (background; never interactive) -------------------------------------------------

    def runtime_auth(self, target: OAuthTarget) -> BoundBearerAuth:
        """The `httpx2.Auth` for one connection to `target` (passed as `ConnectionSpec.auth`)."""
        return BoundBearerAuth(self, target)

    async def token_for_request(self, target: OAuthTarget) -> tuple[str | None, bool]:
        """The access token to attach, renewing it first when it is missing or about to expire.

        Returns:
            `(token, renewed)`: None when the server was never authorized (the request goes without
            one and its 401 becomes `OAuthAuthorizationRequired`); `renewed` when a refresh or a machine
            grant ran for this request (then a 401 is not retried).
        Raises:
            OAuthAuthorizationRequired: renewing failed (`details.hint`: `invalid_grant`, ...).
        """
        binding = target.binding
        if binding is None:
            return None, False
        access = self._valid(binding)
        if access is not None:
            return access.token, False
        async with self._lock(binding):
            access = self._valid(binding)
            if access is not None:
                return access.token, False
            if self._adopt(binding, await self._load(target, binding), unless=None):
                return self._tokens[binding].token, False  # stored by this or another process
            async with self._shared_lock(binding):
                stored = await self._load(target, binding)  # again: another process may just have renewed
                if self._adopt(binding, stored, unless=None):
                    return stored.access_token, False
                token = await self._renew(target, binding, stored)
                return token, token is not None

    async def after_unauthorized(self, target: OAuthTarget, sent_token: str) -> str | None:
        """A 401 answered `sent_token`: renew once against the bound token endpoint (R-4.7).

        Returns:
            A new token to retry with, or None when there is nothing to renew with.
        Raises:
            OAuthAuthorizationRequired: renewing failed.
        """
        binding = target.binding
        if binding is None:
            return None
        async with self._lock(binding):
            current = self._tokens.get(binding)
            if current is not None and current.token != sent_token and self._fresh(current):
                return current.token  # another request renewed meanwhile
            self._tokens.pop(binding, None)
            if self._adopt(binding, await self._load(target, binding), unless=sent_token):
                return self._tokens[binding].token  # another process renewed already
            async with self._shared_lock(binding):
                stored = await self._load(target, binding)
                if self._adopt(binding, stored, unless=sent_token):
                    return stored.access_token  # another process renewed meanwhile
                token: str | None = None
                try:
                    token = await self._renew(target, binding, stored)
                finally:
                    if token is None and stored.access_token == sent_token:
                        # Refused and not replaced: no process may adopt it any more (a successful
                        # renewal replaced it already, in the same commit as the rotated refresh token).
                        await anyio.to_thread.run_sync(lambda: self.vault.drop_access_if(binding, sent_token))
                return token

    def note_challenge(self, target: OAuthTarget, challenge: Challenge) -> None:
        """Remember the last 401/403 challenge of a server (its scope and metadata URL guide `start()`)."""
        self._challenges[target.server_id] = (target.resource, challenge)

    def note_success(self, target: OAuthTarget, operation: str) -> None:
        """An authorized request succeeded. When it is an operation a 403 refused, the step-up worked:
        its bookkeeping and the last error are reset (other operations prove nothing about the scopes)."""
        binding = target.binding
        step = self._step_up.get(binding) if binding is not None else None
        if step is None:
            self._last_error.pop(target.server_id, None)
        elif binding is not None and operation in step.operations:
            del self._step_up[binding]
            self._last_error.pop(target.server_id, None)

    def authorization_required(
        self, target: OAuthTarget, *, hint: str, cause: CenterError | None = None
    ) -> OAuthAuthorizationRequired:
        """The error a request gets when only a user can help (R-4.9); it is remembered for the view."""
        messages = {
            "not_authorized": "the server requires authorization; a user must authorize it (POST .../oauth/start)",
            "rejected": "the server rejected the access token and it could not be renewed; authorize again",
            "invalid_grant": "the authorization server revoked the refresh token; authorize again",
            "invalid_client": "the authorization server no longer knows this client; authorize again",
            "issuer_changed": "the server now names another authorization server; authorize again to bind it",
            "renewal_failed": "the access token could not be renewed; authorize again or check the server",
            "refresh_refused": "the authorization server refused the refresh token; authorize again",
        }
        details: dict[str, Any] = {
            "reason": ErrorReason.AUTH_REQUIRED.value,
            "hint": hint,
            "server_id": target.server_id,
        }
        if cause is not None:
            details["cause"] = cause.code
        error = OAuthAuthorizationRequired(
            f"server '{target.server_id}': {messages.get(hint, messages['not_authorized'])}", details=details
        )
        self._last_error[target.server_id] = error.to_dict()
        return error

    def step_up_error(self, target: OAuthTarget, challenge: Challenge, operation: str) -> CenterError:
        """The error for a `403 insufficient_scope` (R-4.5): step-up needed, or the loop limit reached.

        Args:
            operation: What was refused (`tools/call:<name>`, `tools/list`, ...): the loop limit counts
                step-up authorizations after which the same operation is still refused.
        """
        binding = target.binding
        granted = self._granted_scope(binding)
        wanted = union_scopes(granted, challenge.scope) or ""
        if binding is None:
            return self.authorization_required(target, hint="not_authorized")
        step = self._step_up.setdefault(binding, _StepUp(wanted))
        step.scopes = union_scopes(step.scopes, wanted) or wanted
        step.operations.add(operation)
        scopes = step.scopes.split()
        if step.authorizations >= MAX_STEP_UP_AUTHORIZATIONS:
            error: CenterError = OAuthStepUpLimitReached(
                f"server '{target.server_id}' still answers insufficient_scope after {step.authorizations} step-up "
                "authorizations; not asking again",
                details={
                    "reason": ErrorReason.STEP_UP_REQUIRED.value,
                    "scopes": scopes,
                    "attempts": step.authorizations + 1,
                    "server_id": target.server_id,
                },
            )
        else:
            error = OAuthStepUpRequired(
                f"server '{target.server_id}' needs more scopes ({' '.join(scopes)}); a user must authorize them "
                "(POST .../oauth/start)",
                details={"reason": ErrorReason.STEP_UP_REQUIRED.value, "scopes": scopes, "server_id": target.server_id},
            )
        logger.info("oauth.step_up_required", extra={"server_id": target.server_id, "code": error.code})
        self._last_error[target.server_id] = error.to_dict()
        return error

    # ----- user actions -----------------------------------------------------------------------------

    async def start(self, target: OAuthTarget, *, issuer: str | None = None) -> AuthorizationStart:
        """Begin an authorization for `target`; call only on a user action (R-4.9).

        Args:
            issuer: The issuer the user chose among several (R-4.3), or None.
        Returns:
            For the authorization code grant, the URL to open plus the issuer and scopes to show
            first; for machine grants, a start whose `completion` holds the obtained grant.
        Raises:
            OAuthDiscoveryFailed, OAuthRegistrationFailed, OAuthTokenFailed, OAuthStepUpLimitReached,
            ConfigInvalid (a configured credential is missing), OAuthIssuerChoiceRequired (several
            issuers, or a machine grant whose issuer changed: it needs the new issuer chosen explicitly).
        """
        try:
            return await self._start(target, issuer=issuer)
        except CenterError as exc:
            if isinstance(exc, OAuthIssuerChoiceRequired):
                self._issuer_choices[target.server_id] = tuple(exc.details.get("issuers", ()))
            self._last_error[target.server_id] = exc.to_dict()
            logger.info("oauth.start_failed", extra={"server_id": target.server_id, "code": exc.code})
            raise

    async def _start(self, target: OAuthTarget, *, issuer: str | None) -> AuthorizationStart:
        step = self._step_up.get(target.binding) if target.binding is not None else None
        if step is not None and step.authorizations >= MAX_STEP_UP_AUTHORIZATIONS:
            raise OAuthStepUpLimitReached(
                f"server '{target.server_id}' did not accept the last {step.authorizations} step-up authorizations; "
                "forget the authorization (DELETE .../oauth) to start over",
                details={
                    "reason": ErrorReason.STEP_UP_REQUIRED.value,
                    "attempts": step.authorizations,
                    "scopes": step.scopes.split(),
                },
            )
        async with self._http.client() as client:
            challenge = self._challenge(target)
            if challenge is None:
                challenge = await probe_challenge(self._http, client, target)
                if challenge is not None:
                    self.note_challenge(target, challenge)
            discovery = await discover(
                self._http,
                client,
                mcp_url=target.url,
                challenge=challenge,
                policy=target.policy,
                bound_issuer=target.bound_issuer,
                chosen_issuer=issuer,
                legacy_fallback=target.auth.legacy_endpoint_fallback,
                require_s256=target.interactive,
            )
            self._issuer_choices.pop(target.server_id, None)
            server = discovery.server
            binding = Binding(target.server_id, discovery.resource, server.issuer)
            previous = target.bound_issuer if target.bound_issuer not in (None, server.issuer) else None
            if previous is not None and not target.interactive and issuer is None:
                # A machine grant would send the configured credentials at once: a new issuer must be
                # confirmed explicitly first, as there is no login page to show it on.
                raise OAuthIssuerChoiceRequired(
                    f"server '{target.server_id}' now names the authorization server {server.issuer} instead of "
                    f"{previous}; confirm it by starting again with that issuer",
                    details={"issuers": list(discovery.issuers), "bound_issuer": previous},
                )
            stored = await anyio.to_thread.run_sync(self.vault.load, binding)
            step_scopes = step.scopes if step is not None and previous is None else None
            scope = select_scope(target, discovery, challenge, step_scopes, stored.scope)
            if not target.interactive:
                tokens = await machine_grant(self._http, client, target, server, scope, self._redactor)
                granted = tokens.scope or scope
                self._remember(binding, tokens, granted)
                completion = Completion(
                    server_id=target.server_id,
                    url=target.url,
                    binding=binding,
                    server=server,
                    refresh_token=tokens.refresh_token,
                    scope=granted,
                    previous_issuer=previous,
                    access_token=tokens.access_token,
                    expires_at=tokens.expires_at,
                )
                logger.info("oauth.machine_grant", extra={"server_id": target.server_id, "grant": target.auth.grant})
                return AuthorizationStart(
                    server_id=target.server_id,
                    issuer=server.issuer,
                    scopes=tuple((granted or "").split()),
                    resource=discovery.resource,
                    authorization_url=None,
                    expires_at=None,
                    step_up=False,
                    client_id_source="configured",
                    previous_issuer=previous,
                    completion=completion,
                )
            identity, store_client = await self._identity(client, target, server, stored, scope)
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        self._redactor.add(pkce.code_verifier)
        params = {
            "response_type": "code",
            "client_id": identity.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
            "resource": discovery.resource,
        }
        if scope:
            params["scope"] = scope
            if OFFLINE_ACCESS in scope.split():
                params["prompt"] = "consent"  # OIDC Core §11: offline_access needs consent
        assert server.authorization_endpoint is not None, "discovery returns an authorization endpoint"
        url = str(httpx2.URL(server.authorization_endpoint).copy_merge_params(params))
        expires = self._clock() + PENDING_TTL_S
        self._add_pending(
            _Pending(
                state=state,
                target=target,
                binding=binding,
                server=server,
                identity=identity,
                store_client=store_client,
                verifier=pkce.code_verifier,
                redirect_uri=self.redirect_uri,
                scope=scope,
                step_up=step is not None and previous is None,
                previous_issuer=previous,
                expires=expires,
            )
        )
        logger.info(
            "oauth.authorization_started",
            extra={"server_id": target.server_id, "issuer": server.issuer, "step_up": step is not None},
        )
        return AuthorizationStart(
            server_id=target.server_id,
            issuer=server.issuer,
            scopes=tuple((scope or "").split()),
            resource=discovery.resource,
            authorization_url=url,
            expires_at=datetime.fromtimestamp(expires, UTC),
            step_up=step is not None and previous is None,
            client_id_source=identity.source,
            previous_issuer=previous,
        )

    async def complete(
        self, *, state: str | None, code: str | None, iss: str | None = None, error: str | None = None
    ) -> Completion:
        """Finish an authorization from its callback parameters (R-4.9).

        The `state` is single-use: it is consumed whatever the outcome.

        Raises:
            OAuthCallbackInvalid: unknown, used or expired state; `error` from the authorization server;
                an `iss` that is not the issuer (or missing when the server announced it, RFC 9207); no code.
            OAuthCallbackInvalid: also when the authorization server refused the code with a 4xx (reason
                `code_rejected`, `details.oauth_error`); `invalid_client` drops a stored registration, so
                the next start registers anew.
            OAuthTokenFailed: the code exchange failed otherwise (5xx, network, unreadable answer).
        """
        self._expire_pending()
        pending = self._pending.pop(state, None) if state else None
        if state:
            self._redactor.add(state)
        if pending is None:
            raise OAuthCallbackInvalid(
                "this authorization is unknown, was already used, or expired; start it again",
                details={"reason": "state_unknown"},
            )
        server_id = pending.target.server_id
        if error:
            safe = error if error.replace("_", "").isalnum() and len(error) <= 64 else "error"
            raise OAuthCallbackInvalid(
                f"the authorization server did not authorize server '{server_id}' ({safe})",
                details={"reason": "authorization_denied", "oauth_error": safe, "server_id": server_id},
            )
        if (iss is not None and iss != pending.server.issuer) or (
            iss is None and pending.server.iss_parameter_supported
        ):
            raise OAuthCallbackInvalid(
                "the authorization response names another issuer than the one the authorization was sent to "
                "(RFC 9207); refusing it",
                details={"reason": "iss_mismatch", "server_id": server_id},
            )
        if not code:
            raise OAuthCallbackInvalid("the callback carries no authorization code", details={"reason": "code_missing"})
        self._redactor.add(code)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.verifier,
            "resource": pending.binding.resource,
        }
        async with self._http.client() as client:
            try:
                tokens = await request_token(
                    self._http, client, pending.server, pending.target.policy, pending.identity, form
                )
            except OAuthTokenFailed as exc:
                if exc.details.get("oauth_error") == "invalid_client" and pending.identity.source == "registered":
                    await anyio.to_thread.run_sync(lambda: self.vault.save(pending.binding, clear=("client", "grant")))
                    exc.details["hint"] = "registration_dropped"
                    exc.message += "; the client registration was dropped, start the authorization again"
                refused = _code_refused(exc, server_id)
                self._last_error[server_id] = (refused or exc).to_dict()
                if refused is not None:
                    raise refused from None
                raise
        scope = tokens.scope or pending.scope
        self._remember(pending.binding, tokens, scope)
        if pending.step_up:
            step = self._step_up.setdefault(pending.binding, _StepUp(pending.scope or ""))
            step.authorizations += 1
        self._last_error.pop(server_id, None)
        logger.info("oauth.authorized", extra={"server_id": server_id, "issuer": pending.server.issuer})
        return Completion(
            server_id=server_id,
            url=pending.target.url,
            binding=pending.binding,
            server=pending.server,
            client=pending.store_client,
            refresh_token=tokens.refresh_token,
            scope=scope,
            previous_issuer=pending.previous_issuer,
            access_token=tokens.access_token,
            expires_at=tokens.expires_at,
        )

    def pending_server(self, state: str | None) -> str | None:
        """The server id a pending `state` belongs to (for the callback page), without consuming it."""
        pending = self._pending.get(state) if state else None
        return pending.target.server_id if pending is not None else None

    async def forget(self, target: OAuthTarget) -> None:
        """Log out: delete every stored credential and in-memory token of the server (all bindings)."""
        await anyio.to_thread.run_sync(lambda: self.vault.forget(target.server_id))
        self.drop_server(target.server_id)

    def drop_server(self, server_id: str) -> None:
        """Forget everything kept in memory for `server_id` (tokens, pending authorizations, counters)."""
        for binding in [b for b in self._tokens if b.server_id == server_id]:
            del self._tokens[binding]
        for binding in [b for b in self._step_up if b.server_id == server_id]:
            del self._step_up[binding]
        for state in [s for s, p in self._pending.items() if p.target.server_id == server_id]:
            del self._pending[state]
        self._challenges.pop(server_id, None)
        self._issuer_choices.pop(server_id, None)
        self._last_error.pop(server_id, None)

    def status(self, target: OAuthTarget, state: StoreState) -> dict[str, Any]:
        """The OAuth part of a server view: never a token, a secret or a code.

        Returns:
            `{"grant", "resource", "issuer", "authorized", "authorized_at", "scopes", "client_id_source",
            "access_token_in_memory", "access_token_expires_at", "pending", "needs", "step_up_scopes",
            "issuers", "last_error"}`; `needs` is None, `authorization`, `step_up` or `issuer_choice`.
        """
        binding = target.binding
        stored = StoredCredentials()
        if binding is not None:
            try:
                stored = self.vault.read(state, binding)
            except CenterError:
                logger.warning("oauth.status_unreadable", extra={"server_id": target.server_id})
        access = self._tokens.get(binding) if binding is not None else None
        shared = _Access(stored.access_token, stored.expires_at, stored.scope) if stored.access_token else None
        usable = stored.refresh_token is not None or any(a is not None and self._fresh(a) for a in (access, shared))
        authorized = stored.authorized and (not target.interactive or usable)
        step = self._step_up.get(binding) if binding is not None else None
        choices = self._issuer_choices.get(target.server_id)
        pending = tuple(self._pending.values())  # status() runs in a worker thread: iterate a snapshot
        needs: str | None = None
        if choices:
            needs = "issuer_choice"
        elif step is not None:
            needs = "step_up"
        elif not authorized:
            needs = "authorization"
        client_source = "configured" if target.auth.client_id else (stored.client.source if stored.client else None)
        if client_source is None and target.auth.client_metadata_url and stored.server and stored.server.cimd_supported:
            client_source = "cimd"
        return {
            "grant": target.auth.grant,
            "resource": target.resource,
            "issuer": binding.issuer if binding else None,
            "authorized": authorized,
            "authorized_at": stored.authorized_at.isoformat() if stored.authorized_at else None,
            "scopes": (access.scope if access and access.scope else stored.scope or "").split(),
            "client_id_source": client_source,
            "access_token_in_memory": access is not None and self._fresh(access),
            "access_token_expires_at": (
                datetime.fromtimestamp(access.expires_at, UTC).isoformat() if access and access.expires_at else None
            ),
            "pending": any(p.target.server_id == target.server_id for p in pending),
            "needs": needs,
            "step_up_scopes": step.scopes.split() if step else [],
            "issuers": list(choices) if choices else [],
            "last_error": self._last_error.get(target.server_id),
        }

    # ----- internals ---------------------------------------------------------------------------------

    def _lock(self, binding: Binding) -> anyio.Lock:
        return self._locks.setdefault(binding, anyio.Lock())

    def _shared_lock(self, binding: Binding) -> contextlib.AbstractAsyncContextManager[None]:
        """The binding's renewal lock across every process on the store (R-9.2)."""
        return self._store.lock("oauth-renewal:" + binding.secret_id("grant"))

    async def _load(self, target: OAuthTarget, binding: Binding) -> StoredCredentials:
        try:
            return await anyio.to_thread.run_sync(self.vault.load, binding)
        except CenterError as exc:
            raise self.authorization_required(target, hint="renewal_failed", cause=exc) from None

    def _adopt(self, binding: Binding, stored: StoredCredentials, *, unless: str | None) -> bool:
        """Use the stored access token when it is fresh and is not `unless` (the one a 401 refused):
        another process obtained it. True when adopted."""
        token = stored.access_token
        if token is None or token == unless:
            return False
        access = _Access(token, stored.expires_at, stored.scope)
        if not self._fresh(access):
            return False
        self._redactor.add(token)
        self._tokens[binding] = access
        logger.info("oauth.token_adopted", extra={"server_id": binding.server_id})
        return True

    def _fresh(self, access: _Access) -> bool:
        return access.expires_at is None or access.expires_at - EXPIRY_SKEW_S > self._clock()

    def _valid(self, binding: Binding) -> _Access | None:
        access = self._tokens.get(binding)
        return access if access is not None and self._fresh(access) else None

    def _granted_scope(self, binding: Binding | None) -> str | None:
        if binding is None:
            return None
        access = self._tokens.get(binding)
        return access.scope if access is not None else None

    def _remember(self, binding: Binding, tokens: TokenSet, scope: str | None) -> None:
        self._redactor.add(tokens.access_token)
        if tokens.refresh_token:
            self._redactor.add(tokens.refresh_token)
        for other in [b for b in self._tokens if b.server_id == binding.server_id and b != binding]:
            del self._tokens[other]
        self._tokens[binding] = _Access(tokens.access_token, tokens.expires_at, tokens.scope or scope)

    def _challenge(self, target: OAuthTarget) -> Challenge | None:
        remembered = self._challenges.get(target.server_id)
        if remembered is None or remembered[0] != target.resource:
            return None
        return remembered[1]

    async def _identity(
        self,
        client: httpx2.AsyncClient,
        target: OAuthTarget,
        server: AuthorizationServer,
        stored: StoredCredentials,
        scope: str | None,
    ) -> tuple[ClientIdentity, ClientIdentity | None]:
        """`(identity, to_store)`: configured, else CIMD (R-4.10), else a stored registration, else DCR."""
        configured = target.configured_identity(server.token_endpoint_auth_methods)
        if configured is not None:
            if configured.auth_method in ("client_secret_basic", "client_secret_post") and not configured.client_secret:
                raise missing_secret("client_secret", f"the {configured.auth_method} token endpoint auth method")
            return configured, None
        if target.auth.client_metadata_url and server.cimd_supported:
            return ClientIdentity(client_id=target.auth.client_metadata_url, auth_method="none", source="cimd"), None
        if _reusable(stored.client, redirect_uri=self.redirect_uri, scope=scope):
            assert stored.client is not None
            return stored.client, None
        registered = await register_client(
            self._http, client, server, target.policy, redirect_uri=self.redirect_uri, scope=scope
        )
        if registered.client_secret:
            self._redactor.add(registered.client_secret)
        logger.info("oauth.client_registered", extra={"server_id": target.server_id, "issuer": server.issuer})
        return registered, registered

    async def _renew(
        self, target: OAuthTarget, binding: Binding, stored: StoredCredentials, *, retried: bool = False
    ) -> str | None:
        """One renewal against the bound authorization server (caller holds both of the binding's locks)."""
        if not target.interactive:
            return await self._renew_machine(target, binding, stored)
        offered = stored.server.token_endpoint_auth_methods if stored.server else None
        identity = target.configured_identity(offered) or stored.client
        if stored.refresh_token is None or stored.server is None or identity is None:
            return None
        if identity.source == "cimd" and not target.auth.client_metadata_url:
            return None
        presented = stored.refresh_token
        form = {"grant_type": "refresh_token", "refresh_token": presented, "resource": binding.resource}
        try:
            async with self._http.client() as client:
                tokens = await request_token(self._http, client, stored.server, target.policy, identity, form)
        except OAuthTokenFailed as exc:
            return await self._refresh_failed(target, binding, identity, exc, presented, retried=retried)
        except OAuthDiscoveryFailed as exc:
            raise self.authorization_required(target, hint="renewal_failed", cause=exc) from None
        scope = tokens.scope or stored.scope
        rotated = await anyio.to_thread.run_sync(
            lambda: self.vault.rotate(binding, presented=presented, tokens=tokens, scope=scope)
        )
        if rotated is None:
            logger.warning("oauth.rotation_not_stored", extra={"server_id": target.server_id})
        self._remember(binding, tokens, stored.scope)
        logger.info("oauth.refreshed", extra={"server_id": target.server_id})
        return tokens.access_token

    async def _refresh_failed(
        self,
        target: OAuthTarget,
        binding: Binding,
        identity: ClientIdentity,
        exc: OAuthTokenFailed,
        presented: str,
        *,
        retried: bool,
    ) -> str | None:
        # Issue 14 item 18: a 400 or 401 is the authorization server's answer about this refresh token,
        # whatever its `error` says (`invalid_grant`, `invalid_request`, ...): the token ends here, since
        # presenting it again at every call and restart would never work. A 5xx or a network failure
        # says nothing about the token: it is kept, and the error is marked retryable so the runtime's
        # reconnect backoff bounds the next attempts.
        oauth_error = exc.details.get("oauth_error")
        status = exc.details.get("status")
        logger.warning(
            "oauth.refresh_failed", extra={"server_id": target.server_id, "oauth_error": oauth_error, "status": status}
        )
        if oauth_error == "invalid_client" and identity.source == "registered":
            await anyio.to_thread.run_sync(lambda: self.vault.save(binding, clear=("client", "grant")))
            raise self.authorization_required(target, hint="invalid_client", cause=exc) from None
        if oauth_error == "invalid_grant" or status in (400, 401):
            cleared = await anyio.to_thread.run_sync(lambda: self.vault.clear_grant_if(binding, presented))
            if not cleared and not retried:
                # The grant was replaced while this refresh was out (a new authorization): use that one.
                stored = await self._load(target, binding)
                if self._adopt(binding, stored, unless=None):
                    return stored.access_token
                return await self._renew(target, binding, stored, retried=True)
            hint = oauth_error if oauth_error in ("invalid_grant", "invalid_client") else "refresh_refused"
            raise self.authorization_required(target, hint=str(hint), cause=exc) from None
        error = self.authorization_required(target, hint="renewal_failed", cause=exc)
        error.details["retryable"] = True
        raise error from None

    async def _renew_machine(self, target: OAuthTarget, binding: Binding, stored: StoredCredentials) -> str | None:
        """A machine grant in the background, only at the bound issuer (never a changed one)."""
        try:
            async with self._http.client() as client:
                server = stored.server
                if server is None:
                    remembered = self._challenge(target)
                    discovery = await discover(
                        self._http,
                        client,
                        mcp_url=target.url,
                        challenge=remembered,
                        policy=target.policy,
                        bound_issuer=binding.issuer,
                        require_s256=False,
                    )
                    if discovery.server.issuer != binding.issuer:
                        raise self.authorization_required(target, hint="issuer_changed")
                    server = discovery.server
                scope = stored.scope or (" ".join(target.auth.scopes) if target.auth.scopes else None)
                tokens = await machine_grant(self._http, client, target, server, scope, self._redactor)
        except (OAuthTokenFailed, OAuthDiscoveryFailed, OAuthIssuerChoiceRequired, ConfigInvalid) as exc:
            raise self.authorization_required(target, hint="renewal_failed", cause=exc) from None
        access = (tokens.access_token, tokens.expires_at)
        if stored.server is None:
            snapshot = server
            await anyio.to_thread.run_sync(
                lambda: self.vault.save(binding, server=snapshot, grant=(None, tokens.scope), access=access)
            )
        else:
            await anyio.to_thread.run_sync(
                lambda: self.vault.rotate(binding, presented=None, tokens=tokens, scope=tokens.scope or stored.scope)
            )
        self._remember(binding, tokens, stored.scope)
        return tokens.access_token

    def _add_pending(self, pending: _Pending) -> None:
        self._expire_pending()
        self._pending[pending.state] = pending
        while len(self._pending) > MAX_PENDING:
            self._pending.popitem(last=False)

    def _expire_pending(self) -> None:
        now = self._clock()
        for state in [s for s, p in self._pending.items() if p.expires <= now]:
            del self._pending[state]


def _code_refused(exc: OAuthTokenFailed, server_id: str) -> OAuthCallbackInvalid | None:
    """A code exchange the authorization server answered with a 4xx is a bad callback (issue 14 item 16):
    the user must start again, nothing upstream is broken. A 5xx, a network failure or an unreadable
    answer stays `OAuthTokenFailed` (502)."""
    status = exc.details.get("status")
    if not isinstance(status, int) or not 400 <= status < 500:
        return None
    oauth_error = exc.details.get("oauth_error")
    said = f" ({oauth_error})" if isinstance(oauth_error, str) else ""
    hint = exc.details.get("hint")
    return OAuthCallbackInvalid(
        f"the authorization server refused the authorization code for server '{server_id}'{said}, HTTP {status}; "
        "start the authorization again",
        details={
            "reason": "code_rejected",
            "server_id": server_id,
            "oauth_error": oauth_error,
            "status": status,
            **({"hint": hint} if hint else {}),
        },
    )


def _reusable(client: ClientIdentity | None, *, redirect_uri: str, scope: str | None) -> bool:
    """A stored registration is reused only for the same redirect URI and scopes it was registered for;
    otherwise a new registration is made (a changed public URL, or a step-up beyond the registered scopes)."""
    if client is None or client.source != "registered" or client.redirect_uri != redirect_uri:
        return False
    if client.registered_scope is None or scope is None:
        return True
    return set(scope.split()) <= set(client.registered_scope.split())
