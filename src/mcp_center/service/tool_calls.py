"""Agent-initiated tool calls through the user's policy, and the tool lists agents see (R-5.1-R-5.3, R-8).

Agent-initiated calls (`call`, `call_result`, the gateway's `forward_call`) go through the user's
policy (R-5.3): `deny` refuses, `allow` calls, `ask` (the default) waits for an approval first.
Settings are re-read from the store at call time, so a policy or a disabled tool the user changed a
moment ago counts; an approval covers the call as the user saw it (`_still_as_approved`).
User-initiated calls do not come through here (`McpCenter.call_tool`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

from mcp_center.errors import (
    DID_YOU_MEAN,
    ApprovalStale,
    CenterError,
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
    RegisteredTool,
    ToolRegistry,
    tool_prefix,
)
from mcp_center.runtime import EarlyAnswer, new_operation_id
from mcp_center.runtime.eras import ENVELOPE_KEYS
from mcp_center.service.agent_registry import AgentCatalog, CatalogNow, invalid_field
from mcp_center.service.interactions import Elicitor, RootsLister, Sampler
from mcp_center.service.quarantine import quarantined_refusal
from mcp_center.service.results import ToolCallResult, ToolExport, UnavailableServer
from mcp_center.service.tool_arguments import check_arguments_safe
from mcp_center.store import ServerRecord

__all__ = ["ToolCalls"]

logger = logging.getLogger(__name__)

_HOP_BY_HOP = ENVELOPE_KEYS | {"progressToken"}
"""The agent's `_meta` keys that `forward_call` does not pass on (ours replaces its progress token)."""


