"""Which instance is this, which others run, and how each one's connections fare (R-10.2).

Several `serve` instances share one PostgreSQL database; each runs its own connections to the
enabled servers (stdio processes are per instance). The settings page of any instance shows every
live instance and each one's state of a server; every HTTP response names the instance that
answered (`X-MCP-Center-Instance`).

`StatePublisher` takes the connection manager's status changes (called on the event loop, often in
bursts) and writes this instance's latest state per server to the store's instance board from one
task, coalescing a burst into one write per server. A write that fails (the database is away) is
logged and retried at the next change; the board is a view, never a source of truth.
"""

from __future__ import annotations

import logging
from functools import partial

import anyio

from mcp_center.errors import CenterError
from mcp_center.runtime import ServerStatus
from mcp_center.service.results import InstancesView, InstanceView
from mcp_center.service.store_threads import in_write_thread
from mcp_center.store import Store
from mcp_center.store.coordination import InstanceServerState

__all__ = ["INSTANCE_HEADER", "StatePublisher", "instance_views"]

logger = logging.getLogger(__name__)

INSTANCE_HEADER = "X-MCP-Center-Instance"
"""Response header naming the instance that answered (its `--instance-name`, R-10.2)."""


class StatePublisher:
    """This instance's connection states → the store's instance board (see the module docstring).

    Args:
        store: The shared store.
        instance: This run's id (joined and described).
    """

    def __init__(self, store: Store, instance: str) -> None:
        self._store = store
        self._instance = instance
        self._pending: dict[str, tuple[str, str | None]] = {}
        self._wake = anyio.Event()

    def note(self, status: ServerStatus) -> None:
        """A status change (the manager's `on_status`, on the event loop): publish it soon."""
        reason = status.error.get("details", {}).get("reason") if status.error else None
        self._pending[status.server_id] = (status.state.value, reason if isinstance(reason, str) else None)
        self._wake.set()

    async def run(self) -> None:
        """Publish until cancelled (a task of the host's task group)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            batch, self._pending = self._pending, {}
            try:
                await in_write_thread(partial(self._write, batch))
            except CenterError as exc:
                logger.warning("instances.publish_failed", extra={"code": exc.code})
                for server_id, value in batch.items():  # retried with the next change
                    self._pending.setdefault(server_id, value)

    def _write(self, batch: dict[str, tuple[str, str | None]]) -> None:
        for server_id, (state, reason) in batch.items():
            self._store.publish_server_state(self._instance, server_id, state, reason)


def instance_views(store: Store, here: str) -> InstancesView:
    """The live instances and their connection states, for `GET /api/instances` (blocking: call it in a thread).

    Returns:
        The instances, oldest first (`InstancesView.to_dict()` is `{"here": id, "instances": [{id, name,
        url, hostname, pid, started_at, here, servers: {server_id: {state, reason, updated_at}}}]}`).
    Raises:
        StorageError: the board could not be read.
    """
    states: dict[str, dict[str, InstanceServerState]] = {}
    for line in store.server_states():
        states.setdefault(line.instance, {})[line.server_id] = line
    return InstancesView(
        here=here,
        instances=tuple(
            InstanceView(info=info, here=info.id == here, servers=states.get(info.id, {})) for info in store.instances()
        ),
    )
