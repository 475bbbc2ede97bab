"""Interaction cards as stored and shown: the store plumbing and the views (R-6.1, R-6.3, R-9.2).

The base of `InteractionBroker` (`interactions.py`, which describes the flow): reading, inserting
and compare-and-set updates of cards in the shared store (a started write always finishes), marking
cards of a process that is gone `interrupted`, announcing each new version of a card once, and the
view a face shows. The answers live in `interaction_answers.py`.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import mcp_types as types

from mcp_center.errors import (
    InteractionClosed,
    InteractionNotFound,
    RequestInvalid,
)
from mcp_center.runtime import EventBus
from mcp_center.secrets import Redactor, SecretCipher
from mcp_center.service.forms import FormField, FormSchema, UnsupportedSchema
from mcp_center.service.results import CardAction, InteractionCard, ToolCallResult
from mcp_center.service.store_threads import in_read_thread, in_write_thread, read_state
from mcp_center.store import CallRef, InteractionRecord, RetryState, Store, StoreState

Elicitor = Callable[[types.ElicitRequestFormParams], Awaitable[types.ElicitResult]]
"""Asks the caller's own client instead of a card: the gateway passes one when its downstream
client supports form elicitation (R-8.1)."""
Sampler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Sends a server's `sampling/createMessage` params (JSON) to the caller's client and returns its
result (JSON); the gateway passes one when its agent declared sampling (R-8.5). Raises
`CenterError` when refused (the user's policy, an approval denied, the client's error)."""
RootsLister = Callable[[], Awaitable[dict[str, Any]]]
"""Asks the caller's client for `roots/list` and returns its result (JSON) (R-8.5)."""

__all__ = [
    "ACTIONS",
    "DEFAULT_ELICITATION_TIMEOUT_S",
    "MAX_KEPT_ARGUMENT_BYTES",
    "STATES",
    "Action",
    "CardStore",
    "Elicitor",
    "RetryCall",
    "RootsLister",
    "Sampler",
    "TrackedCall",
    "Waiter",
    "answer_aad",
    "as_dict",
    "card_signature",
    "form_of",
    "interrupted",
    "kept_arguments",
    "utc_now",
]

logger = logging.getLogger(__name__)

DEFAULT_ELICITATION_TIMEOUT_S = 600.0
"""Seconds a card waits for an answer before the server gets `cancel` (below the 15 min HTTP read timeout)."""
MAX_KEPT_ARGUMENT_BYTES = 64 * 1024
"""Arguments larger than this (JSON) are not kept with a card, so no retry is offered for its call."""

RetryCall = Callable[[str, str, dict[str, Any]], Awaitable[ToolCallResult]]
"""`(server_id, tool, arguments) -> ToolCallResult`: a user-initiated call (the user confirmed the retry)."""

Action = Literal["accept", "decline", "cancel", "retry"]
ACTIONS: tuple[str, ...] = ("accept", "decline", "cancel", "retry")
STATES: tuple[str, ...] = ("pending", "accepted", "declined", "cancelled", "expired", "withdrawn", "interrupted")


@dataclass(eq=False)
class TrackedCall:
    operation_id: str
    make_ref: Callable[[], CallRef]
    """Builds the call's `CallRef` for a card (only when a card is made: not on every call, R-8.3)."""
    elicitor: Elicitor | None = None
    """`elicitor`, `sampler`, `roots`: before the flags, so that one per call is made with positional
    arguments only (a class called with keywords costs a dictionary of them, issue 12)."""
    sampler: Sampler | None = None
    roots: RootsLister | None = None
    interrupted: bool = False
    """The host stopped while the call ran (`InteractionBroker.interrupt_all` / `interrupt_running`)."""
    stopped_running: bool = False
    """Interrupted while it ran at the server, not while it waited for a card (`interrupt_running`)."""

    @functools.cached_property
    def ref(self) -> CallRef:
        """The call as a card names it."""
        return self.make_ref()


