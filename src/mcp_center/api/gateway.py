"""Gateway routes: the endpoint's address and its tokens (R-7.1, R-8.1)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response

from mcp_center.api.bodies import GatewayTokenRequest
from mcp_center.api.openapi import API_ERRORS, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.service import McpCenter, bridge_command

__all__ = ["router"]

router = APIRouter(prefix="/api/gateway", tags=["gateway"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


@router.get("", summary="The gateway endpoint")
async def info(request: Request) -> dict[str, Any]:
    """Where MCP clients connect (`url`, Streamable HTTP), how many tokens exist, and the
    `bridge_command` a process-only client runs (`<it> gateway --stdio`; null if unknown)."""
    center = _center(request)
    return {
        "url": f"{center.settings.base_url}/mcp",
        "tokens": len(await center.gateway_tokens.list_async()),
        "bridge_command": bridge_command(),
    }


@router.get("/tokens", summary="List gateway tokens")
async def list_tokens(request: Request) -> dict[str, Any]:
    """Names and ids only: a token is shown once, when it is created."""
    return {"tokens": [record.view() for record in await _center(request).gateway_tokens.list_async()]}


@router.post("/tokens", status_code=201, summary="Create a gateway token")
async def create_token(request: Request, body: Annotated[GatewayTokenRequest, Body()]) -> dict[str, Any]:
    """Body `{"name": "..."}`; the answer holds the token — the only time it is shown."""
    record, token = await _center(request).gateway_tokens.create_async(body.name)
    return {**record.view(), "token": token}


@router.delete("/tokens/{token_id}", status_code=204, summary="Revoke a gateway token", responses=errors(404))
async def revoke_token(request: Request, token_id: str) -> Response:
    await _center(request).gateway_tokens.revoke_async(token_id)
    return Response(status_code=204)
