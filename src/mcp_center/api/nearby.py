"""The routes closest to a path that matches none, for the 404 of a mistyped path (issue 16, R-7.3).

`GET /api/mcp/server` answered "no route" with a remark about '/' in ids that did not apply; it now
names `/api/mcp/servers`. A route's template is compared with the path segment by segment: a
placeholder (`{server_id}`) takes the path's segment at its place, so only the literal parts count.
"""

from __future__ import annotations

import difflib
import re

from fastapi import Request
from starlette.routing import Route

from mcp_center.errors import DID_YOU_MEAN

__all__ = ["CLOSE_ENOUGH", "closest_routes"]

CLOSE_ENOUGH = 0.6
"""The least similarity (difflib's ratio, 0-1) of the one segment in which a route differs from the
path for the route to be offered."""
_PLACEHOLDER = re.compile(r"\{[^}]*\}")


def _likeness(template: str, segments: list[str]) -> float | None:
    """How alike the one literal segment in which `template` differs from the path's `segments` is
    to the path's (a placeholder takes any segment); None when the counts differ, nothing differs,
    or more than one segment does."""
    parts = template.strip("/").split("/")
    if len(parts) != len(segments):
        return None
    differing = [
        (part, seg)
        for part, seg in zip(parts, segments, strict=True)
        if part != seg and not _PLACEHOLDER.fullmatch(part)
    ]
    if len(differing) != 1:
        return None
    part, seg = differing[0]
    return difflib.SequenceMatcher(None, part.lower(), seg.lower()).ratio()


def closest_routes(request: Request) -> list[str]:
    """The route templates of `request.app` closest to the request's path (at most `DID_YOU_MEAN`,
    best first), those that take the request's method first: the routes with as many segments that
    differ from it in one literal segment only, that one at least `CLOSE_ENOUGH` alike; [] when none.

    Returns:
        Templates as the API documents them (`/api/mcp/servers/{server_id}`), never the path given.
    """
    segments = request.url.path.strip("/").split("/")
    scored: list[tuple[bool, float, str]] = []
    for route in request.app.routes:
        if not isinstance(route, Route) or not route.include_in_schema:
            continue
        likeness = _likeness(route.path, segments)
        if likeness is not None and likeness >= CLOSE_ENOUGH:
            scored.append((request.method in (route.methods or ()), likeness, route.path))
    scored.sort(key=lambda item: (not item[0], -item[1], item[2]))
    close: list[str] = []
    for _, _, template in scored:
        if template not in close:
            close.append(template)
    return close[:DID_YOU_MEAN]
