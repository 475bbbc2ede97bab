"""Persistence: server records, ciphertexts, gateway tokens, cards and approvals — one atomic commit per
change, shared safely between processes — and the one owner of a data directory (R-1.2, R-9.1, R-9.2).

The interface is `Store` (data) with the coordination Protocols of `store/coordination.py`
(cross-process lock by key, change feed, presence of process runs); `JsonStore` is the embedded
backend over `<data dir>/mcp`, `PgStore` the shared one on PostgreSQL for several instances
(R-10.1), and `store_for(settings)` picks between them. `OwnerLock` (`store/owner.py`) makes one
`serve` the owner of a data directory, whichever backend holds the shared state.
"""

from typing import TYPE_CHECKING

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
from mcp_center.store.records import GatewayTokenRecord, ServerRecord, TestError, TestResult
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


if TYPE_CHECKING:
    from mcp_center.store.pg_store import PgStore


def __getattr__(name: str) -> object:
    """`PgStore` is imported on first use: psycopg and libpq cost about 20 MB of resident memory,
    which a host on the JSON store (the default) never needs (R-8.3, idle RSS)."""
    if name == "PgStore":
        from mcp_center.store.pg_store import PgStore

        return PgStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
