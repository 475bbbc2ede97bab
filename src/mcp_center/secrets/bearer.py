"""Reading the credential a client presents in `Authorization: Bearer <credential>` (R-7.1)."""

from __future__ import annotations

__all__ = ["presented_bearer"]


def presented_bearer(authorization: str | None) -> str | None:
    """The credential of an `Authorization` header value whose scheme is `Bearer` (any case, RFC 9110
    §11.1), with surrounding spaces stripped; None when the header is missing, uses another scheme,
    or carries no credential. The admin API and the gateway both read tokens through this."""
    scheme, _, credential = (authorization or "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None
