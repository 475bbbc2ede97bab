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
skipped unmarked: once trusted again (a change of its record), it is warmed. A mark that cannot be
written (its path is a directory, the disk is full or read-only) is logged once, without a
traceback, and remembered in memory for that stamp: the warm-up is not run again at every change of
any server, only after the next start (fixa36). A server deleted while its follow ran has its home
(mark included) removed when the follow ends, not left until the next change.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

import anyio.to_thread

from mcp_center.config import Settings, StdioServerConfig
from mcp_center.errors import CenterError
from mcp_center.secrets import Redactor
from mcp_center.service.sandboxing import remove_home, sandbox_root, warm_up
from mcp_center.service.store_threads import in_read_thread
from mcp_center.store import FileOwnerLock, ServerRecord, Store
from mcp_center.transports import ConnectionSpec

__all__ = ["WARMED_FILE", "WarmUpFollower", "mark_warmed", "others_warming", "warmed_at"]

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


def others_warming(store: Store, here: str, data_dir: Path) -> tuple[str, ...]:
    """The other live instances, which warm their own homes after a warm-up answered by the run
    `here` in `data_dir` (names, else ids; oldest first). Blocking.

    The serve that owns `data_dir` is left out: its home is the one just warmed (a CLI warm-up
    beside a serve on the same data directory; fixa36). It is found by the data directory's owner
    record (`serve.json`: pid, this host).

    Raises:
        StorageError: the instances could not be read.
    """
    owner = FileOwnerLock(data_dir).current()
    host = socket.gethostname()
    return tuple(
        i.name or i.id
        for i in store.instances()
        if i.id != here and not (owner is not None and i.pid == owner.pid and i.hostname == host)
    )


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
        self._unmarked: dict[Path, datetime] = {}  # a home whose mark failed -> the stamp it followed

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
            unmarked = self._unmarked.get(root)
            if unmarked is not None and unmarked >= stamp:  # followed already; its mark failed (logged)
                continue
            try:
                spec = await in_read_thread(partial(self._spec_of, record.id))
            except CenterError as exc:  # deleted or not trusted now: nothing to warm (yet)
                logger.info("sandbox.follow_skipped", extra={"server_id": record.id, "code": exc.code})
                continue
            try:
                result = await warm_up(spec, self._redactor)
                if not result.ok:
                    logger.warning(  # the output is redacted; its last line is usually the cause
                        "sandbox.follow_failed",
                        extra={
                            "server_id": record.id,
                            "exit_code": result.exit_code,
                            "reason": result.output_tail[-1] if result.output_tail else None,
                        },
                    )
            except CenterError as exc:
                logger.warning(
                    "sandbox.follow_failed", extra={"server_id": record.id, "code": exc.code, "reason": exc.message}
                )
            try:
                await anyio.to_thread.run_sync(mark_warmed, root, stamp)
            except OSError as exc:
                self._unmarked[root] = stamp
                logger.warning(
                    "sandbox.follow_unmarked",
                    extra={
                        "server_id": record.id,
                        "path": str(root / WARMED_FILE),
                        "fault": exc.strerror or type(exc).__name__,
                    },
                )
            warmed.append(record.id)
            await self._drop_if_deleted(record)
        return warmed

    async def _drop_if_deleted(self, record: ServerRecord) -> None:
        """The server was deleted while its follow ran: its home goes now (the deletion removed it
        before the follow marked it again). Looked at after the mark, so one of the two removes it."""
        now = (await in_read_thread(self._store.read)).servers.get(record.id)
        if now is None or now.created_at != record.created_at:
            self._unmarked.pop(sandbox_root(self._settings, record.id, record.created_at), None)
            await anyio.to_thread.run_sync(remove_home, self._settings, record)
            logger.info("sandbox.follow_dropped", extra={"server_id": record.id})

    @staticmethod
    def _sandboxed(record: ServerRecord) -> bool:
        return isinstance(record.config, StdioServerConfig) and record.config.sandbox is not None
