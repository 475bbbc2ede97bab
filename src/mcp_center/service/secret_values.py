"""Secret values: declare, seal, open and drop a server's secrets (R-1.5).

Values are write-only: they are sealed under the host key with their slot id as associated data,
every plaintext this module handles is registered with the redactor, and nothing here returns a
value to a face. `SecretValuesKeeper` is the only code in the service layer that opens a secret for a
connection (`open`); the summary opens them only for a keyed fingerprint (`summary.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from mcp_center.auth import check_private_key
from mcp_center.config import (
    OAUTH_CLIENT_SECRET_KEYS,
    AuthBearer,
    AuthOAuth,
    ServerConfig,
    StdioServerConfig,
    check_header_name,
)
from mcp_center.config.servers import ENV_NAME_PATTERN
from mcp_center.errors import (
    ConfigInvalid,
    FieldError,
    RequestInvalid,
    SecretKeyInvalid,
    SecretNotFound,
    not_one_of,
)
from mcp_center.secrets import Redactor, SecretCipher, SecretKind, secret_id
from mcp_center.service.bodies import SecretValues
from mcp_center.service.oauth import OAuthService
from mcp_center.service.summary import BEARER_KEY, secret_slots
from mcp_center.store import StoreState

__all__ = [
    "SECRET_KINDS",
    "SecretKindName",
    "SecretValuesKeeper",
    "declare_secret",
    "parse_secret_kind",
    "undeclare_secret",
    "values_of",
]

SecretKindName = Literal["environment", "header", "bearer", "oauth"]
"""The API names of the secret kinds (`?kind=`)."""

SECRET_KINDS: Mapping[str, SecretKind] = {
    "environment": SecretKind.ENV,
    "header": SecretKind.HEADER,
    "bearer": SecretKind.BEARER,
    "oauth": SecretKind.OAUTH_CLIENT,
}
"""API names of the secret kinds (`?kind=environment|header|bearer|oauth`)."""


def parse_secret_kind(kind: str) -> SecretKind:
    """The `SecretKind` of an API kind name.

    Raises:
        RequestInvalid: not environment, header, bearer or oauth.
    """
    try:
        return SECRET_KINDS[kind]
    except KeyError:
        error = not_one_of("kind", kind, SECRET_KINDS)  # one message, with the closest kind (trial35)
        raise RequestInvalid(f"kind: {error.message}", details={"errors": [error.to_dict()]}) from None


def values_of(kind: SecretKind, key: str, plain: str) -> SecretValues:
    """One secret value as the `SecretValues` a body would carry."""
    values = SecretValues()
    if kind is SecretKind.ENV:
        values.env[key] = plain
    elif kind is SecretKind.HEADER:
        values.headers[key] = plain
    elif kind is SecretKind.OAUTH_CLIENT:
        values.oauth[key] = plain
    else:
        values.bearer_token = plain
    return values


def declare_secret(config: ServerConfig, kind: SecretKind, key: str) -> ServerConfig:
    """Return `config` with `key` declared as a secret of `kind` (a plain env var of that name becomes secret).

    Raises:
        SecretKeyInvalid: the key is not allowed for the kind or the transport.
    """
    if kind is SecretKind.ENV:
        if not isinstance(config, StdioServerConfig):
            raise SecretKeyInvalid("environment secrets are for stdio servers", details={"kind": "environment"})
        if not ENV_NAME_PATTERN.fullmatch(key):
            raise SecretKeyInvalid(f"'{key}' is not a valid env var name", details={"key": key})
        env = {k: v for k, v in config.env.items() if k != key}
        declared = config.secret_env if key in config.secret_env else [*config.secret_env, key]
        return config.model_copy(update={"env": env, "secret_env": declared})
    if isinstance(config, StdioServerConfig):
        raise SecretKeyInvalid(f"{kind.value} secrets are for remote servers", details={"kind": kind.value})
    if kind is SecretKind.BEARER:
        if not isinstance(config.auth, AuthBearer):
            raise SecretKeyInvalid(
                f"a bearer secret needs auth.kind 'bearer' (this server's is '{config.auth.kind}')",
                details={"key": key},
            )
        if key != BEARER_KEY:
            raise SecretKeyInvalid(f"this server's bearer token is the secret '{BEARER_KEY}'", details={"key": key})
        return config
    if kind is SecretKind.OAUTH_CLIENT:
        if key not in OAUTH_CLIENT_SECRET_KEYS or not isinstance(config.auth, AuthOAuth):
            raise SecretKeyInvalid(
                f"OAuth secrets are {', '.join(OAUTH_CLIENT_SECRET_KEYS)} and need auth.kind 'oauth'",
                details={"key": key},
            )
        return config
    error = check_header_name(f"headers.{key}", key, managed_auth=config.auth.kind in {"bearer", "oauth"})
    if error is not None:
        raise SecretKeyInvalid(f"{error.field}: {error.message}", details={"key": key, "code": error.code})
    headers = {k: v for k, v in config.headers.items() if k.lower() != key.lower()}
    declared = (
        config.secret_headers
        if any(h.lower() == key.lower() for h in config.secret_headers)
        else [*config.secret_headers, key]
    )
    return config.model_copy(update={"headers": headers, "secret_headers": declared})


def undeclare_secret(
    state: StoreState, config: ServerConfig, kind: SecretKind, kind_name: str, key: str
) -> ServerConfig:
    """Drop the ciphertext of one secret from `state` and return `config` without its declaration.

    Raises:
        SecretNotFound: neither declared nor stored.
    """
    internal = secret_id(kind, config.id, key)
    declared = {(k, n.lower() if k is SecretKind.HEADER else n) for k, n in secret_slots(config)}
    wanted = (kind, key.lower() if kind is SecretKind.HEADER else key)
    if wanted not in declared and internal not in state.secrets:
        raise SecretNotFound(f"no {kind_name} secret named '{key}'", details={"kind": kind_name, "key": key})
    if isinstance(config, StdioServerConfig) and kind is SecretKind.ENV:
        config = config.model_copy(update={"secret_env": [k for k in config.secret_env if k != key]})
    elif not isinstance(config, StdioServerConfig) and kind is SecretKind.HEADER:
        config = config.model_copy(
            update={"secret_headers": [h for h in config.secret_headers if h.lower() != key.lower()]}
        )
    state.secrets.pop(internal, None)
    return config


class SecretValuesKeeper:
    """Seals and opens one host's secret values (R-1.5).

    Args:
        cipher: Encryption under the host key.
        redactor: Receives every plaintext sealed or opened here.
    """

    def __init__(self, cipher: SecretCipher, redactor: Redactor) -> None:
        self._cipher = cipher
        self._redactor = redactor

    def write(self, state: StoreState, config: ServerConfig, values: SecretValues) -> None:
        """Seal `values` into `state` for `config` (inside a transaction).

        Raises:
            ConfigInvalid: a value of a kind the configuration has no slot for (every one listed;
                nothing written). AuthConfigInvalid: an OAuth `private_key` that does not load.
        """
        errors: list[FieldError] = []
        writes: list[tuple[SecretKind, str, str]] = []
        if values.env:
            if not isinstance(config, StdioServerConfig):
                errors.append(
                    FieldError("secret_values.env", "SECRET_KIND_INVALID", "env secrets are for stdio servers")
                )
            writes += [(SecretKind.ENV, k, v) for k, v in values.env.items()]
        if values.headers:
            if isinstance(config, StdioServerConfig):
                errors.append(
                    FieldError("secret_values.headers", "SECRET_KIND_INVALID", "header secrets are for remote servers")
                )
            writes += [(SecretKind.HEADER, k, v) for k, v in values.headers.items()]
        if values.bearer_token is not None:
            if isinstance(config, StdioServerConfig) or not isinstance(config.auth, AuthBearer):
                errors.append(
                    FieldError(
                        "secret_values.bearer_token",
                        "SECRET_KIND_INVALID",
                        "needs a remote server with auth.kind 'bearer'",
                    )
                )
            writes.append((SecretKind.BEARER, BEARER_KEY, values.bearer_token))
        if values.oauth:
            if isinstance(config, StdioServerConfig) or not isinstance(config.auth, AuthOAuth):
                errors.append(
                    FieldError(
                        "secret_values.oauth", "SECRET_KIND_INVALID", "needs a remote server with auth.kind 'oauth'"
                    )
                )
            elif "private_key" in values.oauth:
                check_private_key(values.oauth["private_key"], config.auth.jwt_signing_algorithm)
            writes += [(SecretKind.OAUTH_CLIENT, k, v) for k, v in values.oauth.items()]
        if errors:
            raise ConfigInvalid(errors)
        for kind, key, value in writes:
            internal = secret_id(kind, config.id, key)
            self._redactor.add(value)
            state.secrets[internal] = self._cipher.seal(value, associated_data=internal)

    @staticmethod
    def drop_undeclared(state: StoreState, config: ServerConfig) -> None:
        """Delete the ciphertexts of slots `config` no longer declares (OAuth tokens stay with their binding)."""
        keep = {secret_id(kind, config.id, key) for kind, key in secret_slots(config)}
        for internal in state.secret_ids_of(config.id):
            if internal not in keep and not internal.startswith(f"mcp.{SecretKind.OAUTH.value}."):
                del state.secrets[internal]
        OAuthService.purge_stale(state, config)  # OAuth credentials live only with the current binding

    def open(self, state: StoreState, kind: SecretKind, server_id: str, key: str) -> str | None:
        """The plaintext of one slot (registered with the redactor), or None when it is not set.

        Raises:
            SecretStoreError: the ciphertext does not open (the key changed).
        """
        internal = secret_id(kind, server_id, key)
        token = state.secrets.get(internal)
        if token is None:
            return None
        value = self._cipher.open(token, associated_data=internal)
        self._redactor.add(value)
        return value
