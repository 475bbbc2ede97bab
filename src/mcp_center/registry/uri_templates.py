"""Which resource template a URI was built from (RFC 6570 levels 1-4), to route `resources/read` (R-5.5).

A server lists templates such as `users://{id}/profile{#section}` or `events://list{?topic,limit}`;
an agent reads a URI expanded from one, and the gateway must find the server whose template it
matches. RFC 6570 says how to *expand* a template; libraries (`uritemplate`, `uri-template`,
`std-uritemplate`) expand and parse, none matches a URI back against a template, and the parsing
they would add is only finding the `{...}` expressions. So the matcher is ours:

- A template is literals and expressions. `{var}` and `{+var}` (levels 1-2) stand for one or more
  characters: a resource template's simple variable is what the agent fills in.
- An expression with a level-3/4 operator (`#`, `.`, `/`, `;`, `?`, `&`) expands to nothing when
  its variables are undefined, else to text starting with that operator's first character
  (`?topic=a`, `#intro`, `/a/b`). So `events://list{?topic,limit}` matches `events://list` and
  `events://list?topic=a`, and `users://{id}/profile{#section}` matches `users://42/profile`.
- Linear in the URI's length (R-7.3): the first and last literals are a prefix and a suffix, each
  literal between is found at its earliest place (a `str.find`), and each gap between is checked
  against its expressions. No backtracking regular expression, whose time grows with the URI's
  length to the power of the number of variables.

A URI that can only match by putting a later literal's text inside an earlier variable (a template
literal repeated inside the value) is not matched: routing refuses rather than guesses (the agent
can read it through the server's own endpoint `/mcp/{server_id}` or a scoped URI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["template_matches"]

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_OPTIONAL_PREFIX = {"#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&"}
"""Operator → the first character of its non-empty expansion (RFC 6570 §3.2, table in appendix A)."""


@dataclass(frozen=True)
class _Gap:
    """The expressions between two literals: how long the text there must be, how it may start."""

    required: bool
    """A `{var}` / `{+var}` is among them: at least one character."""
    starts: frozenset[str]
    """Characters a non-empty expansion of only optional expressions may start with."""

    def accepts(self, text: str) -> bool:
        if self.required:
            return bool(text)
        return not text or text[0] in self.starts


@lru_cache(maxsize=1024)
def _parse(template: str) -> tuple[tuple[str, ...], tuple[_Gap, ...]] | None:
    """`(literals, gaps)` with one more literal than gaps; None for a template with no expression."""
    literals: list[str] = []
    gaps: list[_Gap] = []
    pos = 0
    pending: list[str] = []  # operators of the expressions since the last literal
    for match in _EXPRESSION.finditer(template):
        literal = template[pos : match.start()]
        if literal or not literals:
            if pending:
                gaps.append(_gap(pending))
                pending = []
            literals.append(literal)
        body = match.group(1)
        pending.append(body[:1] if body[:1] in "+#./;?&" else "")
        pos = match.end()
    if not pending:
        return None
    gaps.append(_gap(pending))
    literals.append(template[pos:])
    return tuple(literals), tuple(gaps)


def _gap(operators: list[str]) -> _Gap:
    required = any(op in ("", "+") for op in operators)
    return _Gap(required, frozenset(_OPTIONAL_PREFIX[op] for op in operators if op in _OPTIONAL_PREFIX))


def template_matches(template: str, uri: str) -> bool:
    """True when `uri` can be an expansion of the RFC 6570 `template` (see the module docstring).

    Args:
        template: A resource template's `uriTemplate`.
        uri: The URI an agent asked for.
    Returns:
        True on a match; a template without expressions matches only itself.
    """
    parsed = _parse(template)
    if parsed is None:
        return uri == template
    literals, gaps = parsed
    first, last = literals[0], literals[-1]
    if not uri.startswith(first) or not uri.endswith(last) or len(uri) < len(first) + len(last):
        return False
    end = len(uri) - len(last)
    pos = len(first)
    for literal, gap in zip(literals[1:-1], gaps[:-1], strict=True):
        found = uri.find(literal, pos + (1 if gap.required else 0), end)
        if found < 0 or not gap.accepts(uri[pos:found]):
            return False
        pos = found + len(literal)
    return pos <= end and gaps[-1].accepts(uri[pos:end])
