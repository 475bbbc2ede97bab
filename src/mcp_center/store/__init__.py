"""Persistence: server records and ciphertexts, crash-safe and shared between processes (R-1.2)."""

from mcp_center.store.files import FileLock, atomic_write
from mcp_center.store.json_store import SCHEMA_VERSION, JsonStore, Store, StoreState
from mcp_center.store.records import ServerRecord, TestError, TestResult

__all__ = [
    "SCHEMA_VERSION",
    "FileLock",
    "JsonStore",
    "ServerRecord",
    "Store",
    "StoreState",
    "TestError",
    "TestResult",
    "atomic_write",
]
