"""Which failed connections are tried again by themselves, and after how long (issue 14 item 12, R-3.11).

A connection that failed is reconnected automatically after `RECONNECT.delay(n)` seconds (n: the
failures in a row), or `STDIO_RECONNECT.delay(n)` for a stdio server whose process keeps exiting,
unless the failure is one only a user can fix (`retried` says which): an authorization or step-up
the user must give, a command that cannot start, a sandbox the host lacks. An error that says
`details.retryable` (an OAuth refresh that failed for a 5xx or a network error) is retried anyway.

The connection manager (`runtime/manager.py`) owns the slot, its failure count and the pending
retry; this module only classifies the error and names the policies.
"""

from __future__ import annotations

from typing import Final

from mcp_center.errors import CenterError
from mcp_center.models import ErrorReason
from mcp_center.transports.backoff import Backoff

__all__ = ["NOT_RETRIED", "RECONNECT", "STDIO_RECONNECT", "retried"]

RECONNECT = Backoff(floor_s=1.0, cap_s=60.0)
"""Delays before reconnecting a server whose connection failed (issue 14, item 12)."""
STDIO_RECONNECT = Backoff(floor_s=10.0, cap_s=300.0)
"""The same for a stdio server whose process exited: the first restart after about 10 s (time to read
why it went down), and a crash loop slows down to one start per 5 minutes."""
NOT_RETRIED: Final = frozenset(
    {
        ErrorReason.AUTH_REQUIRED.value,
        ErrorReason.STEP_UP_REQUIRED.value,
        ErrorReason.SPAWN_FAILED.value,
        ErrorReason.SANDBOX_REQUIRED.value,
    }
)
"""Failures (`details.reason`) only a user can fix: no automatic reconnect (the status says what is
needed), unless the error says `details.retryable`."""


def retried(error: CenterError) -> bool:
    """True when a connection that failed with `error` is reconnected by itself (see the module docstring).

    Args:
        error: The attributed failure of the connection (`details.reason`, `details.retryable`).
    Returns:
        False for a reason in `NOT_RETRIED` that is not marked retryable; True otherwise.
    """
    return error.details.get("reason") not in NOT_RETRIED or error.details.get("retryable") is True
