"""One name per live instance on a shared store (R-10.2).

Names tell the instances behind a balancer apart: the `X-MCP-Center-Instance` header of every
response, `/api/instances`, the settings page, the balancer's logs. Two live instances with one
name made them indistinguishable, silently. `serve` refuses a taken name before it listens
(`launch.check_instance_name`), and the host checks again once it joined the store
(`McpCenter.open`), which settles two instances started at the same moment. Light on imports:
`serve` calls it before it imports the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_center.errors import InstanceNameInUse

if TYPE_CHECKING:
    from mcp_center.store import Store

__all__ = ["refuse_a_taken_name"]


def refuse_a_taken_name(store: Store, instance: str, name: str) -> None:
    """Refuse this run (joined and described as `name`; `instance` "" before it joined) when another live
    instance has that name.

    Of two runs with one name the later one is refused (`started_at`, then the run id: of two that
    start at once exactly one goes on, whichever checks first). Blocking (a store read).

    Raises:
        InstanceNameInUse: `details`: `name` and the other's `hostname`, `pid`, `url`.
        StorageError: the store could not be read.
    """
    live = store.instances()
    mine = next((i for i in live if i.id == instance), None)
    for other in live:
        if other.id == instance or other.name != name:
            continue
        if mine is not None and (mine.started_at, mine.id) < (other.started_at, other.id):
            continue  # this run came first: the other one is refused
        where = f"pid {other.pid} on {other.hostname}" + (f", {other.url}" if other.url else "")
        raise InstanceNameInUse(
            f"another live instance on this database is named '{name}' ({where}); give each instance its "
            "own --instance-name (or MCP_CENTER_INSTANCE_NAME), or stop the other one first",
            details={"name": name, "hostname": other.hostname, "pid": other.pid, "url": other.url},
        )
