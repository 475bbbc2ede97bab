"""Answers to interaction cards: accept, decline, cancel, retry; answers relayed between processes (R-6.1, R-6.3).

The process that takes an answer validates it against the card's schema. When the server request
waits in this process the answer resumes it at once; otherwise it travels in the card, sealed with
the host key under associated data naming the card, and the waiting process opens it (`_collect`,
R-9.2). Values of fields that look like secrets are registered with the redactor in both processes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from mcp_center.errors import (
    CenterError,
    InteractionClosed,
    InteractionNotDelivered,
    RequestInvalid,
)
from mcp_center.service.forms import FormSchema
from mcp_center.service.interaction_cards import ACTIONS, CardStore, Waiter, answer_aad, form_of, utc_now
from mcp_center.service.results import InteractionAnswer
from mcp_center.store import InteractionRecord, InteractionState, RetryState

__all__ = ["CardAnswers"]

logger = logging.getLogger(__name__)


class CardAnswers(CardStore):
    """Answers and retries of cards: the middle layer of `InteractionBroker`."""

    # ----- answers --------------------------------------------------------------------------------

    async def answer(self, interaction_id: str, action: object, content: object = None) -> InteractionAnswer:
        """Answer a card: accept (with content), decline, cancel — or retry an interrupted call.

        The card may belong to a call of any process on the data directory: the answer reaches it.

        Args:
            action: `accept`, `decline`, `cancel` (pending cards) or `retry` (interrupted cards).
            content: For accept: `{field: value}`; fields left out get the schema's defaults.
        Returns:
            An `InteractionAnswer`: the card after the answer, and for retry the re-sent call's
            `ToolCallResult`.
        Raises:
            RequestInvalid: unknown action, or content with an action other than accept.
            InteractionNotFound: no such card.
            ElicitationAnswerInvalid: the content breaks the requested schema (the card stays pending).
            InteractionNotDelivered: the card was interrupted by a restart (or its process is gone);
                nothing can reach the server.
            InteractionClosed: the card is no longer pending (or its retry is not offered / was done).
            StorageError: the answer could not be stored (the card stays pending).
        """
        if action not in ACTIONS:
            raise RequestInvalid(
                "action: must be accept, decline, cancel or retry",
                details={"errors": [{"field": "action", "code": "FIELD_INVALID", "message": "unknown action"}]},
            )
        if content is not None and action != "accept":
            raise RequestInvalid(
                "content: only an accept carries content",
                details={"errors": [{"field": "content", "code": "FIELD_INVALID", "message": "only with accept"}]},
            )
        record = await self._record(interaction_id)
        if action == "retry":
            return await self._retry(record)
        if record.state == "interrupted":
            raise self._not_delivered(record)
        waiter = self._waiters.get(interaction_id)
        local = waiter is not None and not waiter.closed
        if record.state != "pending" or (waiter is not None and waiter.closed):
            state = record.state if record.state != "pending" else "withdrawn"
            raise InteractionClosed(
                f"interaction '{interaction_id}' is {state}; its request is no longer waiting",
                details={"interaction_id": interaction_id, "state": state},
            )
        form = waiter.form if waiter is not None else form_of(record)
        result = self._result(form, str(action), content)
        fields = sorted((result.content or {}).keys())
        state_map: dict[str, InteractionState] = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
        new_state = state_map[str(action)]
        sealed = None if local else self._seal(interaction_id, result)
        if waiter is not None:
            waiter.closed = True  # no expiry or withdrawal of this card here while the answer commits
        closed = await self._transition(
            interaction_id,
            lambda r: r.model_copy(
                update={"state": new_state, "closed_at": utc_now(), "answer_fields": fields, "answer": sealed}
            ),
        )
        if closed is None:  # answered, expired or withdrawn meanwhile, here or in another process
            if waiter is not None:
                waiter.closed = False
                await self._collect(interaction_id, waiter)  # an answer relayed from elsewhere won
            current = await self._record(interaction_id)
            if current.state == "interrupted":
                raise self._not_delivered(current)
            raise InteractionClosed(
                f"interaction '{interaction_id}' is {current.state}; its request is no longer waiting",
                details={"interaction_id": interaction_id, "state": current.state},
            )
        if waiter is not None:
            waiter.result = result
            waiter.done.set()
        logger.info(
            "interaction.answered",
            extra={"interaction_id": interaction_id, "action": action, "fields": fields, "relayed": not local},
        )
        self._publish("interaction.closed", closed)
        return InteractionAnswer(self._view(closed))

    def _result(self, form: FormSchema, action: str, content: object) -> types.ElicitResult:
        if action != "accept":
            return types.ElicitResult(action="decline" if action == "decline" else "cancel")
        answer = form.validate(content)
        self._redact_secret_fields(form, answer)
        return types.ElicitResult(action="accept", content=answer)

    def _redact_secret_fields(self, form: FormSchema, answer: Mapping[str, Any]) -> None:
        for name in form.secret_fields():
            value = answer.get(name)
            if isinstance(value, str):
                self._redactor.add(value)

    def _not_delivered(self, record: InteractionRecord) -> InteractionNotDelivered:
        return InteractionNotDelivered(
            "the server's request did not survive the restart of mcp-center; the answer cannot be delivered "
            "and the call failed" + ("; you may retry the call" if record.retry.offered else ""),
            details={"interaction_id": record.id, "state": record.state, "retry": record.retry.model_dump()},
        )

    async def _retry(self, record: InteractionRecord) -> InteractionAnswer:
        call = next((c for c in record.calls if c.arguments is not None), None)
        if record.state != "interrupted" or not record.retry.offered or call is None or self.retry_call is None:
            raise InteractionClosed(
                f"interaction '{record.id}' offers no retry",
                details={"interaction_id": record.id, "state": record.state, "retry": record.retry.model_dump()},
            )
        async with self._lock:  # one retry in this process, even if the user double-clicks

            def claim(current: InteractionRecord) -> InteractionRecord | None:
                if current.retry.done:  # another process (or click) re-sent it first
                    return None
                return current.model_copy(update={"retry": RetryState(offered=True, done=True, at=utc_now())})

            claimed = await self._update(record.id, claim)
            if claimed is None:
                current = await self._record(record.id)
                raise InteractionClosed(
                    f"the call of interaction '{record.id}' was already re-sent",
                    details={"interaction_id": record.id, "state": current.state, "retry": current.retry.model_dump()},
                )
        assert call.arguments is not None
        outcome = "unfinished"
        try:
            result = await self.retry_call(call.server_id, call.tool, dict(call.arguments))
            outcome = "ok"
        except CenterError as exc:
            outcome = exc.code
            raise
        finally:
            updated = await self._update(
                record.id,
                lambda r: r.model_copy(update={"retry": r.retry.model_copy(update={"outcome": outcome})}),
            )
            if updated is not None:
                self._publish("interaction.closed", updated)
        assert updated is not None
        return InteractionAnswer(self._view(updated), result)

    async def _collect(self, interaction_id: str, waiter: Waiter) -> bool:
        """Take an answer another process stored for this card (open it, clear it). True when there was
        one (`waiter` then holds the result to send)."""
        if waiter.closed:
            return True
        record = (await self._read()).interactions.get(interaction_id)
        if record is None or record.answer is None:
            return False  # still pending, or closed here (whoever closed it sets the result)
        result = self._open(interaction_id, record.answer, waiter.form)
        delivered = await self._update(interaction_id, lambda r: r.model_copy(update={"answer": None}))
        waiter.closed = True
        waiter.result = result
        waiter.done.set()
        logger.info("interaction.relayed", extra={"interaction_id": interaction_id, "action": result.action})
        if delivered is not None:
            self._publish("interaction.closed", delivered)
        return True

    def _seal(self, interaction_id: str, result: types.ElicitResult) -> str:
        plain = json.dumps({"action": result.action, "content": result.content}, ensure_ascii=False)
        return self._cipher.seal(plain, associated_data=answer_aad(interaction_id))

    def _open(self, interaction_id: str, sealed: str, form: FormSchema) -> types.ElicitResult:
        try:
            doc = json.loads(self._cipher.open(sealed, associated_data=answer_aad(interaction_id)))
            result = types.ElicitResult.model_validate(doc)
        except (CenterError, ValueError):
            logger.warning("interaction.answer_unreadable", extra={"interaction_id": interaction_id})
            return types.ElicitResult(action="cancel")
        if result.content:
            self._redact_secret_fields(form, result.content)
        return result
