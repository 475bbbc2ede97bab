"""Health and debugging routes (R-3.11): the live event stream, per-server logs and catalogs."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from mcp_center.service import McpCenter

__all__ = ["HEARTBEAT_S", "router"]

router = APIRouter(tags=["debugging"])

HEARTBEAT_S = 15.0
"""Seconds between keep-alive comments on the event stream (proxies drop silent connections)."""


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


@router.get("/api/events", summary="Live event stream (server-sent events)")
async def events(request: Request) -> StreamingResponse:
    """`text/event-stream` of JSON events: `server.status` (state changes, with the attributed
    error), `server.catalog` (a catalog refresh committed), `server.created/updated/deleted/...`
    (configuration changes), `events.dropped` (this client fell behind). A comment line is sent
    every 15 s as a heartbeat."""
    center = _center(request)

    async def stream() -> AsyncGenerator[str]:
        async with center.events.subscribe() as subscription:
            yield ": connected\n\n"
            while True:
                event: dict[str, Any] | None = None
                with anyio.move_on_after(HEARTBEAT_S):
                    event = await subscription.next()
                if event is None:
                    yield ": heartbeat\n\n"
                    continue
                yield f"event: {event['type']}\ndata: {json.dumps(event, default=str)}\n\n"

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get("/api/mcp/servers/{server_id}/logs", summary="Last requests/responses and stderr of a server")
async def logs(
    request: Request,
    server_id: str,
    download: Annotated[bool, Query(description="Send as a JSON file download (export).")] = False,
) -> JSONResponse:
    """The last 50 request/response summaries (method, id, duration, status, sizes, error;
    never params, results or headers) and the last stderr lines, all redacted."""
    body = await _center(request).logs(server_id)
    headers = {"Content-Disposition": f'attachment; filename="mcp-center-{server_id}-logs.json"'} if download else None
    return JSONResponse(body, headers=headers)


@router.get("/api/mcp/servers/{server_id}/catalog", summary="The live catalog of a server")
async def catalog(
    request: Request,
    server_id: str,
    refresh: Annotated[bool, Query(description="Re-list every category first.")] = False,
) -> dict[str, Any]:
    """Tools, prompts, resources and resource templates, quarantined items with reasons,
    generation numbers and per-category refresh errors (R-3.6, R-3.7)."""
    return await _center(request).catalog(server_id, refresh=refresh)
