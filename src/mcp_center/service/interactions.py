"""Durable elicitation: a server's `elicitation/create` becomes an interaction card (R-6).

Flow (form mode, R-6.1): during a tool call the server sends `elicitation/create`; the SDK runs
our callback in its own task. The callback stores a pending card (`<data>/mcp/interactions.json`,
`store/interactions.py`) with the message, the requested schema and its defaults (SEP-1034),
publishes `interaction.created`, pauses the deadlines of the calls on that connection
(`runtime/deadlines.py`), and waits. `answer()` — the REST API, the UI, or a library caller —
validates an `accept` against the schema (defaults filled in), closes the card and resumes the
server's request with the answer; `decline` and `cancel` resume it with that action. Nobody
answering before `expires_at` sends `cancel`.

URL mode is declined explicitly (R-6.2). The SDK advertises both modes whenever a callback is
set (docs/sdk-notes.md#elicitation); every URL-mode request is answered `decline` and leaves a closed card saying so.

Every process (R-9.2): cards are a section of the shared store, so a card created during a
library script's call is listed and answered in `serve`'s page and API. The process that takes
the answer validates it against the card's schema; when the waiting server request lives in
another process, the answer travels in the card, sealed with the host key (`answer`), and the
waiting process — woken by the store's change feed — opens it, resumes the request and removes
it. The state change is a compare-and-set in one store transaction, so two answers, or an answer
and an expiry, never both win.

Restart (R-6.3): a card that is pending when its process stops cannot be resumed — the server's
request lived in a session that is gone. On a graceful stop, `interrupt_all()` marks such cards
`interrupted` and fails their calls with `MCP_CALL_INTERRUPTED` ("not delivered") before the
connections close (a call whose elicitation went to its caller's own client, through the
gateway, fails the same way, with no card); after a crash, whoever next looks finds them still
`pending` from a run that is gone (`Store.instance_alive`) and marks them `interrupted`. An
interrupted card is still listed; answering it says
`MCP_INTERACTION_NOT_DELIVERED`; it offers a retry of the call (when its arguments were kept),
which happens only when the user asks for it (`action: "retry"`), as a user-initiated call.

Which call asked? The client SDK does not tell (no related request id), so a card lists every
tracked call running on that server when it arrived, and pauses every call deadline of the
connection. When all of a card's calls have ended (cancelled by operation id, caller gone), the
card is `withdrawn` and the server gets `cancel`.

Secrets: answers are never logged, and stored only sealed and only until delivered — afterwards
only the names of answered fields; values of fields that look like secrets (password, token,
API key, ...) are registered with the redactor in both processes.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp_center.errors import (
    CallCancelled,
    CallInterrupted,
    CenterError,
    InteractionClosed,
    InteractionNotDelivered,
    InteractionNotFound,
    RequestInvalid,
)
from mcp_center.runtime import CallDeadlines, EventBus, SessionHooks
from mcp_center.secrets import Redactor, SecretCipher, default_redactor
from mcp_center.service.forms import FormSchema, UnsupportedSchema
from mcp_center.store import CallRef, InteractionRecord, InteractionState, RetryState, Store, StoreState
from mcp_center.transports import ConnectionSpec

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
    "DEFAULT_ELICITATION_TIMEOUT_S",
    "MAX_KEPT_ARGUMENT_BYTES",
    "Elicitor",
    "InteractionBroker",
    "RetryCall",
    "RootsLister",
    "Sampler",
]

logger = logging.getLogger(__name__)

DEFAULT_ELICITATION_TIMEOUT_S = 600.0
"""Seconds a card waits for an answer before the server gets `cancel` (below the 15 min HTTP read timeout)."""
MAX_KEPT_ARGUMENT_BYTES = 64 * 1024
"""Arguments larger than this (JSON) are not kept with a card, so no retry is offered for its call."""

RetryCall = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""`(server_id, tool, arguments) -> CallToolResult JSON`: a user-initiated call (the user confirmed the retry)."""

Action = Literal["accept", "decline", "cancel", "retry"]
_ACTIONS: tuple[str, ...] = ("accept", "decline", "cancel", "retry")


@dataclass(eq=False)
class _TrackedCall:
    operation_id: str
    make_ref: Callable[[], CallRef]
    """Builds the call's `CallRef` for a card (only when a card is made: not on every call, R-8.3)."""
    interrupted: bool = False
    elicitor: Elicitor | None = None
    sampler: Sampler | None = None
    roots: RootsLister | None = None

    @functools.cached_property
    def ref(self) -> CallRef:
        """The call as a card names it."""
        return self.make_ref()


