"""Durable interaction cards, as stored in `<data dir>/mcp/interactions.json` (R-6.1, R-6.3, R-9.1).

A card is what a server's `elicitation/create` becomes while a human answers it. Cards are a
section of the store (`StoreState.interactions`), so they survive a restart of the service and
are seen by every process on the data directory: a card created during a library script's call
is listed and answered in `serve`'s page. `host_instance` names the process run whose server
request waits; a pending card whose process is gone (a restart, a crash) is marked `interrupted`
by whoever finds it — its server request cannot be resumed — so the user sees what was asked and
that the call failed.

Answers are not kept: a closed card keeps the names of the fields that were answered, not their
values (an elicitation may ask for something sensitive). An answer given in another process than
the one that waits travels in `answer`, sealed with the host key, and is removed by the waiting
process as soon as it has read it (`service/interactions.py`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_CLOSED_INTERACTIONS",
    "CallRef",
    "InteractionRecord",
    "InteractionState",
    "RetryState",
    "prune_interactions",
]

MAX_CLOSED_INTERACTIONS = 200
"""Closed cards kept for the record (newest first); pending cards and interrupted ones whose retry
is still offered are always kept."""

InteractionState = Literal["pending", "accepted", "declined", "cancelled", "expired", "withdrawn", "interrupted"]
"""`pending` waits for the user; `accepted` / `declined` / `cancelled` are the user's answer;
`expired`: nobody answered in time (the server got `cancel`); `withdrawn`: the call or the server
went away first; `interrupted`: the host stopped while it was pending (nothing was delivered)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class CallRef(_Model):
    """The tool call during which the server asked (one of the calls running on its connection).

    `arguments` is kept so that the user can re-send the call after an interruption (R-6.3); it is
    None when the arguments were too large to keep (then no retry is offered).
    """

    operation_id: str
    server_id: str
    tool: str
    caller: Literal["agent", "user"]
    exposed_name: str | None = None
    arguments: dict[str, Any] | None = None


class RetryState(_Model):
    """Whether re-sending the interrupted call is offered, and whether the user did it (R-6.3)."""

    offered: bool = False
    done: bool = False
    at: datetime | None = None
    outcome: str | None = None
    """`ok`, or the error code of the re-sent call."""


class InteractionRecord(_Model):
    """One interaction card as stored."""

    id: str
    kind: Literal["elicitation"] = "elicitation"
    mode: Literal["form", "url"] = "form"
    state: InteractionState = "pending"
    server_id: str
    connection_id: str | None = None
    host_instance: str
    """Which run of the host created the card (a pending card of another run is stale)."""
    message: str
    requested_schema: dict[str, Any] | None = None
    defaults: dict[str, Any] = Field(default_factory=dict)
    url_origin: str | None = None
    calls: list[CallRef] = Field(default_factory=list[CallRef])
    created_at: datetime
    expires_at: datetime
    closed_at: datetime | None = None
    reason: str | None = None
    answer_fields: list[str] = Field(default_factory=list)
    answer: str | None = Field(default=None, repr=False)
    """An answer on its way from the process that took it to the process that waits (a ciphertext
    sealed with the host key; None once delivered, and for declines and cancels)."""
    retry: RetryState = Field(default_factory=RetryState)

    @property
    def open(self) -> bool:
        """True while the card waits for an answer."""
        return self.state == "pending"


def _needs_user(record: InteractionRecord) -> bool:
    if record.state == "pending":
        return True
    return record.state == "interrupted" and record.retry.offered and not record.retry.done


def prune_interactions(records: dict[str, InteractionRecord]) -> dict[str, InteractionRecord]:
    """Every card that still needs the user and the newest `MAX_CLOSED_INTERACTIONS` others, oldest first."""
    keep = [r for r in records.values() if _needs_user(r) or r.answer is not None]
    closed = [r for r in records.values() if not (_needs_user(r) or r.answer is not None)]
    closed.sort(key=lambda r: r.closed_at or r.created_at, reverse=True)
    kept = sorted(keep + closed[:MAX_CLOSED_INTERACTIONS], key=lambda r: (r.created_at, r.id))
    return {r.id: r for r in kept}
