"""Small pieces of the CLI's sentences: counts with their noun, what an option of the wrong type
was given, and an option value refused by its own parser (issue 16, R-7.3)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import typer

from mcp_center.errors import OptionValueInvalid

__all__ = [
    "ECHOED_VALUE_CHARS",
    "ValueRefused",
    "counted",
    "data_dir_value",
    "option_value_refused",
    "wrong_type_value",
]

_TYPE_WORDS: Final = {int: "an integer", float: "a number"}
"""How an option's type is named when a value is not of it ("'abc' is not an integer")."""
ECHOED_VALUE_CHARS = 8
"""A value of the wrong type is echoed only up to this length: a typo such as `--port abc` is shown,
a longer value (a secret pasted into the wrong option?) only counted."""


def counted(count: int, noun: str) -> str:
    """ "1 tool", "4 tools": `count` and `noun`, plural unless the count is one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def wrong_type_value(param: Any, given: list[str]) -> tuple[str, str] | None:
    """`(value, type words)` for the option `param` (a typer option) whose value among the command's
    arguments `given` (`--port abc` or `--port=abc`) is not of its number type ("an integer"), or
    None when its type is no number or the value is not found."""
    descriptor = getattr(param, "type_descriptor", None)
    kind = _TYPE_WORDS.get(getattr(descriptor, "annotation", None))  # pyright: ignore[reportArgumentType]
    value = None
    for index, arg in enumerate(given):
        for opt in param.opts:
            if arg == opt and index + 1 < len(given):
                value = given[index + 1]
            elif arg.startswith(f"{opt}="):
                value = arg.partition("=")[2]
    return None if kind is None or value is None else (value, kind)


def option_value_refused(
    command: str, option: str, what: str, *, given: str = "", allowed: Sequence[str] = ()
) -> OptionValueInvalid:
    """OPTION_VALUE_INVALID for a value of `option` that the command refuses after click took it
    (`import --format cursr`, `serve --port 99999`), as click's own refusals of a value are
    (`_shared._parsed`): "option '--format' of mcp-center import must be one of: ...; see
    'mcp-center import --help'", with `details.did_you_mean` the closest of `allowed` to `given`
    (the value itself is not repeated) (trial35 LOW, R-7.3)."""
    from mcp_center.errors import did_you_mean

    close = did_you_mean(given, allowed) if given and allowed else []
    return OptionValueInvalid(
        f"option '{option}' of {command} {what}; see '{command} --help'",
        details={"option": option, "command": command, "reason": "value", "did_you_mean": close},
    )


class ValueRefused(typer.BadParameter):
    """A value an option's own parser refuses; `_shared._parsed` words it as OPTION_VALUE_INVALID with
    `reason` and `what` ("is empty: ...")."""

    def __init__(self, reason: str, what: str) -> None:
        super().__init__(what)
        self.reason = reason
        self.what = what


def data_dir_value(raw: str) -> Path:
    """`--data-dir`'s value as a path; an empty (or blank) one is refused, not taken as the current
    directory, where the command would write its files (break36, R-9.2).

    Raises:
        ValueRefused: the value is empty or only spaces (OPTION_VALUE_INVALID, `reason` `empty`).
    """
    if not raw.strip():
        raise ValueRefused(
            "empty", "is empty: name a directory, or leave the option out for $MCP_CENTER_DATA_DIR or the default"
        )
    return Path(raw)
