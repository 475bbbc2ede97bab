"""The roots of the error tree: `CenterError`, `FieldError`, the families by HTTP status, `did_you_mean` (R-7.3).

Private to `mcp_center.errors`: import every name from there (`from mcp_center.errors import X`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Self

__all__ = [
    "DID_YOU_MEAN",
    "MAX_ECHOED_CHARS",
    "MAX_ECHOED_NAME",
    "MAX_FIELD_ERRORS",
    "MAX_SUGGESTED",
    "CenterError",
    "Conflict",
    "FieldError",
    "Forbidden",
    "InvalidInput",
    "NotFound",
    "Unauthorized",
    "UpstreamError",
    "capped_errors",
    "clip_echo",
    "did_you_mean",
    "listed_summary",
    "most_telling_first",
    "not_one_of",
    "unknown_field",
]

DID_YOU_MEAN = 3
"""At most this many suggestions in `details.did_you_mean`."""

MAX_SUGGESTED = 5
"""A refusal looks for the closest known name of its first this many unknown fields only: 20,000
unknown keys made 20,000 did-you-mean searches (a CPU cost of the caller's choosing, issue 16, R-7.3)."""

MAX_FIELD_ERRORS = 20
"""`details.errors` lists at most this many field errors (then `errors_omitted` counts the rest)."""

MAX_ECHOED_NAME = 64
"""A message keeps at most this many characters of a key, field path or id it echoes (`clip_echo`)."""

MAX_ECHOED_CHARS = 500
"""A not-found error keeps at most this many characters of each string it echoes (then says how long it was)."""


def clip_echo(text: str, limit: int = MAX_ECHOED_NAME) -> str:
    """`text` as an error echoes the caller's input: whole up to `limit` characters, else its first
    `limit` and its length (`"aaaa… (10000 characters)"`). The one shortening rule of every echo (R-7.3)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def did_you_mean(name: str, known: Iterable[str]) -> list[str]:
    """The existing names closest to a `name` that was not found, best first (at most `DID_YOU_MEAN`).

    Case is ignored; a known name that starts with or contains `name` counts as close even when
    it is much longer (`time` → `time-2`). Returns [] when nothing is close, and for a `name` over
    `4 * MAX_ECHOED_NAME` characters (no name we hold is that long; the search costs its length).
    """
    if not name or len(name) > 4 * MAX_ECHOED_NAME:
        return []
    names = sorted(set(known))
    if not names:
        return []
    lowered = {n.lower(): n for n in names}
    wanted = name.lower()
    close = [lowered[m] for m in difflib.get_close_matches(wanted, list(lowered), n=DID_YOU_MEAN, cutoff=0.6)]
    close += [n for n in names if wanted in n.lower() and n not in close and n != name]
    return close[:DID_YOU_MEAN]


class CenterError(Exception):
    """Base of every error we raise on purpose. `code` is API: never rename it.

    Args:
        message: Human-readable text; names the field when there is one. Never a secret.
        details: JSON-serializable context (field paths, reasons, ids). Never a secret.
    """

    code: ClassVar[str] = "INTERNAL_ERROR"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        """Return the error envelope body `{"code", "message", "details"}` (R-7.3)."""
        return {"code": self.code, "message": self.message, "details": self.details}


class FieldError:
    """One violated rule on one field: `field` is a dotted path (`headers.Host`), `code` stable.

    The path may hold a caller's key of any length: it is kept clipped (`clip_echo`, R-7.3)."""

    __slots__ = ("code", "field", "message")

    def __init__(self, field: str, code: str, message: str) -> None:
        self.field = clip_echo(field)
        self.code = code
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """Return `{"field", "code", "message"}`."""
        return {"field": self.field, "code": self.code, "message": self.message}

    def __repr__(self) -> str:
        return f"FieldError({self.field!r}, {self.code!r})"


def _suggestion(value: object, known: Iterable[str]) -> str:
    close = did_you_mean(value, known) if isinstance(value, str) else []
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""


def unknown_field(field: str, known: Iterable[str]) -> FieldError:
    """FIELD_UNKNOWN for the dotted path `field`, its message offering the closest of the `known`
    field names at that level: `colr` → "is not a known field; did you mean 'color'?" (R-7.3).

    A caller refusing many keys passes `known` for its first `MAX_SUGGESTED` only (`()` after):
    each suggestion is a search of its own."""
    return FieldError(field, "FIELD_UNKNOWN", "is not a known field" + _suggestion(field.rpartition(".")[2], known))


def not_one_of(field: str, given: object, allowed: Iterable[str]) -> FieldError:
    """FIELD_INVALID for a value of `field` that is none of the `allowed` literals, the closest of
    them offered: `aks` → "must be one of: ask, allow, deny; did you mean 'ask'?". The value given
    is never repeated (it may be a secret typed in the wrong place) (R-7.3)."""
    choices = list(allowed)
    return FieldError(field, "FIELD_INVALID", "must be one of: " + ", ".join(choices) + _suggestion(given, choices))


def most_telling_first(errors: Iterable[FieldError]) -> list[FieldError]:
    """`errors` with the unknown fields first, then the invalid values, then the rest (each in its order).

    A typo'd key (`comand`) also makes the field it meant missing; "command: is required" first
    hid the cause, so the message an error shows (its first field) names the typo (R-7.3).
    """
    rank = {"FIELD_UNKNOWN": 0, "FIELD_REQUIRED": 2}
    return sorted(errors, key=lambda e: rank.get(e.code, 1))


def capped_errors(errors: Sequence[FieldError]) -> dict[str, Any]:
    """The `details` of a refusal listing `errors`: `{"errors": [...]}` with at most
    `MAX_FIELD_ERRORS` of them, and `errors_omitted` (how many more) when there were more (R-7.3)."""
    details: dict[str, Any] = {"errors": [e.to_dict() for e in errors[:MAX_FIELD_ERRORS]]}
    if len(errors) > MAX_FIELD_ERRORS:
        details["errors_omitted"] = len(errors) - MAX_FIELD_ERRORS
    return details


def listed_summary(errors: Sequence[FieldError]) -> str:
    """The message of a refusal listing `errors` (at least one): the first as `field: message`, then
    how many more, e.g. "url: is required (and 2 more)" (R-7.3)."""
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first.field}: {first.message}{more}"


