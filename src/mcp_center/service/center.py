"""`McpCenter`: the library's facade; every face (REST, CLI, web, gateway, a Python script) enters here.

Configuration (R-1), trust → test → enable (R-2) and calls go through this class. It holds no
rule of its own: each method hands over to the module that owns its noun.

- `servers.py`: server configuration use cases (create, update, delete, secrets, trust, test,
  enable, disable) and the views they return; `records.py` the record-level helpers they share.
- `readiness.py`: the trust → test → enable rule, once.
- `secret_values.py`: write-only secret values (declare, seal, open, drop; R-1.5).
- `reconcile.py`: the store → connection manager loop (R-3.3, R-9.2).
- `views.py` and `summary.py`: what a face shows, computed once per use case.
- `agent_calls.py`: the agent-facing methods this class inherits (tool exports, agent calls,
  approvals with `wait_for_approval`, prompts, resources, cards); `gateway_calls.py`: the same use
  cases in MCP's shapes, which the gateway calls (`mcp_tools`, `mcp_call_tool`, ...). The use cases
  behind them live in `capabilities.py`, `approvals.py` and `interactions.py` (R-5, R-6, R-8).

One entrance per use case (docs/decisions.md): every face — REST, CLI, web, gateway, a script —
calls `McpCenter`'s methods; the sub-services it builds are private, except three nouns with a
protocol of their own, exposed as typed attributes the same for every face: `oauth` (R-4),
`debugger` (R-12.1) and `gateway_tokens` (R-7.1).

Threats handled in those modules: a stale page overwriting a newer configuration (R-1.3); a changed
command, URL, header, env, auth, tool permission or sandbox policy running without a new
confirmation (R-1.4, R-11.1); a secret value reaching a response, log or error (R-1.5); an
unconfined local process under the production profile (R-2.5, R-11.2).

The store is the source of truth; after every committed change the affected server is reconciled
into the connection manager: a server runs only when `Readiness.runnable` holds (R-3.3).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, Literal

import anyio
import anyio.to_thread

from mcp_center.auth import OAuthBroker, OAuthHttp
from mcp_center.config import ServerConfig, Settings, ToolPolicy
from mcp_center.errors import (
    CenterError,
    FieldError,
    RequestInvalid,
    ToolDenied,
    ToolDisabled,
    ToolNotFound,
    did_you_mean,
)
from mcp_center.models import is_object
from mcp_center.runtime import CallDeadlines, ConnectionManager, EventBus, ServerStatus, SessionHooks
from mcp_center.secrets import Redactor, SecretCipher, default_redactor
from mcp_center.service.agent_calls import AgentUseCases, Decision
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.capabilities import Capabilities
from mcp_center.service.debugger import Debugger
from mcp_center.service.gateway_calls import GatewayUseCases
from mcp_center.service.gateway_tokens import GatewayTokens
from mcp_center.service.instance_names import NameLease, claim_instance_name
from mcp_center.service.instances import StatePublisher, instance_views
from mcp_center.service.interactions import InteractionBroker
from mcp_center.service.master_key import checked_key
from mcp_center.service.oauth import CALLBACK_PATH, OAuthService
from mcp_center.service.quarantine import quarantined_refusal
from mcp_center.service.reconcile import Reconciler
from mcp_center.service.records import collect_orphans
from mcp_center.service.results import (
    CatalogView,
    DeclaredCapabilities,
    InstancesView,
    ServerLogs,
    ServerTool,
    ToolCallResult,
)
from mcp_center.service.secret_values import SECRET_KINDS, SecretValuesKeeper
from mcp_center.service.servers import Servers
from mcp_center.service.store_health import StoreHealth
from mcp_center.service.store_threads import in_read_thread, read_state
from mcp_center.service.summary import Summaries
from mcp_center.service.tool_arguments import check_arguments_safe, require_arguments
from mcp_center.service.views import ServerView
from mcp_center.service.warm_ups import WarmUpFollower, others_warming
from mcp_center.store import ServerRecord, Store, StoreState, TestResult, store_for
from mcp_center.transports import ConnectionSpec, WarmUpResult, process_guard, shared_tls_context

__all__ = ["SECRET_KINDS", "Decision", "McpCenter"]

logger = logging.getLogger(__name__)

"""The keyed fingerprint of this constant tells whether two instances hold the same key (R-10.1)."""


class McpCenter(AgentUseCases, GatewayUseCases):
    """The host's use cases. Build with `async with McpCenter.open(settings) as center:`.

    Sync or async: a method that reads or writes the store, talks to a server or waits is a
    coroutine (`await center.get_server(...)`); one that answers from this process's memory at
    once is a plain method (`status`, `is_running`, `cancel`, `add_log_listener`) or a property
    (`events`). Results of the server methods are typed (`ServerView`; `to_dict()` for JSON).

    Args:
        settings: Host settings (data dir, profile, ...).
        store: Persistence (`JsonStore` over `<data dir>/mcp`, or `PgStore` shared by several
            instances, R-10.1).
        cipher: Secret encryption under the host key.
        manager: The running connection manager.
        redactor: Receives every secret plaintext this object handles.
        instance: This process run's id, announced with `store.join_instance` by `open()`: the
            owner of the approvals and cards created here (R-9.2).
        interactions: Elicitation cards (R-6); built by `open()`, which wires its callback into
            the manager. Without one, no elicitation is advertised.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        cipher: SecretCipher,
        manager: ConnectionManager,
        redactor: Redactor = default_redactor,
        *,
        instance: str,
        interactions: InteractionBroker | None = None,
    ) -> None:
        self.settings = settings
        self._store = store
        self._cipher = cipher
        self._manager = manager
        self._redactor = redactor
        self.instance = instance
        self.name_lease: NameLease | None = None
        """A serving host's hold on its `--instance-name` (R-10.2): `name_lease.lost` set means stop."""
        self._accepted_calls: dict[str, int] = {}
        self._approvals = ApprovalBroker(
            store, manager.events, instance=instance, timeout_s=settings.approval_timeout_s
        )
        self._interactions = interactions or InteractionBroker(
            store, manager.events, manager.deadlines, instance=instance, cipher=cipher, enabled=False
        )
        self._interactions.cancel_call = manager.cancel
        self._interactions.retry_call = self._retry_interrupted_call
        self._capabilities = Capabilities(store, manager, self._approvals, self._interactions)
        self.store_health = StoreHealth(store)
        """Whether this instance can use its store now, checked at most once a second (`/healthz`, R-10.2)."""
        self.gateway_tokens = GatewayTokens(store, settings.gateway_token)
        """Tokens accepted at the gateway endpoint `/mcp` (R-7.1)."""
        broker = OAuthBroker(
            store=store,
            cipher=cipher,
            redactor=redactor,
            redirect_uri=settings.base_url + CALLBACK_PATH,
            http=OAuthHttp(tls_context=shared_tls_context),
        )
        self.oauth = OAuthService(
            settings=settings,
            store=store,
            cipher=cipher,
            redactor=redactor,
            broker=broker,
            digest=lambda config, state: self._summaries().digest(config, state.secrets),
            after_authorization=self._after_authorization,
        )
        """OAuth use cases (R-4): start, complete, forget, status."""
        keeper = SecretValuesKeeper(cipher, redactor)
        self._reconciler = Reconciler(
            settings=settings,
            store=store,
            manager=manager,
            approvals=self._approvals,
            interactions=self._interactions,
            keeper=keeper,
            summaries=self._summaries,
            oauth_auth=self.oauth.runtime_auth,
        )
        self._servers = Servers(
            settings=settings,
            store=store,
            manager=manager,
            keeper=keeper,
            reconciler=self._reconciler,
            oauth=self.oauth,
            summaries=self._summaries,
            announce=self._announce,
            redactor=redactor,
        )
        self._warm_ups = WarmUpFollower(store, settings, self._servers.warm_up_spec, redactor)
        self.debugger = Debugger(manager, self._servers.runnable, self.get_server)
        """Server info, live activity, log level, JSON-RPC console and completion (R-12.1)."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        connect: bool = True,
        on_status: Callable[[ServerStatus], None] | None = None,
        elicitation: bool = True,
        hooks_for: Callable[[ConnectionSpec, str], SessionHooks] | None = None,
        store: Store | None = None,
    ) -> AsyncGenerator[McpCenter]:
        """Open the data directory, start the connection manager, and reconnect enabled servers.

        Args:
            settings: Host settings.
            connect: Start-up rules (R-3.2): connect enabled `connect_on_startup` servers in the
                background and follow changes other processes commit (configuration, approvals,
                cards). False for one-shot CLI commands (servers still connect lazily when used).
            on_status: Listener for server status changes (events for the UI).
            elicitation: Advertise elicitation and turn server questions into interaction cards
                (R-6), which every process on the data directory lists and answers (R-9.2). False
                for one-shot CLI commands, which cannot wait for a form.
            hooks_for: Per-connection session hooks (elicitation, notifications) for long-lived
                connections, replacing the interaction cards' elicitation callback (a test driver, a
                gateway that routes elicitation to its own client); no cards are kept then.
            store: The store to use instead of `store_for(settings)` (one with a test disk, or one
                the caller opened and will close); a store made here is closed at the end.
        Raises:
            SecretStoreError: the key cannot be used.
            StorageError: the data files cannot be used: a damaged or truncated file, or one of a
                newer schema (the message names the file and the fault; nothing is written).
            StorageUnavailable: the database cannot be reached (R-10.1).
            SecretKeyMismatch: the database's ciphertexts were sealed with another key (R-10.1), or
                the key does not open the data directory's stored secrets, or an env key differs
                from the key file (`master_key.checked_key`).
        """
        owned = store is None
        store = store or store_for(settings)
        await anyio.to_thread.run_sync(store.open)  # before any file is made: an unusable store changes nothing
        try:
            async with cls._opened(settings, store, connect, on_status, elicitation, hooks_for) as center:
                yield center
        finally:
            if owned:
                await anyio.to_thread.run_sync(store.close)

    @classmethod
    @asynccontextmanager
    async def _opened(
        cls,
        settings: Settings,
        store: Store,
        connect: bool,
        on_status: Callable[[ServerStatus], None] | None,
        elicitation: bool,
        hooks_for: Callable[[ConnectionSpec, str], SessionHooks] | None,
    ) -> AsyncGenerator[McpCenter]:
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        process_guard().set_grace(settings.stop_grace_s)  # before any server starts
        key = await anyio.to_thread.run_sync(checked_key, settings, store)
        cipher = SecretCipher(key)
        await anyio.to_thread.run_sync(collect_orphans, store)
        instance = uuid.uuid4().hex
        await anyio.to_thread.run_sync(store.join_instance, instance)
        publisher: StatePublisher | None = None
        lease: NameLease | None = None  # a serving host's name is a lease: lost if taken while it was away
        if connect:  # a host that serves (not a one-shot CLI run): on every instance's page
            lease = NameLease(store, instance, settings.instance_label)
            try:  # one name per live instance: the second of two claims is refused before it serves
                await anyio.to_thread.run_sync(
                    claim_instance_name, store, instance, settings.instance_label, settings.listen_url
                )
            except BaseException:
                await anyio.to_thread.run_sync(store.leave_instance, instance)
                raise
            publisher = StatePublisher(store, instance)
        noted = publisher.note if publisher is not None else None

        def status_changed(status: ServerStatus) -> None:
            if noted is not None:
                noted(status)
            if on_status is not None:
                on_status(status)

        # The caller's exception is re-raised after the task groups closed, unwrapped: anyio
        # would otherwise deliver it inside an ExceptionGroup.
        failure: BaseException | None = None
        events, deadlines = EventBus(), CallDeadlines()
        interactions = InteractionBroker(
            store,
            events,
            deadlines,
            instance=instance,
            cipher=cipher,
            timeout_s=settings.elicitation_timeout_s,
            enabled=elicitation and hooks_for is None,
        )
        try:
            await interactions.start()
            async with (
                ConnectionManager(
                    on_status=status_changed,
                    hooks_for=hooks_for or interactions.hooks_for,
                    events=events,
                    deadlines=deadlines,
                ) as manager,
                anyio.create_task_group() as tg,
            ):
                center = cls(settings, store, cipher, manager, instance=instance, interactions=interactions)
                center._reconciler.tg = tg
                center.name_lease = lease
                try:
                    await center._approvals.start()
                    await center._reconciler.reconcile_all()
                    if connect:
                        await center._reconciler.connect_on_startup()
                        tg.start_soon(center._reconciler.watch_store)
                        tg.start_soon(center._capabilities.watch)
                        tg.start_soon(center._warm_ups.watch)  # warm-ups answered elsewhere
                    if publisher is not None:
                        tg.start_soon(publisher.run)
                    yield center
                except BaseException as exc:  # noqa: BLE001 - re-raised below, outside the task groups
                    failure = exc
                finally:
                    # Before the sessions close: calls waiting for a human fail explicitly.
                    with anyio.CancelScope(shield=True):
                        await center.interrupt_pending()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await interactions.stop()
            await anyio.to_thread.run_sync(store.leave_instance, instance)
        if failure is not None:
            raise failure

    # ----- reads ---------------------------------------------------------------------------

    async def list_servers(self) -> list[ServerView]:
        """Every server as its API view (R-1.1 fields, version, summary, digest, status), sorted by id."""
        return await self._servers.list()

    async def server_configs(self) -> list[ServerConfig]:
        """Every server's configuration (no secret values: those live only in the store), sorted by id."""
        state = await self._read()
        return [state.servers[server_id].config for server_id in sorted(state.servers)]

    async def get_server(self, server_id: str) -> ServerView:
        """One server's API view (every instance's state of it: `instances()`, R-10.2).

        Raises:
            ServerNotFound: no such id.
        """
        return await self._servers.get(server_id)

    async def instances(self) -> InstancesView:
        """The live `serve` instances on this store and each one's connection states (R-10.2).

        Returns:
            The instances, oldest first, and which one is this process (`to_dict()` for JSON).
        Raises:
            StorageError: the database could not be read.
        """
        return await in_read_thread(lambda: instance_views(self._store, self.instance))

    # ----- configuration writes ------------------------------------------------------------------

    async def create_server(self, body: object, *, refuse_twin: bool = True) -> ServerView:
        """Register a server (R-1.1). Starts untrusted, untested and disabled (R-2).

        `id` is optional: derived from `name` (made unique with a suffix) when absent. When other
        servers have the same name, the view's `warnings` holds a `SERVER_NAME_SHARED` note naming
        them (this answer only).

        Args:
            refuse_twin: Refuse, when the body has no `id`, a server whose name and whole
                configuration (secret values aside) an existing one has (`mcp-center add` twice,
                a retried REST POST); the default. False registers the copy as `<id>-2`.
        Raises:
            ConfigInvalid: a rule of R-1 is broken (every violation listed).
            ServerExists: the id is taken.
            ServerAlreadyRegistered: `refuse_twin` and such a server exists (`details.server_id`:
                the oldest of them; `details.same_config`: all, oldest first).
        """
        return await self._servers.create(body, refuse_twin=refuse_twin)

    async def create_servers(self, plan: Callable[[Mapping[str, ServerConfig]], Sequence[object]]) -> list[ServerView]:
        """Register several servers in ONE store transaction: all of them or none (R-1.8, R-7.3).

        Args:
            plan: Called inside the transaction with the servers registered at that moment (id →
                configuration: an import compares its entries with them); returns
                the create bodies (each as for `create_server`). Raising aborts with no change.
        Returns:
            The created servers' API views, in order. Like `create_server`, each starts untrusted,
            untested and disabled (R-2).
        Raises:
            Whatever `plan` raises; ConfigInvalid / ServerExists for a body, as `create_server`.
        """
        return await self._servers.create_many(plan)

    async def update_server(self, server_id: str, body: object, *, partial: bool = False) -> ServerView:
        """Replace (PUT) or merge (PATCH, `partial=True`) a server's configuration (R-1.3, R-1.4).

        The body must carry the `version` it read. A change to any security-relevant field (the
        connection summary digest changes) clears trust and the last test, disables the server
        and disconnects it.

        Raises:
            ServerNotFound, ServerVersionConflict (409, nothing changed), ConfigInvalid.
        """
        return await self._servers.update(server_id, body, partial=partial)

    async def delete_server(self, server_id: str, *, version: int | None = None) -> None:
        """Delete a server, its ciphertexts, and its connection (R-1.5, R-2.4).

        Raises:
            ServerNotFound; ServerVersionConflict when `version` is given and stale.
        """
        await self._servers.delete(server_id, version=version)

    async def set_secret(
        self, server_id: str, kind: str, key: str, value: object, *, version: int | None = None
    ) -> ServerView:
        """Set one secret value (write-only, R-1.5); declares the key if needed. A high-risk change (R-1.4).

        Args:
            kind: `environment` (stdio), `header` (remote), `bearer` (key `token`) or `oauth`
                (`client_secret`, `private_key`).
        Raises:
            ServerNotFound, ServerVersionConflict, RequestInvalid (unknown kind),
            SecretKeyInvalid (key not allowed for the kind/transport), ConfigInvalid (bad value).
        """
        return await self._servers.set_secret(server_id, kind, key, value, version=version)

    async def delete_secret(self, server_id: str, kind: str, key: str, *, version: int | None = None) -> ServerView:
        """Delete one secret: its ciphertext and its declaration (R-1.5). A high-risk change.

        Raises:
            ServerNotFound, ServerVersionConflict, RequestInvalid, SecretNotFound.
        """
        return await self._servers.delete_secret(server_id, kind, key, version=version)

    # ----- trust, test, enable ------------------------------------------------------------------

    async def trust(self, server_id: str, digest: object) -> ServerView:
        """Confirm the connection summary the user saw (R-2.1).

        Raises:
            ServerNotFound; RequestInvalid (no digest); TrustDigestMismatch (409) when `digest`
            is not the current one — the caller must re-read the summary.
        """
        return await self._servers.trust(server_id, digest)

    async def test(self, server_id: str) -> TestResult:
        """Run a temporary connection (initialize + tools/list + close) and store the result (R-2.2).

        The result is stored with the digest it ran with, unless the configuration changed
        while the test ran (then it is returned but not stored).

        Raises:
            ServerNotFound; ServerNotTrusted (the current digest is not confirmed: testing runs
            the command / sends the credentials); SandboxRequired under the production profile.
        """
        return await self._servers.test(server_id)

    async def warm_up_sandbox(self, server_id: str) -> WarmUpResult:
        """Fill a sandboxed npx/uvx server's package caches inside its sandbox, with egress (R-11.1).

        For `network: none` servers, whose package manager cannot download on start. Only the
        package manager runs (`transports/warmup.py`); the server itself does not start.

        Raises:
            ServerNotFound; ServerNotTrusted (the current digest is not confirmed: the warm-up runs
            the confirmed package spec); SandboxRequired (production, no policy);
            SandboxWarmUpUnsupported (no policy, or not npx/uvx); SandboxUnavailable.

        Returns:
            What ran here, with `instance` (this instance's name: its home was warmed) and, after a
            success, `others`: the other live instances, which warm their own homes of the server
            in the background (`service.warm_ups`, R-10.2).
        """
        result = await self._servers.warm_up(server_id)
        others: tuple[str, ...] = ()
        if result.ok:
            try:  # not the serve of this data directory: its home is the one just warmed
                others = await in_read_thread(
                    lambda: others_warming(self._store, self.instance, self.settings.data_dir)
                )
            except CenterError:  # the stamp is stored: they follow all the same; only the list is missing
                others = ()
        return replace(result, instance=self.settings.instance_label, others=others)

    async def enable(self, server_id: str) -> ServerView:
        """Enable a trusted, tested server and start its long-lived connection (R-2.3).

        Returns the view after the first connection attempt (its `status` shows the outcome).

        Raises:
            ServerNotFound; SandboxRequired (403, production + stdio); ServerNotTrusted /
            ServerNotTested (409) when the current digest is not confirmed / not tested OK.
        """
        return await self._servers.enable(server_id)

    async def disable(self, server_id: str) -> ServerView:
        """Disable a server: close its connection and unregister its tools (R-2.4).

        Raises:
            ServerNotFound.
        """
        return await self._servers.disable(server_id)

    # ----- tools ---------------------------------------------------------------------------------

    async def list_tools(self, server_id: str) -> list[ServerTool]:
        """The server's tools from its live session (lazy connect, R-3.2), each with `enabled` and `policy`.

        A server known to be failing (its last attempt failed and none has succeeded since,
        `ConnectionManager.failing`) is not started or waited for again here: its backoff decides
        when it is tried, and each listing would otherwise wait a whole start-up timeout (cli40).

        Raises:
            ServerNotFound; ServerDisabled / ServerNotTrusted / ServerNotTested when it cannot
            run; an attributed connection error (for a failing server at once: its last one).
        """
        record = await self._runnable(server_id)
        failure = self._manager.failing(server_id)
        if failure is not None and self._manager.current(server_id) is None:
            raise failure.with_traceback(None)
        tools = await self._manager.list_tools(server_id)
        disabled = set(record.config.disabled_tools)
        policies = record.config.tool_policies
        return [
            ServerTool(tool=tool, enabled=tool.name not in disabled, policy=policies.get(tool.name, "ask"))
            for tool in tools
        ]

    async def call_tool(
        self,
        server_id: str,
        tool: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
    ) -> ToolCallResult:
        """A user-initiated tool call (the settings page, the CLI, the REST API).

        Args:
            arguments: A JSON object (or None); passed through once its top-level `required` names
                are present, the server validates the rest (R-5.1).
            operation_id: Lets `cancel(operation_id)` abort the call (R-3.8).
        Returns:
            A `ToolCallResult`: the server's MCP `CallToolResult` (`content` as the SDK's typed blocks,
            `structured_content`, `is_error`, `text`); `to_dict()` is its JSON.
        Raises:
            ServerNotFound, ServerDisabled, ServerNotTrusted, ServerNotTested, ToolDisabled,
            ToolNotFound, ToolQuarantined (its definition failed validation, R-3.6), RequestInvalid
            (arguments not an object, or without one its inputSchema lists as `required`: not sent,
            `tool_arguments.require_arguments`), CallCancelled,
            CallInterrupted (the host stopped while the server waited for an elicitation answer),
            ServerTimeout, and attributed connection errors.

        This is the human acting: no approval is asked (R-5.3); agents use `call_agent_tool`.
        The timeout clock stops while the server waits for an answer to an elicitation card.
        """
        with self._accepted(operation_id):
            return await self._call_tool(server_id, tool, arguments, operation_id)

    async def _call_tool(
        self, server_id: str, tool: str, arguments: object, operation_id: str | None
    ) -> ToolCallResult:
        if arguments is None:
            arguments = {}
        check_arguments_safe(arguments)
        if not is_object(arguments):
            raise RequestInvalid(
                "arguments: must be a JSON object",
                details={"errors": [FieldError("arguments", "FIELD_INVALID", "must be a JSON object").to_dict()]},
            )
        record = await self._runnable(server_id)
        if tool in record.config.disabled_tools:
            raise ToolDisabled(f"tool '{tool}' of server '{server_id}' is disabled", details={"tool": tool})
        if record.config.tool_policies.get(tool) == "deny":
            # `ask` needs no approval here (the user is the human in the loop), but `deny` means the
            # tool must not run at all, whoever asks.
            raise ToolDenied(
                f"the policy of tool '{tool}' of server '{server_id}' is deny", details={"tool": tool, "policy": "deny"}
            )
        op_id = operation_id or uuid.uuid4().hex
        # Admitted before waiting for a lazy connection, so a cancel ends that wait too; the
        # runtime admits the call itself again inside `tracking` (see `Capabilities.call_result`).
        with self._manager.operations.admit(op_id):
            tools = await self._manager.list_tools(server_id)
        listed = next((t for t in tools if t.name == tool), None)
        if listed is None:
            quarantined = quarantined_refusal(self._manager, tool, server_id)
            if quarantined is not None:
                raise quarantined
            raise ToolNotFound(
                f"server '{server_id}' has no tool '{tool}'",
                details={"tool": tool, "did_you_mean": did_you_mean(tool, (t.name for t in tools))},
            )
        require_arguments(tool, listed.input_schema, arguments)
        async with self._interactions.tracking(
            server_id=server_id, tool=tool, arguments=arguments, operation_id=op_id, caller="user"
        ):
            result = await self._manager.call_tool(server_id, tool, arguments, operation_id=op_id)
        return ToolCallResult(result)

    def cancel(self, operation_id: str) -> bool:
        """Cancel a call by operation id (R-3.8): while it waits for approval, connects, or runs.

        A call waiting for approval ends without reaching the server; a running call is cancelled
        up to the server (`notifications/cancelled`); a call this object accepted that has not
        reached the server yet is refused when it gets there. A cancel of an id no call uses yet is
        remembered for a while (the call is refused if it arrives).

        Returns:
            True when a call of this process with that id was waiting, connecting or running (it
            ends with CallCancelled); False when none was (the cancel is only remembered).
        """
        if self._approvals.cancel_operation(operation_id):
            return True
        if self._manager.cancel(operation_id):
            return True
        # Accepted here but not yet at the server (between approval and sending, or waiting for a
        # lazy connection): the manager remembered the cancel and refuses the call when it arrives.
        return operation_id in self._accepted_calls

    def is_running(self, operation_id: str) -> bool:
        """True while a call with this operation id runs."""
        return self._manager.is_running(operation_id)

    async def wait_for_state(
        self, server_id: str, state: Literal["disconnected", "connecting", "ready", "error"], *, timeout_s: float = 30.0
    ) -> ServerStatus:
        """Wait until the server's connection state is `state` (disconnected/connecting/ready/error).

        Raises:
            TimeoutError: not reached within `timeout_s` seconds.
        """
        with anyio.fail_after(timeout_s):
            return await self._manager.wait_for_status(server_id, lambda s: s.state.value == state)

    def status(self, server_id: str) -> ServerStatus:
        """The runtime status of one server."""
        return self._manager.status(server_id)

    @property
    def cipher(self) -> SecretCipher:
        """The host key's cipher: seals what a client carries and hands back to any instance of this
        store, unread and unchanged (import preview tokens, R-1.8, R-10.2)."""
        return self._cipher

    # ----- debugging (R-3.11) --------------------------------------------------------------------

    @property
    def events(self) -> EventBus:
        """The live event stream: `server.status`, `server.catalog` and configuration events."""
        return self._manager.events

    async def logs(self, server_id: str) -> ServerLogs:
        """The server's last requests/responses (summaries, redacted) and stderr lines (R-3.11).

        Raises:
            ServerNotFound.
        """
        await self.get_server(server_id)
        logbook = self._manager.logbook(server_id)
        return ServerLogs(
            server_id=server_id,
            status=self._manager.status(server_id),
            requests=tuple(logbook.entries()),
            stderr=tuple(logbook.stderr()),
        )

    def known_input_schema(self, server_id: str, tool: str) -> dict[str, Any] | None:
        """The `inputSchema` of `tool` as the server's live catalog lists it, or None (no live
        connection, no such tool); never connects (for an error message's hint, issue 16)."""
        conn = self._manager.current(server_id)
        found = conn.catalog.tool(tool) if conn is not None else None
        return found.input_schema if found is not None else None

    async def catalog(self, server_id: str, *, refresh: bool = False) -> CatalogView:
        """The live catalog: tools, prompts, resources, resource templates, quarantined items,
        normalized items (kept after a stated schema fix, `registry.schemas`), generations,
        per-category refresh errors (R-3.6, R-3.7) and which of the categories the server declared in
        its capabilities (`DeclaredCapabilities`). Connects lazily; `to_dict()` for JSON.

        Raises:
            ServerNotFound, ServerDisabled, ServerNotTrusted, ServerNotTested, connection errors.
        """
        await self._runnable(server_id)
        catalog = await (self._manager.refresh(server_id) if refresh else self._manager.catalog(server_id))
        conn = self._manager.current(server_id)
        declared = conn.session.client.server_capabilities if conn is not None and conn.session is not None else None
        # What the server declared in `initialize`: a category it does not declare is empty
        # without a request, which the settings page explains instead of showing an empty list.
        capabilities = DeclaredCapabilities(
            tools=declared is not None and declared.tools is not None,
            prompts=declared is not None and declared.prompts is not None,
            resources=declared is not None and declared.resources is not None,
        )
        return CatalogView(server_id=server_id, capabilities=capabilities, catalog=catalog)

    def add_log_listener(self, listener: Callable[[str, Any], None]) -> Callable[[], None]:
        """Receive every server log message as `(server_id, LoggingMessageNotificationParams)`."""
        return self._manager.add_log_listener(listener)

    def add_resource_listener(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        """Receive every server's `notifications/resources/updated` as `(server_id, uri)` (the gateway
        relays them to subscribed agents, R-8.1); synchronous, must not block. Returns its remover."""
        return self._manager.add_resource_listener(listener)

    async def set_tool_policy(self, server_id: str, tool: str, policy: ToolPolicy, *, version: object) -> ServerView:
        """Set the approval policy of one tool: `ask` (default), `allow` or `deny` (R-5.3).

        Only the user changes a policy, through the server configuration (`tool_policies`): this is
        `update_server` with `tool_policies` changed, so it is versioned (R-1.3) and a high-risk
        change (R-1.4): the server needs trust, test and enable again before it runs.

        Args:
            version: The server `version` the caller read.
        Returns:
            The server view after the change; when the tool already has `policy` and `version` is
            current, the view as it is: nothing is written, the version stays, trust is kept (a
            no-op is not a change; the caller tells by the unchanged `version`, issue 16).
        Raises:
            RequestInvalid (bad policy, tool name or version), ServerNotFound, ServerVersionConflict.
        """
        current = await self.get_server(server_id)
        if policy not in ("ask", "allow", "deny"):
            raise RequestInvalid(
                "policy: must be ask, allow or deny",
                details={"errors": [FieldError("policy", "FIELD_INVALID", "must be ask, allow or deny").to_dict()]},
            )
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise RequestInvalid(
                "version: send the version you read",
                details={"errors": [FieldError("version", "FIELD_REQUIRED", "the version you read").to_dict()]},
            )
        if not tool or len(tool) > 256:
            raise RequestInvalid(
                "tool: must be a tool name of 1-256 characters",
                details={"errors": [FieldError("tool", "FIELD_INVALID", "1-256 characters").to_dict()]},
            )
        policies: dict[str, str] = dict(current.config.tool_policies)
        if policy == "ask":
            policies.pop(tool, None)
        else:
            policies[tool] = policy
        if policies == dict(current.config.tool_policies) and version == current.version:
            return current
        return await self.update_server(server_id, {"version": version, "tool_policies": policies}, partial=True)

    def begin_stop(self) -> None:
        """The host begins to stop (serve got SIGTERM or SIGINT): from now on no approval is decided
        and no tool call is sent (`ApprovalBroker.begin_stop`, `InteractionBroker.begin_stop`).
        Synchronous, so serve's signal handler calls it at once, before its main loop notices the
        signal; `interrupt_pending` then ends what is waiting or running (R-6.3)."""
        self._approvals.begin_stop()
        self._interactions.begin_stop()

    async def interrupt_pending(self) -> None:
        """The host is stopping: every call waiting for a human, and every tool call still running,
        fails now with CallInterrupted (503 MCP_CALL_INTERRUPTED).

        Pending approvals end (their calls were never sent); pending elicitation cards become
        `interrupted` and their calls are cancelled (the answer was not delivered, R-6.3); running
        tool calls are cancelled at their servers, and a tool call that starts afterwards is not
        sent (`InteractionBroker.interrupt_running`). The HTTP server calls this before it stops
        accepting work, so callers get an explicit error instead of a dropped connection or a
        cancelled request, and its graceful stop is not spent waiting for them.
        """
        self.begin_stop()
        await self._approvals.interrupt_all()
        await self._interactions.interrupt_all()
        self._interactions.interrupt_running()

    async def _retry_interrupted_call(self, server_id: str, tool: str, arguments: dict[str, Any]) -> ToolCallResult:
        return await self.call_tool(server_id, tool, arguments)

    # ----- internals -----------------------------------------------------------------------------

    def _summaries(self) -> Summaries:
        return Summaries(self._cipher)

    def _announce(self, event: str, fields: dict[str, Any]) -> None:
        logger.info(event, extra=fields)
        self._manager.events.publish(event, **fields)

    async def _read(self) -> StoreState:
        return await read_state(self._store)

    async def _runnable(self, server_id: str) -> ServerRecord:
        return await self._servers.runnable(server_id)

    async def _after_authorization(self, server_id: str) -> None:
        """An authorization was committed or forgotten: announce `server.oauth`, reconcile, reconnect.

        `server.oauth` (`{"server_id"}`, no token, scope or code) tells the settings page that the
        view's `oauth` block changed, so an open Authorization tab shows the result at once (R-4.9, R-3.11).
        """
        self._announce("server.oauth", {"server_id": server_id})
        await self._reconciler.reconnect(server_id)
