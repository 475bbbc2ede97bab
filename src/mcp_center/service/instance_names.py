"""One name per live instance on a shared store (R-10.2).

Names tell the instances behind a balancer apart: the `X-MCP-Center-Instance` header of every
response, `/api/instances`, the settings page, the balancer's logs. Two live instances with one
name made them indistinguishable, silently. `serve` refuses a taken name before it listens
(`launch.check_instance_name`, a read: one error line before the banner), and the host claims the
name once it joined the store (`McpCenter.open`, `claim_instance_name`): the store looks for a live
holder and records the name in one atomic step (on PostgreSQL a transaction under the name's
advisory lock), so of two instances started with one name at the same moment exactly one gets it.
Light on imports: `serve` calls it before it imports the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_center.errors import InstanceNameInUse

if TYPE_CHECKING:
    from mcp_center.store import Store
    from mcp_center.store.coordination import InstanceInfo

__all__ = ["claim_instance_name", "refuse_a_taken_name"]


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


def _in_use(name: str, other: InstanceInfo) -> InstanceNameInUse:
    where = f"pid {other.pid} on {other.hostname}" + (f", {other.url}" if other.url else "")
    return InstanceNameInUse(
        f"another live instance on this database is named '{name}' ({where}); give each instance its "
        "own --instance-name (or MCP_CENTER_INSTANCE_NAME), or stop the other one first",
        details={"name": name, "hostname": other.hostname, "pid": other.pid, "url": other.url},
    )