@dataclass(eq=False)
class Waiter:
    form: FormSchema
    operation_ids: frozenset[str]
    done: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False
    result: types.ElicitResult | types.ErrorData | None = None


def utc_now() -> datetime:
    return datetime.now(UTC)


def kept_arguments(arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    try:
        encoded = json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None
    return dict(arguments) if len(encoded.encode("utf-8", "surrogatepass")) <= MAX_KEPT_ARGUMENT_BYTES else None


class CardStore:
    """Cards in the store and their views: the base of `InteractionBroker` (set up by its `__init__`)."""

    _store: Store
    _events: EventBus
    _cipher: SecretCipher
    _redactor: Redactor
    instance: str
    retry_call: RetryCall | None
    _waiters: dict[str, Waiter]
    _seen: dict[str, tuple[object, ...]]
    _lock: anyio.Lock

    # ----- reads ----------------------------------------------------------------------------------

    async def views(self, *, state: str | None = None) -> list[InteractionCard]:
        """Cards of every process, newest first; `state` filters (`pending`, `interrupted`, ...).

        Raises:
            RequestInvalid: unknown state.
        """
        if state is not None and state not in STATES:
            raise RequestInvalid(
                f"state: must be one of {', '.join(STATES)}",
                details={"errors": [{"field": "state", "code": "FIELD_INVALID", "message": "unknown state"}]},
            )
        await self._close_orphans()
        records = list((await self._read()).interactions.values())
        records.sort(key=lambda r: r.created_at, reverse=True)
        return [self._view(r) for r in records if state is None or r.state == state]

    async def get(self, interaction_id: str) -> InteractionCard:
        """One card.

        Raises:
            InteractionNotFound.
        """
        return self._view(await self._record(interaction_id))

    # ----- storage ----------------------------------------------------------------------------------

    async def _read(self) -> StoreState:
        return await read_state(self._store)

    async def _record(self, interaction_id: str) -> InteractionRecord:
        await self._close_orphans()
        record = (await self._read()).interactions.get(interaction_id)
        if record is None:
            raise InteractionNotFound(
                f"no interaction with id '{interaction_id}'", details={"interaction_id": interaction_id}
            )
        return record

    def _alive(self, instance: str) -> bool:
        return instance == self.instance or self._store.instance_alive(instance)

    async def _close_orphans(self) -> int:
        """Mark interrupted the cards whose process is gone: pending ones, and answered ones whose answer
        never reached it (R-6.3). Returns how many."""

        def waiting(record: InteractionRecord) -> bool:
            return record.state == "pending" or (record.answer is not None and record.state != "interrupted")

        others = {r.host_instance for r in (await self._read()).interactions.values() if waiting(r)} - {self.instance}
        # Presence may need a query (a run the feed does not know): in a read thread, not on the loop.
        dead: set[str] = await in_read_thread(lambda: {i for i in others if not self._alive(i)}) if others else set()
        if not dead:
            return 0

        def orphaned(record: InteractionRecord) -> bool:
            return waiting(record) and record.host_instance in dead

        now = utc_now()

        def run() -> list[InteractionRecord]:
            changed: list[InteractionRecord] = []
            with self._store.transaction() as state:
                for record in list(state.interactions.values()):
                    if orphaned(record):
                        updated = interrupted(record, now, "the mcp-center process that asked stopped or crashed")
                        state.interactions[record.id] = updated.model_copy(update={"answer": None})
                        changed.append(state.interactions[record.id])
            return changed

        done: list[list[InteractionRecord]] = []
        with anyio.CancelScope(shield=True):
            done.append(await in_write_thread(run))
        changed = done[0]
        if changed:
            logger.warning("interactions.interrupted_by_gone_process", extra={"count": len(changed)})
        for record in changed:
            self._publish("interaction.closed", record)
        return len(changed)

    async def _insert(self, record: InteractionRecord) -> None:
        def run() -> None:
            with self._store.transaction() as state:
                state.interactions[record.id] = record

        with anyio.CancelScope(shield=True):
            await in_write_thread(run)

    async def _transition(
        self, interaction_id: str, change: Callable[[InteractionRecord], InteractionRecord]
    ) -> InteractionRecord | None:
        """Apply `change` only if the card is still pending (compare-and-set); the new record, or None."""
        return await self._update(interaction_id, lambda r: change(r) if r.state == "pending" else None)

    async def _update(
        self, interaction_id: str, change: Callable[[InteractionRecord], InteractionRecord | None]
    ) -> InteractionRecord | None:
        """Replace a card by `change(card)` in one transaction (None from `change`: leave it); the new record."""

        def run() -> InteractionRecord | None:
            with self._store.transaction() as state:
                record = state.interactions.get(interaction_id)
                if record is None:
                    return None
                updated = change(record)
                if updated is None:
                    return None
                state.interactions[interaction_id] = updated
                return updated

        result: list[InteractionRecord | None] = []
        with anyio.CancelScope(shield=True):  # a started store write always finishes
            result.append(await in_write_thread(run))
        return result[0]

    def _publish(self, event: str, record: InteractionRecord) -> None:
        """Announce `record` unless this version of it was announced already (by `sync` or here)."""
        signature = card_signature(record)
        if self._seen.get(record.id) == signature:
            return
        self._seen[record.id] = signature
        self._events.publish(event, interaction=self._view(record).to_dict())

    def _view(self, record: InteractionRecord) -> InteractionCard:
        fields: tuple[FormField, ...] = ()
        if record.mode == "form" and record.requested_schema is not None:
            try:
                fields = FormSchema.parse(record.requested_schema).fields
            except UnsupportedSchema:
                fields = ()
        actions: tuple[CardAction, ...] = ()
        if record.state == "pending" and (record.id in self._waiters or self._alive(record.host_instance)):
            actions = ("accept", "decline", "cancel")
        elif record.state == "interrupted" and record.retry.offered and not record.retry.done:
            actions = ("retry",)
        return InteractionCard(
            id=record.id,
            kind=record.kind,
            mode=record.mode,
            state=record.state,
            server_id=record.server_id,
            message=record.message,
            requested_schema=record.requested_schema,
            fields=fields,
            defaults=record.defaults,
            url_origin=record.url_origin,
            calls=tuple(record.calls),
            created_at=record.created_at,
            expires_at=record.expires_at,
            closed_at=record.closed_at,
            reason=record.reason,
            answer_fields=tuple(record.answer_fields),
            delivered=record.state in {"accepted", "declined", "cancelled", "expired"} and record.answer is None,
            retry=record.retry,
            actions=actions,
        )


def as_dict(schema: object) -> dict[str, Any] | None:
    return dict(schema) if isinstance(schema, dict) else None  # pyright: ignore[reportUnknownArgumentType]


def card_signature(record: InteractionRecord) -> tuple[object, ...]:
    """What a page shows of a card's progress: a change of any of these is announced."""
    return (record.state, record.answer is None, record.retry.done, record.retry.outcome)


def answer_aad(interaction_id: str) -> str:
    """The associated data of a relayed answer: it opens only as the answer of this card."""
    return f"mcp-center/interaction-answer/v1/{interaction_id}"


def form_of(record: InteractionRecord) -> FormSchema:
    """The form of a pending card created in another process (its schema was parsed when it was created)."""
    try:
        return FormSchema.parse(record.requested_schema)
    except UnsupportedSchema:
        raise InteractionClosed(
            f"interaction '{record.id}' has no form that can be answered",
            details={"interaction_id": record.id, "state": record.state},
        ) from None


def interrupted(record: InteractionRecord, now: datetime, reason: str) -> InteractionRecord:
    offered = any(c.arguments is not None for c in record.calls)
    return record.model_copy(
        update={"state": "interrupted", "closed_at": now, "reason": reason, "retry": RetryState(offered=offered)}
    )
