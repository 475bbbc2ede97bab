"""`mcp-center import --var NAME=VALUE --var-from-env NAME=ENVVAR`: an import's variable values
given without a prompt, for scripts and CI (R-1.8, R-7.3).

Why two flags: a plain value (a path, a URL) is easiest on the command line, but a secret there is
readable by every user of the machine (`ps`) and stays in the shell's history; CI systems hand
secrets to a job as environment variables, so `--var-from-env` names the variable to read and
the value itself never appears in an argument. Neither ever fills a variable from the
environment on its own (docs/import-export.md#what-we-decided: variables are never filled from
this host's environment): the user names each one.

Every check here runs before anything is asked or applied, and no error names a value: a
malformed `--var` is refused by its position, since what was typed may be the secret itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_center.cli._shared import err, fail, shown
from mcp_center.errors import CenterError, FieldError, ImportValuesInvalid, RequestInvalid

__all__ = ["GivenValues", "check_known", "given_values", "missing_for_yes"]

HOW = "pass --var NAME=VALUE or, for a secret, --var-from-env NAME=ENVVAR"
"""How to give a value without being asked; ends the errors below."""


@dataclass(frozen=True)
class GivenValues:
    """The values the flags gave: variable name -> value, and where each came from (`--var`, or
    `$ENVVAR` for `--var-from-env`: for the preview, never the value)."""

    values: Mapping[str, str]
    sources: Mapping[str, str]

    def __repr__(self) -> str:  # the values may be secrets
        return f"GivenValues(names={sorted(self.values)})"


def given_values(
    var: Sequence[str], var_from_env: Sequence[str], environ: Mapping[str, str] = os.environ
) -> GivenValues:
    """Parse `--var NAME=VALUE` and `--var-from-env NAME=ENVVAR` (each repeatable).

    Args:
        var: The `--var` arguments, in order.
        var_from_env: The `--var-from-env` arguments, in order.
        environ: Where `--var-from-env` reads (the process environment).
    Returns:
        The values by variable name; a value may be empty (the import's apply judges it).
    Raises:
        typer.Exit: code 2, printed as one line: `REQUEST_INVALID` with field code FIELD_INVALID for
            an argument without `=` or with an empty name (named by position, never echoed),
            VALUE_REPEATED for a variable given twice; `IMPORT_VALUES_INVALID` with ENV_VAR_UNSET
            when ENVVAR is not set (named by position: it may be a secret given to the wrong flag),
            TEXT_INVALID when a value is not UTF-8 text. Nothing was read or changed.
    """
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for flag, items in (("--var", var), ("--var-from-env", var_from_env)):
        for position, item in enumerate(items, start=1):
            name, equals, rest = item.partition("=")
            if not equals or not name.strip():
                shape = "NAME=VALUE" if flag == "--var" else "NAME=ENVVAR"
                raise fail(_refused(RequestInvalid, flag, "FIELD_INVALID", f"#{position} is not {shape}"))
            if name in values:
                raise fail(_refused(RequestInvalid, f"values.{name}", "VALUE_REPEATED", "is given twice: give it once"))
            if flag == "--var":
                value = rest
                sources[name] = "--var"
            else:
                if not rest or rest not in environ:
                    # Never echo what follows '=': a secret given to --var-from-env instead of --var
                    # would be printed (it may well look like a variable name, e.g. ghp_...).
                    problem = (
                        f"{flag} #{position} names an environment variable that is not set here"
                        if rest
                        else f"{flag} #{position} names no ENVVAR"
                    )
                    raise fail(_refused(ImportValuesInvalid, f"values.{name}", "ENV_VAR_UNSET", problem))
                value = environ[rest]
                sources[name] = f"${rest}"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise fail(
                    _refused(ImportValuesInvalid, f"values.{name}", "TEXT_INVALID", "is not UTF-8 text")
                ) from None
            values[name] = value
    return GivenValues(values, sources)


def check_known(given: GivenValues, variables: Sequence[Mapping[str, Any]], *, also: Sequence[str] = ()) -> None:
    """Refuse a given name the file does not use, and note a secret given on the command line.

    Args:
        given: What `given_values` parsed.
        variables: The preview's `variables` (`name`, `secret`, `has_default`, ...).
        also: Names the file uses in entries not imported again (servers already here): accepted,
            and not passed on.
    Raises:
        typer.Exit: code 2, `IMPORT_VALUES_INVALID` with field code VALUE_UNKNOWN (the code
            `POST /api/mcp/import/apply` answers for an unknown value), naming the first unknown
            name and the file's variable names. Nothing changed.
    """
    known = [str(v["name"]) for v in variables]
    unknown = [name for name in given.values if name not in known and name not in also]
    if unknown:
        listed = ", ".join(known) if known else "none"
        message = f"is not a variable of this file (its variables: {listed})"
        raise fail(_refused(ImportValuesInvalid, f"values.{unknown[0]}", "VALUE_UNKNOWN", message))
    for v in variables:
        if v["secret"] and given.sources.get(v["name"]) == "--var":
            err.print(
                shown(
                    f"note: {v['name']} is a secret and --var put it on the command line (shell history, "
                    f"ps); --var-from-env {v['name']}=ENVVAR keeps it off"
                ),
                markup=False,
                highlight=False,
            )


def missing_for_yes(given: GivenValues, variables: Sequence[Mapping[str, Any]]) -> list[str]:
    """`--yes`: the names of the variables left to the file's default (every one not given has one).

    Raises:
        typer.Exit: code 2, `IMPORT_VALUES_INVALID` with field code VALUE_REQUIRED naming each
            variable that has neither a given value nor a usable default in the file (one line
            for one). Nothing changed.
    """
    left = [v for v in variables if v["name"] not in given.values]
    missing = [str(v["name"]) for v in left if not v["has_default"]]
    if len(missing) == 1:
        raise fail(
            _refused(
                ImportValuesInvalid, f"values.{missing[0]}", "VALUE_REQUIRED", f"needs a value: {HOW}; nothing changed"
            )
        )
    if missing:
        errors = [FieldError(f"values.{name}", "VALUE_REQUIRED", "needs a value") for name in missing]
        raise fail(
            ImportValuesInvalid(
                f"{len(missing)} variables need a value: {HOW}; nothing changed",
                details={"errors": [e.to_dict() for e in errors]},
            )
        )
    return [str(v["name"]) for v in left]


def _refused(
    kind: type[RequestInvalid] | type[ImportValuesInvalid], field: str, code: str, message: str
) -> CenterError:
    """The error `kind` that `fail` prints as one line: `field: message [CODE]`."""
    return kind(f"{field}: {message}", details={"errors": [FieldError(field, code, message).to_dict()]})