@dataclass(eq=False)
class _Waiter:
    form: FormSchema
    operation_ids: frozenset[str]
    done: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False
    result: types.ElicitResult | types.ErrorData | None = None


def _now() -> datetime:
    return datetime.now(UTC)


def _kept_arguments(arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    try:
        encoded = json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None
    return dict(arguments) if len(encoded.encode("utf-8", "surrogatepass")) <= MAX_KEPT_ARGUMENT_BYTES else None


class InteractionBroker:
    """Interaction cards of every process on the store: created by servers, answered by users, durable.

    Args:
        store: Where cards live (the host's store, shared with every process on the data directory).
        events: Receives `interaction.created` / `interaction.closed` (`{"interaction": view}`).
        deadlines: The manager's call deadlines (paused while a card of the connection is pending).
        instance: This process run's id (`Store.join_instance`), stored with its cards.
        cipher: Seals an answer that travels to the process whose server request waits.
        cancel_call: Cancels a call by operation id (the manager's `cancel`).
        retry_call: Re-sends an interrupted call when the user asks for it.
        timeout_s: Seconds a card waits for an answer.
        enabled: False never advertises elicitation (a one-shot CLI cannot show a form).
    """

    def __init__(
        self,
        store: Store,
        events: EventBus,
        deadlines: CallDeadlines,
        *,
        instance: str,
        cipher: SecretCipher,
        cancel_call: Callable[[str], bool] | None = None,
        retry_call: RetryCall | None = None,
        timeout_s: float = DEFAULT_ELICITATION_TIMEOUT_S,
        redactor: Redactor = default_redactor,
        enabled: bool = True,
    ) -> None:
        self._store = store
        self._events = events
        self._deadlines = deadlines
        self._cipher = cipher
        self.cancel_call: Callable[[str], bool] = cancel_call or (lambda _operation_id: False)
        self.retry_call = retry_call
        self.timeout_s = timeout_s
        self._redactor = redactor
        self.enabled = enabled
        self.instance = instance
        self._calls: dict[str, dict[str, _TrackedCall]] = {}
        self._waiters: dict[str, _Waiter] = {}
        self._forwarded: dict[str, anyio.CancelScope] = {}
        """Operation id → the wait for its caller's client to answer a forwarded elicitation."""
        self._seen: dict[str, tuple[object, ...]] = {}
        """What each card was when this process last announced it (`_signature`, for `sync`)."""
        self._lock = anyio.Lock()

    # ----- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> int:
        """Mark cards left pending by runs that are gone interrupted; remember what exists (no events).

        Returns:
            How many cards were marked interrupted.
        """
        count = await self._close_orphans()
        self._seen = {r.id: _signature(r) for r in (await self._read()).interactions.values()}
        return count

    async def sync(self) -> None:
        """Announce cards that other processes created or closed since the last look, and mark those
        of runs that are gone. The host calls this when the store's cards changed."""
        await self._close_orphans()
        state = await self._read()
        for record in state.interactions.values():
            self._publish("interaction.created" if record.state == "pending" else "interaction.closed", record)
        for gone in set(self._seen) - set(state.interactions):
            del self._seen[gone]

    async def stop(self) -> None:
        """Interrupt what is still pending here (see `interrupt_all`)."""
        await self.interrupt_all()

    async def interrupt_all(self) -> int:
        """The host is stopping: mark every pending card of this run interrupted and fail its calls.

        Each interrupted call raises `CallInterrupted` ("not delivered") in its caller; nothing is
        sent on the user's behalf. A call whose elicitation was forwarded to its caller's client
        (the gateway, R-8.1) is interrupted the same way, without a card: that client is the one
        to retry. Returns how many cards were interrupted.
        """
        count = 0
        for interaction_id, waiter in list(self._waiters.items()):
            if waiter.closed:
                continue
            waiter.closed = True
            count += 1
            record = await self._transition(
                interaction_id, lambda r: _interrupted(r, _now(), "mcp-center stopped while the card was pending")
            )
            for op_id in waiter.operation_ids:
                for calls in self._calls.values():
                    tracked = calls.get(op_id)
                    if tracked is not None:
                        tracked.interrupted = True
                self.cancel_call(op_id)
            waiter.result = types.ErrorData(
                code=types.INTERNAL_ERROR, message="the client stopped before the user answered"
            )
            waiter.done.set()
            if record is not None:
                self._publish("interaction.closed", record)
        for op_id, waiting in list(self._forwarded.items()):  # no card: the caller's client was asked
            for calls in self._calls.values():
                tracked = calls.get(op_id)
                if tracked is not None:
                    tracked.interrupted = True
            waiting.cancel()
            self.cancel_call(op_id)
        return count

    # ----- wiring ---------------------------------------------------------------------------------

    def hooks_for(self, spec: ConnectionSpec, connection_id: str) -> SessionHooks:
        """Session hooks for a new connection: the elicitation callback (advertises elicitation)."""
        if not self.enabled:
            return SessionHooks()
        server_id = spec.server_id

        async def elicit(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            return await self._elicit(server_id, connection_id, params)

        async def sample(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            asked = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            return await self.sample(server_id, connection_id, asked)

        async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
            return await self.list_roots(server_id, connection_id)

        return SessionHooks(elicitation_callback=elicit, sampling_callback=sample, list_roots_callback=list_roots)

    def _only_call(self, server_id: str) -> _TrackedCall | None:
        """The one tracked call in flight on `server_id`, or None when there are none or several
        (a server request does not say which call it belongs to, so only then is it unambiguous)."""
        calls = self._calls.get(server_id, {})
        return next(iter(calls.values())) if len(calls) == 1 else None

    async def sample(
        self, server_id: str, connection_id: str, params: dict[str, Any]
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        """A server's `sampling/createMessage`: to the agent of the one call in flight when it declared
        sampling (the call's deadline pauses meanwhile), else refused at once (R-8.5)."""
        call = self._only_call(server_id)
        if call is None or call.sampler is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="sampling is not available: only an agent whose client declared sampling can answer it, "
                "during its own tool call",
            )
        try:
            with self._deadlines.hold(connection_id), anyio.fail_after(self.timeout_s):
                raw = await call.sampler(params)
        except TimeoutError:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the agent's client did not answer in time")
        except CenterError as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{exc.code}: {exc.message}")
        if isinstance(raw.get("content"), list):
            return types.CreateMessageResultWithTools.model_validate(raw, by_name=False)
        return types.CreateMessageResult.model_validate(raw, by_name=False)

    async def list_roots(self, server_id: str, connection_id: str) -> types.ListRootsResult | types.ErrorData:
        """A server's `roots/list`: to the agent of the one call in flight when it declared roots, else
        refused at once (R-8.5)."""
        call = self._only_call(server_id)
        if call is None or call.roots is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="roots are not available: only an agent whose client declared roots can answer, "
                "during its own tool call",
            )
        try:
            with self._deadlines.hold(connection_id), anyio.fail_after(self.timeout_s):
                raw = await call.roots()
        except TimeoutError:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the agent's client did not answer in time")
        except CenterError as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{exc.code}: {exc.message}")
        return types.ListRootsResult.model_validate(raw, by_name=False)

    @asynccontextmanager
    async def tracking(
        self,
        *,
        server_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        operation_id: str,
        caller: Literal["agent", "user"],
        exposed_name: str | None = None,
        elicitor: Elicitor | None = None,
        sampler: Sampler | None = None,
        roots: RootsLister | None = None,
    ) -> AsyncGenerator[None]:
        """Run a tool call as one a card may belong to.

        With an `elicitor`, a form-mode elicitation that can only belong to this call (it is the
        only call in flight on the server) goes to the caller's client instead of becoming a card;
        `sampler` and `roots` do the same for `sampling/createMessage` and `roots/list`, which are
        refused at once without them (R-8.5).

        Raises:
            CallInterrupted: instead of CallCancelled, when the host stopped while the call waited
                for a card (not delivered, R-6.3).
        """

        def make_ref() -> CallRef:
            return CallRef(
                operation_id=operation_id,
                server_id=server_id,
                tool=tool,
                caller=caller,
                exposed_name=exposed_name,
                arguments=_kept_arguments(arguments),
            )

        tracked = _TrackedCall(operation_id, make_ref, elicitor=elicitor, sampler=sampler, roots=roots)
        calls = self._calls.setdefault(server_id, {})
        calls[operation_id] = tracked
        try:
            yield
        except CallCancelled as exc:
            if tracked.interrupted:
                raise CallInterrupted(
                    f"mcp-center stopped while the call of '{tool}' waited for an answer to the server's "
                    "question; the answer was not delivered and the call did not complete",
                    details={"operation_id": operation_id, "reached_server": True, "delivered": False},
                ) from exc
            raise
        finally:
            calls.pop(operation_id, None)
            if not calls:
                self._calls.pop(server_id, None)
            if self._waiters:  # a card may wait on this call (most calls: none, no scope to build)
                with anyio.CancelScope(shield=True):
                    await self._call_ended(operation_id)

    # ----- reads ----------------------------------------------------------------------------------

    async def views(self, *, state: str | None = None) -> list[dict[str, Any]]:
        """Cards of every process, newest first; `state` filters (`pending`, `interrupted`, ...).

        Raises:
            RequestInvalid: unknown state.
        """
        if state is not None and state not in _STATES:
            raise RequestInvalid(
                f"state: must be one of {', '.join(_STATES)}",
                details={"errors": [{"field": "state", "code": "FIELD_INVALID", "message": "unknown state"}]},
            )
        await self._close_orphans()
        records = list((await self._read()).interactions.values())
        records.sort(key=lambda r: r.created_at, reverse=True)
        return [self._view(r) for r in records if state is None or r.state == state]

    async def get(self, interaction_id: str) -> dict[str, Any]:
        """One card.

        Raises:
            InteractionNotFound.
        """
        return self._view(await self._record(interaction_id))

    # ----- answers --------------------------------------------------------------------------------

    async def answer(self, interaction_id: str, action: object, content: object = None) -> dict[str, Any]:
        """Answer a card: accept (with content), decline, cancel — or retry an interrupted call.

        The card may belong to a call of any process on the data directory: the answer reaches it.

        Args:
            action: `accept`, `decline`, `cancel` (pending cards) or `retry` (interrupted cards).
            content: For accept: `{field: value}`; fields left out get the schema's defaults.
        Returns:
            `{"interaction": view}`; for retry also `"result"`: the re-sent call's CallToolResult.
        Raises:
            RequestInvalid: unknown action, or content with an action other than accept.
            InteractionNotFound: no such card.
            ElicitationAnswerInvalid: the content breaks the requested schema (the card stays pending).
            InteractionNotDelivered: the card was interrupted by a restart (or its process is gone);
                nothing can reach the server.
            InteractionClosed: the card is no longer pending (or its retry is not offered / was done).
            StorageError: the answer could not be stored (the card stays pending).
        """
        if action not in _ACTIONS:
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
        form = waiter.form if waiter is not None else _form_of(record)
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
                update={"state": new_state, "closed_at": _now(), "answer_fields": fields, "answer": sealed}
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
        return {"interaction": self._view(closed)}

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

    async def _retry(self, record: InteractionRecord) -> dict[str, Any]:
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
                return current.model_copy(update={"retry": RetryState(offered=True, done=True, at=_now())})

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
        return {"interaction": self._view(updated), "result": result}

    # ----- the callback -----------------------------------------------------------------------------

    async def _elicit(
        self, server_id: str, connection_id: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        now = _now()
        calls = [tracked.ref for tracked in self._calls.get(server_id, {}).values()]
        base: dict[str, Any] = {
            "id": uuid.uuid4().hex,
            "server_id": server_id,
            "connection_id": connection_id,
            "host_instance": self.instance,
            "message": params.message[:10_000],
            "calls": calls,
            "created_at": now,
            "expires_at": now + timedelta(seconds=self.timeout_s),
        }
        if isinstance(params, types.ElicitRequestURLParams):
            parts = urlsplit(params.url)
            origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None
            await self._declined(
                InteractionRecord(mode="url", url_origin=origin, **base), "URL-mode elicitation is not supported"
            )
            return types.ElicitResult(action="decline")
        tracked_calls = list(self._calls.get(server_id, {}).values())
        if len(tracked_calls) == 1 and tracked_calls[0].elicitor is not None:
            # Unambiguous: the only call in flight asked on behalf of a client that can answer itself.
            # A human answers there too: the call deadlines pause as they do for a card, and the
            # same elicitation timeout bounds the wait.
            logger.info("interaction.forwarded", extra={"server_id": server_id})
            op_id = tracked_calls[0].operation_id
            with anyio.CancelScope() as waiting:
                self._forwarded[op_id] = waiting
                try:
                    with self._deadlines.hold(connection_id), anyio.move_on_after(self.timeout_s):
                        return await tracked_calls[0].elicitor(params)
                finally:
                    if self._forwarded.get(op_id) is waiting:
                        del self._forwarded[op_id]
            if waiting.cancelled_caught:  # the host is stopping (`interrupt_all`); nobody answered
                return types.ErrorData(code=types.INTERNAL_ERROR, message="the client stopped before the user answered")
            logger.info("interaction.forwarded_expired", extra={"server_id": server_id})
            return types.ElicitResult(action="cancel")
        try:
            form = FormSchema.parse(params.requested_schema)
        except UnsupportedSchema as exc:
            await self._declined(
                InteractionRecord(requested_schema=_as_dict(params.requested_schema), **base),
                f"the requested schema is not supported: {exc.reason}",
            )
            return types.ElicitResult(action="decline")
        record = InteractionRecord(requested_schema=_as_dict(params.requested_schema), defaults=form.defaults(), **base)
        waiter = _Waiter(form=form, operation_ids=frozenset(c.operation_id for c in calls))
        self._waiters[record.id] = waiter
        try:
            await self._insert(record)
            self._publish("interaction.created", record)
            logger.info(
                "interaction.created",
                extra={"interaction_id": record.id, "server_id": server_id, "calls": len(calls)},
            )
            with self._deadlines.hold(connection_id), anyio.move_on_after(self.timeout_s):
                await self._wait_for_answer(record.id, waiter)
        except BaseException:
            # The server withdrew its request, or the connection closed (its tasks are cancelled).
            await self._withdraw(record.id, waiter, "the server or its connection ended the request first")
            raise
        finally:
            self._waiters.pop(record.id, None)
        if waiter.result is None and not waiter.closed:
            expired = await self._transition(
                record.id, lambda r: r.model_copy(update={"state": "expired", "closed_at": _now()})
            )
            if expired is not None:
                waiter.closed = True
                self._publish("interaction.closed", expired)
            else:  # answered in another process just before the expiry: that answer wins
                await self._collect(record.id, waiter)
        if waiter.result is None:
            return types.ElicitResult(action="cancel")
        return waiter.result

    async def _wait_for_answer(self, interaction_id: str, waiter: _Waiter) -> None:
        """Until `waiter.done`: answered here, or (seen through the change feed) in another process."""
        async with self._store.changes(["interactions"]) as changes, anyio.create_task_group() as tg:

            async def relayed() -> None:
                while not await self._collect(interaction_id, waiter):
                    await changes.next()

            tg.start_soon(relayed)
            await waiter.done.wait()
            tg.cancel_scope.cancel()

    async def _collect(self, interaction_id: str, waiter: _Waiter) -> bool:
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
        return self._cipher.seal(plain, associated_data=_answer_aad(interaction_id))

    def _open(self, interaction_id: str, sealed: str, form: FormSchema) -> types.ElicitResult:
        try:
            doc = json.loads(self._cipher.open(sealed, associated_data=_answer_aad(interaction_id)))
            result = types.ElicitResult.model_validate(doc)
        except (CenterError, ValueError):
            logger.warning("interaction.answer_unreadable", extra={"interaction_id": interaction_id})
            return types.ElicitResult(action="cancel")
        if result.content:
            self._redact_secret_fields(form, result.content)
        return result

    async def _declined(self, record: InteractionRecord, reason: str) -> None:
        closed = record.model_copy(update={"state": "declined", "closed_at": _now(), "reason": reason})
        await self._insert(closed)
        self._publish("interaction.closed", closed)
        logger.info("interaction.declined", extra={"interaction_id": closed.id, "mode": closed.mode, "reason": reason})

    async def _withdraw(self, interaction_id: str, waiter: _Waiter, reason: str) -> None:
        if waiter.closed:
            return
        waiter.closed = True
        record = await self._transition(
            interaction_id,
            lambda r: r.model_copy(update={"state": "withdrawn", "closed_at": _now(), "reason": reason}),
        )
        if record is not None:
            self._publish("interaction.closed", record)

    async def _call_ended(self, operation_id: str) -> None:
        running = {op for calls in self._calls.values() for op in calls}
        for interaction_id, waiter in list(self._waiters.items()):
            if waiter.closed or operation_id not in waiter.operation_ids:
                continue
            if waiter.operation_ids & running:
                continue
            await self._withdraw(interaction_id, waiter, "the call ended before an answer")
            waiter.result = types.ElicitResult(action="cancel")
            waiter.done.set()

    # ----- storage ----------------------------------------------------------------------------------

    async def _read(self) -> StoreState:
        return self._store.read_if_fresh() or await anyio.to_thread.run_sync(self._store.read)

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

        def orphaned(record: InteractionRecord) -> bool:
            waiting = record.state == "pending" or (record.answer is not None and record.state != "interrupted")
            return waiting and not self._alive(record.host_instance)

        if not any(orphaned(r) for r in (await self._read()).interactions.values()):
            return 0
        now = _now()

        def run() -> list[InteractionRecord]:
            changed: list[InteractionRecord] = []
            with self._store.transaction() as state:
                for record in list(state.interactions.values()):
                    if orphaned(record):
                        updated = _interrupted(record, now, "the mcp-center process that asked stopped or crashed")
                        state.interactions[record.id] = updated.model_copy(update={"answer": None})
                        changed.append(state.interactions[record.id])
            return changed

        done: list[list[InteractionRecord]] = []
        with anyio.CancelScope(shield=True):
            done.append(await anyio.to_thread.run_sync(run))
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
            await anyio.to_thread.run_sync(run)

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
            result.append(await anyio.to_thread.run_sync(run))
        return result[0]

    def _publish(self, event: str, record: InteractionRecord) -> None:
        """Announce `record` unless this version of it was announced already (by `sync` or here)."""
        signature = _signature(record)
        if self._seen.get(record.id) == signature:
            return
        self._seen[record.id] = signature
        self._events.publish(event, interaction=self._view(record))

    def _view(self, record: InteractionRecord) -> dict[str, Any]:
        fields: list[dict[str, Any]] = []
        if record.mode == "form" and record.requested_schema is not None:
            try:
                fields = FormSchema.parse(record.requested_schema).view()
            except UnsupportedSchema:
                fields = []
        actions: list[str] = []
        if record.state == "pending" and (record.id in self._waiters or self._alive(record.host_instance)):
            actions = ["accept", "decline", "cancel"]
        elif record.state == "interrupted" and record.retry.offered and not record.retry.done:
            actions = ["retry"]
        return {
            "id": record.id,
            "kind": record.kind,
            "mode": record.mode,
            "state": record.state,
            "server_id": record.server_id,
            "message": record.message,
            "requested_schema": record.requested_schema,
            "fields": fields,
            "defaults": record.defaults,
            "url_origin": record.url_origin,
            "calls": [c.model_dump(mode="json") for c in record.calls],
            "created_at": record.created_at.isoformat(),
            "expires_at": record.expires_at.isoformat(),
            "closed_at": record.closed_at.isoformat() if record.closed_at else None,
            "reason": record.reason,
            "answer_fields": record.answer_fields,
            "delivered": record.state in {"accepted", "declined", "cancelled", "expired"} and record.answer is None,
            "retry": record.retry.model_dump(mode="json"),
            "actions": actions,
        }


_STATES: tuple[str, ...] = ("pending", "accepted", "declined", "cancelled", "expired", "withdrawn", "interrupted")


def _as_dict(schema: object) -> dict[str, Any] | None:
    return dict(schema) if isinstance(schema, dict) else None  # pyright: ignore[reportUnknownArgumentType]


def _signature(record: InteractionRecord) -> tuple[object, ...]:
    """What a page shows of a card's progress: a change of any of these is announced."""
    return (record.state, record.answer is None, record.retry.done, record.retry.outcome)


def _answer_aad(interaction_id: str) -> str:
    """The associated data of a relayed answer: it opens only as the answer of this card."""
    return f"mcp-center/interaction-answer/v1/{interaction_id}"


def _form_of(record: InteractionRecord) -> FormSchema:
    """The form of a pending card created in another process (its schema was parsed when it was created)."""
    try:
        return FormSchema.parse(record.requested_schema)
    except UnsupportedSchema:
        raise InteractionClosed(
            f"interaction '{record.id}' has no form that can be answered",
            details={"interaction_id": record.id, "state": record.state},
        ) from None


def _interrupted(record: InteractionRecord, now: datetime, reason: str) -> InteractionRecord:
    offered = any(c.arguments is not None for c in record.calls)
    return record.model_copy(
        update={"state": "interrupted", "closed_at": now, "reason": reason, "retry": RetryState(offered=offered)}
    )
