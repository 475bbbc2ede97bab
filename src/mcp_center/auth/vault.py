"""Persistent OAuth credentials, encrypted and bound to (server, canonical resource, issuer) (R-4.6, R-4.7, R-9.2).

What is stored, per binding, as three ciphertexts in `StoreState.secrets` (never in servers.json):

- `server`: the authorization server metadata snapshot. After a restart the refresh token goes to
  *this* token endpoint, never to an endpoint derived from the MCP URL (docs/sdk-notes.md#oauth-dev-7).
- `client`: the registered client (RFC 7591) or CIMD identity, with its client secret.
- `grant`: the refresh token, the granted scope, when the user authorized — and the current access
  token with its expiry.

Why the access token is stored (encrypted, like the refresh token): `serve`, the CLI and library
scripts use one data directory, and authorization servers increasingly issue single-use, rotating
refresh tokens. The process that refreshes stores the new refresh token AND the access token it got
in one ciphertext (one commit), so another process that wanted to refresh at the same moment —
serialized behind the same per-binding lock (`Store.lock`) — finds a fresh access token and uses
it instead of presenting the refresh token that was just used up. (R-4.7's "access tokens live in
memory only" is relaxed to "never in plain text" for this; issue 11.)

Each ciphertext's internal id is `mcp.oauth.<server>.<hash of resource, issuer, item>` and its
AES-GCM associated data names the binding and the item, so a ciphertext copied to another server,
resource or issuer does not open, and a changed URL or issuer simply finds nothing: old credentials
are never sent anywhere (R-4.6). Configured client credentials (a user's client secret or private
key) are ordinary secrets of kind `oauth_client`, not stored here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from mcp_center.auth.discovery import AuthorizationServer
from mcp_center.auth.tokens import ClientIdentity, TokenSet
from mcp_center.auth.urls import canonical_resource
from mcp_center.config import AuthOAuth, RemoteServerConfig
from mcp_center.errors import SecretStoreError
from mcp_center.models import is_object
from mcp_center.secrets import Redactor, SecretCipher, SecretKind, secret_id
from mcp_center.store import Store, StoreState

__all__ = ["Binding", "CredentialVault", "StoredCredentials"]

Item = Literal["server", "client", "grant"]
ITEMS: tuple[Item, ...] = ("server", "client", "grant")


@dataclass(frozen=True)
class Binding:
    """Where credentials may be used (R-4.6): one server, its canonical resource, one issuer."""

    server_id: str
    resource: str
    issuer: str

    def secret_id(self, item: Item) -> str:
        """The internal id of one item: `mcp.oauth.<server>.<16 hex chars>`."""
        return secret_id(SecretKind.OAUTH, self.server_id, f"{self.resource}\n{self.issuer}\n{item}")

    def associated_data(self, item: Item) -> str:
        """The AES-GCM associated data of one item: the whole binding plus the item name."""
        return json.dumps(["mcp-center/oauth/v1", self.server_id, self.resource, self.issuer, item])


@dataclass(frozen=True)
class StoredCredentials:
    """What the vault holds for one binding (decrypted; secrets excluded from `repr`)."""

    server: AuthorizationServer | None = None
    client: ClientIdentity | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    authorized_at: datetime | None = None
    access_token: str | None = field(default=None, repr=False)
    """The last access token obtained for the binding (by any process)."""
    expires_at: float | None = None
    """When `access_token` expires: wall-clock seconds (`time.time`), None when unknown."""

    @property
    def authorized(self) -> bool:
        """A user (or a machine grant) authorized this binding and its metadata is known."""
        return self.server is not None and self.authorized_at is not None


def _binding_still_current(state: StoreState, binding: Binding) -> bool:
    """The server still exists, still uses OAuth, and its URL still canonicalizes to the binding's resource."""
    record = state.servers.get(binding.server_id)
    if record is None or not isinstance(record.config, RemoteServerConfig):
        return False
    return isinstance(record.config.auth, AuthOAuth) and canonical_resource(record.config.url) == binding.resource


