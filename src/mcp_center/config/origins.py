"""Origins (`scheme://host[:port]`) compared as browsers compare them (RFC 6454): the CSRF check's
allowed origins and an import entry's gateway URL (issue 16) are written the same way. Pure."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["normalize_origin"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(value: str) -> str | None:
    """`scheme://host[:port]` in lowercase with the default port dropped; None if `value` is not an origin."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.username is not None or parts.password is not None:
        return None
    if ":" in host:
        host = f"[{host}]"
    shown = f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else ""
    return f"{scheme}://{host}{shown}"