class InvalidInput(CenterError):
    """The caller sent something we refuse; nothing was changed."""

    http_status = 422
    exit_code = 2

    @classmethod
    def listing(cls, errors: Sequence[FieldError]) -> Self:
        """This refusal for `errors` (at least one): `listed_summary` as its message, `capped_errors`
        as its details (at most `MAX_FIELD_ERRORS` listed, R-7.3)."""
        return cls(listed_summary(errors), details=capped_errors(errors))


class NotFound(CenterError):
    """Something the caller named does not exist. Its message and details echo the caller's name (a tool,
    prompt, server id, URI) of any length: each string is clipped to `MAX_ECHOED_CHARS` (the message to
    twice that), so a 1 MB name gets a short error rather than its input back (R-7.3)."""

    http_status = 404
    exit_code = 3

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        clipped = {k: clip_echo(v, MAX_ECHOED_CHARS) if isinstance(v, str) else v for k, v in (details or {}).items()}
        super().__init__(clip_echo(message, 2 * MAX_ECHOED_CHARS), details=clipped)


class Conflict(CenterError):
    http_status = 409
    exit_code = 4


class Forbidden(CenterError):
    http_status = 403
    exit_code = 5


class Unauthorized(CenterError):
    http_status = 401
    exit_code = 6


class UpstreamError(CenterError):
    """An MCP server failed us. `details.reason` attributes the failure (R-3.1)."""

    http_status = 502
    exit_code = 7
