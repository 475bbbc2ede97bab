"""Where OAuth requests may go: canonical resources, origins and the URL policy (R-4.2, R-4.6).

Threats this module stops: discovery turned into a request forgery tool (a 401 from the MCP server
naming `resource_metadata="http://169.254.169.254/..."` or another site, docs/sdk-notes.md#oauth-dev-1), a
token or client secret sent over plain http to a remote host, and credentials moving to another
resource because two spellings of one URL compare unequal (or two different URLs compare equal).

Policy (`UrlPolicy`): every OAuth URL is absolute https without userinfo or fragment. Plain http is
allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1) and only when the MCP server itself
was configured on plain-http loopback: that is the "explicit loopback development" of R-4.2. An https
MCP server can never lead the broker to a plain-http endpoint, loopback or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from mcp.shared.auth_utils import resource_url_from_server_url

from mcp_center.config import is_loopback_host
from mcp_center.errors import OAuthDiscoveryFailed
from mcp_center.interchange.display import display_url

__all__ = ["UrlPolicy", "canonical_resource", "origin_of", "resource_key", "same_origin", "same_resource"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_resource(url: str) -> str:
    """The RFC 8707 resource indicator of an MCP URL: lowercase scheme and host, no fragment.

    This is the value sent as `resource` and stored in the binding (R-4.6).
    Spec: MCP 2025-11-25 authorization, "Canonical Server URI" (SDK `resource_url_from_server_url`).
    """
    return resource_url_from_server_url(url)


def resource_key(url: str) -> tuple[str, str, int, str, str] | None:
    """A comparison key for resource and issuer URLs: `(scheme, host, port, path, query)`.

    Host and scheme are lowercased, the default port is filled in and an empty path is `/`, so
    `https://A.example:443` and `https://a.example/` compare equal; anything else (path case,
    trailing slashes below the root, percent-encoding) must match exactly. None when `url` is not
    an absolute http(s) URL without userinfo.
    """
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL:
        return None
    scheme = parsed.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parsed.host or parsed.userinfo:
        return None
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS[scheme]
    path = parsed.raw_path.decode("ascii").split("?", 1)[0] or "/"
    query = parsed.query.decode("ascii")
    return (scheme, parsed.host.lower(), port, path, query)


def same_resource(a: str, b: str) -> bool:
    """Exact resource equality after canonicalization (`resource_key`); False if either is invalid."""
    key_a = resource_key(a)
    return key_a is not None and key_a == resource_key(b)


def origin_of(url: str) -> str:
    """`scheme://host:port` of `url` with the effective port, for messages and comparisons."""
    key = resource_key(url)
    if key is None:
        return "(invalid URL)"
    scheme, host, port, _, _ = key
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}"


def same_origin(a: str, b: str) -> bool:
    """Same `(scheme, host, effective port)`, neither with userinfo (RFC 6454 §4)."""
    key_a, key_b = resource_key(a), resource_key(b)
    return key_a is not None and key_b is not None and key_a[:3] == key_b[:3]


@dataclass(frozen=True)
class UrlPolicy:
    """Which URLs OAuth requests may be sent to (see the module docstring).

    Attributes:
        allow_loopback_http: Plain http to loopback hosts is allowed (the MCP URL is plain-http loopback).
    """

    allow_loopback_http: bool = False

    @classmethod
    def for_server(cls, mcp_url: str) -> UrlPolicy:
        """The policy for a server at `mcp_url` (already validated against R-1.6)."""
        parts = urlsplit(mcp_url)
        return cls(allow_loopback_http=parts.scheme == "http" and is_loopback_host(parts.hostname or ""))

    def allows(self, url: str) -> bool:
        """True when a request to `url` is allowed."""
        try:
            parts = urlsplit(url)
            _ = parts.port
        except ValueError:
            return False
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            return False
        if "#" in url or not parts.hostname or any(c.isspace() for c in url):
            return False
        if parts.scheme == "https":
            return True
        return parts.scheme == "http" and self.allow_loopback_http and is_loopback_host(parts.hostname)

    def check(self, url: str, *, what: str) -> str:
        """Return `url` if allowed.

        Raises:
            OAuthDiscoveryFailed: rule `url_refused`; the message names `what` and the URL (path kept,
                credentials and credential-looking query values never shown).
        """
        if not self.allows(url):
            shown = display_url(url)
            raise OAuthDiscoveryFailed(
                f"refusing to contact the {what} at {shown}: OAuth URLs must be https (plain http only for a "
                "loopback server during development) without credentials or a fragment; the server's operator "
                "must publish an https URL",
                details={"rule": "url_refused", "what": what, "origin": origin_of(url), "url": shown},
            )
        return url
