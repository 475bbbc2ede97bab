"""A user's tool call without an argument the tool requires is refused before it is sent (R-7.3).

The server would refuse it too, with its own validator's text (a pydantic dump for an SDK server);
ours names the missing arguments, the same way for every face that calls `McpCenter.call_tool`:
the REST API, the settings page's playground, the library and `mcp-center call`. Only what the
tool's `inputSchema` lists in its top-level `required` is checked here; the server validates the
rest (types, nested objects, formats). Agents' calls (the gateway, `/api/tools/...`) are left to the
server: their lean path takes no per-call work beyond a lookup (R-8.3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_center.config.jsonsafe import MAX_DEPTH, first_unsafe_value, scrub_text
from mcp_center.errors import FieldError, RequestInvalid
from mcp_center.models import is_array, is_object

__all__ = ["check_arguments_safe", "missing_arguments_example", "nested_too_deep", "require_arguments"]


def check_arguments_safe(arguments: object) -> None:
    """Refuse a call's `arguments` holding a value JSON cannot carry on to a server: NaN or an
    infinite number (`1e400` is one once parsed), a string or key with an unpaired surrogate
    (`"\\ud800"`), or nesting deeper than `jsonsafe.MAX_DEPTH`.

    A call's arguments are a request, not configuration: the refusal is REQUEST_INVALID (422, exit
    2), the code the REST API answers any malformed call body with, for every face that calls a
    tool (REST, the settings page, `mcp-center call`, the gateway) (cli36; it was CONFIG_INVALID).

    Raises:
        RequestInvalid: one FIELD_INVALID error whose field is the bad value's position
            (`arguments.items.2`; a key is `<key>` in its object's path); the message names that
            position and what is wrong, never the value.
    """
    found = first_unsafe_value(arguments, "arguments")
    if found is None:
        return
    raise _refusal(scrub_text(found[0]), found[1])


def nested_too_deep(where: str = "arguments") -> RequestInvalid:
    """The refusal of a call whose arguments' JSON text nests too deep to be parsed at all (the
    parser's `RecursionError`, some thousand levels): the same REQUEST_INVALID, at `where`, that
    `check_arguments_safe` raises past `jsonsafe.MAX_DEPTH` levels, so 65 and 100,000 levels read
    alike on every face (fixb36, R-7.3). Returned for the caller to raise."""
    return _refusal(where, f"nests deeper than {MAX_DEPTH} levels")


def _refusal(where: str, problem: str) -> RequestInvalid:
    return RequestInvalid(
        f"{where}: {problem}", details={"errors": [FieldError(where, "FIELD_INVALID", problem).to_dict()]}
    )


def require_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Refuse `arguments` when it lacks a name `schema` (the tool's `inputSchema`) lists as `required`.

    Args:
        tool: The tool's name as the caller gave it (named in the message).
        schema: The tool's `inputSchema` as the server listed it; a `required` that is not a list
            (or names that are not strings) requires nothing.
        arguments: The call's arguments, a JSON object.
    Raises:
        RequestInvalid: one FIELD_REQUIRED error per missing name (`arguments.NAME`); `details.missing`
            lists the names, `details.tool` the tool. The message names them, never a value given.
    """
    required: object = schema.get("required")
    if not is_array(required):
        return
    missing = [name for name in required if isinstance(name, str) and name not in arguments]
    if not missing:
        return
    quoted = ", ".join(f"'{name}'" for name in missing)
    errors = [FieldError(f"arguments.{name}", "FIELD_REQUIRED", "is required by the tool") for name in missing]
    raise RequestInvalid(
        f"missing required argument{'s' if len(missing) > 1 else ''} {quoted} of tool '{tool}'",
        details={"errors": [error.to_dict() for error in errors], "tool": tool, "missing": missing},
    )


def missing_arguments_example(details: Mapping[str, object], given: object = None) -> str | None:
    """The full `--args` to pass after a `require_arguments` refusal: the arguments the caller gave
    (`given`, a JSON object, kept as typed) followed by `"NAME": ...` for each name the refusal's
    `details` list (`missing` and `tool`; raised here or answered by a serve over REST), e.g.
    `{"a": 1, "b": ...}` (trialfix36: the hint dropped what was given). Never a value of ours;
    None for details of any other error."""
    missing: object = details.get("missing")
    if not is_array(missing) or not missing or "tool" not in details:
        return None
    kept = [f"{json.dumps(str(k))}: {json.dumps(v)}" for k, v in given.items()] if is_object(given) else []
    return "{" + ", ".join([*kept, *(f"{json.dumps(str(name))}: ..." for name in missing)]) + "}"
