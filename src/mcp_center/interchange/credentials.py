"""Which imported values are credentials, so that they become secrets (R-1.5, R-1.8).

Threat: a token pasted in a client file landing in plain `servers.json`, in an API response or
in an export. Our policy errs towards secret: a value is secret when its env or header name
looks like a credential, when it references a variable whose name does, or when the value itself
is unmistakably one (`Bearer ...`, a URL with a password). A false positive only means the value
is write-only afterwards; a false negative would leak it.

Names are split into words (`X-Api-Key` → X, API, KEY; `githubToken` → GITHUB, TOKEN) and
compared with `CREDENTIAL_WORDS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "CREDENTIAL_IN_ARGS_MESSAGE",
    "CREDENTIAL_WORDS",
    "bearer_token_of",
    "credential_args",
    "credential_query_params",
    "is_credential_name",
    "is_credential_value",
    "missing_credential",
]

CREDENTIAL_WORDS = frozenset(
    {
        "APIKEY",
        "AUTHORIZATION",
        "BEARER",
        "COOKIE",
        "COOKIES",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "JWT",
        "KEY",
        "KEYS",
        "PASSPHRASE",
        "PASSWD",
        "PASSWORD",
        "PASSWORDS",
        "PAT",
        "SECRET",
        "SECRETS",
        "TOKEN",
        "TOKENS",
    }
)
"""A name containing one of these words is a credential: `*_TOKEN`, `*_KEY`, `*_SECRET`,
`*_PASSWORD`, `X-Api-Key`, `X-Auth-Token`, `Authorization`, `Proxy-Authorization`, `Cookie`, ..."""

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([^\s]+)")
_AUTH_SCHEME = re.compile(r"(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest)\s+[^\s]")
# `scheme://user:password@`. The scheme is `[A-Za-z][A-Za-z0-9+.-]*` (RFC 3986), but searched as
# "a letter, then only digits + . -" up to `://`: the same texts match (start at the scheme's last
# letter), and a search no longer runs from every letter to the end of a long run of scheme
# characters and back (`"a" * 900_000`: quadratic, hours). Every part after a start is now
# consumed at most once, so the search is linear in the length of the value.
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][0-9+.-]*+://[^/@\s:]*+:[^/@\s]++@")


def _words(name: str) -> set[str]:
    return {word.upper() for word in _WORDS.findall(name)}


def is_credential_name(name: str) -> bool:
    """True when an env var, header, query parameter or variable name looks like a credential."""
    return not _words(name).isdisjoint(CREDENTIAL_WORDS)


CREDENTIAL_IN_ARGS_MESSAGE = (
    "looks like a credential (a URL with a password, or an auth header value); arguments are stored "
    "in plain text and shown in the summary: if the server can read it from an environment variable, "
    "set it there as a secret instead"
)
"""Why a credential-looking stdio argument is worth a warning (CREDENTIAL_IN_ARGS): args are never secrets."""


def is_credential_value(value: str) -> bool:
    """True for values that are credentials whatever their name: an HTTP auth scheme followed by any
    whitespace (spaces, a tab) and a credential (`Bearer x`, `Basic x`, `Token\tx`), or a URL with a
    password (`postgres://u:p@h/db`)."""
    return bool(_AUTH_SCHEME.match(value) or _URL_WITH_PASSWORD.search(value))


_ARG_ASSIGNMENT = re.compile(r"-{0,2}+([A-Za-z_][A-Za-z0-9_.-]*+)=(.*)", re.DOTALL)
_ARG_OPTION = re.compile(r"-{1,2}+([A-Za-z][A-Za-z0-9_.-]*+)")
_WHERE_WORDS = frozenset({"DIR", "ENV", "FILE", "HEADER", "NAME", "PATH", "TYPE", "URI", "URL", "VAR"})
"""Words of an option that names where a credential is (`--token-file`, `--api-key-env`), not the credential."""


def _credential_option(name: str) -> bool:
    words = _words(name)
    return not words.isdisjoint(CREDENTIAL_WORDS) and words.isdisjoint(_WHERE_WORDS)


def credential_args(args: Sequence[str]) -> list[int]:
    """Indexes of the command arguments that hold a credential (R-1.5): a credential value
    (`is_credential_value`), the value of a credential-named option (`--token VALUE`,
    `--api-key=VALUE`), or a credential-named assignment (`GITHUB_TOKEN=VALUE`, as `docker -e` takes).

    Arguments are never made secrets (a program reads them in order); these get a CREDENTIAL_IN_ARGS
    warning. An option naming where a credential is (`--token-file`, `--api-key-env`) is not one.
    """
    found: list[int] = []
    for i, arg in enumerate(args):
        assignment = _ARG_ASSIGNMENT.fullmatch(arg)
        option = _ARG_OPTION.fullmatch(args[i - 1]) if i > 0 else None
        if (
            is_credential_value(arg)
            or (assignment is not None and assignment.group(2).strip() and _credential_option(assignment.group(1)))
            or (option is not None and arg.strip() and not arg.startswith("-") and _credential_option(option.group(1)))
        ):
            found.append(i)
    return found


_SCHEME_ONLY = re.compile(r"(?i)(bearer|basic|token|digest)")


def missing_credential(name: str, value: str) -> str | None:
    """Why `value` holds no credential where one is expected, or None when it is fine (R-1.5).

    The shape of `-H "Authorization: Bearer $TOKEN"` with `TOKEN` unset: an auth scheme word with
    nothing after it (`Bearer`, `Basic`, `Token`, `Digest`, any case), or an empty value under a
    credential-looking name (`GITHUB_TOKEN=`, `X-Api-Key:`). Storing that would send an empty
    credential to the server and fail later with a confusing 401.

    Returns:
        A phrase for an error message (`"is 'Bearer' with no token after it"`), never the value.
    """
    stripped = value.strip()
    if _SCHEME_ONLY.fullmatch(stripped):
        return f"is '{stripped.capitalize()}' with no credential after it"
    if not stripped and is_credential_name(name):
        return "is empty"
    return None


def bearer_token_of(authorization: str) -> str | None:
    """The token of an `Authorization` value that is exactly `Bearer <token>` (scheme any case), else None."""
    match = _BEARER.fullmatch(authorization.strip())
    return match.group(1) if match else None


def credential_query_params(url: str) -> list[str]:
    """Names of query parameters of `url` that look like credentials (`?api_key=...`), sorted."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return []
    return sorted({name for name, _ in parse_qsl(query, keep_blank_values=True) if is_credential_name(name)})
