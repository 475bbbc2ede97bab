"""Operation routes: cancel a running call by its operation id (R-3.8)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from mcp_center.api.openapi import API_ERRORS
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.service import McpCenter

__all__ = ["router"]

router = APIRouter(prefix="/api/operations", tags=["operations"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)


@router.post("/{operation_id}/cancel", summary="Cancel a call by operation id")
async def cancel(request: Request, operation_id: str) -> dict[str, Any]:
    """Cancels the call upstream (`notifications/cancelled`); a cancel that arrives before the
    call is admitted is remembered and the call is refused (R-3.8). `cancelled` says whether a
    running call was found."""
    center: McpCenter = request.app.state.center
    return {"operation_id": operation_id, "cancelled": center.cancel(operation_id)}
