"""The hint of a tool call whose arguments were sent without their `arguments` wrapper (issue 16, R-7.3).

`POST .../tools/get_current_time/call` with `{"timezone": "UTC"}` was refused "timezone: is not a
known field": the body's fields are `arguments` and `operation_id`. The refusal now says that tool
arguments go under `"arguments"`, and when the tool's input schema is known (its server is
connected) and lists every unknown key, it says they are that tool's arguments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fastapi import Request

from mcp_center.errors import MAX_SUGGESTED, clip_echo
from mcp_center.models import is_object

__all__ = ["unwrapped_arguments_hint"]

_CALL_SUFFIX = "/call"


def _call_target(request: Request) -> tuple[str, str] | None:
    """`(server_id, tool)` of a tool-call route (`/api/mcp/servers/{server_id}/tools/{tool}/call`, or
    `/api/tools/{name}/call` with an exposed name `mcp__{server}__{tool}`); None for another route."""
    if request.method != "POST" or not request.url.path.endswith(_CALL_SUFFIX):
        return None
    params = request.path_params
    server_id, tool, name = params.get("server_id"), params.get("tool"), params.get("name")
    if isinstance(server_id, str) and isinstance(tool, str):
        return server_id, tool
    if isinstance(name, str) and request.url.path.startswith("/api/tools/"):
        _, _, rest = name.partition("mcp__")
        server, _, original = rest.partition("__")
        return (server, original) if server and original else ("", name)
    return None


def unwrapped_arguments_hint(request: Request, unknown: Sequence[str]) -> tuple[str, bool] | None:
    """The hint for a tool call refused for the top-level fields `unknown`, and whether it is precise
    (the tool's live input schema lists every unknown key: it names the tool); None when the route
    is not a tool call (R-7.3). It names and exemplifies the first `MAX_SUGGESTED` keys only, each
    clipped (`clip_echo`), and counts the rest: 40,000 keys made a 3.7 MB answer (issue 16)."""
    target = _call_target(request)
    if target is None or not unknown:
        return None
    server_id, tool = target
    shown = [clip_echo(key) for key in unknown[:MAX_SUGGESTED]]
    more = f" (and {len(unknown) - len(shown)} more)" if len(unknown) > len(shown) else ""
    example = json.dumps({"arguments": dict.fromkeys(shown, "...")}).replace('"..."', "...") + more
    center: object = getattr(request.app.state, "center", None)
    known = getattr(center, "known_input_schema", None)
    schema: object = known(server_id, tool) if callable(known) and server_id else None
    properties: object = schema.get("properties") if is_object(schema) else None
    if is_object(properties) and all(key in properties for key in unknown):
        keys = ", ".join(f"'{key}'" for key in shown) + more
        return (
            f"{keys} {'are arguments' if len(unknown) > 1 else 'is an argument'} of tool '{tool}': send {example}",
            True,
        )
    return f'tool arguments go under "arguments": send {example}', False