class CredentialVault:
    """Read and write the encrypted per-binding items in the store. Methods are synchronous (run them
    in a worker thread); each write is one store transaction.

    Args:
        store: The host's store (ciphertexts go to `StoreState.secrets`).
        cipher: The host's secret cipher.
        redactor: Every decrypted secret is registered here, so logs and errors never show it.
    """

    def __init__(self, store: Store, cipher: SecretCipher, redactor: Redactor) -> None:
        self._store = store
        self._cipher = cipher
        self._redactor = redactor

    def load(self, binding: Binding) -> StoredCredentials:
        """Decrypt the binding's items (missing items are None).

        Raises:
            SecretStoreError: a ciphertext does not open (the key changed, or it was moved).
        """
        return self.read(self._store.read(), binding)

    def read(self, state: StoreState, binding: Binding) -> StoredCredentials:
        """Like `load`, from an already read state."""
        items = {item: self._open(state, binding, item) for item in ITEMS}
        server = AuthorizationServer.from_json(items["server"]) if items["server"] else None
        client: ClientIdentity | None = None
        if items["client"]:
            raw = items["client"]
            client = ClientIdentity(
                client_id=str(raw["client_id"]),
                auth_method=str(raw.get("auth_method") or "none"),
                client_secret=raw.get("client_secret") if isinstance(raw.get("client_secret"), str) else None,
                source=str(raw.get("source") or "registered"),
                redirect_uri=raw.get("redirect_uri") if isinstance(raw.get("redirect_uri"), str) else None,
                registered_scope=raw.get("registered_scope") if isinstance(raw.get("registered_scope"), str) else None,
            )
            if client.client_secret:
                self._redactor.add(client.client_secret)
        grant = items["grant"] or {}
        refresh = grant.get("refresh_token") if isinstance(grant.get("refresh_token"), str) else None
        access = grant.get("access_token") if isinstance(grant.get("access_token"), str) else None
        for token in (refresh, access):
            if token:
                self._redactor.add(token)
        authorized_at = grant.get("authorized_at")
        expires_at = grant.get("expires_at")
        return StoredCredentials(
            server=server,
            client=client,
            refresh_token=refresh,
            scope=grant.get("scope") if isinstance(grant.get("scope"), str) else None,
            authorized_at=datetime.fromisoformat(authorized_at) if isinstance(authorized_at, str) else None,
            access_token=access or None,
            expires_at=float(expires_at) if isinstance(expires_at, int | float) and access else None,
        )

    @staticmethod
    def has(state: StoreState, binding: Binding, item: Item) -> bool:
        """True when the item's ciphertext exists (no decryption)."""
        return binding.secret_id(item) in state.secrets

    def write(
        self,
        state: StoreState,
        binding: Binding,
        *,
        server: AuthorizationServer | None = None,
        client: ClientIdentity | None = None,
        grant: tuple[str | None, str | None] | None = None,
        access: tuple[str, float | None] | None = None,
        clear: Iterable[Item] = (),
    ) -> None:
        """Seal items into `state` (inside the caller's transaction).

        Args:
            server: A new metadata snapshot.
            client: A registered or CIMD identity (configured identities are never stored here).
            grant: `(refresh_token, scope)`: a completed authorization; stamps `authorized_at`.
            access: `(access_token, expires_at)` obtained with that grant (stored in the same item).
            clear: Items to delete first.
        """
        for item in clear:
            state.secrets.pop(binding.secret_id(item), None)
        if server is not None:
            self._seal(state, binding, "server", server.to_json())
        if client is not None:
            if client.client_secret:
                self._redactor.add(client.client_secret)
            self._seal(
                state,
                binding,
                "client",
                {
                    "client_id": client.client_id,
                    "auth_method": client.auth_method,
                    "client_secret": client.client_secret,
                    "source": client.source,
                    "redirect_uri": client.redirect_uri,
                    "registered_scope": client.registered_scope,
                },
            )
        if grant is not None:
            refresh, scope = grant
            if refresh:
                self._redactor.add(refresh)
            value: dict[str, Any] = {
                "refresh_token": refresh,
                "scope": scope,
                "authorized_at": datetime.now(UTC).isoformat(),
            }
            if access is not None:
                self._redactor.add(access[0])
                value.update(access_token=access[0], expires_at=access[1])
            self._seal(state, binding, "grant", value)

    def save(self, binding: Binding, **changes: Any) -> bool:
        """`write` in its own transaction, only while the binding is still current (see `_binding_still_current`).

        Returns:
            False (nothing written) when the server was deleted or its URL or auth changed meanwhile.
        """
        with self._store.transaction() as state:
            if not _binding_still_current(state, binding):
                return False
            self.write(state, binding, **changes)
            return True

    def rotate(
        self, binding: Binding, *, presented: str | None, tokens: TokenSet, scope: str | None
    ) -> StoredCredentials | None:
        """Store what a renewal returned — the new (or same) refresh token, the access token and its
        expiry, in one commit — but only while the stored refresh token is still the one that was
        presented (compare-and-set) and the binding is current. `authorized_at` is kept.

        Returns:
            The credentials as stored now, or None when nothing was written (the binding changed, or
            another authorization replaced the grant meanwhile).
        """
        with self._store.transaction() as state:
            if not _binding_still_current(state, binding):
                return None
            current = self.read(state, binding)
            if current.refresh_token != presented or (presented is None and not current.authorized):
                return None
            refresh = tokens.refresh_token or presented
            for token in (refresh, tokens.access_token):
                if token:
                    self._redactor.add(token)
            value: dict[str, Any] = {
                "refresh_token": refresh,
                "scope": scope,
                "authorized_at": (current.authorized_at or datetime.now(UTC)).isoformat(),
                "access_token": tokens.access_token,
                "expires_at": tokens.expires_at,
            }
            self._seal(state, binding, "grant", value)
            return self.read(state, binding)

    def drop_access_if(self, binding: Binding, refused: str) -> bool:
        """Remove the stored access token if it is `refused` (a 401 answered it), keeping the rest of
        the grant, so that no process adopts a token the server no longer accepts. True when removed."""
        with self._store.transaction() as state:
            internal = binding.secret_id("grant")
            grant = self._open(state, binding, "grant")
            if grant is None or grant.get("access_token") != refused:
                return False
            grant.pop("access_token", None)
            grant.pop("expires_at", None)
            if internal in state.secrets:
                self._seal(state, binding, "grant", grant)
            return True

    def clear_grant_if(self, binding: Binding, presented: str) -> bool:
        """Delete the grant only if its refresh token is still `presented` (compare-and-clear): an
        `invalid_grant` answer to a token that another process already replaced clears nothing.

        Returns:
            True when the grant was deleted.
        """
        with self._store.transaction() as state:
            if self.read(state, binding).refresh_token != presented:
                return False
            state.secrets.pop(binding.secret_id("grant"), None)
            return True

    def forget(self, server_id: str, *, keep: Binding | None = None) -> None:
        """Delete every OAuth item of `server_id` except those of `keep` (own transaction)."""
        with self._store.transaction() as state:
            self.purge(state, server_id, keep=keep)

    @staticmethod
    def purge(state: StoreState, server_id: str, *, keep: Binding | None = None) -> None:
        """Delete (inside the caller's transaction) every OAuth item of `server_id` except `keep`'s."""
        prefix = f"mcp.{SecretKind.OAUTH.value}.{server_id}."
        kept = {keep.secret_id(item) for item in ITEMS} if keep is not None else set[str]()
        for internal in [sid for sid in state.secrets if sid.startswith(prefix) and sid not in kept]:
            del state.secrets[internal]

    def _seal(self, state: StoreState, binding: Binding, item: Item, value: dict[str, Any]) -> None:
        state.secrets[binding.secret_id(item)] = self._cipher.seal(
            json.dumps(value, separators=(",", ":")), associated_data=binding.associated_data(item)
        )

    def _open(self, state: StoreState, binding: Binding, item: Item) -> dict[str, Any] | None:
        token = state.secrets.get(binding.secret_id(item))
        if token is None:
            return None
        plain = self._cipher.open(token, associated_data=binding.associated_data(item))
        try:
            value = json.loads(plain)
        except ValueError:
            raise SecretStoreError("a stored OAuth credential is malformed; authorize the server again") from None
        if not is_object(value):
            raise SecretStoreError("a stored OAuth credential is malformed; authorize the server again")
        return {str(k): v for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
