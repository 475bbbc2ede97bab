"""Approvals: an agent's tool call waits for a human decision before it reaches the server (R-5.3).

Threat: an agent (or a prompt injection steering it) running a tool with side effects the user
never agreed to. Every agent-initiated call of a tool whose policy is `ask` (the default) becomes
a pending approval — tool, server, arguments and the server's annotations shown as hints — and
waits. Only `approve` lets the call go to the server; `deny`, the approval timeout, cancelling
the call by operation id, the caller going away, and the host stopping all end it without the
server ever seeing it.

Approvals live in memory: they belong to a waiting caller, and a caller does not survive a
restart of the host. Decided approvals are kept (bounded) so the UI can show what happened.
User-initiated calls (the settings page playground, the CLI, `POST /api/mcp/servers/{id}/tools/
{tool}/call`) are the human acting and never create an approval.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import anyio

from mcp_center.errors import (
    ApprovalClosed,
    ApprovalDenied,
    ApprovalExpired,
    ApprovalNotFound,
    CallCancelled,
    CallInterrupted,
    RequestInvalid,
)
from mcp_center.runtime import EventBus

__all__ = ["DEFAULT_APPROVAL_TIMEOUT_S", "MAX_CLOSED_APPROVALS", "Approval", "ApprovalBroker", "ApprovalState"]

logger = logging.getLogger(__name__)

DEFAULT_APPROVAL_TIMEOUT_S = 600.0
"""Seconds a pending approval waits for a decision before the call fails with MCP_APPROVAL_EXPIRED."""
MAX_CLOSED_APPROVALS = 100
"""Decided / expired / cancelled approvals kept for `views(include_closed=True)`."""

ApprovalState = Literal["pending", "approved", "denied", "expired", "cancelled", "interrupted"]
Decision = Literal["approve", "deny"]


@dataclass(eq=False)
class Approval:
    """One agent call waiting for (or past) a human decision.

    Attributes:
        tool: The exposed name the agent called (`mcp__{serverId}__...`).
        server_id / server_tool: Where the call would go, and the tool's original name.
        arguments: What the agent sent (shown to the user as is).
        hints: The server's tool annotations — self-reported, shown, never trusted (R-5.1).
        operation_id: Cancelling this id ends the approval and the call (R-3.8).
        created_at / expires_at: Aware UTC datetimes.
        caller: Who asked: `{"via": "gateway", "token_id", "token_name", "client": {"name",
            "version"} | None}` (the gateway token and the agent's `clientInfo`), `{"via":
            "rest_api"}` (the admin API), or None (a library caller).
    """

    id: str
    tool: str
    server_id: str
    server_tool: str
    arguments: dict[str, Any]
    hints: dict[str, Any]
    operation_id: str
    created_at: datetime
    expires_at: datetime
    state: ApprovalState = "pending"
    decided_at: datetime | None = None
    caller: dict[str, Any] | None = None
    _done: anyio.Event = field(default_factory=anyio.Event, repr=False)

    def view(self) -> dict[str, Any]:
        """JSON shape for the API and the UI card."""
        return {
            "id": self.id,
            "state": self.state,
            "tool": self.tool,
            "server_id": self.server_id,
            "server_tool": self.server_tool,
            "arguments": self.arguments,
            "hints": self.hints,
            "effects": "write",
            "operation_id": self.operation_id,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
            "caller": self.caller or {"via": "library"},
        }


class ApprovalBroker:
    """Pending approvals of this host process.

    Args:
        events: Receives `approval.created` and `approval.closed` events (`{"approval": view}`).
        timeout_s: Seconds an approval waits before it expires.
    """

    def __init__(self, events: EventBus, *, timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S) -> None:
        self._events = events
        self.timeout_s = timeout_s
        self._pending: dict[str, Approval] = {}
        self._closed: OrderedDict[str, Approval] = OrderedDict()

    async def wait(
        self,
        *,
        tool: str,
        server_id: str,
        server_tool: str,
        arguments: Mapping[str, Any],
        hints: Mapping[str, Any],
        operation_id: str,
        caller: Mapping[str, Any] | None = None,
    ) -> Approval:
        """Create a pending approval and wait for the decision.

        `caller` says who asked (shown on the card, see `Approval.caller`).

        Returns:
            The approval, approved: the caller may now send the call.
        Raises:
            ApprovalDenied: the user denied it.
            ApprovalExpired: nobody decided within `timeout_s` seconds.
            CallCancelled: the call's operation id was cancelled while it waited.
            CallInterrupted: the host is stopping.
            (and the caller's own cancellation, which marks the approval cancelled)
        """
        now = datetime.now(UTC)
        approval = Approval(
            id=uuid.uuid4().hex,
            tool=tool,
            server_id=server_id,
            server_tool=server_tool,
            arguments=dict(arguments),
            hints=dict(hints),
            operation_id=operation_id,
            created_at=now,
            expires_at=now + timedelta(seconds=self.timeout_s),
            caller=dict(caller) if caller is not None else None,
        )
        self._pending[approval.id] = approval
        self._events.publish("approval.created", approval=approval.view())
        logger.info(
            "approval.created",
            extra={"approval_id": approval.id, "tool": tool, "server_id": server_id, "operation_id": operation_id},
        )
        try:
            with anyio.move_on_after(self.timeout_s):
                await approval._done.wait()  # pyright: ignore[reportPrivateUsage]
        except BaseException:
            self._close(approval, "cancelled")  # the caller went away: its cancellation propagates
            raise
        if approval.state == "pending":
            self._close(approval, "expired")
        if approval.state == "approved":
            return approval
        details = {"approval_id": approval.id, "tool": tool, "operation_id": operation_id}
        if approval.state == "denied":
            raise ApprovalDenied(f"the user denied the call of '{tool}'; it was not sent", details=details)
        if approval.state == "cancelled":
            raise CallCancelled(
                f"operation '{operation_id}' was cancelled while it waited for approval; it was not sent",
                details=details,
            )
        if approval.state == "interrupted":
            raise CallInterrupted(
                f"mcp-center stopped while the call of '{tool}' waited for approval; it was not sent",
                details={**details, "reached_server": False, "delivered": False},
            )
        raise ApprovalExpired(
            f"nobody approved the call of '{tool}' within {self.timeout_s:g} s; it was not sent",
            details={**details, "timeout_s": self.timeout_s},
        )

    def decide(self, approval_id: str, decision: object) -> dict[str, Any]:
        """Approve or deny a pending approval (the human's decision).

        Args:
            decision: `"approve"` or `"deny"`.
        Returns:
            The approval's view after the decision.
        Raises:
            RequestInvalid: `decision` is not approve / deny.
            ApprovalNotFound: no such approval.
            ApprovalClosed: it was already decided, expired or cancelled (`details.state`).
        """
        if decision not in ("approve", "deny"):
            raise RequestInvalid(
                "decision: must be 'approve' or 'deny'",
                details={"errors": [{"field": "decision", "code": "FIELD_INVALID", "message": "approve or deny"}]},
            )
        approval = self._pending.get(approval_id)
        if approval is None:
            closed = self._closed.get(approval_id)
            if closed is not None:
                raise ApprovalClosed(
                    f"approval '{approval_id}' is already {closed.state}",
                    details={"approval_id": approval_id, "state": closed.state},
                )
            raise ApprovalNotFound(f"no approval with id '{approval_id}'", details={"approval_id": approval_id})
        self._close(approval, "approved" if decision == "approve" else "denied")
        return approval.view()

    def get(self, approval_id: str) -> dict[str, Any]:
        """One approval's view (pending or recently closed).

        Raises:
            ApprovalNotFound.
        """
        approval = self._pending.get(approval_id) or self._closed.get(approval_id)
        if approval is None:
            raise ApprovalNotFound(f"no approval with id '{approval_id}'", details={"approval_id": approval_id})
        return approval.view()

    def views(self, *, include_closed: bool = False) -> list[dict[str, Any]]:
        """Pending approvals, oldest first (then recently closed ones, newest first, if asked)."""
        views = [a.view() for a in sorted(self._pending.values(), key=lambda a: a.created_at)]
        if include_closed:
            views += [a.view() for a in reversed(self._closed.values())]
        return views

    def cancel_operation(self, operation_id: str) -> bool:
        """End the pending approval of this operation id (the call is cancelled). True if there was one."""
        for approval in list(self._pending.values()):
            if approval.operation_id == operation_id:
                self._close(approval, "cancelled")
                return True
        return False

    def cancel_server(self, server_id: str) -> int:
        """End the pending approvals of a server that can no longer run as approved (deleted,
        disabled, or its trust invalidated by a high-risk change, R-1.4): their calls fail with
        CallCancelled, never sent. Returns how many."""
        pending = [a for a in self._pending.values() if a.server_id == server_id]
        for approval in pending:
            self._close(approval, "cancelled")
        return len(pending)

    def interrupt_all(self) -> int:
        """The host is stopping: end every pending approval (their calls fail, not sent). Returns how many."""
        pending = list(self._pending.values())
        for approval in pending:
            self._close(approval, "interrupted")
        return len(pending)

    def _close(self, approval: Approval, state: ApprovalState) -> None:
        if approval.state != "pending":
            return
        approval.state = state
        approval.decided_at = datetime.now(UTC)
        self._pending.pop(approval.id, None)
        self._closed[approval.id] = approval
        while len(self._closed) > MAX_CLOSED_APPROVALS:
            self._closed.popitem(last=False)
        approval._done.set()  # pyright: ignore[reportPrivateUsage]
        self._events.publish("approval.closed", approval=approval.view())
        logger.info("approval.closed", extra={"approval_id": approval.id, "state": state, "tool": approval.tool})
