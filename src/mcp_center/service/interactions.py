"""Durable elicitation: a server's `elicitation/create` becomes an interaction card (R-6).

One class in three modules: `interaction_cards.py` (`CardStore`: cards in the store and their
views), `interaction_answers.py` (`CardAnswers`: answers, retries, relayed answers) and this one
(`InteractionBroker`: lifecycle, the session hooks, call tracking and the elicitation callback).

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
import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp_center.errors import (
    CallCancelled,
    CallInterrupted,
    CenterError,
)
from mcp_center.runtime import CallDeadlines, EventBus, SessionHooks
from mcp_center.secrets import Redactor, SecretCipher, default_redactor
from mcp_center.service.forms import FormSchema, UnsupportedSchema
from mcp_center.service.interaction_answers import CardAnswers
from mcp_center.service.interaction_cards import (
    DEFAULT_ELICITATION_TIMEOUT_S,
    MAX_KEPT_ARGUMENT_BYTES,
    Action,
    Elicitor,
    RetryCall,
    RootsLister,
    Sampler,
    TrackedCall,
    Waiter,
    as_dict,
    card_signature,
    interrupted,
    kept_arguments,
    utc_now,
)
from mcp_center.store import CallRef, InteractionRecord, Store
from mcp_center.transports import ConnectionSpec

__all__ = [
    "DEFAULT_ELICITATION_TIMEOUT_S",
    "MAX_KEPT_ARGUMENT_BYTES",
    "Action",
    "Elicitor",
    "InteractionBroker",
    "RetryCall",
    "RootsLister",
    "Sampler",
]

logger = logging.getLogger(__name__)


class InteractionBroker(CardAnswers):
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
        self._calls: dict[str, dict[str, TrackedCall]] = {}
        self._waiters: dict[str, Waiter] = {}
        self._forwarded: dict[str, anyio.CancelScope] = {}
        """Operation id → the wait for its caller's client to answer a forwarded elicitation."""
        self._seen: dict[str, tuple[object, ...]] = {}
        """What each card was when this process last announced it (`card_signature`, for `sync`)."""
        self._lock = anyio.Lock()
        self._stopping = False
        """The host is stopping (`interrupt_running`): a tool call that starts now is refused."""

    # ----- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> int:
        """Mark cards left pending by runs that are gone interrupted; remember what exists (no events).

        Returns:
            How many cards were marked interrupted.
        """
        count = await self._close_orphans()
        self._seen = {r.id: card_signature(r) for r in (await self._read()).interactions.values()}
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
                interaction_id, lambda r: interrupted(r, utc_now(), "mcp-center stopped while the card was pending")
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

    def begin_stop(self) -> None:
        """The host begins to stop (synchronous: serve's signal handler calls it): a tool call that
        starts from now on is refused with CallInterrupted, not sent (R-6.3). `interrupt_running`
        ends the calls already running."""
        self._stopping = True

    def interrupt_running(self) -> int:
        """The host is stopping: every tool call still running here (`tracking`) ends now with
        `CallInterrupted` (503 MCP_CALL_INTERRUPTED, `details.interrupted_by` "shutdown"), and a call
        that starts from now on is refused with it, not sent (R-6.3, R-7.3).

        Called once the calls waiting for a card were interrupted (`interrupt_all`); the running
        calls are cancelled by operation id (the server gets `notifications/cancelled`), so the HTTP
        server's graceful stop has no response left to wait for. Returns how many calls it ended.
        """
        self._stopping = True
        count = 0
        for calls in list(self._calls.values()):
            for op_id, tracked in list(calls.items()):
                if tracked.interrupted:
                    continue
                tracked.interrupted = tracked.stopped_running = True
                self.cancel_call(op_id)
                count += 1
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

    def _only_call(self, server_id: str) -> TrackedCall | None:
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

    def tracking(
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
    ) -> Tracking:
        """Run a tool call as one a card may belong to (`async with`).

        With an `elicitor`, a form-mode elicitation that can only belong to this call (it is the
        only call in flight on the server) goes to the caller's client instead of becoming a card;
        `sampler` and `roots` do the same for `sampling/createMessage` and `roots/list`, which are
        refused at once without them (R-8.5).

        Raises:
            CallInterrupted: instead of CallCancelled, when the host stopped while the call waited
                for a card (not delivered, R-6.3) or while it ran (`interrupt_running`); at entry,
                when the host is already stopping (the call is not sent).
        """
        # The card's `CallRef` is built only when a card is made: a `partial` (no frame per call, issue 12).
        ref = functools.partial(_call_ref, operation_id, server_id, tool, caller, exposed_name, arguments)
        tracked = TrackedCall(operation_id, ref, elicitor, sampler, roots)  # positional (issue 12)
        return Tracking(self, server_id, tool, tracked)

    async def _untrack(self, server_id: str, tracked: TrackedCall) -> None:
        """The end of `tracking`: the call is forgotten, and a card waiting on it is told."""
        operation_id = tracked.operation_id
        self._forget(server_id, operation_id)
        if self._waiters:  # a card may wait on this call (most calls: none, no scope to build)
            with anyio.CancelScope(shield=True):
                await self._call_ended(operation_id)

    def _forget(self, server_id: str, operation_id: str) -> None:
        """The call `operation_id` of `server_id` is no longer tracked."""
        calls = self._calls.get(server_id)
        if calls is not None:
            calls.pop(operation_id, None)
            if not calls:
                self._calls.pop(server_id, None)

    # ----- the callback -----------------------------------------------------------------------------

    async def _elicit(
        self, server_id: str, connection_id: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        now = utc_now()
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
                InteractionRecord(requested_schema=as_dict(params.requested_schema), **base),
                f"the requested schema is not supported: {exc.reason}",
            )
            return types.ElicitResult(action="decline")
        record = InteractionRecord(requested_schema=as_dict(params.requested_schema), defaults=form.defaults(), **base)
        waiter = Waiter(form=form, operation_ids=frozenset(c.operation_id for c in calls))
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
                record.id, lambda r: r.model_copy(update={"state": "expired", "closed_at": utc_now()})
            )
            if expired is not None:
                waiter.closed = True
                self._publish("interaction.closed", expired)
            else:  # answered in another process just before the expiry: that answer wins
                await self._collect(record.id, waiter)
        if waiter.result is None:
            return types.ElicitResult(action="cancel")
        return waiter.result

    async def _wait_for_answer(self, interaction_id: str, waiter: Waiter) -> None:
        """Until `waiter.done`: answered here, or (seen through the change feed) in another process."""
        async with self._store.changes(["interactions"]) as changes, anyio.create_task_group() as tg:

            async def relayed() -> None:
                while not await self._collect(interaction_id, waiter):
                    await changes.next()

            tg.start_soon(relayed)
            await waiter.done.wait()
            tg.cancel_scope.cancel()

    async def _declined(self, record: InteractionRecord, reason: str) -> None:
        closed = record.model_copy(update={"state": "declined", "closed_at": utc_now(), "reason": reason})
        await self._insert(closed)
        self._publish("interaction.closed", closed)
        logger.info("interaction.declined", extra={"interaction_id": closed.id, "mode": closed.mode, "reason": reason})

    async def _withdraw(self, interaction_id: str, waiter: Waiter, reason: str) -> None:
        if waiter.closed:
            return
        waiter.closed = True
        record = await self._transition(
            interaction_id,
            lambda r: r.model_copy(update={"state": "withdrawn", "closed_at": utc_now(), "reason": reason}),
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


def _call_ref(
    operation_id: str,
    server_id: str,
    tool: str,
    caller: Literal["agent", "user"],
    exposed_name: str | None,
    arguments: Mapping[str, Any],
) -> CallRef:
    """The `CallRef` a card shows for a tracked call (`InteractionBroker.tracking`, R-8.3)."""
    return CallRef(
        operation_id=operation_id,
        server_id=server_id,
        tool=tool,
        caller=caller,
        exposed_name=exposed_name,
        arguments=kept_arguments(arguments),
    )


class Tracking:
    """The `async with` block of `InteractionBroker.tracking` (see there): a small class rather than an
    `asynccontextmanager` generator, whose frames every forwarded call went through (issue 12).
    Same behaviour: the call is known to the broker while the block runs; a `CallCancelled` of a
    call the host interrupted while it waited for a card becomes `CallInterrupted` (R-6.3)."""

    __slots__ = ("_broker", "_server_id", "_tool", "_tracked")

    def __init__(self, broker: InteractionBroker, server_id: str, tool: str, tracked: TrackedCall) -> None:
        self._broker = broker
        self._server_id = server_id
        self._tool = tool
        self._tracked = tracked

    async def __aenter__(self) -> None:
        self.enter()

    def enter(self) -> None:
        """`__aenter__` without its coroutine (`async with` makes one per call): the call is known to
        the broker from now on. Pair it with `leave_at_once`, else `__aexit__` (issue 12, R-8.3).

        Raises:
            CallInterrupted: the host is stopping (the call is not sent).
        """
        tracked = self._tracked
        if self._broker._stopping:  # pyright: ignore[reportPrivateUsage]
            raise CallInterrupted(
                f"mcp-center is stopping: the call of '{self._tool}' of server '{self._server_id}' was not sent; "
                "retry it when serve is back",
                details={
                    "operation_id": tracked.operation_id,
                    "server_id": self._server_id,
                    "interrupted_by": "shutdown",
                    "reached_server": False,
                    "delivered": False,
                },
            )
        calls = self._broker._calls.setdefault(self._server_id, {})  # pyright: ignore[reportPrivateUsage]
        calls[tracked.operation_id] = tracked

    def leave_at_once(self) -> bool:
        """The end of a block that ended without an exception, without a coroutine when no card
        waits on a call (most calls): the call is forgotten and True; False when a card may wait,
        and nothing was done (await `__aexit__(None, None, None)` then)."""
        broker = self._broker
        if broker._waiters:  # pyright: ignore[reportPrivateUsage]
            return False
        broker._forget(self._server_id, self._tracked.operation_id)  # pyright: ignore[reportPrivateUsage]
        return True

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tracked = self._tracked
        await self._broker._untrack(self._server_id, tracked)  # pyright: ignore[reportPrivateUsage]
        if isinstance(exc, CallCancelled) and tracked.stopped_running:
            raise CallInterrupted(
                f"mcp-center stopped while the call of '{self._tool}' of server '{self._server_id}' ran; "
                "it was cancelled at its server and its result was lost: the tool may have run in part or "
                "in full, so check its effect before calling it again",
                details={
                    "operation_id": tracked.operation_id,
                    "server_id": self._server_id,
                    "interrupted_by": "shutdown",
                    "reached_server": True,
                    "delivered": False,
                },
            ) from exc
        if isinstance(exc, CallCancelled) and tracked.interrupted:
            raise CallInterrupted(
                f"mcp-center stopped while the call of '{self._tool}' waited for an answer to the server's "
                "question; the answer was not delivered and the call did not complete",
                details={"operation_id": tracked.operation_id, "reached_server": True, "delivered": False},
            ) from exc
