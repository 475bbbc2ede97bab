"""The agent-facing half of `McpCenter`: tools, agent calls, approvals, prompts, resources, cards (R-5, R-6).

`McpCenter` inherits these methods: they are its public API, kept in their own module so the facade
stays one noun per module. The use cases live in `capabilities.py`, `approvals.py` and
`interactions.py`; the REST API, the CLI and library scripts call these methods, and the gateway
calls the MCP-shaped methods of `Capabilities` (docs/architecture.md#service-modules).
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

import anyio
from mcp.shared.dispatcher import ProgressFnT

from mcp_center.registry import ExportFormat, PromptEntry
from mcp_center.runtime import ConnectionManager
from mcp_center.service.approvals import ApprovalBroker
from mcp_center.service.capabilities import Capabilities
from mcp_center.service.interactions import Elicitor, InteractionBroker
from mcp_center.service.results import (
    ApprovalView,
    InteractionAnswer,
    InteractionCard,
    ResourceSearch,
    ToolCallResult,
    ToolExport,
)
from mcp_center.service.untrusted import PromptBlock, ResourceBlock
from mcp_center.store import ServerRecord

__all__ = ["AgentUseCases", "Decision"]

Decision = Literal["approve", "deny"]
"""The user's answer to a pending approval (R-5.3)."""


