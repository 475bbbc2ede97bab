"""REST routes for agents and the humans who supervise them (R-5, R-6).

Two kinds of tool calls, on purpose:

- `POST /api/tools/{name}/call` is **agent-initiated**: `name` is the exposed name
  (`mcp__{serverId}__...`) and the call goes through the user's policy — by default it waits for
  a human decision at `POST /api/approvals/{id}` (R-5.3). If the caller disconnects while the
  call waits or runs, the call is cancelled (the server never sees an unapproved call).
- `POST /api/mcp/servers/{id}/tools/{tool}/call` (in `servers.py`) is **user-initiated**: the
  settings page playground, the CLI, a person with the admin token. It needs no approval.

Prompts and resources come back as untrusted blocks with provenance; elicitation cards are
listed and answered under `/api/interactions`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar, cast

import anyio
from fastapi import APIRouter, Body, Query, Request

from mcp_center.api.bodies import (
    AgentToolCall,
    ApprovalDecision,
    InteractionAnswer,
    PromptGet,
    ResourceRead,
    ToolPolicyChange,
)
from mcp_center.api.openapi import API_ERRORS, UPSTREAM, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.registry import ExportFormat
from mcp_center.service import McpCenter

__all__ = ["router"]

router = APIRouter(tags=["agents"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)

T = TypeVar("T")


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


async def _cancel_on_disconnect(request: Request, on_disconnect: Callable[[], object], work: Awaitable[T]) -> T:
    """Await `work`; if the HTTP client goes away first, call `on_disconnect` (which ends the work)."""
    result: list[T] = []

    async def watch() -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                on_disconnect()
                return

    failure: list[Exception] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            result.append(await work)
        except Exception as exc:  # noqa: BLE001 - re-raised below, outside the task group (no ExceptionGroup)
            failure.append(exc)
        finally:
            tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return result[0]


# ----- tools ---------------------------------------------------------------------------------------


@router.get("/api/tools", summary="The tools agents may call")
async def list_tools(
    request: Request,
    format: Annotated[str, Query(description="center (default), mcp, openai or anthropic")] = "center",
) -> dict[str, Any]:
    """Every enabled, non-disabled tool of every ready server as `mcp__{serverId}__{tool}`, with the
    alias table that maps each exposed name back to (server id, original tool name). `openai` and
    `anthropic` are the function-calling formats of those APIs; input schemas pass unchanged.
    Enabled servers still starting are waited for, each up to its `startup_timeout_s`; those not
    ready then are listed in `unavailable` (`[{"server_id", "code", "message"}]`)."""
    # Checked by the service (RequestInvalid names the formats): the query is any string here.
    return (await _center(request).agent_tools(cast(ExportFormat, format))).to_dict()


@router.post(
    "/api/tools/{name}/call",
    summary="Call a tool as an agent (through the approval policy)",
    responses=errors(404, *UPSTREAM),
)
async def call_tool(request: Request, name: str, body: Annotated[AgentToolCall, Body()]) -> dict[str, Any]:
    """Body `{"arguments": {...}, "operation_id": "..."?}`. Waits for approval unless the tool's policy is
    `allow` (403 MCP_TOOL_DENIED for `deny`, MCP_APPROVAL_DENIED, 409 MCP_APPROVAL_EXPIRED). Returns the
    MCP `CallToolResult`. A disconnect cancels the call."""
    center = _center(request)
    operation_id = body.operation_id or uuid.uuid4().hex
    result = await _cancel_on_disconnect(
        request,
        lambda: center.cancel(operation_id),
        center.call_agent_tool(name, body.arguments, operation_id=operation_id, caller={"via": "rest_api"}),
    )
    return result.to_dict()


@router.put(
    "/api/mcp/servers/{server_id}/tools/{tool}/policy",
    summary="Set a tool's approval policy",
    responses=errors(404, 409),
)
async def set_policy(
    request: Request, server_id: str, tool: str, body: Annotated[ToolPolicyChange, Body()]
) -> dict[str, Any]:
    """Body `{"policy": "ask"|"allow"|"deny", "version": N}`. The same versioned update as a PATCH of
    `tool_policies`, and a high-risk change (R-1.4): the server needs trust, test and enable again."""
    view = await _center(request).set_tool_policy(server_id, tool, body.policy, version=body.version)
    return view.to_dict()


# ----- approvals -----------------------------------------------------------------------------------


@router.get("/api/approvals", summary="Pending approvals")
async def list_approvals(
    request: Request,
    include_closed: Annotated[bool, Query(description="Also recent decided, expired and cancelled ones.")] = False,
) -> dict[str, Any]:
    """Each approval: tool, server, arguments, the server's annotations as `hints` (never trusted),
    `created_at`, `expires_at`, `state`."""
    approvals = await _center(request).list_approvals(include_closed=include_closed)
    return {"approvals": [approval.to_dict() for approval in approvals]}


@router.get("/api/approvals/{approval_id}", summary="One approval", responses=errors(404))
async def get_approval(request: Request, approval_id: str) -> dict[str, Any]:
    return (await _center(request).get_approval(approval_id)).to_dict()


@router.post("/api/approvals/{approval_id}", summary="Approve or deny a pending call", responses=errors(404, 409))
async def decide(request: Request, approval_id: str, body: Annotated[ApprovalDecision, Body()]) -> dict[str, Any]:
    """Body `{"decision": "approve"}` or `{"decision": "deny"}`; 409 MCP_APPROVAL_CLOSED when it already ended."""
    return (await _center(request).decide_approval(approval_id, body.decision)).to_dict()


# ----- prompts -------------------------------------------------------------------------------------


@router.get("/api/prompts", summary="Prompts as /server:prompt commands")
async def list_prompts(request: Request) -> dict[str, Any]:
    return {"prompts": [prompt.to_dict() for prompt in await _center(request).list_prompts()]}


@router.post(
    "/api/prompts/{name:path}/get",
    summary="Get a prompt as an untrusted context block",
    responses=errors(404, *UPSTREAM),
)
async def get_prompt(request: Request, name: str, body: Annotated[PromptGet, Body()]) -> dict[str, Any]:
    """`name` is `server:prompt`. Body `{"arguments": {...}, "max_bytes": N?}`. The answer is marked
    `untrusted: true` with provenance and delimiters: context, never instructions."""
    return (await _center(request).get_prompt(name, body.arguments, max_bytes=body.max_bytes)).to_dict()


# ----- resources -----------------------------------------------------------------------------------


@router.get("/api/resources", summary="Search resources and resource templates", responses=errors(404))
async def search_resources(
    request: Request,
    q: Annotated[str, Query(max_length=500, description="Matches name, title, URI and description.")] = "",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    server_id: Annotated[str | None, Query(max_length=200, description="Only this server's entries.")] = None,
) -> dict[str, Any]:
    return (await _center(request).search_resources(q, limit=limit, server_id=server_id)).to_dict()


@router.post(
    "/api/resources/read", summary="Read a resource between random delimiters", responses=errors(404, *UPSTREAM)
)
async def read_resource(request: Request, body: Annotated[ResourceRead, Body()]) -> dict[str, Any]:
    """Body `{"server_id", "uri", "max_bytes"?}`. Content is wrapped in fresh random delimiters with MCP
    provenance, bounded (explicit truncation marker); binary content is described, not inlined."""
    return (await _center(request).read_resource(body.server_id, body.uri, max_bytes=body.max_bytes)).to_dict()


# ----- interactions (elicitation) ----------------------------------------------------------------


@router.get("/api/interactions", summary="Elicitation cards, durable across restarts")
async def list_interactions(
    request: Request,
    state: Annotated[str | None, Query(description="pending, accepted, declined, ..., interrupted")] = None,
) -> dict[str, Any]:
    return {"interactions": [card.to_dict() for card in await _center(request).list_interactions(state=state)]}


@router.get("/api/interactions/{interaction_id}", summary="One elicitation card", responses=errors(404))
async def get_interaction(request: Request, interaction_id: str) -> dict[str, Any]:
    return (await _center(request).get_interaction(interaction_id)).to_dict()


@router.post(
    "/api/interactions/{interaction_id}",
    summary="Answer a card (accept / decline / cancel) or retry",
    responses=errors(404, *UPSTREAM),
)
async def answer_interaction(
    request: Request, interaction_id: str, body: Annotated[InteractionAnswer, Body()]
) -> dict[str, Any]:
    """Body `{"action": "accept", "content": {...}}` (fields left out get the schema defaults),
    `{"action": "decline"}`, `{"action": "cancel"}`, or `{"action": "retry"}` for a card interrupted by a
    restart (re-sends its call once; 409 MCP_INTERACTION_NOT_DELIVERED for an answer to such a card)."""
    return (await _center(request).answer_interaction(interaction_id, body.action, body.content)).to_dict()
