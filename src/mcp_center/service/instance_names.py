"""One name per live instance on a shared store (R-10.2).

Names tell the instances behind a balancer apart: the `X-MCP-Center-Instance` header of every
response, `/api/instances`, the settings page, the balancer's logs. Two live instances with one
name made them indistinguishable, silently. `serve` refuses a taken name before it listens
(`launch.check_instance_name`, a read: one error line before the banner), and the host claims the
name once it joined the store (`McpCenter.open`, `claim_instance_name`): the store looks for a live
holder and records the name in one atomic step (on PostgreSQL a transaction under the name's
advisory lock), so of two instances started with one name at the same moment exactly one gets it.
A name is a lease: while an instance is away from the database (it restarted, the network failed,
the process was stopped) its presence lapses and the name is free. When its presence is taken again
the store claims the name again the same atomic way; if another live instance holds it now, the
`NameLease` is told, logs `SERVE_INSTANCE_NAME_IN_USE` and `serve` stops with exit 4 (fixa36).
Light on imports: `serve` calls it before it imports the host.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mcp_center.errors import InstanceNameInUse

if TYPE_CHECKING:
    from mcp_center.store import Store
    from mcp_center.store.coordination import InstanceInfo

__all__ = ["NameLease", "claim_instance_name", "refuse_a_taken_name"]

logger = logging.getLogger(__name__)


def refuse_a_taken_name(store: Store, name: str) -> None:
    """Refuse a run about to start as `name` when a live instance has that name (a read: the early
    check; `claim_instance_name` is the one that settles a race). Blocking.

    Raises:
        InstanceNameInUse: `details`: `name` and the other's `hostname`, `pid`, `url`.
        StorageError: the store could not be read.
    """
    other = next((i for i in store.instances() if i.name == name), None)
    if other is not None:
        raise _in_use(name, other)


def claim_instance_name(store: Store, instance: str, name: str, url: str | None) -> None:
    """Describe the joined run `instance` as `name` listening at `url`, unless a live instance has
    that name (atomic in the store: of two runs claiming one name at once, the one that claims
    first keeps it and the other is refused). Blocking (a store write).

    Raises:
        InstanceNameInUse: `details`: `name` and the other's `hostname`, `pid`, `url`; this run is
            left undescribed.
        StorageError: the store could not be written.
    """
    other = store.describe_instance(instance, name=name, url=url)
    if other is not None:
        raise _in_use(name, other)


class NameLease:
    """This serve's hold on its claimed `name` (R-10.2): `lost` turns from None to the refusal when
    the store, taking the run's presence again after an absence, found another live instance holding
    the name. The host polls `lost` and stops (`HostServer.on_tick`; `serve` exits 4).

    Args:
        store: The shared store.
        instance: This run's id (joined and described as `name`).
        name: The name it claimed.
    """

    def __init__(self, store: Store, instance: str, name: str) -> None:
        self.name = name
        self.lost: InstanceNameInUse | None = None
        store.watch_instance_name(instance, self._lose)

    def _lose(self, other: InstanceInfo) -> None:  # a store thread
        exc = _in_use(self.name, other, lost=True)
        logger.error(
            "serve.instance_name_lost",
            extra={
                "code": exc.code,
                "instance_name": self.name,
                "holder_pid": other.pid,
                "holder_hostname": other.hostname,
            },
        )
        self.lost = exc


def _in_use(name: str, other: InstanceInfo, *, lost: bool = False) -> InstanceNameInUse:
    where = f"pid {other.pid} on {other.hostname}" + (f", {other.url}" if other.url else "")
    if lost:
        return InstanceNameInUse(
            f"while this instance was away from the database, another live instance took the name '{name}' "
            f"({where}); this one stops rather than answer under a name another has: give each instance "
            "its own --instance-name (or MCP_CENTER_INSTANCE_NAME)",
            details={"name": name, "hostname": other.hostname, "pid": other.pid, "url": other.url},
        )
    return InstanceNameInUse(
        f"another live instance on this database is named '{name}' ({where}); give each instance its "
        "own --instance-name (or MCP_CENTER_INSTANCE_NAME), or stop the other one first",
        details={"name": name, "hostname": other.hostname, "pid": other.pid, "url": other.url},
    )
