"""Persistence: server records, ciphertexts, gateway tokens, cards and approvals — one atomic commit per
change, shared safely between processes — and the one owner of a data directory (R-1.2, R-9.1, R-9.2).

The interface is `Store` (data) with the coordination Protocols of `store/coordination.py`
(cross-process lock by key, change feed, presence of process runs); `JsonStore` is the embedded
backend over `<data dir>/mcp`, `PgStore` the shared one on PostgreSQL for several instances
(R-10.1), and `store_for(settings)` picks between them. `OwnerLock` (`store/owner.py`) makes one
`serve` the owner of a data directory, whichever backend holds the shared state.
"""

from typing import TYPE_CHECKING

from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.store.approvals import MAX_CLOSED_APPROVALS, ApprovalRecord, ApprovalState
    from mcp_center.store.backends import store_for
    from mcp_center.store.coordination import (
        ChangeFeed,
        Changes,
        InstanceBoard,
        InstanceInfo,
        InstanceServerState,
        KeyedLocks,
        Presence,
    )
    from mcp_center.store.files import OS_DISK, Disk, FileLock, atomic_write
    from mcp_center.store.interactions import (
        MAX_CLOSED_INTERACTIONS,
        CallRef,
        InteractionRecord,
        InteractionState,
        RetryState,
    )
    from mcp_center.store.json_store import JsonStore, Store
    from mcp_center.store.owner import FileOwnerLock, OwnerLock, ServeOwner
    from mcp_center.store.pg_store import PgStore
    from mcp_center.store.records import GatewayTokenRecord, QuarantinedTool, ServerRecord, TestError, TestResult
    from mcp_center.store.sections import FILES, SCHEMA_VERSION, SECTIONS, Section, StoreState

__all__ = [
    "FILES",
    "MAX_CLOSED_APPROVALS",
    "MAX_CLOSED_INTERACTIONS",
    "OS_DISK",
    "SCHEMA_VERSION",
    "SECTIONS",
    "ApprovalRecord",
    "ApprovalState",
    "CallRef",
    "ChangeFeed",
    "Changes",
    "Disk",
    "FileLock",
    "FileOwnerLock",
    "GatewayTokenRecord",
    "InstanceBoard",
    "InstanceInfo",
    "InstanceServerState",
    "InteractionRecord",
    "InteractionState",
    "JsonStore",
    "KeyedLocks",
    "OwnerLock",
    "PgStore",
    "Presence",
    "QuarantinedTool",
    "RetryState",
    "Section",
    "ServeOwner",
    "ServerRecord",
    "Store",
    "StoreState",
    "TestError",
    "TestResult",
    "atomic_write",
    "store_for",
]

_LAZY: dict[str, str] = {
    "MAX_CLOSED_APPROVALS": "mcp_center.store.approvals",
    "ApprovalRecord": "mcp_center.store.approvals",
    "ApprovalState": "mcp_center.store.approvals",
    "store_for": "mcp_center.store.backends",
    "ChangeFeed": "mcp_center.store.coordination",
    "Changes": "mcp_center.store.coordination",
    "InstanceBoard": "mcp_center.store.coordination",
    "InstanceInfo": "mcp_center.store.coordination",
    "InstanceServerState": "mcp_center.store.coordination",
    "KeyedLocks": "mcp_center.store.coordination",
    "Presence": "mcp_center.store.coordination",
    "OS_DISK": "mcp_center.store.files",
    "Disk": "mcp_center.store.files",
    "FileLock": "mcp_center.store.files",
    "atomic_write": "mcp_center.store.files",
    "MAX_CLOSED_INTERACTIONS": "mcp_center.store.interactions",
    "CallRef": "mcp_center.store.interactions",
    "InteractionRecord": "mcp_center.store.interactions",
    "InteractionState": "mcp_center.store.interactions",
    "RetryState": "mcp_center.store.interactions",
    "JsonStore": "mcp_center.store.json_store",
    "Store": "mcp_center.store.json_store",
    "FileOwnerLock": "mcp_center.store.owner",
    "OwnerLock": "mcp_center.store.owner",
    "ServeOwner": "mcp_center.store.owner",
    "GatewayTokenRecord": "mcp_center.store.records",
    "QuarantinedTool": "mcp_center.store.records",
    "ServerRecord": "mcp_center.store.records",
    "TestError": "mcp_center.store.records",
    "TestResult": "mcp_center.store.records",
    "FILES": "mcp_center.store.sections",
    "SCHEMA_VERSION": "mcp_center.store.sections",
    "SECTIONS": "mcp_center.store.sections",
    "Section": "mcp_center.store.sections",
    "StoreState": "mcp_center.store.sections",
    "PgStore": "mcp_center.store.pg_store",
}
"""Name -> module, imported on first use: a CLI verb that only reads `serve.json` (`store.running`)
loads neither the records' pydantic models nor the JSON store (issue 16), and `PgStore` is imported
only by a host on PostgreSQL: psycopg and libpq cost about 20 MB of resident memory, which a host
on the JSON store (the default) never needs (R-8.3, idle RSS)."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
