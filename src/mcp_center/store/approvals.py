"""Durable approvals: an agent's call waiting for a human, as stored in `<data dir>/mcp/approvals.json` (R-5.3, R-9.1).

An approval is stored, not only kept in the memory of the process whose caller waits, so that it
is listed and decided wherever the user looks: a library script's or the CLI's pending approval
appears in `serve`'s page and API, and the decision made there reaches the waiting process
(`service/approvals.py`). `host_instance` names the process run that waits; a pending approval
whose process is gone is closed as `interrupted` by whoever finds it (`Presence`).

Arguments are stored as the agent sent them (they are shown to the user, who decides on them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_CLOSED_APPROVALS", "ApprovalRecord", "ApprovalState", "prune_approvals"]

MAX_CLOSED_APPROVALS = 100
"""Decided / expired / cancelled / interrupted approvals kept for the record (newest first)."""

ApprovalState = Literal["pending", "approved", "denied", "expired", "cancelled", "interrupted"]
"""`pending` waits for the user; `approved` / `denied` are the user's decision; `expired`: nobody
decided in time; `cancelled`: the call was cancelled or its caller went away, or its server can no
longer run as approved; `interrupted`: the waiting process stopped or died first."""


class ApprovalRecord(BaseModel):
    """One approval as stored.

    Attributes:
        tool: The exposed name the agent called (`mcp__{serverId}__...`).
        server_id / server_tool: Where the call would go, and the tool's original name.
        arguments: What the agent sent (shown to the user as is).
        hints: The server's tool annotations — self-reported, shown, never trusted (R-5.1).
        operation_id: Cancelling this id (in the waiting process) ends the approval and the call.
        host_instance: The process run whose caller waits for the decision.
        created_at / expires_at / decided_at: Aware UTC datetimes.
        caller: Who asked: `{"via": "gateway", "token_id", "token_name", "client": {"name",
            "version"} | None}` (the gateway token, never the token itself, and the agent's
            self-reported `clientInfo`), `{"via": "rest_api"}`, or None (a library caller) (R-5.3).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    tool: str
    server_id: str
    server_tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    hints: dict[str, Any] = Field(default_factory=dict)
    operation_id: str
    host_instance: str
    created_at: datetime
    expires_at: datetime
    state: ApprovalState = "pending"
    decided_at: datetime | None = None
    caller: dict[str, Any] | None = None


def prune_approvals(records: dict[str, ApprovalRecord]) -> dict[str, ApprovalRecord]:
    """Every pending approval and the newest `MAX_CLOSED_APPROVALS` closed ones, oldest first."""
    pending = [r for r in records.values() if r.state == "pending"]
    closed = sorted(
        (r for r in records.values() if r.state != "pending"),
        key=lambda r: r.decided_at or r.created_at,
        reverse=True,
    )[:MAX_CLOSED_APPROVALS]
    kept = sorted(pending + closed, key=lambda r: (r.created_at, r.id))
    return {r.id: r for r in kept}
