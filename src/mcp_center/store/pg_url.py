"""Keeping the database URL's password out of every message, log line and response (R-1.5, R-10.1).

The URL may carry a password in its user info (`postgresql://app:pw@host/db`) or in a query
parameter (`?password=pw`, `?sslpassword=`, `?passfile=`): libpq and psycopg quote what they could not
parse, and their text reaches our errors and logs. Two mechanisms, applied wherever driver text is
shown (`fault_text`):

- **A parse error is never shown**: psycopg raises `ProgrammingError` for a URL that libpq cannot
  parse (a bad `%XX`, a space, an unknown parameter, a broken `[ipv6]`), quoting the offending part,
  which may be the password. Its text is replaced by our own sentence, which names no part of the URL.
- **Every other driver text is scrubbed** of each secret the URL holds (`url_secrets`: the user-info
  password and every password-like parameter's value, as written and percent-decoded), whatever the
  driver or the server put around it.
"""

from __future__ import annotations

from urllib.parse import unquote

import psycopg

__all__ = ["UNPARSABLE_URL", "fault_text", "scrub", "url_secrets"]

UNPARSABLE_URL = (
    "the database URL cannot be parsed (check its %XX escapes, spaces, brackets and query parameters; "
    "the URL is not shown: it may hold a password)"
)
"""What replaces libpq's text for a URL it cannot parse."""
_SECRET_PARAMETERS = ("pass", "secret", "token", "sslkey")
"""A query parameter whose name contains one of these holds a secret (password, passfile, sslpassword...)."""
MASK = "***"


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets `url` holds, longest first: the user-info password and the values of password-like
    query parameters, each as written and percent-decoded. Never raises, whatever the URL."""
    _scheme, _separator, rest = url.partition("://")
    userinfo, at, location = rest.rpartition("@")
    found: set[str] = set()
    if at:
        _user, colon, password = userinfo.partition(":")
        if colon:
            found.add(password)
    else:
        location = rest
    _path, question, query = location.partition("?")
    if question:
        for pair in query.split("&"):
            name, _equals, value = pair.partition("=")
            if any(word in unquote(name).lower() for word in _SECRET_PARAMETERS):
                found.add(value)
    variants = {v for raw in found for v in (raw, unquote(raw), unquote(raw.replace("+", " ")))}
    return tuple(sorted((v for v in variants if v), key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every occurrence of each of `secrets` replaced by `***`."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def fault_text(exc: BaseException, secrets: tuple[str, ...], *, connecting: bool = False) -> str:
    """What may be shown of a driver error: its first line, scrubbed of `secrets`; `UNPARSABLE_URL`
    for a URL libpq could not parse (`connecting` and a `ProgrammingError`, or libpq's own wording)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if (connecting and isinstance(exc, psycopg.ProgrammingError)) or _is_parse_error(first):
        return UNPARSABLE_URL
    return scrub(first, secrets)


def _is_parse_error(text: str) -> bool:
    """libpq's wording for a connection string it could not parse (it quotes the offending part)."""
    lowered = text.lower()
    return any(
        phrase in lowered
        for phrase in (
            "percent-encoded",
            "invalid uri",
            "unexpected spaces found",
            "ipv6 host address",
            'missing "=" after',
            "unterminated quoted string",
            "invalid connection option",
            "invalid integer value",
        )
    )
