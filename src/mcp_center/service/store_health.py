"""Can this instance use its store now? The answer `/healthz` gives a load balancer (R-10.2).

A balancer keeps an instance in rotation while its health check passes. An instance that cannot
reach the shared database (its password changed, the database away, the network cut) answers every
API and gateway request with `STORAGE_UNAVAILABLE`; a `/healthz` that said 200 regardless kept it in
rotation and half the requests failed for ever. `StoreHealth.check()` reads the store (`read()`:
one small query on PostgreSQL, one file read on the JSON backend) at most once per
`HEALTH_CACHE_S`: the checks of several balancers, or a storm of probes, share one read, and
concurrent checks wait for the one in flight instead of starting their own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio

from mcp_center.errors import CenterError
from mcp_center.service.store_threads import in_read_thread
from mcp_center.store import Store

__all__ = ["HEALTH_CACHE_S", "StoreHealth", "StoreVerdict"]

HEALTH_CACHE_S = 1.0
"""Seconds one answer is reused for (a balancer checks every 0.5-2 s)."""


@dataclass(frozen=True)
class StoreVerdict:
    """One check's outcome: `ok`, else the store's stable error `code` and its `message` (never a secret:
    the store names the database without its password)."""

    ok: bool
    code: str | None = None
    message: str | None = None


class StoreHealth:
    """The cached store check of one instance (see the module docstring)."""

    def __init__(self, store: Store, cache_s: float = HEALTH_CACHE_S) -> None:
        self._store = store
        self._cache_s = cache_s
        self._lock = anyio.Lock()
        self._last: tuple[float, StoreVerdict] | None = None

    async def check(self) -> StoreVerdict:
        """The store's verdict, read at most once per `cache_s` seconds (monotonic clock)."""
        async with self._lock:
            last = self._last
            if last is not None and time.monotonic() - last[0] < self._cache_s:
                return last[1]
            try:
                await in_read_thread(self._store.read)
            except CenterError as exc:
                verdict = StoreVerdict(False, exc.code, str(exc))
            else:
                verdict = StoreVerdict(True)
            self._last = (time.monotonic(), verdict)
            return verdict
