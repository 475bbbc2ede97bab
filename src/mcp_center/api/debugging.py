"""Health and debugging routes (R-3.11): the live event stream, per-server logs and catalogs."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from mcp_center.service import McpCenter

__all__ = ["HEARTBEAT_S", "end_event_streams", "router"]

router = APIRouter(tags=["debugging"])

HEARTBEAT_S = 15.0
"""Seconds between keep-alive comments on the event stream (proxies drop silent connections)."""
SHUTDOWN_CHECK_S = 0.5
"""Seconds between two looks, on an idle stream, at whether the host is stopping."""


def end_event_streams(app: FastAPI) -> None:
    """Make every open event stream of `app` end within `SHUTDOWN_CHECK_S` (the host is stopping).

    The server's exit handler calls this before it waits for open responses: a stream never ends
    by itself, so each open settings page would otherwise hold the exit up for the whole
    graceful-shutdown timeout and then be cancelled. Only sets a flag, so a signal handler may call it.
    """
    app.state.event_streams_closing = True


def _closing(request: Request) -> bool:
    return bool(getattr(request.app.state, "event_streams_closing", False))


def _center(request: Request) -> McpCenter:
    center: McpCenter = request.app.state.center
    return center


@router.get("/api/events", summary="Live event stream (server-sent events)")
async def events(request: Request) -> StreamingResponse:
    """`text/event-stream` of JSON events: `server.status` (state changes, with the attributed
    error), `server.catalog` (a catalog refresh committed), `server.created/updated/deleted/...`
    (configuration changes), `server.oauth` (an authorization was completed or forgotten),
    `events.dropped` (this client fell behind). A comment line is sent
    every 15 s as a heartbeat. The stream ends when the host stops."""
    center = _center(request)

    async def stream() -> AsyncGenerator[str]:
        async with center.events.subscribe() as subscription:
            yield ": connected\n\n"
            quiet_s = 0.0
            while not _closing(request):
                event: dict[str, Any] | None = None
                with anyio.move_on_after(SHUTDOWN_CHECK_S):
                    event = await subscription.next()
                if event is None:
                    quiet_s += SHUTDOWN_CHECK_S
                    if quiet_s >= HEARTBEAT_S:
                        quiet_s = 0.0
                        yield ": heartbeat\n\n"
                    continue
                quiet_s = 0.0
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
    generation numbers and per-category refresh errors (R-3.6, R-3.7), and `capabilities`: whether
    the server declared tools, prompts and resources when it connected."""
    return await _center(request).catalog(server_id, refresh=refresh)
