"""`${...}` references in imported configuration: found, named, and filled only with supplied values.

Client files reference values they expect to find at run time: Claude Code `${VAR}` and
`${VAR:-default}`, Cursor and VS Code `${env:VAR}`, VS Code `${input:id}` (a prompt), and
client-defined values such as `${workspaceFolder}` or `${userHome}`.

Threat (R-1.8): a pasted file that pulls the host's own secrets, e.g. `"X-Leak": "${AWS_SECRET_ACCESS_KEY}"`
sent to the file author's server. Nothing here reads the host environment: a reference is only
ever replaced by a value the user supplied for it, or by the file's own default when the user
accepted it. Replacement is one pass: a supplied value that itself contains `${...}` stays literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from mcp_center.errors import FieldError

__all__ = ["CLIENT_VARIABLES", "Reference", "VariableKind", "could_give", "find_references", "substitute"]

VariableKind = Literal["env", "input", "client"]
"""Where a client would take the value from: its environment, a prompt (VS Code inputs), or itself."""

CLIENT_VARIABLES = frozenset(
    {
        "cwd",
        "execPath",
        "file",
        "fileBasename",
        "fileDirname",
        "pathSeparator",
        "relativeFile",
        "userHome",
        "workspaceFolder",
        "workspaceFolderBasename",
        "workspaceRoot",
    }
)
"""VS Code / Cursor predefined variables: values the client computes (listed as kind `client`)."""

_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_WITH_DEFAULT = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,127}):-(.*)", re.DOTALL)
_INPUT_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_CLIENT_QUALIFIED = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}:[A-Za-z0-9_.:/-]{1,128}")


@dataclass(frozen=True)
class Reference:
    """One `${...}` occurrence.

    Attributes:
        name: The variable's name as the preview lists it and `values` keys it: `VAR` for
            `${VAR}`, `${VAR:-x}` and `${env:VAR}` (one variable), `input:id` for `${input:id}`,
            the inner text for client variables (`workspaceFolder`, `config:x`, `/`).
        kind: env, input or client.
        default: The text after `:-`, or None.
    """

    name: str
    kind: VariableKind
    default: str | None = None


def _parse(inner: str) -> Reference | None:
    if inner.startswith("env:"):
        name = inner[4:]
        return Reference(name, "env") if _ENV_NAME.fullmatch(name) else None
    if inner.startswith("input:"):
        ident = inner[6:]
        return Reference(inner, "input") if _INPUT_ID.fullmatch(ident) else None
    with_default = _WITH_DEFAULT.fullmatch(inner)
    if with_default:
        default = with_default.group(2)
        return None if "\x00" in default else Reference(with_default.group(1), "env", default)
    if _ENV_NAME.fullmatch(inner):
        return Reference(inner, "client" if inner in CLIENT_VARIABLES else "env")
    if inner == "/" or _CLIENT_QUALIFIED.fullmatch(inner):
        return Reference(inner, "client")
    return None


def find_references(field: str, text: str) -> tuple[list[Reference], FieldError | None]:
    """Return the references in `text`, in order, or the error that makes `text` unusable.

    Args:
        field: Dotted path of the value in its entry (for the error), e.g. `env.API_KEY`.
        text: A string value from the imported file.
    Returns:
        `(references, None)`, or `([], FieldError(field, "VARIABLE_INVALID", ...))` when a
        `${...}` is malformed, nested or unterminated: such text is rejected rather than guessed.
    """
    if "${" not in text:
        return [], None
    found: list[Reference] = []
    for match in _REFERENCE.finditer(text):
        ref = _parse(match.group(1))
        if ref is None:
            return [], FieldError(field, "VARIABLE_INVALID", "has a malformed ${...} reference")
        found.append(ref)
    if "${" in _REFERENCE.sub("", text):
        return [], FieldError(field, "VARIABLE_INVALID", "has a nested or unterminated ${...} reference")
    return found, None


def substitute(text: str, value_of: Callable[[Reference], str]) -> str:
    """Replace every reference in `text` by `value_of(reference)`, in one pass (never recursively).

    A `${...}` that is no reference stays as it is: only text `find_references` accepted, or a
    stored value kept as text on re-import (`plan._draft`), comes here.
    """
    if "${" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        ref = _parse(match.group(1))
        return match.group() if ref is None else value_of(ref)

    return _REFERENCE.sub(replace, text)


def could_give(text: str, value: str) -> bool:
    """Whether some values of the references in `text` would make it `value` (R-1.8, R-7.3).

    Each reference stands for any text (its default is one value among others): `--root ${ROOT}`
    could give `--root /data`. A text with `${` but no `${...}` (`a${`: kept as text) gives itself only.

    Linear in `len(value)` per literal part, no regex (`.*` groups backtrack exponentially, and a
    regex search holds the GIL): the first literal part must be a prefix of `value`, the last a
    suffix of the rest, and each middle part is found left to right. Taking a part's leftmost
    occurrence never loses a match: the reference after it can absorb what a later one would skip.
    """
    parts = _REFERENCE.split(text)[::2]
    if len(parts) == 1:
        return text == value
    first, *middle, last = parts
    if len(value) < len(first) + len(last) or not value.startswith(first) or not value.endswith(last):
        return False
    position, end = len(first), len(value) - len(last)
    for part in middle:
        found = value.find(part, position, end)
        if found < 0:
            return False
        position = found + len(part)
    return True
