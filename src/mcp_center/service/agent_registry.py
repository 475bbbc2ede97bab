"""The agents' tool registry and what every agent-facing use case reads (R-5, R-3.6, R-3.7).

`AgentCatalog` is the base of `Capabilities` (`capabilities.py`): the registry (`registry/`, pure)
rebuilt from what the connection manager and the store know (every ready server's validated
catalog, R-3.6, and its tool settings) whenever those inputs changed, the watcher that announces
`tools.changed`, the store reads that let a setting changed a moment ago count, and the lazy
connection of enabled servers (R-3.2). The calls (`tool_calls.py`) and the prompts and resources
(`context_items.py`) build on it.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

import anyio

from mcp_center.config import ServerConfig
from mcp_center.errors import (
    CenterError,
    FieldError,
    RequestInvalid,
    ServerTimeout,
)
from mcp_center.models import ConnectionState
from mcp_center.registry import (
    ServerTools,
    ToolRegistry,
)
from mcp_center.runtime import Catalog, ConnectionManager
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.interactions import InteractionBroker
from mcp_center.service.results import UnavailableServer
from mcp_center.service.store_threads import read_state
from mcp_center.service.untrusted import DEFAULT_MAX_CONTEXT_BYTES, MAX_CONTEXT_BYTES
from mcp_center.store import ServerRecord, Store, StoreState

__all__ = [
    "DEFAULT_RESOURCE_LIMIT",
    "LAZY_CONNECT_WAIT_S",
    "MAX_RESOURCE_LIMIT",
    "AgentCatalog",
    "CatalogNow",
    "check_max_bytes",
    "invalid_field",
]


logger = logging.getLogger(__name__)

DEFAULT_RESOURCE_LIMIT = 50
MAX_RESOURCE_LIMIT = 500
MAX_URI_CHARS = 8192
RESOURCE_NOT_FOUND_RPC_CODES = frozenset({-32002, -32602})
"""JSON-RPC errors a server answers `resources/read` with for a resource it does not have: MCP's
"resource not found", and "invalid params", which SDK servers send for an unknown URI (R-5.5)."""
LAZY_CONNECT_WAIT_S = 10.0
"""Seconds a gateway read or a call's name lookup waits for enabled servers that are not connected yet
(R-3.2) before answering without them (their tools follow with `tools.changed`). An export
(`ToolCalls.tools`) waits for each up to its own `startup_timeout_s` instead (`wait_for_startup`)."""
STARTUP_GRACE_S = 5.0
"""Seconds `wait_for_startup` waits past a server's `startup_timeout_s` (process spawn and teardown
around the handshake the connection bounds itself) before it stops waiting."""


def invalid_field(field: str, code: str, message: str) -> RequestInvalid:
    return RequestInvalid(f"{field}: {message}", details={"errors": [FieldError(field, code, message).to_dict()]})


def check_max_bytes(max_bytes: object) -> int:
    """The size bound a caller asked for, or the default.

    Raises:
        RequestInvalid: not an integer between 1 and `MAX_CONTEXT_BYTES`.
    """
    if max_bytes is None:
        return DEFAULT_MAX_CONTEXT_BYTES
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or not 1 <= max_bytes <= MAX_CONTEXT_BYTES:
        raise invalid_field("max_bytes", "FIELD_INVALID", f"must be an integer from 1 to {MAX_CONTEXT_BYTES}")
    return max_bytes


class CatalogNow(NamedTuple):
    """The registry and the servers section as a call resolves against them, taken without waiting
    (`AgentCatalog.catalog_now`). Valid only in the event-loop step that took it: the gateway's lean
    path takes one per `tools/call` and hands it to `ToolCalls.forward_call` with no `await` that
    suspends in between, so the call is resolved against one look instead of two (issue 12, R-8.3)."""

    registry: ToolRegistry
    servers: Mapping[str, ServerRecord]


class AgentCatalog:
    """Registry upkeep and the reads the agent-facing use cases share (base of `Capabilities`)."""

    def __init__(
        self,
        store: Store,
        manager: ConnectionManager,
        approvals: ApprovalBroker,
        interactions: InteractionBroker,
    ) -> None:
        self._store = store
        self._manager = manager
        self._approvals = approvals
        self._interactions = interactions
        self._registry = ToolRegistry.build([])
        self._key: object = None
        self._servers: tuple[object, Mapping[str, ServerRecord]] | None = None
        """`(servers stamp, servers)` of the last `_server_records` read."""
        self._signature: object = self._registry.signature()
        self._listed_for: ToolRegistry | None = None
        self._listed: dict[str | None, bytes] = {}
        """Serialized tool lists of `_listed_for`, per scope (None: every server)."""
        self._headed: dict[tuple[str | None, str], dict[str, Any] | None] = {}
        """`listed_input_schema` of `_listed_for`'s listed tools, per `(scope, name)`."""

    # ----- registry upkeep -----------------------------------------------------------------------

    async def watch(self) -> None:
        """Rebuild after `server.*` events and announce `tools.changed` when agents would see a change.

        Runs until cancelled. Reads never depend on this task having run: `registry()` rebuilds
        whenever its inputs changed.
        """
        events = self._manager.events
        async with events.subscribe() as subscription:
            while True:
                event = await subscription.next()
                kind = str(event.get("type", ""))
                if not (kind.startswith("server.") or kind == "events.dropped"):
                    continue
                try:
                    registry = await self.registry(connect=False)
                except CenterError:
                    logger.exception("registry.rebuild_failed")
                    continue
                signature = registry.signature()
                if signature != self._signature:
                    self._signature = signature
                    events.publish("tools.changed", count=len(registry.tools()))

    async def registry(self, *, connect: bool = True) -> ToolRegistry:
        """The current registry, rebuilt if its inputs changed since it was built.

        The inputs are the servers section (its change stamp) and, per running server, the connection
        and the generation of its tool catalog (R-3.7): any catalog refresh, reconnect, enable,
        disable or configuration change gives a new key, whatever order events arrive in.

        Args:
            connect: Connect enabled servers that are still disconnected first (lazy servers,
                R-3.2); servers in an error state are not retried here.
        """
        return (await self._registry_stamped(connect=connect))[0]

    async def _registry_stamped(self, *, connect: bool = True) -> tuple[ToolRegistry, Hashable]:
        """`registry()` and the servers stamp it was checked against (taken after any lazy connect),
        which `_server_records(stamp)` can reuse within the same call: one stamp per call, not two."""
        if connect:
            await self._connect_lazy()
        stamp = self._store.stamp("servers")  # a stat and an access: cheaper than a thread hop on every call
        key = (stamp, self._catalog_key())
        if key != self._key:
            state = await self._read()
            self._registry = ToolRegistry.build(
                ServerTools(
                    server_id=config.id,
                    server_name=config.name,
                    tools=catalog.tools,
                    disabled_tools=frozenset(config.disabled_tools),
                    tool_policies=config.tool_policies,
                )
                for config, catalog in self._ready(state)
            )
            self._key = key
        return self._registry, stamp

    def _catalog_key(self) -> tuple[tuple[str, str | None, int], ...]:
        return self._manager.catalog_key()[1]

    async def _server_records(self, stamp: Hashable | None = None) -> Mapping[str, ServerRecord]:
        """The servers section as stored now: re-read when its change stamp moved (two `stat` calls
        on a JSON store), so a tool disabled or denied a moment ago counts (R-5.2). Read-only.

        Args:
            stamp: The servers stamp this call took a moment ago (`_registry_stamped`, no await
                between), instead of taking it again; None: take it now.
        """
        if stamp is None:
            stamp = self._store.stamp("servers")  # taken first: a commit racing the read only causes a re-read
        cached = self._servers
        if cached is not None and cached[0] == stamp:
            return cached[1]
        servers = (await self._read()).servers
        self._servers = (stamp, servers)
        return servers

    def _current_without_waiting(self) -> CatalogNow | None:
        """The registry and the servers section exactly as `_registry_stamped()` and
        `_server_records(stamp)` would return them now, when neither has anything to wait for (no
        lazy server to connect, no rebuild, no re-read: the steady state of a busy gateway); else
        None, and the caller takes the awaiting path. Same stamp, same checks: nothing is cached
        longer than there (issue 12: lets a call skip an admission that no wait needs)."""
        disconnected, catalog_key = self._manager.catalog_key()
        if disconnected:
            return None
        cached = self._servers
        if cached is None:
            return None
        stamp = self._store.stamp("servers")
        if cached[0] != stamp or (stamp, catalog_key) != self._key:
            return None
        return CatalogNow(self._registry, cached[1])

    catalog_now = _current_without_waiting
    """`_current_without_waiting` itself (no wrapper's frame per forwarded call, issue 12), for a caller
    that resolves a call against it in the same step (see `CatalogNow`); None when anything must
    wait (the caller then passes None on)."""

    async def _read(self) -> StoreState:
        """The store's state: from its cache when nothing changed (no thread hop), else read in a thread."""
        return await read_state(self._store)

    def _ready(self, state: StoreState) -> list[tuple[ServerConfig, Catalog]]:
        ready: list[tuple[ServerConfig, Catalog]] = []
        for server_id in sorted(self._manager.configured()):
            conn = self._manager.current(server_id)
            record = state.servers.get(server_id)
            if conn is not None and record is not None and record.enabled:
                ready.append((record.config, conn.catalog))
        return ready

    async def _connect_lazy(self) -> bool:
        waiting = [
            sid for sid in self._manager.configured() if self._manager.status(sid).state is ConnectionState.DISCONNECTED
        ]
        if not waiting:
            return False

        async def connect(server_id: str) -> None:
            try:
                await self._manager.connect(server_id)
            except CenterError as exc:
                logger.info("server.connect_failed", extra={"server_id": server_id, "code": exc.code})

        # Connection attempts run in the manager's tasks: giving up waiting does not stop them, and
        # a slow server's tools appear on a later read (and with a `tools.changed` event).
        with anyio.move_on_after(LAZY_CONNECT_WAIT_S):
            async with anyio.create_task_group() as tg:
                for server_id in waiting:
                    tg.start_soon(connect, server_id)
        return True

    async def wait_for_startup(self) -> dict[str, CenterError]:
        """Start every enabled server that is not connected yet and wait for those starting, each up to
        its own `startup_timeout_s` (+ `STARTUP_GRACE_S`), concurrently (R-3.2).

        Servers known to be failing are neither retried nor waited for (their backoff decides): in
        an error state, or connecting again after failed attempts (`ConnectionManager.failing`), so a
        server whose every attempt times out does not cost each listing its start-up timeout again
        (cli40); `unavailable` names them with their last error. Ready servers cost a status look
        each, no await.

        Returns:
            `{server_id: the error its start failed with}` for those that failed while waited for.
        """
        starting = [
            sid
            for sid in self._manager.configured()
            if self._manager.status(sid).state in (ConnectionState.DISCONNECTED, ConnectionState.CONNECTING)
            and self._manager.failing(sid) is None
        ]
        failures: dict[str, CenterError] = {}
        if not starting:
            return failures
        servers = (await self._read()).servers

        async def connect(server_id: str, timeout_s: float) -> None:
            with anyio.move_on_after(timeout_s + STARTUP_GRACE_S):
                try:
                    await self._manager.connect(server_id)  # shares an attempt already under way
                except CenterError as exc:
                    failures[server_id] = exc

        async with anyio.create_task_group() as tg:
            for server_id in starting:
                record = servers.get(server_id)
                if record is not None and record.enabled:
                    tg.start_soon(connect, server_id, record.config.effective_startup_timeout_s)
        return failures

    async def unavailable(self, failures: Mapping[str, CenterError]) -> list[UnavailableServer]:
        """The enabled servers that run in this process's manager but are not ready, and why: the
        error their start failed with (`failures`, from `wait_for_startup`), else their status's last
        error, else `MCP_SERVER_TIMEOUT` (still starting). Enabled servers the manager does not run
        (a step missing, R-2) are the caller's to add: it knows their readiness. Sorted by id."""
        configured = set(self._manager.configured())
        if all(self._manager.current(sid) is not None for sid in configured):
            return []
        servers = (await self._read()).servers
        missing: list[UnavailableServer] = []
        for server_id in sorted(configured):
            record = servers.get(server_id)
            if record is None or not record.enabled or self._manager.current(server_id) is not None:
                continue
            failure = failures.get(server_id)
            error = self._manager.status(server_id).error
            if failure is not None:
                missing.append(UnavailableServer(server_id, failure.code, failure.message))
            elif error is not None:
                missing.append(UnavailableServer(server_id, str(error.get("code")), str(error.get("message"))))
            else:
                timeout_s = record.config.effective_startup_timeout_s
                message = f"server '{server_id}' was still starting after {timeout_s:g} s (startup_timeout_s)"
                missing.append(UnavailableServer(server_id, ServerTimeout.code, message))
        return missing

    # ----- tools ---------------------------------------------------------------------------------
