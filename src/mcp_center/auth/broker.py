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
- `token_for_request()` / `after_unauthorized()` serve the runtime (`BoundBearerAuth`): at most one
  renewal per request, single-flight per binding across processes (R-9.2), never an interactive
  login (R-4.9). That is `auth/renewal.py`.
- `step_up_error()` turns `403 insufficient_scope` into `OAuthStepUpRequired` with the union of the
  granted and challenged scopes, or `OAuthStepUpLimitReached` once `MAX_STEP_UP_AUTHORIZATIONS`
  step-ups were completed while the same operation kept being refused (no loops; the bookkeeping is
  reset when a refused operation succeeds). The errors are built in `auth/refusals.py`.

What the broker remembers of a server (access tokens, renewal locks, step-up bookkeeping, the last
challenge, issuer choices, the last error) is one `ServerAuth` per server (`auth/state.py`). Access
tokens are also kept, encrypted under the binding, in the grant the `CredentialVault` stores (so
other processes can use them, see `auth/vault.py`).
"""

from __future__ import annotations

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

from mcp_center.auth.bearer import BoundBearerAuth
from mcp_center.auth.discovery import AuthorizationServer, Challenge, discover
from mcp_center.auth.grants import OFFLINE_ACCESS, machine_grant, missing_secret, probe_challenge, select_scope
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.refusals import MAX_STEP_UP_AUTHORIZATIONS, authorization_required, code_refused, step_up_error
from mcp_center.auth.registration import register_client
from mcp_center.auth.renewal import TokenRenewal
from mcp_center.auth.state import AccessToken, AuthStates, StepUp
from mcp_center.auth.target import OAuthTarget
from mcp_center.auth.tokens import ClientIdentity, request_token
from mcp_center.auth.vault import Binding, CredentialVault, StoredCredentials
from mcp_center.errors import (
    CenterError,
    OAuthAuthorizationRequired,
    OAuthCallbackInvalid,
    OAuthIssuerChoiceRequired,
    OAuthStepUpLimitReached,
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
        self.redirect_uri = redirect_uri
        self._redactor = redactor
        self._http = http or OAuthHttp()
        self._clock = clock
        self._states = AuthStates()
        """One `ServerAuth` per server: tokens, locks, step-ups, challenge, issuer choices, last error."""
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        """Started authorizations by their one-time `state` (bounded by `MAX_PENDING`, `PENDING_TTL_S`)."""
        self._renewal = TokenRenewal(
            store=store, vault=self.vault, http=self._http, redactor=redactor, clock=clock, states=self._states
        )

    # ----- runtime (background; never interactive) -------------------------------------------------

    def runtime_auth(self, target: OAuthTarget) -> BoundBearerAuth:
        """The `httpx2.Auth` for one connection to `target` (passed as `ConnectionSpec.auth`)."""
        return BoundBearerAuth(self, target)

    async def token_for_request(self, target: OAuthTarget) -> tuple[str | None, bool]:
        """The access token to attach, renewing it first when it is missing or about to expire.

        Returns:
            `(token, renewed)`: None when the server was never authorized; `renewed` when a refresh or
            a machine grant ran for this request (then a 401 is not retried).
        Raises:
            OAuthAuthorizationRequired: renewing failed (`details.hint`: `invalid_grant`, ...).
        """
        return await self._renewal.token_for_request(target)

    async def after_unauthorized(self, target: OAuthTarget, sent_token: str) -> str | None:
        """A 401 answered `sent_token`: renew once against the bound token endpoint (R-4.7).

        Returns:
            A new token to retry with, or None when there is nothing to renew with.
        Raises:
            OAuthAuthorizationRequired: renewing failed.
        """
        return await self._renewal.after_unauthorized(target, sent_token)

    def note_challenge(self, target: OAuthTarget, challenge: Challenge) -> None:
        """Remember the last 401/403 challenge of a server (its scope and metadata URL guide `start()`)."""
        self._states.of(target.server_id).challenge = (target.resource, challenge)

    def note_success(self, target: OAuthTarget, operation: str) -> None:
        """An authorized request succeeded. When it is an operation a 403 refused, the step-up worked:
        its bookkeeping and the last error are reset (other operations prove nothing about the scopes)."""
        known = self._states.of(target.server_id)
        step = known.step_up(target.binding)
        if step is None:
            known.last_error = None
        elif target.binding is not None and operation in step.operations:
            known.binding(target.binding).step_up = None
            known.last_error = None

    def authorization_required(
        self, target: OAuthTarget, *, hint: str, cause: CenterError | None = None
    ) -> OAuthAuthorizationRequired:
        """The error a request gets when only a user can help (R-4.9); it is remembered for the view.

        Args:
            hint: Why (`not_authorized`, `rejected`, ...; see `refusals.authorization_required`).
            cause: The error behind it (only its code is shown).
        """
        return authorization_required(self._states.of(target.server_id), target, hint=hint, cause=cause)

    def step_up_error(self, target: OAuthTarget, challenge: Challenge, operation: str) -> CenterError:
        """The error for a `403 insufficient_scope` (R-4.5): step-up needed, or the loop limit reached.

        Args:
            operation: What was refused (`tools/call:<name>`, `tools/list`, ...): the loop limit counts
                step-up authorizations after which the same operation is still refused.
        """
        return step_up_error(self._states.of(target.server_id), target, challenge, operation)

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
            known = self._states.of(target.server_id)
            if isinstance(exc, OAuthIssuerChoiceRequired):
                known.issuer_choices = tuple(exc.details.get("issuers", ()))
            known.last_error = exc.to_dict()
            logger.info("oauth.start_failed", extra={"server_id": target.server_id, "code": exc.code})
            raise

    async def _start(self, target: OAuthTarget, *, issuer: str | None) -> AuthorizationStart:
        known = self._states.of(target.server_id)
        step = known.step_up(target.binding)
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
            challenge = known.challenge_for(target.resource)
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
            known.issuer_choices = None
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
                self._renewal.remember(binding, tokens, granted)
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
                refused = code_refused(exc, server_id)
                self._states.of(server_id).last_error = (refused or exc).to_dict()
                if refused is not None:
                    raise refused from None
                raise
        scope = tokens.scope or pending.scope
        self._renewal.remember(pending.binding, tokens, scope)
        known = self._states.of(server_id)
        if pending.step_up:
            bound = known.binding(pending.binding)
            if bound.step_up is None:
                bound.step_up = StepUp(pending.scope or "")
            bound.step_up.authorizations += 1
        known.last_error = None
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
        self._states.drop(server_id)
        for state in [s for s, p in self._pending.items() if p.target.server_id == server_id]:
            del self._pending[state]

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
        known = self._states.peek(target.server_id)
        access = known.access(binding)
        shared = AccessToken(stored.access_token, stored.expires_at, stored.scope) if stored.access_token else None
        fresh = self._renewal.fresh
        usable = stored.refresh_token is not None or any(a is not None and fresh(a) for a in (access, shared))
        authorized = stored.authorized and (not target.interactive or usable)
        step = known.step_up(binding)
        choices = known.issuer_choices
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
            "access_token_in_memory": access is not None and fresh(access),
            "access_token_expires_at": (
                datetime.fromtimestamp(access.expires_at, UTC).isoformat() if access and access.expires_at else None
            ),
            "pending": any(p.target.server_id == target.server_id for p in pending),
            "needs": needs,
            "step_up_scopes": step.scopes.split() if step else [],
            "issuers": list(choices) if choices else [],
            "last_error": known.last_error,
        }

    # ----- internals ---------------------------------------------------------------------------------

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

    def _add_pending(self, pending: _Pending) -> None:
        self._expire_pending()
        self._pending[pending.state] = pending
        while len(self._pending) > MAX_PENDING:
            self._pending.popitem(last=False)

    def _expire_pending(self) -> None:
        now = self._clock()
        for state in [s for s, p in self._pending.items() if p.expires <= now]:
            del self._pending[state]


def _reusable(client: ClientIdentity | None, *, redirect_uri: str, scope: str | None) -> bool:
    """A stored registration is reused only for the same redirect URI and scopes it was registered for;
    otherwise a new registration is made (a changed public URL, or a step-up beyond the registered scopes)."""
    if client is None or client.source != "registered" or client.redirect_uri != redirect_uri:
        return False
    if client.registered_scope is None or scope is None:
        return True
    return set(scope.split()) <= set(client.registered_scope.split())
