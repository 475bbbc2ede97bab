"""REST routes for server configuration, secrets, trust → test → enable, and tools (seed 002 §4,
docs/decisions.md#seed-002-4).

Field names are the R-1.1 names. A server as read carries `version`, its connection `summary`
and that summary's `digest`, `trusted`/`tested` flags, `needs` (what blocks it from running)
and the runtime `status`. Bodies that change a server carry the `version` they read (R-1.3).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response

from mcp_center.api.bodies import SecretValue, ToolCall, TrustRequest
from mcp_center.api.openapi import API_ERRORS, SERVER_BODY_REF, SERVER_PATCH_REF, UPSTREAM, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.errors import FieldError, RequestInvalid
from mcp_center.service import McpCenter

__all__ = ["router"]

router = APIRouter(prefix="/api/mcp/servers", tags=["servers"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)

JsonObject = Annotated[dict[str, Any], Body()]
"""A server body: the service validates it with the `config.servers` models (R-1.1), which the
OpenAPI description shows (`api.openapi`)."""
SecretKind = Annotated[str, Query(description="environment | header | bearer")]


def _server_body(ref: str) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": ref}}}}}


def _invalid(field: str, code: str, message: str) -> RequestInvalid:
    """A 422 REQUEST_INVALID naming one field, in the same `details.errors` shape as the service."""
    return RequestInvalid(f"{field}: {message}", details={"errors": [FieldError(field, code, message).to_dict()]})


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


@router.get("", summary="List servers")
async def list_servers(request: Request) -> dict[str, Any]:
    """Every registered server with its summary, digest and status."""
    return {"servers": [view.to_dict() for view in await _center(request).list_servers()]}


@router.post(
    "", status_code=201, summary="Create a server", responses=errors(409), openapi_extra=_server_body(SERVER_BODY_REF)
)
async def create_server(request: Request, body: JsonObject) -> dict[str, Any]:
    """Register a server; it starts untrusted, untested and disabled (R-2).

    Secret values go in `secret_values` (`{"env": {...}, "headers": {...}, "bearer_token": "..."}`)
    and are never returned.
    """
    return (await _center(request).create_server(body)).to_dict()


@router.get("/{server_id}", summary="Read a server", responses=errors(404))
async def get_server(request: Request, server_id: str) -> dict[str, Any]:
    return (await _center(request).get_server(server_id)).to_dict()


@router.put(
    "/{server_id}",
    summary="Replace a server's configuration",
    responses=errors(404, 409),
    openapi_extra=_server_body(SERVER_BODY_REF),
)
async def put_server(request: Request, server_id: str, body: JsonObject) -> dict[str, Any]:
    """Full replacement of the editable fields; must carry the `version` read (409 when stale)."""
    return (await _center(request).update_server(server_id, body)).to_dict()


@router.patch(
    "/{server_id}",
    summary="Change some fields of a server",
    responses=errors(404, 409),
    openapi_extra=_server_body(SERVER_PATCH_REF),
)
async def patch_server(request: Request, server_id: str, body: JsonObject) -> dict[str, Any]:
    """Merge the given top-level fields; must carry the `version` read (409 when stale)."""
    return (await _center(request).update_server(server_id, body, partial=True)).to_dict()


@router.delete("/{server_id}", status_code=204, summary="Delete a server", responses=errors(404, 409))
async def delete_server(
    request: Request, server_id: str, version: Annotated[int | None, Query(ge=1)] = None
) -> Response:
    """Delete the server and its secrets; `?version=` makes it conditional."""
    await _center(request).delete_server(server_id, version=version)
    return Response(status_code=204)


@router.put("/{server_id}/secrets/{key}", summary="Set a secret value (write-only)", responses=errors(404, 409))
async def put_secret(
    request: Request,
    server_id: str,
    key: str,
    kind: SecretKind,
    body: Annotated[SecretValue, Body()],
    version: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """Body `{"value": "..."}`. The API only ever says whether a key is configured (R-1.5)."""
    if version is not None and body.version is not None and version != body.version:
        raise _invalid("version", "FIELD_INVALID", "the query and the body name different versions")
    view = await _center(request).set_secret(
        server_id, kind, key, body.value, version=version if version is not None else body.version
    )
    return view.to_dict()


@router.delete("/{server_id}/secrets/{key}", summary="Delete a secret", responses=errors(404, 409))
async def delete_secret(
    request: Request,
    server_id: str,
    key: str,
    kind: SecretKind,
    version: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """Remove the value and its ciphertext (R-1.5)."""
    return (await _center(request).delete_secret(server_id, kind, key, version=version)).to_dict()


@router.post("/{server_id}/trust", summary="Confirm the connection summary", responses=errors(404, 409))
async def trust(request: Request, server_id: str, body: Annotated[TrustRequest, Body()]) -> dict[str, Any]:
    """Body `{"digest": "sha256:..."}`: the digest of the summary you reviewed (409 if it changed)."""
    return (await _center(request).trust(server_id, body.digest)).to_dict()


@router.post("/{server_id}/test", summary="Test with a temporary connection", responses=errors(404, *UPSTREAM))
async def test(request: Request, server_id: str) -> dict[str, Any]:
    """initialize + tools/list + close; the result is stored with its digest (R-2.2)."""
    result = await _center(request).test(server_id)
    return result.model_dump(mode="json")


@router.post(
    "/{server_id}/sandbox/warm-up",
    summary="Fill a sandboxed npx/uvx server's package caches",
    responses=errors(404, 409, 503),
)
async def warm_up_sandbox(request: Request, server_id: str) -> dict[str, Any]:
    """Runs only the package manager, inside the server's sandbox with egress for this run (R-11.1);
    returns `{ok, argv, exit_code, elapsed_ms, output_tail, instance, others}`: `instance` is the name of
    the instance whose home was warmed, `others` the live instances that warm their own homes in the
    background after a success (R-10.2). Needs the current digest trusted."""
    result = await _center(request).warm_up_sandbox(server_id)
    return asdict(result)


@router.post("/{server_id}/enable", summary="Enable a trusted, tested server", responses=errors(404, 409))
async def enable(request: Request, server_id: str) -> dict[str, Any]:
    return (await _center(request).enable(server_id)).to_dict()


@router.post("/{server_id}/disable", summary="Disable a server", responses=errors(404, 409))
async def disable(request: Request, server_id: str) -> dict[str, Any]:
    return (await _center(request).disable(server_id)).to_dict()


@router.get("/{server_id}/tools", summary="List the server's tools", responses=errors(404, *UPSTREAM))
async def list_tools(request: Request, server_id: str) -> dict[str, Any]:
    """From the live session; connects lazily (R-3.2). `quarantined`: the tools it listed whose definition
    failed validation (`{"category", "index", "name", "reason"}`; not offered to agents, a call to one is
    refused with MCP_TOOL_QUARANTINED, R-3.6)."""
    center = _center(request)
    tools = [tool.to_dict() for tool in await center.list_tools(server_id)]
    quarantined = [q.to_dict() for q in (await center.catalog(server_id)).catalog.quarantined["tools"]]
    return {"tools": tools, "quarantined": quarantined}


@router.post(
    "/{server_id}/tools/{tool}/call",
    summary="Call a tool (user-initiated)",
    responses=errors(404, *UPSTREAM),
)
async def call_tool(
    request: Request, server_id: str, tool: str, body: Annotated[ToolCall | None, Body()] = None
) -> dict[str, Any]:
    """Body `{"arguments": {...}, "operation_id": "..."?}` (optional: no body means no arguments);
    returns the MCP `CallToolResult`."""
    body = body or ToolCall()
    result = await _center(request).call_tool(server_id, tool, body.arguments, operation_id=body.operation_id)
    return result.to_dict()
