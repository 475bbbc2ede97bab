"""`McpCenter`: the library API and use cases every face shares (REST, CLI, web, gateway).

Configuration (R-1), trust → test → enable (R-2) and calls go through here. The store is the
source of truth; after every committed change the affected server is reconciled into the
connection manager (R-3.3): a server runs only when it is enabled, its current connection
summary digest is trusted and was tested successfully, and the profile allows its transport.

Threats handled here: a stale page overwriting a newer configuration (version check, R-1.3); a
changed command, URL, header, env, auth, tool permission or sandbox policy running without a new
confirmation (high-risk invalidation, R-1.4, R-11.1); a secret value reaching a response, log or
error (secret values are write-only, registered with the redactor, and never part of a view,
R-1.5); an unconfined local process started under the production profile (R-2.5, R-11.2).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
from mcp.shared.dispatcher import ProgressFnT

from mcp_center.auth import OAuthBroker, check_private_key
from mcp_center.config import (
    OAUTH_CLIENT_SECRET_KEYS,
    AuthBearer,
    AuthOAuth,
    ServerConfig,
    Settings,
    StdioServerConfig,
    check_header_name,
    parse_server_config,
    slugify,
)
from mcp_center.config.servers import ENV_NAME_PATTERN
from mcp_center.config.settings import Profile
from mcp_center.errors import (
    CenterError,
    ConfigInvalid,
    FieldError,
    RequestInvalid,
    SandboxRequired,
    SecretKeyInvalid,
    SecretNotFound,
    ServerDisabled,
    ServerExists,
    ServerNotFound,
    ServerNotTested,
    ServerNotTrusted,
    ServerVersionConflict,
    ToolDenied,
    ToolDisabled,
    ToolNotFound,
    TrustDigestMismatch,
    did_you_mean,
)
from mcp_center.interchange.credentials import (
    CREDENTIAL_IN_ARGS_MESSAGE,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)
from mcp_center.models import ConnectionState, ErrorReason, TransportKind
from mcp_center.runtime import CallDeadlines, ConnectionManager, EventBus, ServerStatus, SessionHooks
from mcp_center.secrets import (
    Redactor,
    SecretCipher,
    SecretKind,
    default_redactor,
    load_or_create_key,
    secret_id,
)
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.bodies import (
    SecretValues,
    ServerBody,
    check_json_safe,
    parse_secret_value,
    parse_server_body,
)
from mcp_center.service.capabilities import Capabilities
from mcp_center.service.debugger import Debugger
from mcp_center.service.gateway_tokens import GatewayTokens
from mcp_center.service.instances import StatePublisher, instance_views
from mcp_center.service.interactions import Elicitor, InteractionBroker
from mcp_center.service.oauth import CALLBACK_PATH, OAuthService
from mcp_center.service.sandboxing import host_facts, remove_home, sandbox_spec, sandbox_warnings, warm_up
from mcp_center.service.summary import BEARER_KEY, connection_summary, digest_of, secret_slots
from mcp_center.store import ServerRecord, Store, StoreState, TestError, TestResult, store_for
from mcp_center.transports import ConnectionSpec, WarmUpResult

__all__ = ["SECRET_KINDS", "McpCenter"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

KEY_CHECK_PURPOSE = "mcp-center/key-check"
KEY_CHECK_VALUE = "every instance on one store uses one key"
"""The keyed fingerprint of this constant tells whether two instances hold the same key (R-10.1)."""

SECRET_KINDS: Mapping[str, SecretKind] = {
    "environment": SecretKind.ENV,
    "header": SecretKind.HEADER,
    "bearer": SecretKind.BEARER,
    "oauth": SecretKind.OAUTH_CLIENT,
}
"""API names of the secret kinds (`?kind=environment|header|bearer|oauth`)."""


def _now() -> datetime:
    return datetime.now(UTC)


class McpCenter:
    """The host's use cases. Build with `async with McpCenter.open(settings) as center:`.

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
        self._reconcile_locks: dict[str, anyio.Lock] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._approvals = ApprovalBroker(
            store, manager.events, instance=instance, timeout_s=settings.approval_timeout_s
        )
        self._interactions = interactions or InteractionBroker(
            store, manager.events, manager.deadlines, instance=instance, cipher=cipher, enabled=False
        )
        self._interactions.cancel_call = manager.cancel
        self._interactions.retry_call = self._retry_interrupted_call
        self._capabilities = Capabilities(store, manager, self._approvals, self._interactions)
        self.gateway_tokens = GatewayTokens(store, settings.gateway_token)
        """Tokens accepted at the gateway endpoint `/mcp` (R-7.1)."""
        broker = OAuthBroker(
            store=store, cipher=cipher, redactor=redactor, redirect_uri=settings.base_url + CALLBACK_PATH
        )
        self.oauth = OAuthService(
            settings=settings,
            store=store,
            cipher=cipher,
            redactor=redactor,
            broker=broker,
            digest=self._digest,
            after_authorization=self._after_authorization,
        )
        """OAuth use cases (R-4): start, complete, forget, status."""
        self.debugger = Debugger(manager, self._runnable, self.get_server)
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
            SecretKeyMismatch: the database's ciphertexts were sealed with another key (R-10.1).
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
        key = await anyio.to_thread.run_sync(load_or_create_key, settings.data_dir, settings.secret_key)
        cipher = SecretCipher(key)
        await anyio.to_thread.run_sync(store.check_key, cipher.fingerprint(KEY_CHECK_PURPOSE, KEY_CHECK_VALUE))
        await anyio.to_thread.run_sync(_collect_orphans, store)
        instance = uuid.uuid4().hex
        await anyio.to_thread.run_sync(store.join_instance, instance)
        publisher: StatePublisher | None = None
        if connect:  # a host that serves (not a one-shot CLI run): on every instance's page
            await anyio.to_thread.run_sync(
                lambda: store.describe_instance(instance, name=settings.instance_label, url=settings.base_url)
            )
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
                center._tg = tg
                try:
                    await center._approvals.start()
                    await center._reconcile_all()
                    if connect:
                        state = await center._read()
                        for record in state.servers.values():
                            if record.config.connect_on_startup and record.id in center._manager.configured():
                                tg.start_soon(center._connect_quietly, record.id)
                        tg.start_soon(center._watch_store)
                        tg.start_soon(center._capabilities.watch)
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

    async def list_servers(self) -> list[dict[str, Any]]:
        """Every server as its API view (R-1.1 fields, version, summary, digest, status), sorted by id."""
        return await self._in_thread(
            lambda: [
                self._view(r, s) for s in [self._store.read()] for r in sorted(s.servers.values(), key=lambda r: r.id)
            ]
        )

    async def server_configs(self) -> list[ServerConfig]:
        """Every server's configuration (no secret values: those live only in the store), sorted by id."""
        state = await self._read()
        return [state.servers[server_id].config for server_id in sorted(state.servers)]

    async def get_server(self, server_id: str) -> dict[str, Any]:
        """One server's API view (every instance's state of it: `instances()`, R-10.2).

        Raises:
            ServerNotFound: no such id.
        """

        def run() -> dict[str, Any]:
            state = self._store.read()
            return self._view(_get(state, server_id), state)

        return await self._in_thread(run)

    async def instances(self) -> dict[str, Any]:
        """The live `serve` instances on this store and each one's connection states (R-10.2).

        Returns:
            `instance_views` (`{"here", "instances": [...]}`).
        Raises:
            StorageError: the database could not be read.
        """
        return await self._in_thread(lambda: instance_views(self._store, self.instance))

    # ----- configuration writes ------------------------------------------------------------------

    async def create_server(self, body: object) -> dict[str, Any]:
        """Register a server (R-1.1). Starts untrusted, untested and disabled (R-2).

        `id` is optional: derived from `name` (made unique with a suffix) when absent.

        Raises:
            ConfigInvalid: a rule of R-1 is broken (every violation listed).
            ServerExists: the id is taken.
        """
        parsed = parse_server_body(body, require_version=False)
        server_id = await self._txn(lambda state: self._add_server(state, parsed))
        self._announce("server.created", {"server_id": server_id})
        return await self.get_server(server_id)

    async def create_servers(self, plan: Callable[[frozenset[str]], Sequence[object]]) -> list[dict[str, Any]]:
        """Register several servers in ONE store transaction: all of them or none (R-1.8, R-7.3).

        Args:
            plan: Called inside the transaction with the ids registered at that moment; returns
                the create bodies (each as for `create_server`). Raising aborts with no change.
        Returns:
            The created servers' API views, in order. Like `create_server`, each starts untrusted,
            untested and disabled (R-2).
        Raises:
            Whatever `plan` raises; ConfigInvalid / ServerExists for a body, as `create_server`.
        """

        def run(state: StoreState) -> list[str]:
            bodies = plan(frozenset(state.servers))
            return [self._add_server(state, parse_server_body(body, require_version=False)) for body in bodies]

        server_ids = await self._txn(run)
        for server_id in server_ids:
            self._announce("server.created", {"server_id": server_id})
        return [await self.get_server(server_id) for server_id in server_ids]

    async def update_server(self, server_id: str, body: object, *, partial: bool = False) -> dict[str, Any]:
        """Replace (PUT) or merge (PATCH, `partial=True`) a server's configuration (R-1.3, R-1.4).

        The body must carry the `version` it read. A change to any security-relevant field (the
        connection summary digest changes) clears trust and the last test, disables the server
        and disconnects it.

        Raises:
            ServerNotFound, ServerVersionConflict (409, nothing changed), ConfigInvalid.
        """
        parsed = parse_server_body(body, require_version=True)
        if "id" in parsed.config and parsed.config["id"] != server_id:
            raise ConfigInvalid([FieldError("id", "ID_IMMUTABLE", "cannot be changed; create a new server instead")])
        parsed.config.pop("enabled", None)

        def run(state: StoreState) -> bool:
            record = _get(state, server_id)
            _check_version(record, parsed.version)
            data = _editable(record.config) if partial else {}
            data.update(parsed.config)
            data["id"] = server_id
            config = parse_server_config(data)
            old_digest = self._digest(record.config, state)
            self._write_secret_values(state, config, parsed.secrets)
            self._drop_undeclared_secrets(state, config)
            new_digest = self._digest(config, state)
            high_risk = old_digest != new_digest
            state.servers[server_id] = self._changed(record, config, high_risk=high_risk)
            return high_risk

        high_risk = await self._txn(run)
        self._announce("server.updated", {"server_id": server_id, "high_risk": high_risk})
        await self._reconcile(server_id)
        return await self.get_server(server_id)

    async def delete_server(self, server_id: str, *, version: int | None = None) -> None:
        """Delete a server, its ciphertexts, and its connection (R-1.5, R-2.4).

        Raises:
            ServerNotFound; ServerVersionConflict when `version` is given and stale.
        """

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            _check_version(record, version)
            del state.servers[server_id]
            for sid in state.secret_ids_of(server_id):
                del state.secrets[sid]

        await self._txn(run)
        self._announce("server.deleted", {"server_id": server_id})
        self.oauth.drop_server(server_id)
        await self._reconcile(server_id)
        self._manager.forget(server_id)
        # After the connection closed: its sandbox home and /tmp go with the server.
        await self._in_thread(lambda: remove_home(self.settings, server_id))

    async def set_secret(
        self, server_id: str, kind: str, key: str, value: object, *, version: int | None = None
    ) -> dict[str, Any]:
        """Set one secret value (write-only, R-1.5); declares the key if needed. A high-risk change (R-1.4).

        Args:
            kind: `environment` (stdio), `header` (remote) or `bearer` (key `token`).
        Raises:
            ServerNotFound, ServerVersionConflict, RequestInvalid (unknown kind),
            SecretKeyInvalid (key not allowed for the kind/transport), ConfigInvalid (bad value).
        """
        secret_kind = _secret_kind(kind)
        plain = parse_secret_value("value", value, header=secret_kind in (SecretKind.HEADER, SecretKind.BEARER))

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            _check_version(record, version)
            config = _declare_secret(record.config, secret_kind, key)
            values = SecretValues()
            if secret_kind is SecretKind.ENV:
                values.env[key] = plain
            elif secret_kind is SecretKind.HEADER:
                values.headers[key] = plain
            elif secret_kind is SecretKind.OAUTH_CLIENT:
                values.oauth[key] = plain
            else:
                values.bearer_token = plain
            old_digest = self._digest(record.config, state)
            self._write_secret_values(state, config, values)
            high_risk = old_digest != self._digest(config, state)
            state.servers[server_id] = self._changed(record, config, high_risk=high_risk)

        await self._txn(run)
        self._announce("server.secret_set", {"server_id": server_id, "kind": kind})
        await self._reconcile(server_id)
        return await self.get_server(server_id)

    async def delete_secret(self, server_id: str, kind: str, key: str, *, version: int | None = None) -> dict[str, Any]:
        """Delete one secret: its ciphertext and its declaration (R-1.5). A high-risk change.

        Raises:
            ServerNotFound, ServerVersionConflict, RequestInvalid, SecretNotFound.
        """
        secret_kind = _secret_kind(kind)

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            _check_version(record, version)
            config = record.config
            internal = secret_id(secret_kind, server_id, key)
            declared = {(k, n.lower() if k is SecretKind.HEADER else n) for k, n in secret_slots(config)}
            wanted = (secret_kind, key.lower() if secret_kind is SecretKind.HEADER else key)
            if wanted not in declared and internal not in state.secrets:
                raise SecretNotFound(f"no {kind} secret named '{key}'", details={"kind": kind, "key": key})
            if isinstance(config, StdioServerConfig) and secret_kind is SecretKind.ENV:
                config = config.model_copy(update={"secret_env": [k for k in config.secret_env if k != key]})
            elif not isinstance(config, StdioServerConfig) and secret_kind is SecretKind.HEADER:
                config = config.model_copy(
                    update={"secret_headers": [h for h in config.secret_headers if h.lower() != key.lower()]}
                )
            state.secrets.pop(internal, None)
            state.servers[server_id] = self._changed(record, config, high_risk=True)

        await self._txn(run)
        self._announce("server.secret_deleted", {"server_id": server_id, "kind": kind})
        await self._reconcile(server_id)
        return await self.get_server(server_id)

    # ----- trust, test, enable ------------------------------------------------------------------

    async def trust(self, server_id: str, digest: object) -> dict[str, Any]:
        """Confirm the connection summary the user saw (R-2.1).

        Raises:
            ServerNotFound; RequestInvalid (no digest); TrustDigestMismatch (409) when `digest`
            is not the current one — the caller must re-read the summary.
        """
        if not isinstance(digest, str) or not digest:
            raise RequestInvalid(
                "digest: send the digest of the summary you confirmed",
                details={"errors": [FieldError("digest", "FIELD_REQUIRED", "is required").to_dict()]},
            )

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            current = self._digest(record.config, state)
            if digest != current:
                raise TrustDigestMismatch(
                    "the connection summary changed since you read it; review the current summary and confirm "
                    "its digest",
                    details={"current_digest": current},
                )
            state.servers[server_id] = record.model_copy(update={"trusted_digest": current, "updated_at": _now()})

        await self._txn(run)
        self._announce("server.trusted", {"server_id": server_id})
        await self._reconcile(server_id)
        return await self.get_server(server_id)

    async def test(self, server_id: str) -> TestResult:
        """Run a temporary connection (initialize + tools/list + close) and store the result (R-2.2).

        The result is stored with the digest it ran with, unless the configuration changed
        while the test ran (then it is returned but not stored).

        Raises:
            ServerNotFound; ServerNotTrusted (the current digest is not confirmed: testing runs
            the command / sends the credentials); SandboxRequired under the production profile.
        """

        def prepare() -> tuple[ConnectionSpec, str]:
            state = self._store.read()
            record = _get(state, server_id)
            self._check_profile(record.config)
            digest = self._digest(record.config, state)
            if record.trusted_digest != digest:
                raise ServerNotTrusted(
                    "confirm the current connection summary (POST .../trust) before testing",
                    details={"current_digest": digest},
                )
            return self._spec(record.config, state, digest), digest

        spec, digest = await self._in_thread(prepare)
        started = _now()
        try:
            probe = await self._manager.probe(spec)
            result = TestResult(
                ok=True,
                digest=digest,
                tested_at=_now(),
                elapsed_ms=probe.elapsed_ms,
                tool_count=len(probe.tools),
                server_name=probe.server_name,
                server_version=probe.server_version,
                protocol_version=probe.protocol_version,
            )
        except CenterError as exc:
            elapsed = int((_now() - started).total_seconds() * 1000)
            error = TestError(
                code=exc.code,
                reason=exc.details.get("reason"),
                message=self._redactor.redact(exc.message),
                details=self._redactor.redact_obj(exc.details),
            )
            result = TestResult(ok=False, digest=digest, tested_at=_now(), elapsed_ms=elapsed, error=error)

        def store(state: StoreState) -> None:
            record = state.servers.get(server_id)
            if record is None or self._digest(record.config, state) != digest:
                return
            state.servers[server_id] = record.model_copy(update={"last_test": result, "updated_at": _now()})

        await self._txn(store)
        self._announce("server.tested", {"server_id": server_id, "ok": result.ok})
        await self._reconcile(server_id)
        return result

    async def warm_up_sandbox(self, server_id: str) -> WarmUpResult:
        """Fill a sandboxed npx/uvx server's package caches inside its sandbox, with egress (R-11.1).

        For `network: none` servers, whose package manager cannot download on start. Only the
        package manager runs (`transports/warmup.py`); the server itself does not start.

        Raises:
            ServerNotFound; ServerNotTrusted (the current digest is not confirmed: the warm-up runs
            the confirmed package spec); SandboxRequired (production, no policy);
            SandboxWarmUpUnsupported (no policy, or not npx/uvx); SandboxUnavailable.
        """

        def prepare() -> ConnectionSpec:
            state = self._store.read()
            record = _get(state, server_id)
            self._check_profile(record.config)
            digest = self._digest(record.config, state)
            if record.trusted_digest != digest:
                raise ServerNotTrusted(
                    "confirm the current connection summary (POST .../trust) before warming up its sandbox",
                    details={"current_digest": digest},
                )
            return self._spec(record.config, state, digest)

        spec = await self._in_thread(prepare)
        return await warm_up(spec, self._redactor)

    async def enable(self, server_id: str) -> dict[str, Any]:
        """Enable a trusted, tested server and start its long-lived connection (R-2.3).

        Returns the view after the first connection attempt (its `status` shows the outcome).

        Raises:
            ServerNotFound; SandboxRequired (403, production + stdio); ServerNotTrusted /
            ServerNotTested (409) when the current digest is not confirmed / not tested OK.
        """

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            self._check_profile(record.config)
            digest = self._digest(record.config, state)
            if record.trusted_digest != digest:
                raise ServerNotTrusted(
                    "confirm the current connection summary (POST .../trust) before enabling",
                    details={"current_digest": digest},
                )
            test = record.last_test
            if test is None or not test.ok or test.digest != digest:
                raise ServerNotTested(
                    "run a successful test of the current configuration (POST .../test) before enabling",
                    details={"current_digest": digest},
                )
            if not record.enabled:
                state.servers[server_id] = record.model_copy(update={"enabled": True, "updated_at": _now()})

        await self._txn(run)
        self._announce("server.enabled", {"server_id": server_id})
        await self._reconcile(server_id)
        await self._connect_quietly(server_id)
        return await self.get_server(server_id)

    async def disable(self, server_id: str) -> dict[str, Any]:
        """Disable a server: close its connection and unregister its tools (R-2.4).

        Raises:
            ServerNotFound.
        """

        def run(state: StoreState) -> None:
            record = _get(state, server_id)
            if record.enabled:
                state.servers[server_id] = record.model_copy(update={"enabled": False, "updated_at": _now()})

        await self._txn(run)
        self._announce("server.disabled", {"server_id": server_id})
        await self._reconcile(server_id)
        return await self.get_server(server_id)

    # ----- tools ---------------------------------------------------------------------------------

    async def list_tools(self, server_id: str) -> list[dict[str, Any]]:
        """The server's tools from its live session (lazy connect, R-3.2), each with `enabled`.

        Raises:
            ServerNotFound; ServerDisabled / ServerNotTrusted / ServerNotTested when it cannot
            run; an attributed connection error.
        """
        record = await self._runnable(server_id)
        tools = await self._manager.list_tools(server_id)
        disabled = set(record.config.disabled_tools)
        return [
            {
                **tool.model_dump(mode="json", by_alias=True, exclude_none=True),
                "enabled": tool.name not in disabled,
                "policy": record.config.tool_policies.get(tool.name, "ask"),
            }
            for tool in tools
        ]

    async def call_tool(
        self,
        server_id: str,
        tool: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
    ) -> dict[str, Any]:
        """A user-initiated tool call (the settings page, the CLI, the REST API).

        Args:
            arguments: A JSON object (or None); passed through, the server validates (R-5.1).
            operation_id: Lets `cancel(operation_id)` abort the call (R-3.8).
        Returns:
            The MCP `CallToolResult` as JSON (`content`, `structuredContent`, `isError`).
        Raises:
            ServerNotFound, ServerDisabled, ServerNotTrusted, ServerNotTested, ToolDisabled,
            ToolNotFound, RequestInvalid (arguments not an object), CallCancelled,
            CallInterrupted (the host stopped while the server waited for an elicitation answer),
            ServerTimeout, and attributed connection errors.

        This is the human acting: no approval is asked (R-5.3); agents use `call_agent_tool`.
        The timeout clock stops while the server waits for an answer to an elicitation card.
        """
        if arguments is None:
            arguments = {}
        check_json_safe(arguments, "arguments")
        if not isinstance(arguments, dict):
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
        if not any(t.name == tool for t in tools):
            raise ToolNotFound(
                f"server '{server_id}' has no tool '{tool}'",
                details={"tool": tool, "did_you_mean": did_you_mean(tool, (t.name for t in tools))},
            )
        async with self._interactions.tracking(
            server_id=server_id, tool=tool, arguments=arguments, operation_id=op_id, caller="user"
        ):
            result = await self._manager.call_tool(server_id, tool, arguments, operation_id=op_id)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    def cancel(self, operation_id: str) -> bool:
        """Cancel a call by operation id (R-3.8): while it waits for approval, or runs. True if one was found.

        A call waiting for approval ends without reaching the server; a running call is cancelled
        up to the server (`notifications/cancelled`); a cancel before the call arrives is remembered.
        """
        if self._approvals.cancel_operation(operation_id):
            return True
        return self._manager.cancel(operation_id)

    def is_running(self, operation_id: str) -> bool:
        """True while a call with this operation id runs."""
        return self._manager.is_running(operation_id)

    async def wait_for_state(self, server_id: str, state: str, *, timeout_s: float = 30.0) -> ServerStatus:
        """Wait until the server's connection state is `state` (disconnected/connecting/ready/error).

        Raises:
            TimeoutError: not reached within `timeout_s` seconds.
        """
        with anyio.fail_after(timeout_s):
            return await self._manager.wait_for_status(server_id, lambda s: s.state.value == state)

    def status(self, server_id: str) -> ServerStatus:
        """The runtime status of one server."""
        return self._manager.status(server_id)

    # ----- debugging (R-3.11) --------------------------------------------------------------------

    @property
    def events(self) -> EventBus:
        """The live event stream: `server.status`, `server.catalog` and configuration events."""
        return self._manager.events

    async def logs(self, server_id: str) -> dict[str, Any]:
        """The server's last requests/responses (summaries, redacted) and stderr lines (R-3.11).

        Raises:
            ServerNotFound.
        """
        await self.get_server(server_id)
        logbook = self._manager.logbook(server_id)
        return {
            "server_id": server_id,
            "status": self._manager.status(server_id).to_dict(),
            "requests": logbook.entries(),
            "stderr": logbook.stderr(),
        }

    async def catalog(self, server_id: str, *, refresh: bool = False) -> dict[str, Any]:
        """The live catalog: tools, prompts, resources, resource templates, quarantined items,
        normalized items (kept after a stated schema fix, `registry.schemas`), generations,
        per-category refresh errors (R-3.6, R-3.7) and which of the categories the server declared in
        its capabilities (`{"tools", "prompts", "resources"}`: booleans). Connects lazily.

        Raises:
            ServerNotFound, ServerDisabled, ServerNotTrusted, ServerNotTested, connection errors.
        """
        await self._runnable(server_id)
        catalog = await (self._manager.refresh(server_id) if refresh else self._manager.catalog(server_id))
        conn = self._manager.current(server_id)
        declared = conn.session.client.server_capabilities if conn is not None and conn.session is not None else None
        return {
            "server_id": server_id,
            # What the server declared in `initialize`: a category it does not declare is empty
            # without a request, which the settings page explains instead of showing an empty list.
            "capabilities": {
                "tools": declared is not None and declared.tools is not None,
                "prompts": declared is not None and declared.prompts is not None,
                "resources": declared is not None and declared.resources is not None,
            },
            **{
                category: [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
                for category, items in catalog.items.items()
            },
            "quarantined": [q.to_dict() for notes in catalog.quarantined.values() for q in notes],
            "normalized": [n.to_dict() for notes in catalog.normalized.values() for n in notes],
            "generation": dict(catalog.generation),
            "errors": dict(catalog.errors),
        }

    @property
    def capabilities(self) -> Capabilities:
        """Tools, prompts and resources as agents see them; the gateway's backend (R-5, R-8)."""
        return self._capabilities

    def add_log_listener(self, listener: Callable[[str, Any], None]) -> Callable[[], None]:
        """Receive every server log message as `(server_id, LoggingMessageNotificationParams)`."""
        return self._manager.add_log_listener(listener)

    # ----- capabilities for agents (R-5, R-6) -------------------------------------------------------
    # The use cases live in service/capabilities.py, approvals.py and interactions.py; these are the
    # public entry points (the REST API, the CLI and library users call the same code).

    async def agent_tools(self, format: str = "center") -> dict[str, Any]:
        """The tools agents may call, under their qualified names (R-5.1, R-5.2, R-5.6).

        Every enabled, non-disabled tool of every ready server appears as `mcp__{serverId}__{tool}`
        (mapped and shortened with a hash where needed, always unique). Enabled servers that are
        not connected yet connect first (R-3.2).

        Args:
            format: `center` (our view: provenance, `hints` from annotations, `effects: "write"`,
                `retry: "never"`, `policy`), `mcp` (MCP `Tool` objects under the exposed names),
                `openai` (`{"type": "function", "function": {...}}`) or `anthropic`
                (`{"name", "description", "input_schema"}`). Input schemas are passed unchanged.
        Returns:
            `{"format", "tools": [...], "aliases": {exposed name: {"server_id", "tool", "verbatim"}}}`.
        Raises:
            RequestInvalid: unknown format.
        """
        return await self._capabilities.tools(format)

    async def call_agent_tool(
        self,
        name: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An agent-initiated call of an exposed tool name, through the user's policy (R-5.3).

        Policy `ask` (default): a pending approval is created (`list_approvals`) and the call waits
        until the user approves (then it is sent), denies, or `settings.approval_timeout_s` seconds
        pass. `allow` sends at once; `deny` refuses. The server never sees a call that was not
        allowed or approved. Never retried automatically (R-5.1).

        Args:
            name: The exposed name (`mcp__{serverId}__...`) from `agent_tools()`.
            arguments: A JSON object; passed through unchanged, the server validates.
            operation_id: `cancel(operation_id)` ends the call while it waits for approval or runs.
            progress: Receives the server's progress for this call `(progress, total, message)`.
            elicitor: Answers the server's form elicitations for this call (the caller's own client
                asks its user) instead of a UI card; used by the gateway (R-8.1).
            caller: Who asks, shown on the approval card (e.g. `{"via": "rest_api"}`).
        Returns:
            The MCP `CallToolResult` as JSON (`content`, `structuredContent`, `isError`).
        Raises:
            ToolNotFound (unknown name), ToolDisabled, ToolDenied (policy deny), ApprovalDenied,
            ApprovalExpired, CallCancelled, CallInterrupted (the host stopped while it waited for a
            human), RequestInvalid (arguments not an object), ServerTimeout, connection errors.
        """
        return await self._capabilities.call(
            name, arguments, operation_id=operation_id, progress=progress, elicitor=elicitor, caller=caller
        )

    async def list_approvals(self, *, include_closed: bool = False) -> list[dict[str, Any]]:
        """Pending approvals of every process on the data directory, oldest first (R-5.3, R-9.2);
        with `include_closed`, recent decided ones too.

        Each: `{"id", "state", "tool", "server_id", "server_tool", "arguments", "hints",
        "effects": "write", "operation_id", "created_at", "expires_at", "decided_at"}`; `hints` are the
        server's annotations, shown and never trusted. A pending approval whose process is gone is
        closed as `interrupted` first.

        Raises:
            StorageError.
        """
        return await self._approvals.views(include_closed=include_closed)

    async def get_approval(self, approval_id: str) -> dict[str, Any]:
        """One approval (pending or recently closed).

        Raises:
            ApprovalNotFound, StorageError.
        """
        return await self._approvals.get(approval_id)

    async def decide_approval(self, approval_id: str, decision: object) -> dict[str, Any]:
        """The user's decision on a pending approval: `"approve"` sends the call, `"deny"` refuses it.

        The call may wait in any process on the data directory (a library script, the CLI): the
        decision reaches it there.

        Raises:
            RequestInvalid (not approve/deny), ApprovalNotFound, ApprovalClosed (already decided,
            expired, cancelled or interrupted; `details.state`), StorageError (nothing decided).
        """
        return await self._approvals.decide(approval_id, decision)

    async def set_tool_policy(self, server_id: str, tool: str, policy: object, *, version: object) -> dict[str, Any]:
        """Set the approval policy of one tool: `ask` (default), `allow` or `deny` (R-5.3).

        Only the user changes a policy, through the server configuration (`tool_policies`): this is
        `update_server` with `tool_policies` changed, so it is versioned (R-1.3) and a high-risk
        change (R-1.4): the server needs trust, test and enable again before it runs.

        Args:
            version: The server `version` the caller read.
        Returns:
            The server view after the change.
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
        policies: dict[str, Any] = dict(current["tool_policies"])
        if policy == "ask":
            policies.pop(tool, None)
        else:
            policies[tool] = policy
        return await self.update_server(server_id, {"version": version, "tool_policies": policies}, partial=True)

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Prompts of every ready server as `/server:prompt` commands with argument definitions (R-5.4).

        Each: `{"name": "srv:prompt", "command": "/srv:prompt", "server_id", "server_name", "prompt",
        "title", "description", "arguments": [{"name", "title", "description", "required"}]}`.
        """
        return await self._capabilities.prompts()

    async def get_prompt(self, name: str, arguments: object = None, *, max_bytes: object = None) -> dict[str, Any]:
        """`prompts/get` as an untrusted context block (R-5.4): never merge it into instructions.

        Args:
            name: `srv:prompt` (a leading `/` is accepted).
            arguments: `{argument: string}`; required ones must be present, unknown ones are refused.
            max_bytes: Bound on the text in bytes (default 256 KiB, at most 4 MiB).
        Returns:
            `{"name", "untrusted": true, "provenance": {"source": "mcp", "kind": "prompt", "server_id",
            "server_name", "prompt", "arguments"}, "description", "messages": [{"role", "kind"}], "text",
            "delimiters": {"begin", "end"}, "truncated", "original_bytes", "included_bytes"}`.
        Raises:
            PromptNotFound, RequestInvalid (arguments), CallCancelled, ServerTimeout, connection errors.
        """
        return await self._capabilities.get_prompt(name, arguments, max_bytes=max_bytes)

    async def search_resources(
        self, query: str = "", *, limit: object = None, server_id: str | None = None
    ) -> dict[str, Any]:
        """`@` search over the resources and resource templates of every ready server (R-5.5).

        Matches name, title, URI (template) and description, case-insensitively; name matches rank
        first. Templates carry their URI template `variables`. `server_id` searches one server only
        (the settings page's Resources tab), so other servers' entries cannot crowd it out of `limit`.

        Returns:
            `{"query", "resources": [{"kind": "resource"|"template", "server_id", "server_name",
            "uri" | "uri_template", "variables"?, "name", "title", "description", "mime_type",
            "mention"}]}`, at most `limit` (default 50, at most 500).
        Raises:
            RequestInvalid: bad limit.
        """
        return await self._capabilities.resources(query, limit=limit, server_id=server_id)

    async def read_resource(self, server_id: object, uri: object, *, max_bytes: object = None) -> dict[str, Any]:
        """`resources/read`, wrapped in fresh random delimiters with MCP provenance (R-5.5).

        The content is untrusted: it sits between `delimiters.begin` and `delimiters.end`, whose
        nonce is drawn per read and never occurs in the content. Text is bounded to `max_bytes`
        (default 256 KiB) with an explicit truncation marker; binary content is described.

        Returns:
            `{"untrusted": true, "provenance": {"source": "mcp", "kind": "resource", "server_id",
            "server_name", "uri", "mime_type"}, "contents": [{"uri", "mime_type", "kind", "bytes"}],
            "text", "delimiters", "truncated", "original_bytes", "included_bytes"}`.
        Raises:
            RequestInvalid, ServerNotFound, ServerDisabled, CallCancelled, ServerTimeout, connection
            errors (a server's JSON-RPC error is MCP_SERVER_ERROR).
        """
        return await self._capabilities.read_resource(server_id, uri, max_bytes=max_bytes)

    async def list_interactions(self, *, state: str | None = None) -> list[dict[str, Any]]:
        """Interaction cards (elicitations), newest first, durable across restarts (R-6.1).

        Each: `{"id", "mode", "state", "server_id", "message", "requested_schema", "fields",
        "defaults", "calls", "created_at", "expires_at", "closed_at", "reason", "answer_fields",
        "delivered", "retry": {"offered", "done", "at", "outcome"}, "actions"}`.

        Raises:
            RequestInvalid: unknown state.
        """
        return await self._interactions.views(state=state)

    async def get_interaction(self, interaction_id: str) -> dict[str, Any]:
        """One interaction card.

        Raises:
            InteractionNotFound.
        """
        return await self._interactions.get(interaction_id)

    async def answer_interaction(self, interaction_id: str, action: object, content: object = None) -> dict[str, Any]:
        """Answer a card and resume the server's request (R-6.1), or retry an interrupted call (R-6.3).

        Args:
            action: `accept` (with `content`; fields left out get the schema defaults, SEP-1034),
                `decline`, `cancel`; or `retry` on an interrupted card (re-sends its call once, as
                a user-initiated call).
            content: `{field: value}`, validated against the requested schema.
        Returns:
            `{"interaction": card}`; for retry also `"result"` (the call's `CallToolResult`).
        Raises:
            RequestInvalid, InteractionNotFound, ElicitationAnswerInvalid (card stays pending),
            InteractionNotDelivered (interrupted by a restart), InteractionClosed.
        """
        return await self._interactions.answer(interaction_id, action, content)

    async def interrupt_pending(self) -> None:
        """The host is stopping: every call waiting for a human fails now with CallInterrupted.

        Pending approvals end (their calls were never sent); pending elicitation cards become
        `interrupted` and their calls are cancelled (the answer was not delivered, R-6.3). The
        HTTP server calls this before it stops accepting work, so callers get an explicit error
        instead of a dropped connection.
        """
        await self._approvals.interrupt_all()
        await self._interactions.interrupt_all()

    async def _retry_interrupted_call(self, server_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.call_tool(server_id, tool, arguments)

    # ----- internals -----------------------------------------------------------------------------

    def _announce(self, event: str, fields: dict[str, Any]) -> None:
        logger.info(event, extra=fields)
        self._manager.events.publish(event, **fields)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    async def _read(self) -> StoreState:
        return self._store.read_if_fresh() or await anyio.to_thread.run_sync(self._store.read)

    async def _txn(self, fn: Callable[[StoreState], T]) -> T:
        def run() -> T:
            with self._store.transaction() as state:
                return fn(state)

        return await anyio.to_thread.run_sync(run)

    def _digest(self, config: ServerConfig, state: StoreState) -> str:
        return digest_of(connection_summary(config, state.secrets, self._cipher))

    def _check_profile(self, config: ServerConfig) -> None:
        if self._unconfined_in_production(config):
            raise SandboxRequired(
                "the production profile runs stdio servers only sandboxed: give this server a sandbox policy "
                '(for example "sandbox": {"network": "none"}) and confirm the new summary (R-11.2)',
                details={
                    "server_id": config.id,
                    "profile": self.settings.profile.value,
                    "reason": ErrorReason.SANDBOX_REQUIRED.value,
                },
            )

    def _unconfined_in_production(self, config: ServerConfig) -> bool:
        """R-2.5, R-11.2: `production` starts a stdio server only with a sandbox policy."""
        return (
            isinstance(config, StdioServerConfig)
            and config.sandbox is None
            and self.settings.profile is Profile.PRODUCTION
        )

    def _needs(self, record: ServerRecord, digest: str) -> list[str]:
        needs: list[str] = []
        if self._unconfined_in_production(record.config):
            needs.append("sandbox")
        if record.trusted_digest != digest:
            needs.append("trust")
        test = record.last_test
        if test is None or not test.ok or test.digest != digest:
            needs.append("test")
        if not record.enabled:
            needs.append("enable")
        return needs

    def _add_server(self, state: StoreState, parsed: ServerBody) -> str:
        """Add one new server record and its secrets to `state` (inside a transaction); return its id."""
        config_data = dict(parsed.config)
        config_data.pop("enabled", None)
        if "id" not in config_data or config_data["id"] in (None, ""):
            base = slugify(str(config_data.get("name") or "server"))
            candidate, n = base, 2
            while candidate in state.servers:
                suffix = f"-{n}"
                candidate, n = base[: 32 - len(suffix)].rstrip("-") + suffix, n + 1
            config_data["id"] = candidate
        config = parse_server_config(config_data)
        if config.id in state.servers:
            raise ServerExists(f"a server with id '{config.id}' already exists", details={"server_id": config.id})
        self._write_secret_values(state, config, parsed.secrets)
        now = _now()
        state.servers[config.id] = ServerRecord(config=config, version=1, created_at=now, updated_at=now)
        return config.id

    def _changed(self, record: ServerRecord, config: ServerConfig, *, high_risk: bool) -> ServerRecord:
        update: dict[str, Any] = {"config": config, "version": record.version + 1, "updated_at": _now()}
        if high_risk:
            update.update(trusted_digest=None, last_test=None, enabled=False)
        return record.model_copy(update=update)

    def _write_secret_values(self, state: StoreState, config: ServerConfig, values: SecretValues) -> None:
        errors: list[FieldError] = []
        writes: list[tuple[SecretKind, str, str]] = []
        if values.env:
            if not isinstance(config, StdioServerConfig):
                errors.append(
                    FieldError("secret_values.env", "SECRET_KIND_INVALID", "env secrets are for stdio servers")
                )
            writes += [(SecretKind.ENV, k, v) for k, v in values.env.items()]
        if values.headers:
            if isinstance(config, StdioServerConfig):
                errors.append(
                    FieldError("secret_values.headers", "SECRET_KIND_INVALID", "header secrets are for remote servers")
                )
            writes += [(SecretKind.HEADER, k, v) for k, v in values.headers.items()]
        if values.bearer_token is not None:
            if isinstance(config, StdioServerConfig) or not isinstance(config.auth, AuthBearer):
                errors.append(
                    FieldError(
                        "secret_values.bearer_token",
                        "SECRET_KIND_INVALID",
                        "needs a remote server with auth.kind 'bearer'",
                    )
                )
            writes.append((SecretKind.BEARER, BEARER_KEY, values.bearer_token))
        if values.oauth:
            if isinstance(config, StdioServerConfig) or not isinstance(config.auth, AuthOAuth):
                errors.append(
                    FieldError(
                        "secret_values.oauth", "SECRET_KIND_INVALID", "needs a remote server with auth.kind 'oauth'"
                    )
                )
            elif "private_key" in values.oauth:
                check_private_key(values.oauth["private_key"], config.auth.jwt_signing_algorithm)
            writes += [(SecretKind.OAUTH_CLIENT, k, v) for k, v in values.oauth.items()]
        if errors:
            raise ConfigInvalid(errors)
        for kind, key, value in writes:
            internal = secret_id(kind, config.id, key)
            self._redactor.add(value)
            state.secrets[internal] = self._cipher.seal(value, associated_data=internal)

    def _drop_undeclared_secrets(self, state: StoreState, config: ServerConfig) -> None:
        keep = {secret_id(kind, config.id, key) for kind, key in secret_slots(config)}
        for internal in state.secret_ids_of(config.id):
            if internal not in keep and not internal.startswith(f"mcp.{SecretKind.OAUTH.value}."):
                del state.secrets[internal]
        OAuthService.purge_stale(state, config)  # OAuth credentials live only with the current binding

    def _decrypt(self, state: StoreState, kind: SecretKind, server_id: str, key: str) -> str | None:
        internal = secret_id(kind, server_id, key)
        token = state.secrets.get(internal)
        if token is None:
            return None
        value = self._cipher.open(token, associated_data=internal)
        self._redactor.add(value)
        return value

    def _spec(self, config: ServerConfig, state: StoreState, digest: str) -> ConnectionSpec:
        summary_timeout = config.effective_startup_timeout_s
        if isinstance(config, StdioServerConfig):
            summary = connection_summary(config, state.secrets, self._cipher)
            env = dict(config.env)
            for key in config.secret_env:
                value = self._decrypt(state, SecretKind.ENV, config.id, key)
                if value is not None:
                    env[key] = value
            program = summary.get("command_path") or config.command
            return ConnectionSpec(
                server_id=config.id,
                transport=TransportKind.STDIO,
                digest=digest,
                argv=(program, *config.args),
                env=env,
                cwd=config.cwd,
                sandbox=sandbox_spec(config, self.settings),
                startup_timeout_s=summary_timeout,
                call_timeout_s=config.call_timeout_s,
                max_result_bytes=config.max_result_bytes,
            )
        headers = dict(config.headers)
        for key in config.secret_headers:
            value = self._decrypt(state, SecretKind.HEADER, config.id, key)
            if value is not None:
                headers[key] = value
        if isinstance(config.auth, AuthBearer):
            token = self._decrypt(state, SecretKind.BEARER, config.id, BEARER_KEY)
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
        auth = self.oauth.runtime_auth(config, state) if isinstance(config.auth, AuthOAuth) else None
        return ConnectionSpec(
            server_id=config.id,
            transport=TransportKind(config.transport),
            digest=digest,
            url=config.url,
            headers=headers,
            auth=auth,
            startup_timeout_s=summary_timeout,
            call_timeout_s=config.call_timeout_s,
            max_result_bytes=config.max_result_bytes,
        )

    def _desired_spec(self, state: StoreState, server_id: str) -> ConnectionSpec | None:
        record = state.servers.get(server_id)
        if record is None or not record.enabled:
            return None
        digest = self._digest(record.config, state)
        needs = self._needs(record, digest)
        if needs:
            return None
        return self._spec(record.config, state, digest)

    async def _reconcile(self, server_id: str) -> None:
        lock = self._reconcile_locks.setdefault(server_id, anyio.Lock())
        async with lock:

            def desired() -> ConnectionSpec | None:
                return self._desired_spec(self._store.read(), server_id)

            try:
                spec = await self._in_thread(desired)
            except CenterError:
                logger.exception("server.reconcile_failed", extra={"server_id": server_id})
                spec = None
            if spec is None and await self._approvals.cancel_server(server_id):
                # Approving them could only fail now: their cards go instead of waiting.
                logger.info("approvals.cancelled_for_server", extra={"server_id": server_id})
            await self._manager.configure(server_id, spec)

    async def _reconcile_all(self) -> None:
        state = await self._read()
        for server_id in sorted(set(state.servers) | set(self._manager.configured())):
            await self._reconcile(server_id)

    async def _connect_quietly(self, server_id: str) -> None:
        try:
            await self._manager.connect(server_id)
        except CenterError as exc:
            logger.info("server.connect_failed", extra={"server_id": server_id, "code": exc.code})

    async def _after_authorization(self, server_id: str) -> None:
        """An authorization was committed or forgotten: announce `server.oauth`, reconcile, reconnect.

        `server.oauth` (`{"server_id"}`, no token, scope or code) tells the settings page that the
        view's `oauth` block changed, so an open Authorization tab shows the result at once (R-4.9, R-3.11).
        """
        self._announce("server.oauth", {"server_id": server_id})
        await self._reconcile(server_id)
        if server_id in self._manager.configured():
            await self._manager.disconnect(server_id)
            if self._tg is not None:
                self._tg.start_soon(self._connect_quietly, server_id)

    async def _watch_store(self) -> None:
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
                        await self._servers_changed()
                except CenterError:
                    logger.exception("store.change_failed", extra={"sections": sorted(changed)})

    async def _servers_changed(self) -> None:
        await self._reconcile_all()
        # for changes made by another process (the CLI enabled a server): a runnable
        # connect_on_startup server that is not connected connects now, as at start-up.
        state = await self._read()
        for server_id in self._manager.configured():
            record = state.servers.get(server_id)
            if (
                record is not None
                and record.config.connect_on_startup
                and self._manager.status(server_id).state is ConnectionState.DISCONNECTED
                and self._tg is not None
            ):
                self._tg.start_soon(self._connect_quietly, server_id)

    async def _runnable(self, server_id: str) -> ServerRecord:
        def run() -> ServerRecord:
            state = self._store.read()
            record = _get(state, server_id)
            self._check_profile(record.config)
            if not record.enabled:
                raise ServerDisabled(f"server '{server_id}' is not enabled", details={"server_id": server_id})
            digest = self._digest(record.config, state)
            needs = self._needs(record, digest)
            if "trust" in needs:
                raise ServerNotTrusted(
                    f"server '{server_id}' changed since it was trusted; confirm the new summary",
                    details={"needs": needs},
                )
            if "test" in needs:
                raise ServerNotTested(f"server '{server_id}' needs a successful test", details={"needs": needs})
            return record

        return await self._in_thread(run)

    def _view(self, record: ServerRecord, state: StoreState) -> dict[str, Any]:
        config = record.config
        summary = connection_summary(config, state.secrets, self._cipher)
        digest = digest_of(summary)
        view: dict[str, Any] = _editable(config)
        if isinstance(config, StdioServerConfig):
            view["secret_env"] = {k: {"configured": v["configured"]} for k, v in summary["secret_env"].items()}
        else:
            view["secret_headers"] = {k: {"configured": v["configured"]} for k, v in summary["secret_headers"].items()}
            if isinstance(config.auth, AuthBearer):
                view["auth"] = {"kind": "bearer", "token": {"configured": summary["auth"]["token"]["configured"]}}
            elif isinstance(config.auth, AuthOAuth):
                configured = summary["auth"]
                view["auth"].update({k: {"configured": configured[k]["configured"]} for k in OAUTH_CLIENT_SECRET_KEYS})
                view["oauth"] = self.oauth.status(config, state)
        last_test = record.last_test.model_dump(mode="json") if record.last_test else None
        view.update(
            enabled=record.enabled,
            version=record.version,
            created_at=record.created_at.isoformat(),
            updated_at=record.updated_at.isoformat(),
            trusted_digest=record.trusted_digest,
            trusted=record.trusted_digest == digest,
            last_test=last_test,
            tested=bool(record.last_test and record.last_test.ok and record.last_test.digest == digest),
            summary=summary,
            digest=digest,
            needs=self._needs(record, digest),
            warnings=_warnings(summary) + sandbox_warnings(config, summary, self.settings),
            status=self._manager.status(config.id).to_dict(),
        )
        if isinstance(config, StdioServerConfig):
            view["sandbox_host"] = host_facts(config)
        return view


def _warnings(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Problems the user should see before trusting: they do not block, but the test will fail."""
    warnings: list[dict[str, str]] = []
    if summary.get("transport") == "stdio" and summary.get("command_path") is None:
        warnings.append(
            {
                "code": "COMMAND_NOT_FOUND",
                "message": f"'{summary.get('command')}' was not found on the host's PATH; "
                "install it (or use an absolute path) before testing",
            }
        )
    url = summary.get("url")
    if isinstance(url, str) and not url.isascii():
        warnings.append(
            {
                "code": "URL_NOT_ASCII",
                "message": f"the URL has non-ASCII characters; it connects to {summary.get('origin')} "
                "(check that this is the site you expect)",
            }
        )
    if isinstance(url, str):
        warnings += [
            {
                "code": "URL_QUERY_CREDENTIAL",
                "message": f"query parameter '{name}' looks like a credential; it is stored in plain text with "
                "the URL and shown in summaries and exports (prefer a secret header if the server accepts one)",
            }
            for name in credential_query_params(url)
        ]
    for kind, label in (("env", "environment variable"), ("headers", "header")):
        for name, value in (summary.get(kind) or {}).items():
            if is_credential_name(name) or (isinstance(value, str) and is_credential_value(value)):
                warnings.append(
                    {
                        "code": "CREDENTIAL_IN_PLAIN_FIELD",
                        "message": f"the {label} '{name}' looks like a credential but is stored in plain text "
                        "and shown in summaries and exports: make it a secret (write-only, encrypted)",
                    }
                )
    for i, arg in enumerate(summary.get("args") or []):
        if isinstance(arg, str) and is_credential_value(arg):
            warnings.append({"code": "CREDENTIAL_IN_ARGS", "message": f"argument {i + 1} {CREDENTIAL_IN_ARGS_MESSAGE}"})
    for kind in ("secret_env", "secret_headers"):
        for name, entry in (summary.get(kind) or {}).items():
            if not entry.get("configured"):
                warnings.append({"code": "SECRET_NOT_SET", "message": f"the secret '{name}' has no value yet"})
    return warnings


def _collect_orphans(store: Store) -> None:
    """Delete ciphertexts whose server no longer exists (R-1.5: deleting a server deletes its secrets)."""
    with store.transaction() as state:
        for sid in state.orphaned_secrets():
            del state.secrets[sid]


def _get(state: StoreState, server_id: str) -> ServerRecord:
    record = state.servers.get(server_id)
    if record is None:
        raise ServerNotFound(
            f"no server with id '{server_id}'",
            details={"server_id": server_id, "did_you_mean": did_you_mean(server_id, state.servers)},
        )
    return record


def _check_version(record: ServerRecord, version: int | None) -> None:
    if version is not None and version != record.version:
        raise ServerVersionConflict(
            f"server '{record.id}' was changed by someone else (you read version {version}, it is now "
            f"{record.version}); reload and apply your change again",
            details={"server_id": record.id, "your_version": version, "current_version": record.version},
        )


def _editable(config: ServerConfig) -> dict[str, Any]:
    return config.model_dump(mode="json")


def _secret_kind(kind: str) -> SecretKind:
    try:
        return SECRET_KINDS[kind]
    except KeyError:
        raise RequestInvalid(
            "kind: must be 'environment', 'header', 'bearer' or 'oauth'",
            details={
                "errors": [
                    FieldError("kind", "FIELD_INVALID", "must be environment, header, bearer or oauth").to_dict()
                ]
            },
        ) from None


def _declare_secret(config: ServerConfig, kind: SecretKind, key: str) -> ServerConfig:
    """Return `config` with `key` declared as a secret of `kind` (a plain env var of that name becomes secret)."""
    if kind is SecretKind.ENV:
        if not isinstance(config, StdioServerConfig):
            raise SecretKeyInvalid("environment secrets are for stdio servers", details={"kind": "environment"})
        if not ENV_NAME_PATTERN.fullmatch(key):
            raise SecretKeyInvalid(f"'{key}' is not a valid env var name", details={"key": key})
        env = {k: v for k, v in config.env.items() if k != key}
        declared = config.secret_env if key in config.secret_env else [*config.secret_env, key]
        return config.model_copy(update={"env": env, "secret_env": declared})
    if isinstance(config, StdioServerConfig):
        raise SecretKeyInvalid(f"{kind.value} secrets are for remote servers", details={"kind": kind.value})
    if kind is SecretKind.BEARER:
        if key != BEARER_KEY or not isinstance(config.auth, AuthBearer):
            raise SecretKeyInvalid(
                "the bearer secret is named 'token' and needs auth.kind 'bearer'", details={"key": key}
            )
        return config
    if kind is SecretKind.OAUTH_CLIENT:
        if key not in OAUTH_CLIENT_SECRET_KEYS or not isinstance(config.auth, AuthOAuth):
            raise SecretKeyInvalid(
                f"OAuth secrets are {', '.join(OAUTH_CLIENT_SECRET_KEYS)} and need auth.kind 'oauth'",
                details={"key": key},
            )
        return config
    error = check_header_name(f"headers.{key}", key, managed_auth=config.auth.kind in {"bearer", "oauth"})
    if error is not None:
        raise SecretKeyInvalid(f"{error.field}: {error.message}", details={"key": key, "code": error.code})
    headers = {k: v for k, v in config.headers.items() if k.lower() != key.lower()}
    declared = (
        config.secret_headers
        if any(h.lower() == key.lower() for h in config.secret_headers)
        else [*config.secret_headers, key]
    )
    return config.model_copy(update={"headers": headers, "secret_headers": declared})
