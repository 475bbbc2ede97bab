"""Sandbox warm-ups on every instance (R-11.1, R-10.2).

Each instance keeps a sandboxed server's home (and so its package caches) in its own data
directory, so a warm-up answered by one instance filled only that instance's home, and an offline
server still failed to start on the others. Now a successful warm-up stamps the server's record
(`ServerRecord.warmed_up_at`, shared), and every instance follows the stamp: `WarmUpFollower`
watches the servers section of the store's change feed and, for each server whose stamp is later
than its own home's mark (`<sandbox root>/warmed-up`), runs the same warm-up in its own home, in
the background, one at a time, then marks the home. An instance started later (or one that was down)
catches up at its start. The instance that answered marks its home before it stamps the record, so
it never warms twice.

A warm-up that fails on a following instance is logged (`sandbox.follow_failed`) and marked all
the same: the next successful warm-up (a new stamp) tries again. A server not trusted any more is
skipped unmarked: once trusted again (a change of its record), it is warmed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

import anyio.to_thread

from mcp_center.config import Settings, StdioServerConfig
from mcp_center.errors import CenterError
from mcp_center.secrets import Redactor
from mcp_center.service.sandboxing import sandbox_root, warm_up
from mcp_center.service.store_threads import in_read_thread
from mcp_center.store import ServerRecord, Store
from mcp_center.transports import ConnectionSpec

__all__ = ["WARMED_FILE", "WarmUpFollower", "mark_warmed", "warmed_at"]

logger = logging.getLogger(__name__)

WARMED_FILE = "warmed-up"
"""In a server's sandbox root (beside `home/` and `tmp/`, outside the sandbox): the `warmed_up_at`
stamp (ISO 8601) this instance's home was last warmed for."""


def warmed_at(root: Path) -> datetime | None:
    """The stamp this home was warmed for, None when never (or the mark is unreadable). Blocking."""
    try:
        return datetime.fromisoformat((root / WARMED_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def mark_warmed(root: Path, stamp: datetime) -> None:
    """Record that this home was warmed for `stamp` (written whole, then renamed). Blocking.

    Raises:
        OSError: it could not be written.
    """
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    part = root / f".{WARMED_FILE}.{os.getpid()}"
    part.write_text(stamp.isoformat() + "\n", encoding="utf-8")
    part.replace(root / WARMED_FILE)


class WarmUpFollower:
    """Warm this instance's homes of the servers warmed up elsewhere (see the module docstring).

    Args:
        store: The shared store.
        settings: This instance's settings (its data directory holds its homes).
        spec_of: The trusted connection spec of a server id (blocking; raises `CenterError`:
            `ServerNotFound`, `ServerNotTrusted`, `SandboxRequired`).
        redactor: Receives the secret values the warm-up's output must not show.
    """

    def __init__(
        self, store: Store, settings: Settings, spec_of: Callable[[str], ConnectionSpec], redactor: Redactor
    ) -> None:
        self._store = store
        self._settings = settings
        self._spec_of = spec_of
        self._redactor = redactor

    async def watch(self) -> None:
        """Catch up now, then after every change of the servers (a task of the host's task group)."""
        async with self._store.changes(["servers"]) as changes:
            while True:
                try:
                    await self.catch_up()
                except CenterError as exc:
                    logger.warning("sandbox.follow_failed", extra={"code": exc.code})
                await changes.next()

    async def catch_up(self) -> list[str]:
        """Warm every home whose server was warmed up later than the home's mark.

        Returns:
            The ids of the servers warmed here (successfully or not).
        Raises:
            StorageError: the store could not be read.
        """
        state = await in_read_thread(self._store.read)
        warmed: list[str] = []
        for record in state.servers.values():
            stamp = record.warmed_up_at
            if stamp is None or not self._sandboxed(record):
                continue
            root = sandbox_root(self._settings, record.id, record.created_at)
            mark = await anyio.to_thread.run_sync(warmed_at, root)
            if mark is not None and mark >= stamp:
                continue
            try:
                spec = await in_read_thread(partial(self._spec_of, record.id))
            except CenterError as exc:  # deleted or not trusted now: nothing to warm (yet)
                logger.info("sandbox.follow_skipped", extra={"server_id": record.id, "code": exc.code})
                continue
            try:
                result = await warm_up(spec, self._redactor)
                if not result.ok:
                    logger.warning(
                        "sandbox.follow_failed", extra={"server_id": record.id, "exit_code": result.exit_code}
                    )
            except CenterError as exc:
                logger.warning("sandbox.follow_failed", extra={"server_id": record.id, "code": exc.code})
            try:
                await anyio.to_thread.run_sync(mark_warmed, root, stamp)
            except OSError:
                logger.warning("sandbox.follow_unmarked", extra={"server_id": record.id}, exc_info=True)
            warmed.append(record.id)
        return warmed

    @staticmethod
    def _sandboxed(record: ServerRecord) -> bool:
        return isinstance(record.config, StdioServerConfig) and record.config.sandbox is not None