class ToolCalls(AgentCatalog):
    """The tool half of `Capabilities`: exports, agent calls, the gateway's tool lists."""

    async def tools(
        self, fmt: object = "center", *, runnable: Callable[[str], Awaitable[object]] | None = None
    ) -> ToolExport:
        """The tools agents see (`EXPORT_FORMATS`), alias table, names needing approval (R-5.1, R-5.3, R-5.6).

        Enabled servers not connected yet are started and, like those starting, waited for, each up
        to its own `startup_timeout_s` (`wait_for_startup`); those still not ready are in
        `unavailable` with why. Ready servers wait for nothing, nor do servers known to be failing (in
        error or reconnecting after failures): those are in `unavailable` with their last error at once.

        Args:
            fmt: The export format.
            runnable: Raises the refusal a call would get for a server that may not run (`McpCenter`'s
                readiness check, R-2); enabled servers the manager does not run are checked with it
                and listed in `unavailable` with that refusal. None: not listed.
        Raises: RequestInvalid (an unknown format).
        """
        if fmt not in EXPORT_FORMATS:
            raise invalid_field("format", "FIELD_INVALID", "must be one of: " + ", ".join(EXPORT_FORMATS))
        export_format: ExportFormat = fmt
        failures = await self.wait_for_startup()
        registry, stamp = await self._registry_stamped(connect=False)
        unavailable = await self.unavailable(failures)
        if runnable is not None:
            configured = set(self._manager.configured())
            for server_id, record in (await self._server_records(stamp)).items():
                if not record.enabled or server_id in configured:
                    continue
                try:
                    await runnable(server_id)
                except CenterError as exc:
                    unavailable.append(UnavailableServer(server_id, exc.code, exc.message))
        return ToolExport(
            format=export_format,
            tools=registry.export(export_format),
            aliases=registry.enabled_aliases(),
            approval_required=tuple(registry.approval_required()),
            unavailable=tuple(sorted(unavailable, key=lambda server: server.server_id)),
        )

    async def call_result(
        self,
        name: str,
        arguments: object = None,
        *,
        server_id: str | None = None,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        caller_allowed: Callable[[], bool] | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> types.CallToolResult:
        """An agent-initiated call of an exposed tool name (with `server_id`: that server's own tool
        name, the gateway's `/mcp/{id}`, R-8.4), through the user's policy (R-5.3).

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
        entry, args, op_id, _policy = await self._admit(
            name, arguments, operation_id, caller_allowed, server_id, caller=caller
        )
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
        now: CatalogNow | None = None,
        arguments_safe: bool = False,
        answer: EarlyAnswer | None = None,
    ) -> dict[str, Any]:
        """`call_result` for the gateway's lean path: the same policy, the raw result (R-8.1, R-8.3).

        Args:
            name: The exposed name, or with `server_id` the server's own tool name (`/mcp/{id}`, R-8.4).
            now: `catalog_now()`, taken by the caller in this same event-loop step (nothing awaited
                since): the call resolves against it instead of looking again; None: looks itself.
            arguments_safe: The caller knows `arguments` is safe JSON (`check_arguments_safe` would pass).
            meta: The agent's `_meta` (its `progressToken` is replaced by ours when `progress` is given).
            sampler, roots: Answer the server's `sampling/createMessage` / `roots/list` during this
                call (R-8.5); sampling waits for an approval first when the tool's policy is `ask`.
            caller: Who asks, for the approval card (the gateway token and the agent's clientInfo).
            answer: Given that result as soon as it is read, before the call's bookkeeping unwinds
                (its admission, deadline and tracking end after it): the agent's answer goes first.
        Returns:
            The server's `CallToolResult` as JSON (bounded, R-3.9).
        Raises:
            As `call_result`; `ServerRequestFailed` with `rpc_error` when the server answered a
            JSON-RPC error.
        """
        entry, args, op_id, policy = await self._admit(
            name, arguments, operation_id, caller_allowed, server_id, caller=caller, now=now, safe=arguments_safe
        )
        if sampler is not None and policy == "ask":
            sampler = self._approved_sampler(sampler, entry, op_id)
        params: dict[str, Any] = {"name": entry.tool.name, "arguments": args}
        if meta and not meta.keys() <= _HOP_BY_HOP:
            # The agent's 2026-07-28 envelope is hop-by-hop (`eras.without_envelope`, which then has
            # nothing to copy): dropped here with the progress token, in one pass; a `_meta` of
            # nothing else (most calls) is not copied at all (issue 12).
            params["_meta"] = {k: v for k, v in meta.items() if k not in _HOP_BY_HOP}
        tracking = self._interactions.tracking(
            server_id=entry.server_id,
            tool=entry.tool.name,
            arguments=args,
            operation_id=op_id,
            caller="agent",
            exposed_name=entry.name,
            elicitor=elicitor,
            sampler=sampler,
            roots=roots,
        )
        # `async with tracking:` spelt out, so that a call no card waits on ends without the
        # coroutines of `__aenter__`, `__aexit__` and the broker's `_untrack` (issue 12, R-8.3).
        tracking.enter()
        try:
            result = await self._manager.forward(
                entry.server_id, "tools/call", params, operation_id=op_id, progress=progress, answer=answer
            )
        except BaseException as exc:
            await tracking.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        if not tracking.leave_at_once():
            await tracking.__aexit__(None, None, None)
        return result

    def cancel_forwarded(self, operation_id: str) -> None:
        """Cancel the `forward_call` running (or about to run) as `operation_id`, for its agent (R-3.8,
        R-8.1): a cancel by operation id of the runtime, which the call's admission turns into
        `CallCancelled` (before it was admitted: remembered, and the call is refused when it gets there)."""
        self._manager.cancel(operation_id)

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
        now: CatalogNow | None = None,
        safe: bool = False,
    ) -> tuple[RegisteredTool, dict[str, Any], str, str]:
        """Check a call against the user's settings and wait for its approval (R-5.2, R-5.3);
        `now`, `safe` (`arguments_safe`): see `forward_call`.

        Returns:
            `(tool, arguments, operation id, policy)`.
        """
        if arguments is None:
            arguments = {}
        if not safe:
            check_arguments_safe(arguments)
        if not isinstance(arguments, dict):
            raise invalid_field("arguments", "FIELD_INVALID", "must be a JSON object")
        args: dict[str, Any] = arguments  # pyright: ignore[reportUnknownVariableType] - no `cast` call per call
        if operation_id is None or not self._manager.operations.is_running(operation_id):
            # An id no call runs under: when resolving the call waits for nothing (no lazy connect,
            # no store read, no approval), there is no wait for a cancel by operation id to end, so
            # the admission (a cancel scope) is skipped; the runtime admits the request itself as
            # always, and refuses it there when a cancel of its id came first (issue 12: one cancel
            # scope less per call). An id in use takes the admission, which refuses it.
            ready = self._prepared_at_once(name, server_id, now)
            if ready is not None:
                entry, policy = ready
                return entry, args, operation_id or new_operation_id(), policy
        op_id = operation_id or new_operation_id()
        # Admitted before anything waits (a lazy or reconnecting server, the approval), so a cancel by
        # operation id ends every wait of this call. The call itself is admitted again by the
        # runtime inside `tracking`, which turns a cancel by a host shutdown into CallInterrupted; a
        # cancel arriving between the two is remembered and refuses the call.
        with self._manager.operations.admit(op_id):
            entry, policy = await self._prepare_call(name, args, op_id, caller_allowed, server_id, caller)
        return entry, args, op_id, policy

    def _prepared_at_once(
        self, name: str, server_id: str | None, now: CatalogNow | None = None
    ) -> tuple[RegisteredTool, str] | None:
        """`_prepare_call` for a call whose resolution waits for nothing: `(tool, policy)` when the
        registry and the servers section are current (`now`, taken in this step, or looked at here)
        and the tool's policy is `allow`; None when anything must wait or be asked (`ask`, a name
        not resolved yet, a stale registry).

        Raises:
            ToolDisabled, ToolDenied: as `_prepare_call` (the same check, `_policy_of`).
        """
        current = now if now is not None else self._current_without_waiting()
        if current is None:
            return None
        registry, servers = current
        entry = registry.resolve(name) if server_id is None else registry.resolve_original(server_id, name)
        record = servers.get(entry.server_id) if entry is not None else None
        if entry is None or record is None:
            return None
        policy = _policy_of(entry, record, name)
        return (entry, policy) if policy == "allow" else None

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
        registry, stamp = await self._registry_stamped()
        entry = registry.resolve(name) if server_id is None else registry.resolve_original(server_id, name)
        if entry is None:  # waits: the servers stamp is taken again afterwards
            entry, stamp = await self._resolve_once_connected(name, server_id), None
        record = (await self._server_records(stamp)).get(entry.server_id)
        if record is None:
            raise ToolNotFound(f"no tool named '{name}' (its server was deleted)", details={"tool": name})
        policy = _policy_of(entry, record, name)
        if policy == "ask":
            details = {"tool": entry.name, "server_id": entry.server_id, "server_tool": entry.tool.name}
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
            ToolQuarantined: the server lists it, but its definition failed validation (R-3.6).
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
            quarantined = quarantined_refusal(self._manager, name, server_id)
            if quarantined is not None:
                raise quarantined
            # Only names the caller may call: a tool set to deny is not listed, so not offered either.
            callable_tools = [t for t in registry.tools() if server_id in (None, t.server_id) and t.policy != "deny"]
            close = (
                did_you_mean(name, (t.tool.name for t in callable_tools))
                if server_id is not None
                else closest_exposed(name, callable_tools)
            )
            raise ToolNotFound(f"no tool named '{name}'", details={"tool": name, "did_you_mean": close})
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
    ) -> ToolCallResult:
        """`call_result` as the library's typed result (`ToolCallResult`; `to_dict()` for JSON)."""
        result = await self.call_result(
            name,
            arguments,
            operation_id=operation_id,
            progress=progress,
            elicitor=elicitor,
            caller_allowed=caller_allowed,
            caller=caller,
        )
        return ToolCallResult(result)

    # ----- prompts -------------------------------------------------------------------------------

    # ----- the gateway's tools (R-8.1, R-8.3, R-8.4) ---------------------------------------------

    async def mcp_tools(self) -> list[types.Tool]:
        """The tools agents may call, as MCP `Tool`s under their exposed names (R-5.1, R-5.2)."""
        registry = await self.registry()
        return [
            types.Tool.model_validate(tool.to_mcp(), by_name=False)
            for tool in registry.tools()
            if tool.policy != "deny"
        ]

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
            self._headed.clear()
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

    async def listed_input_schema(self, name: str, server_id: str | None = None) -> dict[str, Any] | None:
        """The `inputSchema` of the tool `name` as `gateway_tools_json` lists it to agents (exposed
        name, or with `server_id` that server's own name) when it declares a valid `x-mcp-header`
        (a 2026-07-28 `Mcp-Param-*` header, checked by the gateway); None when it declares none
        (no header can then be refused) or the tool is not listed (unknown, disabled, `deny`).
        Decided once per registry snapshot and listed tool (walking a schema costs tens of µs).
        The registry is the current one without the awaiting path when nothing waits (issue 12)."""
        current = self._current_without_waiting()
        registry = current[0] if current is not None else await self.registry()
        return self.headed_schema_in(registry, name, server_id)

    def headed_schema_in(
        self, registry: ToolRegistry, name: str, server_id: str | None = None
    ) -> dict[str, Any] | None:
        """`listed_input_schema` against `registry` (`CatalogNow.registry`, taken in this step): no
        look and no await of its own (issue 12, R-8.1)."""
        if registry is not self._listed_for:
            self._listed_for = registry
            self._listed.clear()
            self._headed.clear()
        key = (server_id, name)
        if key in self._headed:
            return self._headed[key]
        tool = registry.resolve(name) if server_id is None else registry.resolve_original(server_id, name)
        if tool is None or not tool.enabled or tool.policy == "deny":
            return None  # not kept: names that are no tool must not grow the table
        schema = tool.tool.input_schema
        headed = find_invalid_x_mcp_header(schema) is None and bool(x_mcp_header_map(schema))
        self._headed[key] = schema if headed else None
        return self._headed[key]


def _policy_of(entry: RegisteredTool, record: ServerRecord, name: str) -> str:
    """The user's policy for `entry` (`allow` or `ask`) as `record` stores it (R-5.2).

    Raises:
        ToolDisabled: the tool is disabled.
        ToolDenied: its policy is `deny`.
    """
    config = record.config
    details = {"tool": entry.name, "server_id": entry.server_id, "server_tool": entry.tool.name}
    if entry.tool.name in config.disabled_tools:
        raise ToolDisabled(f"tool '{name}' is disabled", details=details)
    policy = config.tool_policies.get(entry.tool.name, "ask")
    if policy == "deny":
        raise ToolDenied(f"the user's policy for '{name}' is deny", details={**details, "policy": policy})
    return policy


def closest_exposed(name: str, tools: list[RegisteredTool]) -> list[str]:
    """The exposed names (`mcp__{serverId}__{tool}`) closest to an unknown `name`, best first (R-7.3).

    A well-formed name is compared by its part after the prefix: on a known server, with that
    server's tools only (compared whole, the shared prefix made nearly any name look close:
    `mcp__docs__zzz` offered `mcp__docs__echo`); with a misspelled server id (`mcp__rw__echo`), with
    the tools of the servers whose ids are close, or of every server when none is (it offered every
    tool of `raw`). A name of another shape is compared whole. Returns [] when nothing is close.
    A server id never holds `__` (R-1.1: `[a-z0-9-]`), so the first `__` after `mcp__` ends it."""
    server_part, split, tool_part = name.removeprefix("mcp__").partition("__")
    if name.startswith("mcp__") and split:
        server_ids = {t.server_id for t in tools}
        if server_part in server_ids:
            return _closest_within(tool_part, [t for t in tools if t.server_id == server_part])
        if tool_part:
            near = set(did_you_mean(server_part, server_ids)) or server_ids  # no close id: any server's
            return _closest_within(tool_part, [t for t in tools if t.server_id in near])
    return did_you_mean(name, (t.name for t in tools))


def _closest_within(part: str, tools: list[RegisteredTool]) -> list[str]:
    """The exposed names of `tools` whose part after their server's prefix is closest to `part`."""
    by_part: dict[str, list[str]] = {}
    for tool in tools:
        by_part.setdefault(tool.name[len(tool_prefix(tool.server_id)) :], []).append(tool.name)
    return [name for close in did_you_mean(part, by_part) for name in by_part[close]][:DID_YOU_MEAN]
