"""Health and debugging routes: the live event stream, per-server logs and catalogs (R-3.11), and the
debugger of a server (R-12.1): its info, live activity, log level, a JSON-RPC console and completion.

Every route is behind the admin token (or the page's session cookie with its CSRF token for the
ones that change or send something, R-7.1, R-7.2). Console requests go through the live session, so
the request log records them like any call (R-3.11).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Body, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from mcp_center.api.bodies import CompletionRequest, LogLevelRequest, RpcRequest
from mcp_center.api.openapi import API_ERRORS, UPSTREAM, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.service import McpCenter

__all__ = ["HEARTBEAT_S", "end_event_streams", "router"]

router = APIRouter(tags=["debugging"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)

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


class EventStream(StreamingResponse):
    """A `text/event-stream` response (so the OpenAPI description says so)."""

    media_type = "text/event-stream"


@router.get(
    "/api/events",
    summary="Live event stream (server-sent events)",
    response_class=EventStream,
    responses={200: {"description": "Server-sent events, until the host stops."}},
)
async def events(request: Request) -> StreamingResponse:
    """`text/event-stream` of JSON events: `server.status` (state changes, with the attributed
    error), `server.catalog` (a catalog refresh committed), `server.created/updated/deleted/...`
    (configuration changes), `server.oauth` (an authorization was completed or forgotten),
    `server.activity` (a server's log message, notification or call progress: `{"server_id", "entry"}`,
    rate-limited per server; a gap in `entry.seq` means entries were kept but not sent live),
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

    return EventStream(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get(
    "/api/mcp/servers/{server_id}/logs", summary="Last requests/responses and stderr of a server", responses=errors(404)
)
async def logs(
    request: Request,
    server_id: str,
    download: Annotated[bool, Query(description="Send as a JSON file download (export).")] = False,
) -> JSONResponse:
    """The last 50 request/response summaries (method, id, duration, status, sizes, error;
    never params, results or headers) and the last stderr lines, all redacted."""
    body = (await _center(request).logs(server_id)).to_dict()
    headers = {"Content-Disposition": f'attachment; filename="mcp-center-{server_id}-logs.json"'} if download else None
    return JSONResponse(body, headers=headers)


@router.get(
    "/api/mcp/servers/{server_id}/catalog", summary="The live catalog of a server", responses=errors(404, *UPSTREAM)
)
async def catalog(
    request: Request,
    server_id: str,
    refresh: Annotated[bool, Query(description="Re-list every category first.")] = False,
) -> dict[str, Any]:
    """Tools, prompts, resources and resource templates, quarantined items with reasons,
    generation numbers and per-category refresh errors (R-3.6, R-3.7), and `capabilities`: whether
    the server declared tools, prompts and resources when it connected."""
    return (await _center(request).catalog(server_id, refresh=refresh)).to_dict()


@router.get(
    "/api/mcp/servers/{server_id}/info",
    summary="Server info: name, version, protocol, capabilities",
    responses=errors(404, *UPSTREAM),
)
async def info(request: Request, server_id: str) -> dict[str, Any]:
    """What the server declared in `initialize` — `server_info` (name, version, title), the negotiated
    `protocol_version`, `capabilities` and `instructions` — plus the console `methods` those
    capabilities allow and the chosen `log_level` (R-12.1). Connects lazily, like the catalog."""
    return (await _center(request).debugger.info(server_id)).to_dict()


@router.get(
    "/api/mcp/servers/{server_id}/activity",
    summary="A server's log messages, notifications, progress",
    responses=errors(404),
)
async def activity(
    request: Request,
    server_id: str,
    after: Annotated[int | None, Query(ge=0, description="Only entries with a larger `seq`.")] = None,
) -> dict[str, Any]:
    """The last 200 activity entries, oldest first: `log` (`notifications/message`: level, logger,
    data), `notification` (method, params) and `progress` (operation id, progress, total, message),
    redacted and bounded (R-12.1). Never connects; `server.activity` events bring new ones live."""
    entries = await _center(request).debugger.activity(server_id, after=after)
    return {"server_id": server_id, "entries": [entry.to_dict() for entry in entries]}


@router.delete(
    "/api/mcp/servers/{server_id}/activity",
    status_code=204,
    summary="Clear a server's activity",
    responses=errors(404),
)
async def clear_activity(request: Request, server_id: str) -> Response:
    """Forget the kept activity entries of the server (nothing is sent to it)."""
    await _center(request).debugger.clear_activity(server_id)
    return Response(status_code=204)


@router.put(
    "/api/mcp/servers/{server_id}/logging/level",
    summary="Set the server's log level (logging/setLevel)",
    responses=errors(404, *UPSTREAM),
)
async def set_log_level(request: Request, server_id: str, body: Annotated[LogLevelRequest, Body()]) -> dict[str, Any]:
    """`{"level": "debug" | "info" | ... | "emergency"}`: sends `logging/setLevel` on the live session
    and again on each new session of the server (R-12.1). 409 `MCP_CAPABILITY_NOT_DECLARED` when the
    server declares no `logging` capability."""
    level = await _center(request).debugger.set_log_level(server_id, body.level)
    return {"server_id": server_id, "level": level}


@router.post(
    "/api/mcp/servers/{server_id}/rpc",
    summary="JSON-RPC console: send one request",
    responses=errors(404, *UPSTREAM),
)
async def rpc(request: Request, server_id: str, body: Annotated[RpcRequest, Body()]) -> dict[str, Any]:
    """`{"method", "params"?, "operation_id"?}`: sends any request but `initialize` on the live session
    and answers `{"request", "response": {"result"} | {"error"}, "elapsed_ms", "connection_id", "at",
    "truncated"}` (R-12.1). A JSON-RPC error from the server is an answer (200), not a failure;
    `{"method": "ping"}` measures the round trip. Recorded in the request log like any call."""
    operation_id = body.operation_id if isinstance(body.operation_id, str) else None
    exchange = await _center(request).debugger.send(server_id, body.method, body.params, operation_id=operation_id)
    return exchange.to_dict()


@router.post(
    "/api/mcp/servers/{server_id}/complete",
    summary="Argument completion (completion/complete)",
    responses=errors(404, *UPSTREAM),
)
async def complete(request: Request, server_id: str, body: Annotated[CompletionRequest, Body()]) -> dict[str, Any]:
    """`{"ref": {"type": "ref/prompt", "name"} | {"type": "ref/resource", "uri"}, "argument": {"name",
    "value"}, "context": {"arguments"}?}` → `{"values", "total", "has_more"}` (R-12.1); 409
    `MCP_CAPABILITY_NOT_DECLARED` when the server declares no `completions` capability."""
    return (await _center(request).debugger.complete(server_id, body.model_dump(exclude_unset=True))).to_dict()
