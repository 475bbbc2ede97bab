"""Access tokens for the runtime: attach, renew single-flight, never interactive (R-4.7, R-4.9, R-9.2).

`TokenRenewal` serves `BoundBearerAuth` (through the broker): `token_for_request()` before a request,
`after_unauthorized()` after a 401. It renews at most once per request, only against the bound token
endpoint from the encrypted metadata snapshot, and never starts an interactive login: a background
connection can only fail with `OAuthAuthorizationRequired`.

Renewal is single-flight per binding across processes (R-9.2): inside a process the binding's
`anyio.Lock` (`auth/state.py`), across processes the store's lock for the binding (`Store.lock`).
Whoever holds both re-reads the stored grant first: when another process already renewed (a fresh
access token it did not send, stored with the rotated refresh token), that token is used and no
refresh is sent — a single-use refresh token is presented once. A renewal stores the new refresh
and access tokens together only if the refresh token it presented is still the stored one, and
`invalid_grant` clears the grant only under the same condition (compare-and-clear), so a late loser
never deletes a winner's grant.

A refresh the authorization server refuses with a 400 or 401 ends the grant (issue 14 item 18); a
5xx or a network failure keeps it and marks the error `details.retryable`, so the runtime's
reconnect backoff bounds the next attempts.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Final

import anyio
import anyio.to_thread

from mcp_center.auth.discovery import discover
from mcp_center.auth.grants import machine_grant
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.refusals import authorization_required
from mcp_center.auth.state import AccessToken, AuthStates
from mcp_center.auth.target import OAuthTarget
from mcp_center.auth.tokens import ClientIdentity, TokenSet, request_token
from mcp_center.auth.vault import Binding, CredentialVault, StoredCredentials
from mcp_center.errors import (
    CenterError,
    ConfigInvalid,
    OAuthAuthorizationRequired,
    OAuthDiscoveryFailed,
    OAuthIssuerChoiceRequired,
    OAuthTokenFailed,
)
from mcp_center.secrets import Redactor
from mcp_center.store import Store

__all__ = ["EXPIRY_SKEW_S", "TokenRenewal"]

logger = logging.getLogger(__name__)

EXPIRY_SKEW_S: Final = 60.0
"""An access token this close (seconds) to its expiry is renewed before use."""


class TokenRenewal:
    """The access tokens of every binding and their renewal (see the module docstring).

    Args:
        store: Its cross-process lock makes a renewal single-flight across processes.
        vault: The encrypted grants and shared access tokens.
        http: The broker's HTTP helper.
        redactor: Receives every token it handles.
        clock: Wall-clock seconds, for expiries.
        states: The broker's per-server state (tokens and locks live there).
    """

    def __init__(
        self,
        *,
        store: Store,
        vault: CredentialVault,
        http: OAuthHttp,
        redactor: Redactor,
        clock: Callable[[], float],
        states: AuthStates,
    ) -> None:
        self._store = store
        self._vault = vault
        self._http = http
        self._redactor = redactor
        self._clock = clock
        self._states = states

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
        bound = self._states.of(binding.server_id).binding(binding)
        async with bound.lock:
            access = self._valid(binding)
            if access is not None:
                return access.token, False
            if self._adopt(binding, await self._load(target, binding), unless=None):
                assert bound.access is not None
                return bound.access.token, False  # stored by this or another process
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
        bound = self._states.of(binding.server_id).binding(binding)
        async with bound.lock:
            current = bound.access
            if current is not None and current.token != sent_token and self.fresh(current):
                return current.token  # another request renewed meanwhile
            bound.access = None
            if self._adopt(binding, await self._load(target, binding), unless=sent_token):
                assert bound.access is not None
                return bound.access.token  # another process renewed already
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
                        await anyio.to_thread.run_sync(lambda: self._vault.drop_access_if(binding, sent_token))
                return token

    def fresh(self, access: AccessToken) -> bool:
        """True when `access` does not expire within `EXPIRY_SKEW_S` seconds."""
        return access.expires_at is None or access.expires_at - EXPIRY_SKEW_S > self._clock()

    def remember(self, binding: Binding, tokens: TokenSet, scope: str | None) -> None:
        """Keep `tokens` as the binding's access token (the server's other bindings lose theirs)."""
        self._redactor.add(tokens.access_token)
        if tokens.refresh_token:
            self._redactor.add(tokens.refresh_token)
        state = self._states.of(binding.server_id)
        for other, bound in state.bindings.items():
            if other != binding:
                bound.access = None
        state.binding(binding).access = AccessToken(tokens.access_token, tokens.expires_at, tokens.scope or scope)

    def _required(
        self, target: OAuthTarget, *, hint: str, cause: CenterError | None = None
    ) -> OAuthAuthorizationRequired:
        return authorization_required(self._states.of(target.server_id), target, hint=hint, cause=cause)

    def _shared_lock(self, binding: Binding) -> contextlib.AbstractAsyncContextManager[None]:
        """The binding's renewal lock across every process on the store (R-9.2)."""
        return self._store.lock("oauth-renewal:" + binding.secret_id("grant"))

    async def _load(self, target: OAuthTarget, binding: Binding) -> StoredCredentials:
        try:
            return await anyio.to_thread.run_sync(self._vault.load, binding)
        except CenterError as exc:
            raise self._required(target, hint="renewal_failed", cause=exc) from None

    def _adopt(self, binding: Binding, stored: StoredCredentials, *, unless: str | None) -> bool:
        """Use the stored access token when it is fresh and is not `unless` (the one a 401 refused):
        another process obtained it. True when adopted."""
        token = stored.access_token
        if token is None or token == unless:
            return False
        access = AccessToken(token, stored.expires_at, stored.scope)
        if not self.fresh(access):
            return False
        self._redactor.add(token)
        self._states.of(binding.server_id).binding(binding).access = access
        logger.info("oauth.token_adopted", extra={"server_id": binding.server_id})
        return True

    def _valid(self, binding: Binding) -> AccessToken | None:
        access = self._states.peek(binding.server_id).access(binding)
        return access if access is not None and self.fresh(access) else None

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
            raise self._required(target, hint="renewal_failed", cause=exc) from None
        scope = tokens.scope or stored.scope
        rotated = await anyio.to_thread.run_sync(
            lambda: self._vault.rotate(binding, presented=presented, tokens=tokens, scope=scope)
        )
        if rotated is None:
            logger.warning("oauth.rotation_not_stored", extra={"server_id": target.server_id})
        self.remember(binding, tokens, stored.scope)
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
            await anyio.to_thread.run_sync(lambda: self._vault.save(binding, clear=("client", "grant")))
            raise self._required(target, hint="invalid_client", cause=exc) from None
        if oauth_error == "invalid_grant" or status in (400, 401):
            cleared = await anyio.to_thread.run_sync(lambda: self._vault.clear_grant_if(binding, presented))
            if not cleared and not retried:
                # The grant was replaced while this refresh was out (a new authorization): use that one.
                stored = await self._load(target, binding)
                if self._adopt(binding, stored, unless=None):
                    return stored.access_token
                return await self._renew(target, binding, stored, retried=True)
            hint = oauth_error if oauth_error in ("invalid_grant", "invalid_client") else "refresh_refused"
            raise self._required(target, hint=str(hint), cause=exc) from None
        error = self._required(target, hint="renewal_failed", cause=exc)
        error.details["retryable"] = True
        raise error from None

    async def _renew_machine(self, target: OAuthTarget, binding: Binding, stored: StoredCredentials) -> str | None:
        """A machine grant in the background, only at the bound issuer (never a changed one)."""
        try:
            async with self._http.client() as client:
                server = stored.server
                if server is None:
                    remembered = self._states.of(target.server_id).challenge_for(target.resource)
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
                        raise self._required(target, hint="issuer_changed")
                    server = discovery.server
                scope = stored.scope or (" ".join(target.auth.scopes) if target.auth.scopes else None)
                tokens = await machine_grant(self._http, client, target, server, scope, self._redactor)
        except (OAuthTokenFailed, OAuthDiscoveryFailed, OAuthIssuerChoiceRequired, ConfigInvalid) as exc:
            raise self._required(target, hint="renewal_failed", cause=exc) from None
        access = (tokens.access_token, tokens.expires_at)
        if stored.server is None:
            snapshot = server
            await anyio.to_thread.run_sync(
                lambda: self._vault.save(binding, server=snapshot, grant=(None, tokens.scope), access=access)
            )
        else:
            await anyio.to_thread.run_sync(
                lambda: self._vault.rotate(binding, presented=None, tokens=tokens, scope=tokens.scope or stored.scope)
            )
        self.remember(binding, tokens, stored.scope)
        return tokens.access_token
