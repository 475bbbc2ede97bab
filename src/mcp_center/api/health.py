"""`/healthz` (R-10.2) and what the access log says of it.

A load balancer checks every instance several times a second (deploy/haproxy.cfg: every 2 s per
backend); logged, those probes were most of the log (1030 of 1097 lines after three minutes behind
haproxy). The access log keeps a failed probe (any status outside 2xx), never a passed one.

A passed check means the instance can use its store: an instance that answers everything else with
`STORAGE_UNAVAILABLE` fails it, and the balancer stops sending it requests (`health_response`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fastapi.responses import JSONResponse

from mcp_center import __version__
from mcp_center.api.errors import error_response

if TYPE_CHECKING:
    from mcp_center.service import McpCenter

__all__ = ["HEALTH_PATH", "health_response", "quiet_passed_probes", "skip_passed_probe"]

HEALTH_PATH = "/healthz"
"""The health check's path: `{"ok": true, "version": ...}` with 200 while this instance serves and reaches its
store, 503 `STORAGE_UNAVAILABLE` while it cannot (`health_response`)."""


def skip_passed_probe(record: logging.LogRecord) -> bool:
    """`uvicorn.access` filter: False (drop) for a `/healthz` request answered 2xx, True for every other line.

    uvicorn's access record has `args = (client, method, path with query, HTTP version, status)`.
    """
    args = record.args
    if not isinstance(args, tuple) or len(args) < 5:
        return True
    path, status = args[2], args[4]
    if not isinstance(path, str) or not isinstance(status, int):
        return True
    return not (path.partition("?")[0] == HEALTH_PATH and 200 <= status < 300)


def quiet_passed_probes() -> None:
    """Install `skip_passed_probe` on the `uvicorn.access` logger (idempotent: a filter is added once)."""
    access = logging.getLogger("uvicorn.access")
    if skip_passed_probe not in access.filters:
        access.addFilter(skip_passed_probe)


async def health_response(state: Any) -> JSONResponse:
    """`/healthz`: 200 `{"ok": true, "version"}` while this instance can use its store; else 503 in the
    error envelope with the store's code and cause (`STORAGE_UNAVAILABLE`: "cannot read the database
    ...: <the driver's first line>", never the password), so a balancer takes the instance out of
    rotation (R-10.2). `state` is the app's state: `center` the open `McpCenter` (absent: no store
    yet to check, 200). The check is `McpCenter.store_health`, read at most once a second."""
    center: McpCenter | None = getattr(state, "center", None)
    if center is not None:
        verdict = await center.store_health.check()
        if not verdict.ok:
            return error_response(503, verdict.code or "STORAGE_UNAVAILABLE", verdict.message or "", {"check": "store"})
    return JSONResponse({"ok": True, "version": __version__})
