"""Reconcile: make the connection manager match the store (R-3.2, R-3.3, R-9.2).

The store is the source of truth. After every committed change, and whenever another process
commits one, each affected server is reconciled: it gets a `ConnectionSpec` (and so a long-lived
connection) exactly when `Readiness.runnable` holds for its current digest, and none otherwise.
A spec is built here and only here: secret values are opened for it (`SecretValuesKeeper.open`),
OAuth servers get their runtime auth, and a stdio command runs as the absolute path the user
confirmed in the summary.

Coordination: one lock per server id serializes reconciles of that server in this process; the
manager's `configure` is idempotent for an equal spec. A failure to build a spec (a ciphertext
that no longer opens) is logged and leaves the server without a connection rather than half-run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import anyio.abc
import httpx2

from mcp_center.config import AuthBearer, AuthOAuth, ServerConfig, Settings, StdioServerConfig
from mcp_center.errors import CenterError
from mcp_center.models import ConnectionState, TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.secrets import SecretKind
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.interactions import InteractionBroker
from mcp_center.service.oauth import RemoteConfig
from mcp_center.service.readiness import Readiness
from mcp_center.service.sandboxing import sandbox_spec, sweep_homes
from mcp_center.service.secret_values import SecretValuesKeeper
from mcp_center.service.store_threads import in_read_thread, read_state
from mcp_center.service.summary import BEARER_KEY, Summaries, Summary
from mcp_center.store import ServerRecord, Store, StoreState
from mcp_center.transports import ConnectionSpec

__all__ = ["Reconciler"]

logger = logging.getLogger(__name__)


class Reconciler:
    """Keeps the connection manager in step with the store (R-3.3).

    Args:
        settings: Host settings (profile).
        store: The source of truth.
        manager: The connection manager it configures.
        approvals: Pending approvals of a server that stops being runnable are cancelled (R-5.3).
        interactions: Cards synced from other processes' commits (R-9.2).
        keeper: Opens secret values for a spec.
        summaries: A fresh per-use-case summary memo.
        oauth_auth: `(config, state) -> httpx2.Auth` for an OAuth server's connection.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        manager: ConnectionManager,
        approvals: ApprovalBroker,
        interactions: InteractionBroker,
        keeper: SecretValuesKeeper,
        summaries: Callable[[], Summaries],
        oauth_auth: Callable[[RemoteConfig, StoreState], httpx2.Auth],
    ) -> None:
        self._settings = settings
        self._store = store
        self._manager = manager
        self._approvals = approvals
        self._interactions = interactions
        self._keeper = keeper
        self._summaries = summaries
        self._oauth_auth = oauth_auth
        self._locks: dict[str, anyio.Lock] = {}
        self.tg: anyio.abc.TaskGroup | None = None
        """Where background connects run; set by `McpCenter.open` (None: no background connects)."""

    def spec(self, record: ServerRecord, state: StoreState, summary: Summary) -> ConnectionSpec:
        """The connection spec of `record`'s configuration, with its secret values opened (R-1.5, R-3.1);
        a sandboxed server's home is the one of this record (its creation), not of its id alone.

        Raises:
            SecretStoreError: a ciphertext does not open.
        """
        config: ServerConfig = record.config
        timeout_s = config.effective_startup_timeout_s
        if isinstance(config, StdioServerConfig):
            env = dict(config.env)
            for key in config.secret_env:
                value = self._keeper.open(state, SecretKind.ENV, config.id, key)
                if value is not None:
                    env[key] = value
            program = summary.data.get("command_path") or config.command
            return ConnectionSpec(
                server_id=config.id,
                transport=TransportKind.STDIO,
                digest=summary.digest,
                argv=(program, *config.args),
                env=env,
                cwd=config.cwd,
                sandbox=sandbox_spec(record, self._settings),
                startup_timeout_s=timeout_s,
                call_timeout_s=config.call_timeout_s,
                max_result_bytes=config.max_result_bytes,
                stop_grace_s=self._settings.stop_grace_s,
            )
        headers = dict(config.headers)
        for key in config.secret_headers:
            value = self._keeper.open(state, SecretKind.HEADER, config.id, key)
            if value is not None:
                headers[key] = value
        if isinstance(config.auth, AuthBearer):
            token = self._keeper.open(state, SecretKind.BEARER, config.id, BEARER_KEY)
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
        auth = self._oauth_auth(config, state) if isinstance(config.auth, AuthOAuth) else None
        return ConnectionSpec(
            server_id=config.id,
            transport=TransportKind(config.transport),
            digest=summary.digest,
            url=config.url,
            headers=headers,
            auth=auth,
            startup_timeout_s=timeout_s,
            call_timeout_s=config.call_timeout_s,
            max_result_bytes=config.max_result_bytes,
        )

    def desired_spec(self, state: StoreState, server_id: str, summaries: Summaries) -> ConnectionSpec | None:
        """The spec the server should run with now, or None when it should not run."""
        record = state.servers.get(server_id)
        if record is None or not record.enabled:
            return None  # no summary needed to know that
        summary = summaries.of(record.config, state.secrets)
        if not Readiness(record, summary.digest, self._settings.profile).runnable:
            return None
        return self.spec(record, state, summary)

    async def reconcile(self, server_id: str, summaries: Summaries | None = None) -> None:
        """Configure (or stop) one server's connection as the store says (R-3.3).

        Args:
            summaries: The calling use case's memo, so a summary it computed is not computed again.
        """
        memo = summaries or self._summaries()
        lock = self._locks.setdefault(server_id, anyio.Lock())
        async with lock:
            try:
                state = await in_read_thread(self._store.read)
            except CenterError:
                # Never act on a state that could not be read (a moved data directory, a lost
                # database): the connection stays as it is until the store answers again.
                logger.exception("server.reconcile_failed", extra={"server_id": server_id})
                return
            try:
                spec = await in_read_thread(lambda: self.desired_spec(state, server_id, memo))
            except CenterError:
                logger.exception("server.reconcile_failed", extra={"server_id": server_id})
                spec = None
            if spec is None and await self._approvals.cancel_server(server_id):
                # Approving them could only fail now: their cards go instead of waiting.
                logger.info("approvals.cancelled_for_server", extra={"server_id": server_id})
            await self._manager.configure(server_id, spec)

    async def reconcile_all(self) -> None:
        """Reconcile every stored server and every configured one (a deleted server stops), then
        remove the sandbox homes of servers that no longer exist (`sweep_homes`, R-11.1, R-10.2)."""
        state = await self._read()
        memo = self._summaries()
        for server_id in sorted(set(state.servers) | set(self._manager.configured())):
            await self.reconcile(server_id, memo)
        in_use = [
            conn.spec.sandbox.root
            for server_id in self._manager.configured()
            if (conn := self._manager.current(server_id)) is not None and conn.spec.sandbox is not None
        ]
        try:
            await in_read_thread(lambda: sweep_homes(self._settings, self._store.read, in_use))
        except CenterError:
            logger.exception("sandbox.sweep_failed")

    async def connect_quietly(self, server_id: str) -> None:
        """Connect now; a failure is logged (the status shows it), not raised."""
        try:
            await self._manager.connect(server_id)
        except CenterError as exc:
            logger.info("server.connect_failed", extra={"server_id": server_id, "code": exc.code})

    async def connect_on_startup(self) -> None:
        """R-3.2: connect every runnable `connect_on_startup` server that is not connected, in the background."""
        state = await self._read()
        for server_id in self._manager.configured():
            record = state.servers.get(server_id)
            if (
                record is not None
                and record.config.connect_on_startup
                and self._manager.status(server_id).state is ConnectionState.DISCONNECTED
                and self.tg is not None
            ):
                self.tg.start_soon(self.connect_quietly, server_id)

    async def reconnect(self, server_id: str) -> None:
        """Reconcile, then drop and re-open the connection in the background (new credentials, R-4.9)."""
        await self.reconcile(server_id)
        if server_id in self._manager.configured():
            await self._manager.disconnect(server_id)
            if self.tg is not None:
                self.tg.start_soon(self.connect_quietly, server_id)

    async def watch_store(self) -> None:
        """Follow what other processes commit (R-9.2): configuration (reconcile, and connect what
        became runnable), approvals and cards (announce them on this host's event bus)."""
        async with self._store.changes(["servers", "approvals", "interactions"]) as changes:
            while True:
                changed = await changes.next()
                try:
                    if "approvals" in changed:
                        await self._approvals.sync()
                    if "interactions" in changed:
                        await self._interactions.sync()
                    if "servers" in changed:
                        await self.reconcile_all()
                        # for changes made by another process (the CLI enabled a server).
                        await self.connect_on_startup()
                except CenterError:
                    logger.exception("store.change_failed", extra={"sections": sorted(changed)})

    async def _read(self) -> StoreState:
        return await read_state(self._store)
