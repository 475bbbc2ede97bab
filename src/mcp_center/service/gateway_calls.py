"""The gateway's half of `McpCenter`: agent use cases in MCP's own shapes (R-5, R-8).

`McpCenter` inherits these methods, as it inherits the JSON-shaped agent methods of
`agent_calls.py`: every face (REST, CLI, web, library, gateway) enters through `McpCenter`, and the
gateway is no exception (docs/decisions.md, "One entrance per use case"). They run the same policy,
approval and routing code as the JSON-shaped ones (`capabilities.py`); they differ only in what they
return: SDK models (`mcp_types`) for the SDK's server, raw JSON (bytes or dicts) for the gateway's
lean path (R-8.3), where a server's answer goes back to the agent as it came.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from mcp_center.runtime import Category, EarlyAnswer
from mcp_center.service.agent_registry import CatalogNow
from mcp_center.service.capabilities import Capabilities
from mcp_center.service.interactions import Elicitor, RootsLister, Sampler

__all__ = ["GatewayUseCases"]


class GatewayUseCases:
    """Mixin of `McpCenter`: the MCP-shaped agent methods the gateway calls (set up by `McpCenter.__init__`)."""

    _capabilities: Capabilities

    async def mcp_tools(self) -> list[types.Tool]:
        """The tools agents may call, as MCP `Tool`s under their exposed names; `deny` ones left out (R-5.1, R-5.2)."""
        return await self._capabilities.mcp_tools()

    async def mcp_tools_json(self, server_id: str | None = None) -> bytes:
        """`mcp_tools` as a JSON array (bytes), or with `server_id` that server's tools under their own
        names (`/mcp/{id}`, R-8.4); built once per registry snapshot and scope."""
        return await self._capabilities.gateway_tools_json(server_id)

    def mcp_tool_input_schema(
        self, name: str, server_id: str | None = None
    ) -> Coroutine[Any, Any, dict[str, Any] | None]:
        """The `inputSchema` agents were shown for the tool `name` (`tools/list`; with `server_id`
        that server's own name, `/mcp/{id}`) when it declares an `x-mcp-header`, or None (none declared,
        or not listed: unknown, disabled, `deny`); the coroutine of `listed_input_schema` (await it).
        The gateway checks a 2026-07-28 call's `Mcp-Param-*` headers against it (R-8.1)."""
        return self._capabilities.listed_input_schema(name, server_id)

    def mcp_catalog_now(self) -> CatalogNow | None:
        """The registry and servers section a `tools/call` resolves against, when nothing must wait
        for them (else None); hand it to `mcp_forward_call(now=...)` and `mcp_headed_schema` in the
        same event-loop step, with no `await` that suspends in between (`CatalogNow`, issue 12)."""
        return self._capabilities.catalog_now()

    def mcp_headed_schema(self, now: CatalogNow, name: str, server_id: str | None = None) -> dict[str, Any] | None:
        """`mcp_tool_input_schema` against `now` (`mcp_catalog_now`), without a look or an await of its own."""
        return self._capabilities.headed_schema_in(now.registry, name, server_id)

    async def mcp_call_tool(
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
        """`call_agent_tool` returning the SDK's `CallToolResult` (R-5.3, R-8.1).

        Args:
            server_id: `name` is that server's own tool name (`/mcp/{id}`, R-8.4).
            caller_allowed: Asked again once an approval was granted: False (the gateway token was
                revoked meanwhile) and the call is not sent (ApprovalStale).
            caller: Who asks, for the approval card (the gateway token's id and name, the agent's
                `clientInfo`; never the token).
        Raises:
            As `call_agent_tool`; ApprovalStale (approved, but the server or the caller changed meanwhile).
        """
        return await self._capabilities.call_result(
            name,
            arguments,
            server_id=server_id,
            operation_id=operation_id,
            progress=progress,
            elicitor=elicitor,
            caller_allowed=caller_allowed,
            caller=caller,
        )

    def mcp_forward_call(
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
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """`mcp_call_tool` for the lean path: the same policy, the server's `CallToolResult` JSON as it
        came (bounded, R-3.9; R-8.1, R-8.3).

        Args:
            server_id: `name` is that server's own tool name (`/mcp/{id}`, R-8.4).
            meta: The agent's `_meta` (its `progressToken` is replaced by ours when `progress` is given).
            operation_id: The call's operation id (a fresh one when None); the gateway makes its own,
                which `mcp_cancel_call` cancels.
            sampler, roots: Answer the server's `sampling/createMessage` / `roots/list` during this
                call (R-8.5); sampling waits for an approval first when the tool's policy is `ask`.
            now: `mcp_catalog_now()` of this same step (nothing awaited since), or None.
            arguments_safe: `arguments` is known to be safe JSON (parsed by `orjson` from a body too
                shallow to nest beyond `jsonsafe.MAX_DEPTH`): `check_arguments_safe` is not run again.
            answer: Writes the agent's answer from the result, before the call's bookkeeping unwinds
                (`ToolCalls.forward_call`, issue 12).
        Raises:
            As `mcp_call_tool`; ServerRequestFailed with `rpc_error` when the server answered a JSON-RPC error.
        """
        # The coroutine of `forward_call` itself (await it): no frame of this method on every
        # resume of a forwarded call (issue 12).
        return self._capabilities.forward_call(
            name,
            arguments,
            server_id=server_id,
            meta=meta,
            operation_id=operation_id,
            progress=progress,
            elicitor=elicitor,
            sampler=sampler,
            roots=roots,
            caller_allowed=caller_allowed,
            caller=caller,
            now=now,
            arguments_safe=arguments_safe,
            answer=answer,
        )

    def mcp_cancel_call(self, operation_id: str) -> None:
        """Cancel the `mcp_forward_call` made with `operation_id` for its agent (`notifications/cancelled`,
        a closed request, its session or token ended; R-3.8, R-8.1): the call ends with CallCancelled
        (never sent, or cancelled up to the server). A cancel that comes before the call was admitted
        is remembered and refuses it; one after it ended is remembered for nothing (bounded)."""
        self._capabilities.cancel_forwarded(operation_id)

    async def mcp_prompts(self) -> list[types.Prompt]:
        """Every ready server's prompts as MCP `Prompt`s named `{serverId}:{prompt}` (R-5.4)."""
        return await self._capabilities.mcp_prompts()

    async def mcp_get_prompt(self, name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
        """`prompts/get` of `{serverId}:{prompt}`: the server's messages unchanged, provenance in `_meta`.

        Raises:
            PromptNotFound: no ready server offers it.
        """
        return await self._capabilities.mcp_get_prompt(name, arguments)

    async def mcp_resources(self) -> tuple[list[types.Resource], list[types.ResourceTemplate]]:
        """Every ready server's resources and resource templates; a URI two servers offer is exposed
        once per server as `mcp-center+{serverId}:{uri}` (R-5.5)."""
        return await self._capabilities.mcp_resources()

    async def mcp_read_resource(self, uri: str) -> types.ReadResourceResult:
        """`resources/read` routed to the server that offers `uri` (listed, scoped, or matching a template).

        Raises:
            RequestInvalid: no ready server (or more than one) offers that URI.
        """
        return await self._capabilities.mcp_read_resource(uri)

    async def mcp_listing(self, category: Category, server_id: str | None = None) -> list[dict[str, Any]]:
        """Prompts, resources or resource templates as JSON: the aggregate view, or with `server_id`
        one server's items under their own names (R-8.4)."""
        return await self._capabilities.gateway_listing(category, server_id)

    async def mcp_forward_request(
        self, method: str, params: Mapping[str, Any], *, server_id: str | None = None
    ) -> dict[str, Any]:
        """A request other than `tools/call` (`prompts/get`, `resources/read`, `resources/subscribe`,
        `completion/complete`, `logging/setLevel`, ...) routed to the server it names and sent as it
        came (R-8.1, R-8.4).

        Raises:
            RequestInvalid, PromptNotFound, ServerNotFound (`server_id` not enabled and ready),
            ServerRequestFailed (the server's JSON-RPC error, `rpc_error`).
        """
        return await self._capabilities.forward_request(method, params, server_id=server_id)

    async def server_exists(self, server_id: str) -> bool:
        """True when a server with this id is registered (enabled or not): `/mcp/{id}` answers 404 otherwise."""
        return await self._capabilities.server_exists(server_id)

    async def server_ids(self) -> list[str]:
        """The ids of every registered server (enabled or not), sorted: each has its `/mcp/{id}`,
        which any gateway token may open (R-8.4), so an agent may be offered them (did you mean)."""
        return await self._capabilities.server_ids()
