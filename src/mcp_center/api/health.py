"""`/healthz` (R-10.2) and what the access log says of it.

A load balancer checks every instance several times a second (deploy/haproxy.cfg: every 2 s per
backend); logged, those probes were most of the log (1030 of 1097 lines after three minutes behind
haproxy). The access log keeps a failed probe (any status outside 2xx), never a passed one.
"""

from __future__ import annotations

import logging

__all__ = ["HEALTH_PATH", "quiet_passed_probes", "skip_passed_probe"]

HEALTH_PATH = "/healthz"
"""The health check's path: `{"ok": true, "version": ...}` with 200 while this instance serves."""


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
