"""Server configuration use cases: register, change, delete, secrets, trust → test → enable (R-1, R-2).

`McpCenter` is the library's facade; its server methods land here. Each write is one store
transaction (all or nothing), then an announcement on the event bus, a reconcile of the server,
and the view the caller gets back. One `Summaries` memo spans those steps, so an update computes
the old and the new connection summary once each: the reconcile, the connection spec and the
returned view reuse the new one (issue 16: it used to be four or five times, each opening every
secret).

Threats handled here: a stale page overwriting a newer configuration (version check, R-1.3); a
changed command, URL, header, env, auth or tool permission running without a new confirmation
(high-risk invalidation, R-1.4); a secret value reaching a response (values are write-only,
R-1.5). The readiness rule itself lives in `readiness.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import anyio.to_thread

from mcp_center.config import AuthOAuth, ServerConfig, Settings, StdioServerConfig, parse_server_config
from mcp_center.errors import (
    CenterError,
    ConfigInvalid,
    FieldError,
    RequestInvalid,
    ServerAlreadyRegistered,
    TrustDigestMismatch,
)
from mcp_center.runtime import ConnectionManager
from mcp_center.secrets import Redactor, SecretKind
from mcp_center.service.bodies import ServerBody, parse_secret_value, parse_server_body
from mcp_center.service.oauth import OAuthService
from mcp_center.service.readiness import Readiness
from mcp_center.service.reconcile import Reconciler
from mcp_center.service.records import (
    changed,
    check_version,
    editable,
    get_record,
    namesakes,
    new_config,
    now,
    same_server,
)
from mcp_center.service.sandboxing import remove_home, warm_up
from mcp_center.service.secret_values import (
    SecretValuesKeeper,
    declare_secret,
    parse_secret_kind,
    undeclare_secret,
    values_of,
)
from mcp_center.service.store_threads import commit, in_read_thread
from mcp_center.service.summary import Summaries
from mcp_center.service.tool_names import added_tool_names, check_tool_names
from mcp_center.service.views import ServerView, ViewWarning, server_view
from mcp_center.service.warm_ups import mark_warmed
from mcp_center.store import QuarantinedTool, ServerRecord, Store, StoreState, TestError, TestResult
from mcp_center.transports import ConnectionSpec, WarmUpResult

__all__ = ["Servers"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Servers:
    """The server configuration use cases behind `McpCenter` (R-1, R-2); see its methods for the contract.

    Args:
        settings: Host settings (profile).
        store: The source of truth.
        manager: The connection manager (status, probe, connect).
        keeper: Seals and opens secret values.
        reconciler: Brings the manager in step after each change.
        oauth: OAuth status for views; its in-memory state of a deleted server is dropped.
        summaries: A fresh per-use-case summary memo.
        announce: Publishes `(event, fields)` on the event bus and the log.
        redactor: Cleans a failed test's message and details.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        manager: ConnectionManager,
        keeper: SecretValuesKeeper,
        reconciler: Reconciler,
        oauth: OAuthService,
        summaries: Callable[[], Summaries],
        announce: Callable[[str, dict[str, Any]], None],
        redactor: Redactor,
    ) -> None:
        self._settings = settings
        self._store = store
        self._manager = manager
        self._keeper = keeper
        self._reconciler = reconciler
        self._oauth = oauth
        self._summaries = summaries
        self._announce = announce
        self._redactor = redactor

    # ----- reads ----------------------------------------------------------------------------------

    def readiness(self, record: ServerRecord, state: StoreState, summaries: Summaries) -> Readiness:
        """The record's readiness for its current digest (R-2)."""
        return Readiness(record, summaries.digest(record.config, state.secrets), self._settings.profile)

    def view(self, record: ServerRecord, state: StoreState, summaries: Summaries) -> ServerView:
        """The API view of one record (`views.server_view`)."""
        summary = summaries.of(record.config, state.secrets)
        config = record.config
        oauth = None
        if not isinstance(config, StdioServerConfig) and isinstance(config.auth, AuthOAuth):
            oauth = self._oauth.status(config, state)
        readiness = Readiness(record, summary.digest, self._settings.profile)
        # The quarantine as the live catalog has it now (a fixed server's tools leave it on its next
        # read), not the last test's: that one stays in `last_test` as what that test saw.
        conn = self._manager.current(config.id)
        quarantined = (
            None
            if conn is None
            else tuple(QuarantinedTool(name=q.name, reason=q.reason) for q in conn.catalog.quarantined["tools"])
        )
        return server_view(readiness, summary, self._manager.status(config.id), oauth, self._settings, quarantined)

    async def list(self) -> list[ServerView]:
        """Every server's view, sorted by id."""

        def run() -> list[ServerView]:
            state, memo = self._store.read(), self._summaries()
            return [self.view(r, state, memo) for r in sorted(state.servers.values(), key=lambda r: r.id)]

        return await in_read_thread(run)

    async def get(self, server_id: str, summaries: Summaries | None = None) -> ServerView:
        """One server's view. Raises ServerNotFound."""
        memo = summaries or self._summaries()

        def run() -> ServerView:
            state = self._store.read()
            return self.view(get_record(state, server_id), state, memo)

        return await in_read_thread(run)

    async def runnable(self, server_id: str) -> ServerRecord:
        """The record of a server that may run now (`Readiness.require_runnable`)."""

        def run() -> ServerRecord:
            state = self._store.read()
            record = get_record(state, server_id)
            self.readiness(record, state, self._summaries()).require_runnable()
            return record

        return await in_read_thread(run)

    # ----- configuration writes -------------------------------------------------------------------

    def _add(self, state: StoreState, parsed: ServerBody) -> str:
        config = new_config(state, parsed.config)
        self._keeper.write(state, config, parsed.secrets)
        stamp = now()
        state.servers[config.id] = ServerRecord(config=config, version=1, created_at=stamp, updated_at=stamp)
        return config.id

    async def create(self, body: object, *, refuse_twin: bool = True) -> ServerView:
        """Register one server (R-1.1); it starts untrusted, untested and disabled (R-2).

        A server already named so gets the next free id (`-2`, ...) and the returned view a
        `SERVER_NAME_SHARED` warning naming the others; with `refuse_twin` and no `id` in the body,
        one whose whole configuration is the same too is refused (`ServerAlreadyRegistered` naming
        the oldest such server): a create sent twice (a retried POST, a pasted `add`) makes no copy.
        """
        parsed = parse_server_body(body, require_version=False)
        explicit = parsed.config.get("id") not in (None, "")

        def run(state: StoreState) -> tuple[str, list[str]]:
            same, twins = namesakes(state, new_config(state, parsed.config))
            given = parsed.secrets
            has_secrets = bool(given.env or given.headers or given.oauth or given.bearer_token is not None)
            if refuse_twin and twins and not explicit:
                raise ServerAlreadyRegistered(
                    f"'{twins[0]}' is already registered with this name and configuration: nothing was added; "
                    "give it a new id to register a second copy"
                    + ("; its secret values are changed with 'secret set'" if has_secrets else ""),
                    details={"server_id": twins[0], "same_config": twins},
                )
            return self._add(state, parsed), same

        server_id, same = await self._txn(run)
        self._announce("server.created", {"server_id": server_id})
        view = await self.get(server_id)
        if not same:
            return view
        note = ViewWarning(
            "SERVER_NAME_SHARED",
            f"another server is already named '{view.config.name}' ({', '.join(same)}); both show that name",
        )
        return replace(view, warnings=(*view.warnings, note))

    async def create_many(self, plan: Callable[[Mapping[str, ServerConfig]], Sequence[object]]) -> list[ServerView]:
        """Register several servers in one transaction: all of them or none (R-1.8, R-7.3)."""

        def run(state: StoreState) -> list[str]:
            bodies = plan({server_id: record.config for server_id, record in state.servers.items()})
            return [self._add(state, parse_server_body(body, require_version=False)) for body in bodies]

        server_ids = await self._txn(run)
        for server_id in server_ids:
            self._announce("server.created", {"server_id": server_id})
        memo = self._summaries()
        return [await self.get(server_id, memo) for server_id in server_ids]

    async def update(self, server_id: str, body: object, *, partial: bool) -> ServerView:
        """Replace or merge a configuration (R-1.3, R-1.4): one old and one new summary per change."""
        parsed = parse_server_body(body, require_version=True)
        if "id" in parsed.config and parsed.config["id"] != server_id:
            raise ConfigInvalid([FieldError("id", "ID_IMMUTABLE", "cannot be changed; create a new server instead")])
        parsed.config.pop("enabled", None)
        memo = self._summaries()

        def run(state: StoreState) -> tuple[bool, ViewWarning | None]:
            record = get_record(state, server_id)
            check_version(record, parsed.version)
            data = editable(record.config) if partial else {}
            data.update(parsed.config)
            data["id"] = server_id
            config = parse_server_config(data)
            # A policy or switch for a tool the server does not list: refused before anything is
            # written (issue 16, R-5.3); unchecked, with a warning, while no catalogue is known.
            known, from_test = self._tool_names(record, config)
            unknown = check_tool_names(server_id, added_tool_names(record.config, config), known, from_test=from_test)
            old_digest = memo.digest(record.config, state.secrets)
            self._keeper.write(state, config, parsed.secrets)
            self._keeper.drop_undeclared(state, config)
            high_risk = old_digest != memo.digest(config, state.secrets)
            state.servers[server_id] = changed(record, config, high_risk=high_risk)
            return high_risk, unknown

        high_risk, unknown = await self._txn(run)
        self._announce("server.updated", {"server_id": server_id, "high_risk": high_risk})
        await self._reconciler.reconcile(server_id, memo)
        view = await self.get(server_id, memo)
        return view if unknown is None else replace(view, warnings=(*view.warnings, unknown))

    def _tool_names(self, record: ServerRecord, config: ServerConfig) -> tuple[list[str] | None, bool]:
        """The tool catalogue a change to `config` is checked against, and whether it is the last
        test's: the live session's tools, else the last successful test's (`known_tools`); None when
        neither is known or the change is not to the same server (another command lists other tools)."""
        if not same_server(record.config, config):
            return None, False
        conn = self._manager.current(record.config.id)
        if conn is not None:
            return [tool.name for tool in conn.catalog.tools], False
        return (None, False) if record.known_tools is None else (list(record.known_tools), True)

    async def delete(self, server_id: str, *, version: int | None) -> None:
        """Delete a server, its ciphertexts and its connection (R-1.5, R-2.4)."""

        def run(state: StoreState) -> ServerRecord:
            record = get_record(state, server_id)
            check_version(record, version)
            del state.servers[server_id]
            for sid in state.secret_ids_of(server_id):
                del state.secrets[sid]
            return record

        deleted = await self._txn(run)
        self._announce("server.deleted", {"server_id": server_id})
        self._oauth.drop_server(server_id)
        await self._reconciler.reconcile(server_id)
        self._manager.forget(server_id)
        # After the connection closed: its sandbox home and /tmp go with the server; other
        # instances remove their copies when they learn of the deletion (`sweep_homes`).
        await anyio.to_thread.run_sync(lambda: remove_home(self._settings, deleted))

    async def set_secret(
        self, server_id: str, kind: str, key: str, value: object, *, version: int | None
    ) -> ServerView:
        """Set one secret value (write-only, R-1.5), declaring the key; high-risk when the digest changes."""
        secret_kind = parse_secret_kind(kind)
        plain = parse_secret_value("value", value, header=secret_kind in (SecretKind.HEADER, SecretKind.BEARER))
        memo = self._summaries()

        def run(state: StoreState) -> None:
            record = get_record(state, server_id)
            check_version(record, version)
            config = declare_secret(record.config, secret_kind, key)
            old_digest = memo.digest(record.config, state.secrets)
            self._keeper.write(state, config, values_of(secret_kind, key, plain))
            high_risk = old_digest != memo.digest(config, state.secrets)
            state.servers[server_id] = changed(record, config, high_risk=high_risk)

        await self._txn(run)
        self._announce("server.secret_set", {"server_id": server_id, "kind": kind})
        await self._reconciler.reconcile(server_id, memo)
        return await self.get(server_id, memo)

    async def delete_secret(self, server_id: str, kind: str, key: str, *, version: int | None) -> ServerView:
        """Delete one secret: its ciphertext and its declaration (R-1.5). Always high-risk."""
        secret_kind = parse_secret_kind(kind)

        def run(state: StoreState) -> None:
            record = get_record(state, server_id)
            check_version(record, version)
            config = undeclare_secret(state, record.config, secret_kind, kind, key)
            state.servers[server_id] = changed(record, config, high_risk=True)

        await self._txn(run)
        self._announce("server.secret_deleted", {"server_id": server_id, "kind": kind})
        await self._reconciler.reconcile(server_id)
        return await self.get(server_id)

    # ----- trust, test, enable --------------------------------------------------------------------

    async def trust(self, server_id: str, digest: object) -> ServerView:
        """Confirm the summary the user saw (R-2.1); confirming the digest already trusted writes
        nothing (no new `updated_at`, no event)."""
        if not isinstance(digest, str) or not digest:
            raise RequestInvalid(
                "digest: send the digest of the summary you confirmed",
                details={"errors": [FieldError("digest", "FIELD_REQUIRED", "is required").to_dict()]},
            )
        memo = self._summaries()

        def run(state: StoreState) -> bool:
            record = get_record(state, server_id)
            current = memo.digest(record.config, state.secrets)
            if digest != current:
                raise TrustDigestMismatch(
                    "the digest you confirmed is not the current connection summary's (it changed since you "
                    "read it, or the digest was never its); review the current summary and confirm its digest",
                    details={"current_digest": current},
                )
            if record.trusted_digest == current:
                return False
            state.servers[server_id] = record.model_copy(update={"trusted_digest": current, "updated_at": now()})
            return True

        if not await self._txn(run):
            return await self.get(server_id, memo)
        self._announce("server.trusted", {"server_id": server_id})
        await self._reconciler.reconcile(server_id, memo)
        return await self.get(server_id, memo)

    async def test(self, server_id: str) -> TestResult:
        """Probe the server with a temporary connection and store the result with its digest (R-2.2)."""
        memo = self._summaries()
        spec = await in_read_thread(lambda: self._trusted_spec(server_id, memo, "testing"))
        digest = spec.digest
        started = now()
        names: tuple[str, ...] | None = None
        try:
            probe = await self._manager.probe(spec)
            names = tuple(sorted({tool.name for tool in probe.tools}))
            result = TestResult(
                ok=True,
                digest=digest,
                tested_at=now(),
                elapsed_ms=probe.elapsed_ms,
                tool_count=len(probe.tools),
                server_name=probe.server_name,
                server_version=probe.server_version,
                protocol_version=probe.protocol_version,
                quarantined=tuple(QuarantinedTool(name=q.name, reason=q.reason) for q in probe.quarantined),
            )
        except CenterError as exc:
            elapsed = int((now() - started).total_seconds() * 1000)
            error = TestError(
                code=exc.code,
                reason=exc.details.get("reason"),
                message=self._redactor.redact(exc.message),
                details=self._redactor.redact_obj(exc.details),
            )
            result = TestResult(ok=False, digest=digest, tested_at=now(), elapsed_ms=elapsed, error=error)

        def store(state: StoreState) -> None:
            record = state.servers.get(server_id)
            if record is None or memo.digest(record.config, state.secrets) != digest:
                return  # the configuration changed while the test ran: not stored
            update: dict[str, Any] = {"last_test": result, "updated_at": now()}
            if names is not None:  # the catalogue policies and switches are checked against (issue 16)
                update["known_tools"] = names
            state.servers[server_id] = record.model_copy(update=update)

        await self._txn(store)
        self._announce("server.tested", {"server_id": server_id, "ok": result.ok})
        await self._reconciler.reconcile(server_id, memo)
        return result

    async def warm_up(self, server_id: str) -> WarmUpResult:
        """Fill a sandboxed npx/uvx server's package caches inside its sandbox (R-11.1); needs trust.

        A success marks this home and stamps the record (`warmed_up_at`), in that order: the other
        instances warm their own homes (`service.warm_ups`, R-10.2), this one does not again. A
        record replaced or deleted meanwhile is not stamped.
        """
        record, spec = await in_read_thread(lambda: self._warm_up_target(server_id))
        stamp = now()
        result = await warm_up(spec, self._redactor)
        if not result.ok or spec.sandbox is None:
            return result
        await anyio.to_thread.run_sync(mark_warmed, spec.sandbox.root, stamp)

        def stamped(state: StoreState) -> None:
            current = state.servers.get(server_id)
            if current is not None and current.created_at == record.created_at:
                state.servers[server_id] = current.model_copy(update={"warmed_up_at": stamp})

        await self._txn(stamped)
        return result

    def warm_up_spec(self, server_id: str) -> ConnectionSpec:
        """The trusted connection spec a warm-up of `server_id` runs with (blocking).

        Raises:
            ServerNotFound; ServerNotTrusted; SandboxRequired (see `_trusted_spec`).
        """
        return self._trusted_spec(server_id, self._summaries(), "warming up its sandbox")

    def _warm_up_target(self, server_id: str) -> tuple[ServerRecord, ConnectionSpec]:
        spec = self.warm_up_spec(server_id)
        return get_record(self._store.read(), server_id), spec

    def _trusted_spec(self, server_id: str, memo: Summaries, doing: str) -> ConnectionSpec:
        """The server's connection spec, read now (blocking: run it in a worker thread).

        Raises:
            ServerNotFound: no such server.
            SandboxRequired: the profile runs only sandboxed servers (R-2.5).
            ServerNotTrusted: its current digest is not the trusted one (`doing` says what needed
                the trust, R-2.1, R-2.3).
        """
        state = self._store.read()
        record = get_record(state, server_id)
        summary = memo.of(record.config, state.secrets)
        Readiness(record, summary.digest, self._settings.profile).require_trusted(doing)
        return self._reconciler.spec(record, state, summary)

    async def enable(self, server_id: str) -> ServerView:
        """Enable a trusted, tested server and connect it (R-2.3)."""
        memo = self._summaries()

        def run(state: StoreState) -> None:
            record = get_record(state, server_id)
            self.readiness(record, state, memo).require_tested("enabling")
            if not record.enabled:
                state.servers[server_id] = record.model_copy(update={"enabled": True, "updated_at": now()})

        await self._txn(run)
        self._announce("server.enabled", {"server_id": server_id})
        await self._reconciler.reconcile(server_id, memo)
        await self._reconciler.connect_quietly(server_id)
        return await self.get(server_id, memo)

    async def disable(self, server_id: str) -> ServerView:
        """Disable a server: close its connection, unregister its tools (R-2.4)."""

        def run(state: StoreState) -> None:
            record = get_record(state, server_id)
            if record.enabled:
                state.servers[server_id] = record.model_copy(update={"enabled": False, "updated_at": now()})

        await self._txn(run)
        self._announce("server.disabled", {"server_id": server_id})
        await self._reconciler.reconcile(server_id)
        return await self.get(server_id)

    async def _txn(self, fn: Callable[[StoreState], T]) -> T:
        return await commit(self._store, fn)
