"""A URL as a message may show it: no userinfo, no fragment, credential query values redacted (R-1.5).

Pure text work, shared by the transports' network errors and the OAuth discovery and registration
errors (issue 14, items 14 and 19), which must word a URL the same way; `transports.wording` builds
the network messages on it.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from mcp_center.interchange.credentials import is_credential_name

__all__ = ["REDACTED_VALUE", "display_url"]

REDACTED_VALUE: Final = "[redacted]"
_MAX_URL_CHARS: Final = 300


def display_url(url: str) -> str:
    """`url` as it may appear in a message: no userinfo, no fragment, credential query values redacted.

    At most `_MAX_URL_CHARS` characters (cut with `…`); a URL that does not parse is shown as
    `(invalid URL)`.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_credential_name(name) for name, _ in pairs):
            query = urlencode(
                [(name, REDACTED_VALUE if is_credential_name(name) else value) for name, value in pairs],
                quote_via=quote,
                safe="[]",
            )
    shown = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    return shown if len(shown) <= _MAX_URL_CHARS else shown[: _MAX_URL_CHARS - 1] + "…"
