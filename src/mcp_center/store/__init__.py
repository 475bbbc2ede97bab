"""Persistence: server records, ciphertexts and interaction cards, crash-safe and shared between processes (R-1.2);
the one owner of a data directory (R-9.2)."""

from mcp_center.store.files import FileLock, atomic_write
from mcp_center.store.interactions import (
    CallRef,
    InteractionRecord,
    InteractionState,
    InteractionStore,
    JsonInteractionStore,
    RetryState,
)
from mcp_center.store.json_store import SCHEMA_VERSION, JsonStore, Store, StoreState
from mcp_center.store.owner import FileOwnerLock, OwnerLock, ServeOwner
from mcp_center.store.records import ServerRecord, TestError, TestResult

__all__ = [
    "SCHEMA_VERSION",
    "CallRef",
    "FileLock",
    "FileOwnerLock",
    "InteractionRecord",
    "InteractionState",
    "InteractionStore",
    "JsonInteractionStore",
    "JsonStore",
    "OwnerLock",
    "RetryState",
    "ServeOwner",
    "ServerRecord",
    "Store",
    "StoreState",
    "TestError",
    "TestResult",
    "atomic_write",
]
