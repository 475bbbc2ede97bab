"""Capabilities for agents: the tool registry, agent calls through approvals, prompts, resources (R-5).

The registry (`registry/`, pure) is rebuilt from what the connection manager and the store know:
every ready server's validated catalog (R-3.6) and its tool settings. It is rebuilt whenever its
inputs changed — servers.json (also when another process wrote it), a connection, a catalog
generation — and a watcher rebuilds it on every `server.*` event (catalog refreshes, state and
configuration changes) to announce `tools.changed` when the names, definitions or policies agents
see changed.

Agent-initiated calls (`call`) go through the user's policy (R-5.3): `deny` refuses, `allow`
calls, `ask` (the default) waits for an approval first. Settings are re-read from the store at
call time, so a policy or a disabled tool the user changed a moment ago counts. User-initiated
calls do not come through here (`McpCenter.call_tool`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

import anyio
import anyio.to_thread
import mcp_types as types
import orjson
from mcp.shared.dispatcher import ProgressFnT

from mcp_center.config import ServerConfig
from mcp_center.errors import (
    ApprovalStale,
    CenterError,
    FieldError,
    PromptNotFound,
    RequestInvalid,
    ResourceNotFound,
    ServerNotFound,
    ServerRequestFailed,
    ServerTimeout,
    ToolDenied,
    ToolDisabled,
    ToolNotFound,
    did_you_mean,
)
from mcp_center.models import ConnectionState, ErrorReason
from mcp_center.registry import (
    EXPORT_FORMATS,
    ExportFormat,
    PromptEntry,
    RegisteredTool,
    ServerTools,
    ToolRegistry,
    build_prompts,
    build_resources,
    search_resources,
    split_prompt_name,
    template_matches,
    tool_prefix,
)
from mcp_center.runtime import Catalog, Category, ConnectionManager
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.bodies import check_json_safe
from mcp_center.service.interactions import Elicitor, InteractionBroker, RootsLister, Sampler
from mcp_center.service.untrusted import DEFAULT_MAX_CONTEXT_BYTES, MAX_CONTEXT_BYTES, prompt_block, resource_block
from mcp_center.store import ServerRecord, Store, StoreState

__all__ = ["DEFAULT_RESOURCE_LIMIT", "MAX_RESOURCE_LIMIT", "Capabilities"]

logger = logging.getLogger(__name__)

DEFAULT_RESOURCE_LIMIT = 50
MAX_RESOURCE_LIMIT = 500
MAX_URI_CHARS = 8192
RESOURCE_NOT_FOUND_RPC_CODES = frozenset({-32002, -32602})
"""JSON-RPC errors a server answers `resources/read` with for a resource it does not have: MCP's
"resource not found", and "invalid params", which SDK servers send for an unknown URI (R-5.5)."""
LAZY_CONNECT_WAIT_S = 10.0
"""Seconds a read waits for enabled servers that are not connected yet (R-3.2) before answering without them."""


def _invalid(field: str, code: str, message: str) -> RequestInvalid:
    return RequestInvalid(f"{field}: {message}", details={"errors": [FieldError(field, code, message).to_dict()]})


def check_max_bytes(max_bytes: object) -> int:
    """The size bound a caller asked for, or the default.

    Raises:
        RequestInvalid: not an integer between 1 and `MAX_CONTEXT_BYTES`.
    """
    if max_bytes is None:
        return DEFAULT_MAX_CONTEXT_BYTES
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or not 1 <= max_bytes <= MAX_CONTEXT_BYTES:
        raise _invalid("max_bytes", "FIELD_INVALID", f"must be an integer from 1 to {MAX_CONTEXT_BYTES}")
    return max_bytes


class Capabilities:
    """Registry upkeep and the agent-facing use cases. Built and owned by `McpCenter`."""

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
        if connect:
            await self._connect_lazy()
        stamp = self._store.stamp("servers")  # two stats: cheaper than a thread hop on every call
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
        return self._registry

    def _catalog_key(self) -> tuple[tuple[str, str | None, int], ...]:
        key: list[tuple[str, str | None, int]] = []
        for server_id in sorted(self._manager.configured()):
            conn = self._manager.current(server_id)
            if conn is None:
                key.append((server_id, None, -1))
            else:
                key.append((server_id, conn.connection_id, conn.catalog.generation["tools"]))
        return tuple(key)

    async def _server_records(self) -> Mapping[str, ServerRecord]:
        """The servers section as stored now: re-read when its change stamp moved (two `stat` calls
        on a JSON store), so a tool disabled or denied a moment ago counts (R-5.2). Read-only."""
        stamp = self._store.stamp("servers")  # taken first: a commit racing the read only causes a re-read
        cached = self._servers
        if cached is not None and cached[0] == stamp:
            return cached[1]
        servers = (await self._read()).servers
        self._servers = (stamp, servers)
        return servers

    async def _read(self) -> StoreState:
        """The store's state: from its cache when nothing changed (no thread hop), else read in a thread."""
        return self._store.read_if_fresh() or await anyio.to_thread.run_sync(self._store.read)

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

    # ----- tools ---------------------------------------------------------------------------------

    async def tools(self, fmt: object = "center") -> dict[str, Any]:
        """The tools agents see (`EXPORT_FORMATS`), alias table, names needing approval (R-5.1, R-5.3, R-5.6).

        Raises: RequestInvalid (an unknown format).
        """
        if fmt not in EXPORT_FORMATS:
            raise _invalid("format", "FIELD_INVALID", "must be one of: " + ", ".join(EXPORT_FORMATS))
        export_format: ExportFormat = fmt
        registry = await self.registry()
        tools, aliases, asks = registry.export(export_format), registry.aliases_dict(), registry.approval_required()
        return {"format": export_format, "tools": tools, "aliases": aliases, "approval_required": asks}

    async def call_result(
        self,
        name: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        caller_allowed: Callable[[], bool] | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> types.CallToolResult:
        """An agent-initiated call of an exposed tool name, through the user's policy (R-5.3).

        `progress` receives the server's progress notifications; `elicitor` answers the server's
        form elicitations for this call instead of a card (both for the gateway, R-8.1).
        `caller_allowed()` says whether the caller may still call (the gateway: its token is not
        revoked); it is asked again once an approval was granted. `caller` says who asks, for the
        approval card (`ApprovalRecord.caller`: the gateway token and the agent's clientInfo).

        An approval covers the call as the user saw it: once granted, the server record is read
        again, and if it was deleted or re-created, or its confirmed digest (which covers tool
        permissions, R-1.4) changed, or the caller is no longer allowed, the call is not sent.

        Raises:
            ToolNotFound, ToolDisabled, ToolDenied, RequestInvalid; ApprovalDenied,
            ApprovalExpired, CallCancelled, CallInterrupted (while waiting); ApprovalStale (approved,
            but the server or the caller changed meanwhile); and the call's own errors.
        """
        entry, args, op_id, _policy = await self._admit(name, arguments, operation_id, caller_allowed, caller=caller)
        async with self._interactions.tracking(
            server_id=entry.server_id,
            tool=entry.tool.name,
            arguments=args,
            operation_id=op_id,
            caller="agent",
            exposed_name=entry.name,
            elicitor=elicitor,
        ):
            result = await self._manager.call_tool(
                entry.server_id, entry.tool.name, args, operation_id=op_id, progress=progress
            )
        return result

    async def forward_call(
        self,
        name: str,
        arguments: object = None,
        *,
        server_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        sampler: Sampler | None = None,
        roots: RootsLister | None = None,
        caller_allowed: Callable[[], bool] | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`call_result` for the gateway's lean path: the same policy, the raw result (R-8.1, R-8.3).

        Args:
            name: The exposed name, or with `server_id` the server's own tool name (`/mcp/{id}`, R-8.4).
            meta: The agent's `_meta` (its `progressToken` is replaced by ours when `progress` is given).
            sampler, roots: Answer the server's `sampling/createMessage` / `roots/list` during this
                call (R-8.5); sampling waits for an approval first when the tool's policy is `ask`.
            caller: Who asks, for the approval card (the gateway token and the agent's clientInfo).
        Returns:
            The server's `CallToolResult` as JSON (bounded, R-3.9).
        Raises:
            As `call_result`; `ServerRequestFailed` with `rpc_error` when the server answered a
            JSON-RPC error.
        """
        entry, args, op_id, policy = await self._admit(
            name, arguments, operation_id, caller_allowed, server_id, caller=caller
        )
        if sampler is not None and policy == "ask":
            sampler = self._approved_sampler(sampler, entry, op_id)
        params: dict[str, Any] = {"name": entry.tool.name, "arguments": args}
        if meta:
            kept = {k: v for k, v in meta.items() if k != "progressToken"}
            if kept:
                params["_meta"] = kept
        async with self._interactions.tracking(
            server_id=entry.server_id,
            tool=entry.tool.name,
            arguments=args,
            operation_id=op_id,
            caller="agent",
            exposed_name=entry.name,
            elicitor=elicitor,
            sampler=sampler,
            roots=roots,
        ):
            return await self._manager.forward(
                entry.server_id, "tools/call", params, operation_id=op_id, progress=progress
            )

    def _approved_sampler(self, sampler: Sampler, entry: RegisteredTool, op_id: str) -> Sampler:
        """`sampler` behind a human approval, as the tool's `ask` policy asks for its calls (R-8.5)."""

        async def ask_first(params: dict[str, Any]) -> dict[str, Any]:
            await self._approvals.wait(
                tool=entry.name,
                server_id=entry.server_id,
                server_tool="sampling/createMessage",
                arguments=params,
                hints={"during_call_of": entry.tool.name},
                operation_id=f"{op_id}-sampling-{uuid.uuid4().hex[:8]}",
            )
            return await sampler(params)

        return ask_first

    async def _admit(
        self,
        name: str,
        arguments: object,
        operation_id: str | None,
        caller_allowed: Callable[[], bool] | None,
        server_id: str | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> tuple[RegisteredTool, dict[str, Any], str, str]:
        """Check a call against the user's settings and wait for its approval (R-5.2, R-5.3).

        Returns:
            `(tool, arguments, operation id, policy)`.
        """
        if arguments is None:
            arguments = {}
        check_json_safe(arguments, "arguments")
        if not isinstance(arguments, dict):
            raise _invalid("arguments", "FIELD_INVALID", "must be a JSON object")
        args = cast(dict[str, Any], arguments)
        op_id = operation_id or uuid.uuid4().hex
        # Admitted before anything waits (a lazy or reconnecting server, the approval), so a cancel by
        # operation id ends every wait of this call. The call itself is admitted again by the
        # runtime inside `tracking`, which turns a cancel by a host shutdown into CallInterrupted; a
        # cancel arriving between the two is remembered and refuses the call.
        with self._manager.operations.admit(op_id):
            entry, policy = await self._prepare_call(name, args, op_id, caller_allowed, server_id, caller)
        return entry, args, op_id, policy

    async def _prepare_call(
        self,
        name: str,
        args: dict[str, Any],
        op_id: str,
        caller_allowed: Callable[[], bool] | None,
        server_id: str | None,
        caller: Mapping[str, Any] | None,
    ) -> tuple[RegisteredTool, str]:
        """Resolve the name (waiting for a connecting server) and apply the user's policy.

        Returns:
            `(tool, policy)`.
        """
        registry = await self.registry()
        entry = registry.resolve(name) if server_id is None else registry.resolve_original(server_id, name)
        if entry is None:
            entry = await self._resolve_once_connected(name, server_id)
        record = (await self._server_records()).get(entry.server_id)
        if record is None:
            raise ToolNotFound(f"no tool named '{name}' (its server was deleted)", details={"tool": name})
        config = record.config
        details = {"tool": entry.name, "server_id": entry.server_id, "server_tool": entry.tool.name}
        if entry.tool.name in config.disabled_tools:
            raise ToolDisabled(f"tool '{name}' is disabled", details=details)
        policy = config.tool_policies.get(entry.tool.name, "ask")
        if policy == "deny":
            raise ToolDenied(f"the user's policy for '{name}' is deny", details={**details, "policy": policy})
        if policy == "ask":
            approved = await self._approvals.wait(
                tool=entry.name,
                server_id=entry.server_id,
                server_tool=entry.tool.name,
                arguments=args,
                hints=entry.hints,
                operation_id=op_id,
                caller=caller,
            )
            await self._still_as_approved(record, approved.id, details, caller_allowed)
        return entry, policy

    async def _resolve_once_connected(self, name: str, server_id: str | None = None) -> RegisteredTool:
        """Resolve `name` after its server finished connecting (issue 14, item 7).

        A server that is connecting, reconnecting or not yet connected (lazy, R-3.2) lists no tools
        yet; a call of one of its tools waits for the connection — at most the server's call timeout —
        instead of failing at once with MCP_TOOL_NOT_FOUND. The exposed name's `mcp__{serverId}__`
        prefix only says which server to wait for (server ids never contain `__`); the name is then
        resolved through the alias table as always. With `server_id` (the gateway's `/mcp/{id}`,
        R-8.4) `name` is that server's own tool name and that server is the one waited for.

        Raises:
            ToolNotFound: no configured server could offer it, or it still does not.
            ServerTimeout: the server did not become ready within its call timeout.
            CenterError: the server's connection failed (attributed).
        """
        state = await self._read()
        waiting = [
            sid
            for sid in self._manager.configured()
            if (name.startswith(tool_prefix(sid)) if server_id is None else sid == server_id)
            and sid in state.servers
            and self._manager.status(sid).state is not ConnectionState.READY
        ]
        for sid in waiting:
            timeout_s = state.servers[sid].config.call_timeout_s
            with anyio.move_on_after(timeout_s) as waited:
                await self._manager.connect(sid)
            if waited.cancelled_caught:
                raise ServerTimeout(
                    f"server '{sid}' did not finish connecting within {timeout_s:g} s (call_timeout_s); "
                    f"'{name}' was not called",
                    details={"reason": ErrorReason.TIMEOUT.value, "server_id": sid, "timeout_s": timeout_s},
                )
        registry = await self.registry(connect=False)
        entry = None
        if waiting:
            entry = registry.resolve(name) if server_id is None else registry.resolve_original(server_id, name)
        if entry is None:
            known = (
                t.name if server_id is None else t.tool.name
                for t in registry.tools()
                if server_id in (None, t.server_id)
            )
            raise ToolNotFound(
                f"no tool named '{name}' (see GET /api/tools)",
                details={"tool": name, "did_you_mean": did_you_mean(name, known)},
            )
        return entry

    async def _still_as_approved(
        self,
        asked: ServerRecord,
        approval_id: str,
        details: dict[str, Any],
        caller_allowed: Callable[[], bool] | None,
    ) -> None:
        """Raise ApprovalStale unless the server is the one (same record, same confirmed digest)
        the approval was asked for, and the caller is still allowed (R-5.3, R-1.4)."""
        now = (await self._read()).servers.get(asked.id)
        why = None
        if now is None or now.created_at != asked.created_at:
            why = "its server was deleted or re-created"
        elif now.trusted_digest != asked.trusted_digest or now.config.disabled_tools != asked.config.disabled_tools:
            why = "its server's confirmed configuration (tool permissions included) changed"
        elif now.config.tool_policies != asked.config.tool_policies:
            why = "its tool policies changed"
        elif caller_allowed is not None and not caller_allowed():
            why = "the caller's gateway token was revoked"
        if why is not None:
            tool = details["tool"]
            logger.info("approval.stale", extra={"approval_id": approval_id, "tool": tool})
            raise ApprovalStale(
                f"the call of '{tool}' was approved, but {why} while it waited; it was not sent",
                details={**details, "approval_id": approval_id},
            )

    async def call(
        self,
        name: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        caller_allowed: Callable[[], bool] | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`call_result` as JSON (`content`, `structuredContent`, `isError`)."""
        result = await self.call_result(
            name,
            arguments,
            operation_id=operation_id,
            progress=progress,
            elicitor=elicitor,
            caller_allowed=caller_allowed,
            caller=caller,
        )
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    # ----- prompts -------------------------------------------------------------------------------

    async def _prompt_entries(self) -> list[PromptEntry]:
        await self._connect_lazy()
        state = await self._read()
        return build_prompts((c.id, c.name, cat.items["prompts"]) for c, cat in self._ready(state))

    async def prompts(self) -> list[dict[str, Any]]:
        """`/server:prompt` commands of every ready server, with their argument definitions (R-5.4)."""
        return [entry.view() for entry in await self._prompt_entries()]

    async def get_prompt(self, name: str, arguments: object = None, *, max_bytes: object = None) -> dict[str, Any]:
        """`prompts/get` as an untrusted context block with provenance (R-5.4)."""
        bound = check_max_bytes(max_bytes)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[object, object], arguments).items()
        ):
            raise _invalid("arguments", "FIELD_INVALID", "must be an object of string values")
        args = cast(dict[str, str], arguments)
        parts = split_prompt_name(name)
        entry = None
        if parts is not None:
            entry = next(
                (e for e in await self._prompt_entries() if (e.server_id, e.prompt.name) == parts),
                None,
            )
        if entry is None:
            raise PromptNotFound(
                f"no ready server offers the prompt '{name}' (see GET /api/prompts)", details={"name": name}
            )
        known = {a.name for a in entry.arguments}
        errors = [
            FieldError(f"arguments.{k}", "FIELD_UNKNOWN", "is not an argument of this prompt")
            for k in args
            if k not in known
        ]
        errors += [
            FieldError(f"arguments.{a.name}", "FIELD_REQUIRED", "is required")
            for a in entry.arguments
            if a.required and a.name not in args
        ]
        if errors:
            raise RequestInvalid(
                f"{errors[0].field}: {errors[0].message}", details={"errors": [e.to_dict() for e in errors]}
            )
        result = await self._manager.get_prompt(entry.server_id, entry.prompt.name, args)
        return {
            "name": entry.name,
            **prompt_block(
                result,
                server_id=entry.server_id,
                server_name=entry.server_name,
                prompt=entry.prompt.name,
                arguments=args,
                max_bytes=bound,
            ),
        }

    # ----- resources -----------------------------------------------------------------------------

    async def resources(self, query: str = "", *, limit: object = None, server_id: str | None = None) -> dict[str, Any]:
        """Resources and resource templates of every ready server matching `query` (R-5.5).

        `server_id` keeps only that server's entries (before `limit` applies); an unknown id finds nothing.
        """
        if limit is None:
            limit = DEFAULT_RESOURCE_LIMIT
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RESOURCE_LIMIT:
            raise _invalid("limit", "FIELD_INVALID", f"must be an integer from 1 to {MAX_RESOURCE_LIMIT}")
        await self._connect_lazy()
        state = await self._read()
        entries = build_resources(
            (c.id, c.name, cat.items["resources"], cat.items["resource_templates"])
            for c, cat in self._ready(state)
            if server_id is None or c.id == server_id
        )
        found = search_resources(entries, query, limit=limit)
        return {"query": query, "resources": [e.view() for e in found]}

    async def read_resource(self, server_id: object, uri: object, *, max_bytes: object = None) -> dict[str, Any]:
        """`resources/read`, wrapped in fresh random delimiters with provenance, size-bounded (R-5.5)."""
        bound = check_max_bytes(max_bytes)
        if not isinstance(server_id, str) or not server_id:
            raise _invalid("server_id", "FIELD_REQUIRED", "name the server that offers the resource")
        if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS or any(ord(c) < 32 for c in uri):
            raise _invalid("uri", "FIELD_INVALID", f"must be a URI of 1-{MAX_URI_CHARS} printable characters")
        state = await self._read()
        record = state.servers.get(server_id)
        if record is None:
            raise ServerNotFound(
                f"no server with id '{server_id}'",
                details={"server_id": server_id, "did_you_mean": did_you_mean(server_id, state.servers)},
            )
        try:
            result = await self._manager.read_resource(server_id, uri)
        except ServerRequestFailed as exc:
            # The server is fine and said the caller named a resource it does not have: a 404 of
            # the caller's, not a 502 of the server's (found by schemathesis, issue 16).
            rpc_code = exc.details.get("rpc_code")
            if rpc_code not in RESOURCE_NOT_FOUND_RPC_CODES:
                raise
            raise ResourceNotFound(
                f"server '{server_id}' has no resource '{uri}' ({exc.message})",
                details={"server_id": server_id, "uri": uri, "rpc_code": rpc_code},
            ) from None
        contents = list(result.contents)
        return resource_block(contents, server_id=server_id, server_name=record.config.name, uri=uri, max_bytes=bound)

    # ----- the gateway's view, as MCP types (R-8.1) ------------------------------------------------

    async def mcp_tools(self) -> list[types.Tool]:
        """The tools agents may call, as MCP `Tool`s under their exposed names (R-5.1, R-5.2)."""
        registry = await self.registry()
        return [
            types.Tool.model_validate(tool.to_mcp(), by_name=False)
            for tool in registry.tools()
            if tool.policy != "deny"
        ]

    async def mcp_prompts(self) -> list[types.Prompt]:
        """Every ready server's prompts as MCP `Prompt`s named `{serverId}:{prompt}` (R-5.4)."""
        return [entry.prompt.model_copy(update={"name": entry.name}) for entry in await self._prompt_entries()]

    async def mcp_get_prompt(self, name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
        """`prompts/get` of `{serverId}:{prompt}`, the server's messages unchanged, provenance in `_meta`.

        Raises:
            PromptNotFound: no ready server offers it.
        """
        parts = split_prompt_name(name)
        entry = None
        if parts is not None:
            entry = next((e for e in await self._prompt_entries() if (e.server_id, e.prompt.name) == parts), None)
        if entry is None:
            raise PromptNotFound(f"no ready server offers the prompt '{name}'", details={"name": name})
        result = await self._manager.get_prompt(entry.server_id, entry.prompt.name, dict(arguments or {}))
        meta = dict(result.meta or {})
        meta["mcp-center/provenance"] = {"server_id": entry.server_id, "prompt": entry.prompt.name, "untrusted": True}
        return result.model_copy(update={"meta": meta})

    async def mcp_resources(self) -> tuple[list[types.Resource], list[types.ResourceTemplate]]:
        """Every ready server's resources and resource templates (R-5.5).

        A URI (or URI template) offered by two servers is exposed once per server as
        `mcp-center+{serverId}:{uri}` so each read reaches the server that listed it; other URIs are
        exposed unchanged.
        """
        await self._connect_lazy()
        state = await self._read()
        ready = self._ready(state)
        counts: dict[str, int] = {}
        template_counts: dict[str, int] = {}
        for _config, catalog in ready:
            for resource in catalog.items["resources"]:
                counts[resource.uri] = counts.get(resource.uri, 0) + 1
            for template in catalog.items["resource_templates"]:
                template_counts[template.uri_template] = template_counts.get(template.uri_template, 0) + 1
        resources: list[types.Resource] = []
        templates: list[types.ResourceTemplate] = []
        for config, catalog in ready:
            for resource in catalog.items["resources"]:
                uri = resource.uri if counts[resource.uri] == 1 else _scoped_uri(config.id, resource.uri)
                resources.append(resource.model_copy(update={"uri": uri}))
            for template in catalog.items["resource_templates"]:
                # A template two servers offer would match the same URIs on both: scope it like a URI.
                scoped = template_counts[template.uri_template] > 1
                uri_template = _scoped_uri(config.id, template.uri_template) if scoped else template.uri_template
                templates.append(template.model_copy(update={"uri_template": uri_template}))
        return resources, templates

    # ----- the gateway's lean path: JSON in, JSON out (R-8.1, R-8.3, R-8.4) ----------------------

    async def server_exists(self, server_id: str) -> bool:
        """True when a server with this id is registered (enabled or not)."""
        return server_id in (await self._read()).servers

    async def gateway_tools_json(self, server_id: str | None = None) -> bytes:
        """The tools agents may list as a JSON array (bytes), exposed names or, with `server_id`, that
        server's own names (`/mcp/{id}`, R-8.4).

        Disabled tools (R-5.2) and tools whose policy is `deny` are not listed (calls stay refused).
        Built once per registry snapshot and scope: a list is a lookup, not a rebuild.
        """
        registry = await self.registry()
        if registry is not self._listed_for:
            self._listed_for = registry
            self._listed.clear()
        cached = self._listed.get(server_id)
        if cached is None:
            tools: list[dict[str, Any]] = []
            for tool in registry.tools():
                if tool.policy == "deny" or (server_id is not None and tool.server_id != server_id):
                    continue
                tools.append(
                    tool.to_mcp()
                    if server_id is None
                    else tool.tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                )
            cached = orjson.dumps(tools)
            self._listed[server_id] = cached
        return cached

    async def gateway_listing(self, category: Category, server_id: str | None = None) -> list[dict[str, Any]]:
        """Prompts, resources or resource templates as JSON: the aggregate view (`{serverId}:{prompt}`,
        scoped URIs), or one server's items under their own names (R-8.4)."""
        if server_id is None:
            if category == "prompts":
                items: list[Any] = await self.mcp_prompts()
            else:
                resources, templates = await self.mcp_resources()
                items = resources if category == "resources" else templates
        else:
            await self._connect_lazy()
            state = await self._read()
            found = [cat for c, cat in self._ready(state) if c.id == server_id]
            items = list(found[0].items[category]) if found else []
        return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]

    async def forward_request(
        self, method: str, params: Mapping[str, Any], *, server_id: str | None = None
    ) -> dict[str, Any]:
        """A request other than `tools/call`, routed to the server it names and sent as it came (R-8.1).

        `prompts/get`, `resources/read`, `resources/subscribe`, `resources/unsubscribe` and
        `completion/complete` go to the server behind the prompt name or URI (aggregate names and
        scoped URIs are mapped back), or with `server_id` to that server under its own names (R-8.4);
        `logging/setLevel` goes to that server (the aggregate endpoint only acknowledges it).

        Raises:
            RequestInvalid: no ready server offers the prompt or URI.
            PromptNotFound: an aggregate prompt name no ready server offers.
            ServerRequestFailed: the server's JSON-RPC error (`rpc_error`).
        """
        state = await self._read()
        ready = {c.id: (c, cat) for c, cat in self._ready(state)}
        out = dict(params)
        if server_id is not None:
            if server_id not in ready:
                raise ServerNotFound(f"server '{server_id}' is not enabled and ready", details={"server_id": server_id})
            target = server_id
        elif method == "logging/setLevel":
            return {}
        elif method == "prompts/get":
            target, out["name"] = self._route_prompt(str(params.get("name", "")), ready)
        elif method == "completion/complete":
            ref = dict(cast(Mapping[str, Any], params.get("ref") or {}))
            if ref.get("type") == "ref/prompt":
                target, ref["name"] = self._route_prompt(str(ref.get("name", "")), ready)
            else:
                target, ref["uri"] = self._route_uri(str(ref.get("uri", "")), ready, template=True)
            out["ref"] = ref
        else:
            target, out["uri"] = self._route_uri(str(params.get("uri", "")), ready)
        result = await self._manager.forward(target, method, out)
        if method == "prompts/get":
            meta = dict(result.get("_meta") or {})
            meta["mcp-center/provenance"] = {"server_id": target, "prompt": out["name"], "untrusted": True}
            result = {**result, "_meta": meta}
        return result

    @staticmethod
    def _route_prompt(name: str, ready: Mapping[str, tuple[ServerConfig, Catalog]]) -> tuple[str, str]:
        parts = split_prompt_name(name)
        if parts is not None and parts[0] in ready:
            server_id, prompt = parts
            if any(p.name == prompt for p in ready[server_id][1].items["prompts"]):
                return server_id, prompt
        raise PromptNotFound(f"no ready server offers the prompt '{name}'", details={"name": name})

    @staticmethod
    def _route_uri(
        uri: str, ready: Mapping[str, tuple[ServerConfig, Catalog]], *, template: bool = False
    ) -> tuple[str, str]:
        """The server that offers `uri` (scoped, listed, or matched by one of its templates) and the URI
        it knows; with `template`, `uri` is a URI template itself (completion of its arguments)."""
        server_id, server_uri = _unscope_uri(uri)
        if server_id is None:
            if template:
                candidates = [
                    sid
                    for sid, (_c, cat) in ready.items()
                    if any(t.uri_template == uri for t in cat.items["resource_templates"])
                ]
            else:
                listed = [sid for sid, (_c, cat) in ready.items() if any(r.uri == uri for r in cat.items["resources"])]
                candidates = listed or [
                    sid
                    for sid, (_c, cat) in ready.items()
                    if any(template_matches(t.uri_template, uri) for t in cat.items["resource_templates"])
                ]
            server_id = candidates[0] if len(candidates) == 1 else None
        if server_id is None or server_id not in ready:
            raise _invalid("uri", "RESOURCE_UNKNOWN", "no ready server (or more than one) offers this URI")
        return server_id, server_uri

    async def mcp_read_resource(self, uri: str) -> types.ReadResourceResult:
        """`resources/read` routed to the server that offers `uri` (listed, scoped, or matching a template).

        Raises:
            RequestInvalid: no ready server offers that URI.
        """
        state = await self._read()
        server_id, server_uri = self._route_uri(uri, {c.id: (c, cat) for c, cat in self._ready(state)})
        return await self._manager.read_resource(server_id, server_uri)


_SCOPED_PREFIX = "mcp-center+"


def _scoped_uri(server_id: str, uri: str) -> str:
    return f"{_SCOPED_PREFIX}{server_id}:{uri}"


def _unscope_uri(uri: str) -> tuple[str | None, str]:
    if not uri.startswith(_SCOPED_PREFIX):
        return None, uri
    server_id, sep, rest = uri.removeprefix(_SCOPED_PREFIX).partition(":")
    return (server_id, rest) if sep and server_id else (None, uri)
