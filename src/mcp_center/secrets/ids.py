"""Internal ids of secret slots: `mcp.<kind>.<server id>.<hash of key name>` (R-1.5)."""

from __future__ import annotations

import hashlib
from enum import StrEnum

__all__ = ["SecretKind", "secret_id", "server_prefix"]


class SecretKind(StrEnum):
    """What a secret is used for; part of its internal id and of the encryption's associated data."""

    ENV = "env"
    """A secret environment variable of a stdio server."""
    HEADER = "header"
    """A secret HTTP header of a remote server."""
    BEARER = "bearer"
    """The static bearer token of a remote server (`auth.kind = bearer`)."""
    OAUTH = "oauth"
    """OAuth material the broker keeps, bound to (server, resource, issuer): refresh token, registered
    client and its secret, metadata snapshot (R-4.6). Never set through the secrets API."""
    OAUTH_CLIENT = "oauth_client"
    """OAuth client credentials a user configures: client secret, private key, identity provider ID token."""


def secret_id(kind: SecretKind, server_id: str, key: str) -> str:
    """Return the internal id of one secret slot.

    The key name is hashed (SHA-256, 16 hex chars) so that ids have a fixed alphabet whatever
    the header or env name, and header names (case-insensitive) map to one slot.
    """
    name = key.lower() if kind is SecretKind.HEADER else key
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"mcp.{kind.value}.{server_id}.{digest}"


def server_prefix(server_id: str) -> tuple[str, ...]:
    """The id prefixes of every slot that belongs to `server_id` (for deletion with the server)."""
    return tuple(f"mcp.{kind.value}.{server_id}." for kind in SecretKind)