class AgentUseCases:
    """Mixin of `McpCenter`: the agent-facing methods (set up by `McpCenter.__init__`)."""

    _manager: ConnectionManager
    _capabilities: Capabilities
    _approvals: ApprovalBroker
    _interactions: InteractionBroker
    _accepted_calls: dict[str, int]

    async def _runnable(self, server_id: str) -> ServerRecord: ...  # `McpCenter._runnable`

    # The use cases live in service/capabilities.py, approvals.py and interactions.py; these are the
    # public entry points (the REST API, the CLI and library users call the same code).

    async def agent_tools(self, format: ExportFormat = "center") -> ToolExport:
        """The tools agents may call, under their qualified names (R-5.1, R-5.2, R-5.6).

        Every enabled, non-disabled tool of every ready server appears as `mcp__{serverId}__{tool}`
        (mapped and shortened with a hash where needed, always unique). Enabled servers that are
        not connected yet are started first, and those starting are waited for, each up to its own
        `startup_timeout_s` (60 s for stdio by default: a cold `uvx`/`npx` takes a while), all at
        once (R-3.2); an enabled server that is still not ready is listed in `unavailable` with why.

        Args:
            format: `center` (our view: provenance, `hints` from annotations, `effects: "write"`,
                `retry: "never"`, `policy`), `mcp` (MCP `Tool` objects under the exposed names),
                `openai` (`{"type": "function", "function": {...}}`) or `anthropic`
                (`{"name", "description", "input_schema"}`). Input schemas are passed unchanged.
        Returns:
            A `ToolExport`: `format`, `tools` (the tool objects in that format), `aliases` (exposed
            name -> server id and the server's tool name) and `approval_required` (the exposed names
            whose calls wait for the user's approval, policy `ask`, since the OpenAI and Anthropic
            tool objects have no field to say so) and `unavailable` (`UnavailableServer`: each enabled
            server whose tools are missing, with an error code and message: its start failed or
            timed out, or it still needs a step such as trust or test); `to_dict()` is the REST JSON.
        Raises:
            RequestInvalid: unknown format.
        """
        return await self._capabilities.tools(format, runnable=self._runnable)

    async def call_agent_tool(
        self,
        name: str,
        arguments: object = None,
        *,
        operation_id: str | None = None,
        progress: ProgressFnT | None = None,
        elicitor: Elicitor | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> ToolCallResult:
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
            A `ToolCallResult`: the server's MCP `CallToolResult` (`content` as the SDK's typed blocks,
            `structured_content`, `is_error`, `text`); `to_dict()` is its JSON.
        Raises:
            ToolNotFound (unknown name), ToolDisabled, ToolDenied (policy deny), ApprovalDenied,
            ApprovalExpired, CallCancelled, CallInterrupted (the host stopped while it waited for a
            human), RequestInvalid (arguments not an object), ServerTimeout, connection errors.
        """
        with self._accepted(operation_id):
            return await self._capabilities.call(
                name, arguments, operation_id=operation_id, progress=progress, elicitor=elicitor, caller=caller
            )

    async def list_approvals(self, *, include_closed: bool = False) -> list[ApprovalView]:
        """Pending approvals of every process on the data directory, oldest first (R-5.3, R-9.2);
        with `include_closed`, recent decided ones too.

        Each an `ApprovalView` (`id`, `state`, `tool`, `server_id`, `server_tool`, `arguments`, `hints`,
        `effects`, `operation_id`, `created_at`, `expires_at`, `decided_at`, `caller`; `to_dict()` for
        JSON); `hints` are the server's annotations, shown and never trusted. A pending approval whose
        process is gone is closed as `interrupted` first.

        Raises:
            StorageError.
        """
        return await self._approvals.views(include_closed=include_closed)

    async def get_approval(self, approval_id: str) -> ApprovalView:
        """One approval (pending or recently closed).

        Raises:
            ApprovalNotFound, StorageError.
        """
        return await self._approvals.get(approval_id)

    async def wait_for_approval(
        self,
        *,
        server_id: str | None = None,
        tool: str | None = None,
        exclude: Collection[str] = (),
        timeout_s: float = 30.0,
    ) -> ApprovalView:
        """Wait for a pending approval and return it, oldest first (R-5.3): how a script answers its agent's calls.

        Approvals created before this call count too: it subscribes to `approval.created` first,
        then reads the pending list, then waits, so none is missed between the two. Approvals of
        calls waiting in other processes on the data directory count when this center follows the
        store (`open(connect=True)`, R-9.2).

        Args:
            server_id: Only approvals of this server.
            tool: Only approvals of this tool: its exposed name (`mcp__srv__tool`) or the server's name for it.
            exclude: Approval ids to skip (ones the caller has seen and not decided yet).
            timeout_s: How long to wait, in seconds.
        Returns:
            The approval, as `list_approvals` shows it (`state == "pending"`); decide it with
            `decide_approval(approval.id, "approve" | "deny")`.
        Raises:
            TimeoutError: none within `timeout_s`. StorageError.
        """

        def matches(approval: ApprovalView) -> bool:
            return (
                approval.state == "pending"
                and approval.id not in exclude
                and (server_id is None or approval.server_id == server_id)
                and (tool is None or tool in (approval.tool, approval.server_tool))
            )

        with anyio.fail_after(timeout_s):
            async with self._manager.events.subscribe() as events:
                while True:
                    for approval in await self.list_approvals():
                        if matches(approval):
                            return approval
                    event = await events.next()
                    while event["type"] not in ("approval.created", "events.dropped"):
                        event = await events.next()

    async def decide_approval(self, approval_id: str, decision: Decision) -> ApprovalView:
        """The user's decision on a pending approval: `"approve"` sends the call, `"deny"` refuses it.

        The call may wait in any process on the data directory (a library script, the CLI): the
        decision reaches it there.

        Raises:
            RequestInvalid (not approve/deny), ApprovalNotFound, ApprovalClosed (already decided,
            expired, cancelled or interrupted; `details.state`), StorageError (nothing decided).
        """
        return await self._approvals.decide(approval_id, decision)

    async def list_prompts(self) -> list[PromptEntry]:
        """Prompts of every ready server as `/server:prompt` commands with argument definitions (R-5.4).

        Each a `registry.PromptEntry`: `name` (`srv:prompt`, what `get_prompt` takes), `command`
        (`/srv:prompt`), `server_id`, `server_name`, `prompt` (the MCP `Prompt`) and `arguments` (its
        `PromptArgument`s); `to_dict()` is the REST JSON (`{"name", "command", "server_id",
        "server_name", "prompt", "title", "description", "arguments": [{"name", "title",
        "description", "required"}]}`).
        """
        return await self._capabilities.prompts()

    async def get_prompt(self, name: str, arguments: object = None, *, max_bytes: object = None) -> PromptBlock:
        """`prompts/get` as an untrusted context block (R-5.4): never merge it into instructions.

        Args:
            name: `srv:prompt` (a leading `/` is accepted).
            arguments: `{argument: string}`; required ones must be present, unknown ones are refused.
            max_bytes: Bound on the text in bytes (default 256 KiB, at most 4 MiB).
        Returns:
            A `PromptBlock`: `name`, `provenance` (`server_id`, `server_name`, `prompt`, `arguments`),
            `description`, `messages` (each message's `role` and content `kind`) and `block` (the
            `UntrustedBlock`: `text` between fresh `begin`/`end` delimiters, `truncated`,
            `original_bytes`, `included_bytes`); `text` is what goes into a context window and
            `to_dict()` the REST JSON (with `"untrusted": true`).
        Raises:
            PromptNotFound, RequestInvalid (arguments), CallCancelled, ServerTimeout, connection errors.
        """
        return await self._capabilities.get_prompt(name, arguments, max_bytes=max_bytes)

    async def search_resources(
        self, query: str = "", *, limit: object = None, server_id: str | None = None
    ) -> ResourceSearch:
        """`@` search over the resources and resource templates of every ready server (R-5.5).

        Matches name, title, URI (template) and description, case-insensitively; name matches rank
        first. Templates carry their URI template `variables`. `server_id` searches one server only
        (the settings page's Resources tab), so other servers' entries cannot crowd it out of `limit`.

        Returns:
            A `ResourceSearch`: `query` and `resources`, at most `limit` (default 50, at most 500)
            `registry.ResourceEntry`s (`kind` `resource` | `template`, `server_id`, `server_name`,
            `uri` (the URI template of a template), `mention`, and the MCP `Resource` or
            `ResourceTemplate` as `item`); `to_dict()` is the REST JSON.
        Raises:
            RequestInvalid: bad limit.
        """
        return await self._capabilities.resources(query, limit=limit, server_id=server_id)

    async def read_resource(self, server_id: object, uri: object, *, max_bytes: object = None) -> ResourceBlock:
        """`resources/read`, wrapped in fresh random delimiters with MCP provenance (R-5.5).

        The content is untrusted: it sits between `delimiters.begin` and `delimiters.end`, whose
        nonce is drawn per read and never occurs in the content. Text is bounded to `max_bytes`
        (default 256 KiB) with an explicit truncation marker; binary content is described.

        Returns:
            A `ResourceBlock`: `provenance` (`server_id`, `server_name`, `uri`, `mime_type`),
            `contents` (each item's `uri`, `mime_type`, `kind` `text` | `binary`, `size_bytes`) and
            `block` (the `UntrustedBlock`); `text` is what goes into a context window and `to_dict()`
            the REST JSON (with `"untrusted": true`).
        Raises:
            RequestInvalid, ServerNotFound, ServerDisabled, CallCancelled, ServerTimeout, connection
            errors (a server's JSON-RPC error is MCP_SERVER_ERROR).
        """
        return await self._capabilities.read_resource(server_id, uri, max_bytes=max_bytes)

    async def list_interactions(self, *, state: str | None = None) -> list[InteractionCard]:
        """Interaction cards (elicitations), newest first, durable across restarts (R-6.1).

        Each an `InteractionCard` (`id`, `mode`, `state`, `server_id`, `message`, `requested_schema`,
        `fields`, `defaults`, `calls`, `created_at`, `expires_at`, `closed_at`, `reason`,
        `answer_fields`, `delivered`, `retry`, `actions`; `to_dict()` for JSON). `state` filters:
        `pending`, `accepted`, `declined`, `cancelled`, `expired`, `withdrawn` or `interrupted`.

        Raises:
            RequestInvalid: unknown state.
        """
        return await self._interactions.views(state=state)

    async def get_interaction(self, interaction_id: str) -> InteractionCard:
        """One interaction card.

        Raises:
            InteractionNotFound.
        """
        return await self._interactions.get(interaction_id)

    async def answer_interaction(
        self, interaction_id: str, action: object, content: object = None
    ) -> InteractionAnswer:
        """Answer a card and resume the server's request (R-6.1), or retry an interrupted call (R-6.3).

        Args:
            action: `accept` (with `content`; fields left out get the schema defaults, SEP-1034),
                `decline`, `cancel`; or `retry` on an interrupted card (re-sends its call once, as
                a user-initiated call).
            content: `{field: value}`, validated against the requested schema.
        Returns:
            An `InteractionAnswer`: `interaction` (the card after the answer) and, for retry,
            `result` (the re-sent call's `ToolCallResult`); `to_dict()` is the REST JSON.
        Raises:
            RequestInvalid, InteractionNotFound, ElicitationAnswerInvalid (card stays pending),
            InteractionNotDelivered (interrupted by a restart), InteractionClosed.
        """
        return await self._interactions.answer(interaction_id, action, content)

    @contextmanager
    def _accepted(self, operation_id: str | None) -> Generator[None]:
        """Count a call with a caller-given operation id as accepted until it returns (for `cancel`)."""
        if operation_id is None:
            yield
            return
        self._accepted_calls[operation_id] = self._accepted_calls.get(operation_id, 0) + 1
        try:
            yield
        finally:
            left = self._accepted_calls[operation_id] - 1
            if left:
                self._accepted_calls[operation_id] = left
            else:
                del self._accepted_calls[operation_id]
