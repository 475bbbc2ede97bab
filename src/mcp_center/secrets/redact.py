"""Redaction of secret values from log records and error text (R-1.5: no log or error ever holds one).

Threat: a secret leaking through text we did not write ourselves — an SDK log line that quotes a
request, a server's error message or stderr line that echoes its environment, an exception
message with a header in it. Every plaintext the vault decrypts or stores is registered here, and
`redact()` replaces any occurrence with `[redacted]`. `install_log_redaction()` applies it to every
log record when the record is created.

Values shorter than `MIN_LENGTH` characters are not registered: replacing "1" or "yes" everywhere
would mangle logs while protecting nothing worth a secret slot.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any, cast

from mcp_center.models import is_array, is_object

__all__ = [
    "MIN_LENGTH",
    "REDACTED",
    "Redactor",
    "default_redactor",
    "install_log_redaction",
    "mask_credential_shapes",
]

REDACTED = "[redacted]"
MIN_LENGTH = 6
_SENSITIVE_KEYS = frozenset(
    {"authorization", "access_token", "refresh_token", "client_secret", "code_verifier", "password"}
)


_CREDENTIAL_SHAPES = re.compile(
    r"(?P<userinfo>\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s:/@]*:)[^\s/@]+(?=@)"
    r"|(?P<header>(?i:\b(?:proxy-)?authorization)\s*[:=]\s*(?:(?i:bearer|basic|token)\s+)?)\S+"
    r"|(?P<bearer>(?i:\bbearer)\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposre]-[A-Za-z0-9-]{10,}"
    r"|sk-[A-Za-z0-9_-]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16})"
)
"""What `mask_credential_shapes` masks: a URL's password (`scheme://user:PASSWORD@`), the value of an
`Authorization:` header, a `Bearer` token, and well-known token shapes (GitHub `ghp_`/`github_pat_`,
Slack `xoxb-`/`xoxp-`, `sk-...` API keys, AWS `AKIA...` access key ids)."""


def _mask(match: re.Match[str]) -> str:
    kept = match.group("userinfo") or match.group("header") or match.group("bearer") or ""
    return kept + REDACTED


def mask_credential_shapes(text: str) -> str:
    """`text` with what looks like a credential replaced by `[redacted]`, whether or not the vault
    knows it: for text a server wrote itself (its stderr tail), where only registered values were
    hidden. `https://bob:hunter2@db/x` -> `https://bob:[redacted]@db/x`, `Authorization: Bearer X`
    -> `Authorization: Bearer [redacted]`, `ghp_...` -> `[redacted]` (R-1.5, issue 16)."""
    return _CREDENTIAL_SHAPES.sub(_mask, text)


class Redactor:
    """A thread-safe set of secret plaintexts and a function that removes them from text."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()
        self._ordered: tuple[str, ...] = ()
        self._matcher: tuple[int, re.Pattern[str]] | None = None
        """(length of the longest value, a pattern matching any value longest first), or None while
        none is registered or since the set changed: `redact_prefix` compiles it on its next call."""

    def _reorder(self) -> None:
        """Rebuild the longest-first order and drop the matching pattern (caller holds the lock).

        The pattern is compiled when `redact_prefix` next needs it, not here: compiling an
        alternation of every registered value costs time in their number, so compiling on each
        `add` made registering n secrets cost n² (a host whose OAuth logins and secret writes each
        register values; issue 16), while stderr lines, its only user, are rarer than secret writes.
        """
        self._ordered = tuple(sorted(self._values, key=len, reverse=True))
        self._matcher = None

    def _current_matcher(self) -> tuple[int, re.Pattern[str]] | None:
        """The pattern for the values registered now (compiled here when the set changed), or None."""
        matcher = self._matcher  # one read: the length and the pattern always belong together
        if matcher is not None or not self._ordered:
            return matcher
        with self._lock:
            ordered = self._ordered
            if self._matcher is None and ordered:
                self._matcher = (len(ordered[0]), re.compile("|".join(map(re.escape, ordered))))
            return self._matcher

    def add(self, value: str) -> None:
        """Register a plaintext secret (ignored when shorter than `MIN_LENGTH`)."""
        if len(value) < MIN_LENGTH:
            return
        with self._lock:
            if value not in self._values:
                self._values.add(value)
                self._reorder()

    def discard(self, value: str) -> None:
        """Forget a plaintext (after the secret was deleted or replaced)."""
        with self._lock:
            if value in self._values:
                self._values.discard(value)
                self._reorder()

    def redact(self, text: str) -> str:
        """Return `text` with every registered secret replaced by `[redacted]`."""
        for value in self._ordered:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def redact_prefix(self, text: str, *, final: bool) -> tuple[str, str]:
        """Redact the part of streamed `text` that later text cannot change; return it and the rest.

        For text that arrives in pieces (a long stderr line, R-1.5): a secret split across two
        pieces is whole in neither, so redacting each piece alone would pass both halves on. Here
        every secret that starts before the last `longest - 1` characters of `text` ends inside
        it and is replaced; the rest (and a secret that straddles the cut) is held back for the
        caller to put in front of the next piece. The rest is shorter than twice the longest
        registered secret, so a caller's memory stays bounded however long the stream is.

        Args:
            text: The held-back rest of the previous call followed by the new text.
            final: The stream (or line) ends with `text`: everything is redacted, nothing held back.
        Returns:
            `(redacted, rest)`: the redacted safe part to pass on, and the raw text to carry.
        """
        matcher = self._current_matcher()
        if matcher is None:
            return text, ""
        longest, pattern = matcher
        cut = len(text) if final else len(text) - (longest - 1)
        if cut <= 0:
            return "", text
        parts: list[str] = []
        done = 0
        for match in pattern.finditer(text):
            if match.start() >= cut:
                break
            if match.end() > cut:  # a whole secret straddles the cut: keep it for the next call
                cut = match.start()
                break
            parts += (text[done : match.start()], REDACTED)
            done = match.end()
        parts.append(text[done:cut])
        return "".join(parts), text[cut:]

    @property
    def active(self) -> bool:
        """True when at least one secret is registered (callers skip work otherwise)."""
        return bool(self._ordered)

    def redact_values(self, value: Any) -> Any:
        """Redact every string inside JSON-like data; returns `value` itself when nothing changed.

        Unlike `redact_obj`, keys are not interpreted: this is for data a server sent (R-1.5: a
        server echoing its secret env must not show it to anyone through us).
        """
        if isinstance(value, str):
            return self.redact(value)
        if is_object(value):
            changed = False
            out: dict[Any, Any] = {}
            for k, v in value.items():
                new_k = self.redact(k) if isinstance(k, str) else k
                new_v = self.redact_values(v)
                changed = changed or new_k is not k or new_v is not v
                out[new_k] = new_v
            return out if changed else value
        if is_array(value):
            items = [self.redact_values(v) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    def redact_obj(self, value: Any) -> Any:
        """Redact strings inside JSON-like data (dicts, lists); values under sensitive keys are masked."""
        if isinstance(value, str):
            return self.redact(value)
        if is_object(value):
            return {
                k: (REDACTED if isinstance(k, str) and k.lower() in _SENSITIVE_KEYS else self.redact_obj(v))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.redact_obj(v) for v in cast(Sequence[Any], value)]
        return value


default_redactor = Redactor()
"""The process-wide redactor the vault registers into and the logging filter reads."""


_installed = False
_OAUTH_PATH_PREFIX = "/oauth/"


def _render(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # noqa: BLE001 - a broken format string must not lose the record
        return str(record.msg)


def _drop_oauth_query(record: logging.LogRecord) -> bool:
    """uvicorn access-log filter: an OAuth redirect's query holds a one-time code and state."""
    args = record.args
    if (
        isinstance(args, tuple)
        and len(args) >= 3
        and isinstance(args[2], str)
        and args[2].startswith(_OAUTH_PATH_PREFIX)
    ):
        path, sep, _query = args[2].partition("?")
        record.args = (*args[:2], path + (sep and "?[query omitted]"), *args[3:])
    return True


def install_log_redaction(redactor: Redactor = default_redactor) -> None:
    """Wrap the logging record factory so every record is redacted when it is created.

    A factory (rather than a handler filter) covers every logger and every handler, including
    ones added later by uvicorn or by tests. The message is rendered once; if it holds a secret
    the redacted rendering replaces msg and args. An exception's traceback is pre-formatted and
    redacted too. Idempotent.
    """
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()

    def scrub(record: logging.LogRecord) -> None:
        for key, val in list(record.__dict__.items()):
            if key.lower() in _SENSITIVE_KEYS:
                setattr(record, key, REDACTED)
            elif isinstance(val, str) and key not in {"msg", "exc_text"}:
                setattr(record, key, redactor.redact(val))

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        message = _render(record)
        cleaned = redactor.redact(message)
        if cleaned != message:
            record_args = record.args
            template_clean = isinstance(record.msg, str) and redactor.redact(record.msg) == record.msg
            if isinstance(record_args, tuple) and template_clean:
                # Keep the shape of the args (formatters such as uvicorn's access log unpack them).
                record.args = tuple(redactor.redact(a) if isinstance(a, str) else a for a in record_args)
            if redactor.redact(_render(record)) != _render(record):
                # A secret is still in the rendered text (inside a non-string arg): keep only the
                # redacted rendering.
                record.msg = cleaned
                record.args = None
        # Otherwise msg and args stay as they are: formatters such as uvicorn's access log
        # unpack `record.args` themselves.
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redactor.redact(logging.Formatter().formatException(record.exc_info))
        scrub(record)
        return record

    logging.setLogRecordFactory(factory)
    logging.getLogger("uvicorn.access").addFilter(_drop_oauth_query)

    # `extra=` fields are set on the record after the factory ran: scrub them in makeRecord too.
    make_record = logging.Logger.makeRecord

    def make_record_redacted(self: logging.Logger, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(self, *args, **kwargs)
        scrub(record)
        return record

    logging.Logger.makeRecord = make_record_redacted  # type: ignore[method-assign]
