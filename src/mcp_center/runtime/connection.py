"""One client instance for one server: its handshake, catalog refreshes, health and end (R-3).

A `Connection` is created and owned by the `ConnectionManager`; its `run()` is one task of the
manager's task group that enters and exits the transport and the SDK `Client` (anyio cancel scopes
must be exited by the task that entered them, docs/sdk-notes.md#manager-shape). `run()`:

1. opens the session and lists every category (R-3.2): tools must list, or the connection fails
   (attributed to `tools/list`); another category that fails keeps the content the previous
   connection of the server had (R-3.7: a blip is not "the server deleted everything") and is
   retried with backoff while the connection serves (issue 14, item 7);
2. becomes ready only if it is still the owner's current connection for the current spec (R-3.3);
3. serves: a refresh worker (list_changed, coalesced and storm-limited), a retry worker for failed
   categories, and for remote servers a health worker (R-3.11), until it is stopped, the server
   side ends, the health ping gives up or the HTTP session expires (R-3.10);
4. returns the attributed error (or None when stopped by us); the manager records it.

Notifications, refreshes and status reports of a connection that is no longer its owner's current
one are ignored by the owner (`ConnectionOwner.is_current`, R-3.5).
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcp_center.errors import CenterError, ConnectionLost, ServerTimeout
from mcp_center.models import ConnectionState, ErrorReason, TransportKind
from mcp_center.runtime.attribution import (
    SessionEnded,
    add_output_hints,
    attribute,
    startup_timeout_error,
    timeout_error,
)
from mcp_center.runtime.catalog import CATEGORIES, Catalog, CatalogSanitizer, Category, Quarantined, fetch_category
from mcp_center.runtime.console import RAW_REQUEST_ID_PREFIX
from mcp_center.runtime.forward import RawForwarder
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.memory import release_freed_memory
from mcp_center.runtime.session import OpenSession, SessionHooks, open_session
from mcp_center.secrets import default_redactor
from mcp_center.transports import ConnectionSpec, TransportProbe
from mcp_center.transports.backoff import Backoff

__all__ = [
    "CATEGORY_RETRY",
    "CLOSE_TIMEOUT_S",
    "EARLY_PING_MIN_INTERVAL_S",
    "HEALTH_INTERVAL_S",
    "HEALTH_TIMEOUT_S",
    "LIST_METHODS",
    "REFRESH_MIN_INTERVAL_S",
    "Connection",
    "ConnectionFilter",
    "ConnectionOwner",
    "ProbeResult",
    "RefreshOutcome",
    "ServerStatus",
    "redact_message",
]

logger = logging.getLogger(__name__)

RESUBSCRIBE_TIMEOUT_S = 10.0
"""Seconds a new session's server may take to answer one `resources/subscribe` sent again (`_resubscribe`)."""

CLOSE_TIMEOUT_S = 15.0
"""Seconds to wait for a connection to close (a stdio close can take ~7 s: grace, TERM, KILL)."""
REFRESH_MIN_INTERVAL_S = 0.5
"""Seconds between two catalog refreshes of one connection (a list_changed storm is coalesced)."""
REFRESH_STORM_WINDOW_S = 60.0
REFRESH_STORM_LIMIT = 30
"""More refreshes than this within the window count as a storm (or a list→notify loop): the interval doubles."""
REFRESH_MAX_INTERVAL_S = 60.0
CATEGORY_RETRY = Backoff(floor_s=1.0, cap_s=60.0)
"""When a category's refresh failed on a ready connection: how long before it is listed again (R-3.7)."""
SESSION_END_EXIT_WAIT_S = 1.0
"""When a stdio connection closes, seconds to wait for the process exit so the error carries its exit code."""
HEALTH_INTERVAL_S = 30.0
"""Seconds between health pings of a ready remote connection (R-3.11)."""
HEALTH_TIMEOUT_S = 10.0
"""Seconds a health ping may take before the connection counts as gone."""
EARLY_PING_MIN_INTERVAL_S = 2.0
"""Seconds between two pings made early because the GET stream ended (a server that closes its
stream again and again gets at most one ping per this many seconds)."""

RefreshOutcome = Literal["committed", "stale", "failed"]
LIST_METHODS: Mapping[Category, str] = {
    "tools": "tools/list",
    "prompts": "prompts/list",
    "resources": "resources/list",
    "resource_templates": "resources/templates/list",
}


@dataclass(frozen=True)
class ServerStatus:
    """What the runtime knows about one server right now (R-3.1, R-3.11).

    Attributes:
        state: disconnected / connecting / ready / error.
        connection_id: The current connection's id, or None.
        error: `{"code", "message", "details"}` of the last failure when state is error, or while
            connecting again after failures (the failure that preceded the attempt);
            `details.reason` is an `ErrorReason` value.
        tool_count: Tools in the current catalog (ready only).
        since: When the state last changed (aware UTC).
        next_attempt_at: In error: when the runtime reconnects by itself (aware UTC), or None when it
            will not (a user must act: authorize, fix the configuration).
        attempt: In error: failed connection attempts in a row.
    """

    server_id: str
    state: ConnectionState
    connection_id: str | None = None
    error: dict[str, Any] | None = None
    tool_count: int | None = None
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    since: datetime = field(default_factory=lambda: datetime.now(UTC))
    next_attempt_at: datetime | None = None
    attempt: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON shape used by the API and events."""
        return {
            "state": self.state.value,
            "connection_id": self.connection_id,
            "error": self.error,
            "tool_count": self.tool_count,
            "server_name": self.server_name,
            "server_version": self.server_version,
            "protocol_version": self.protocol_version,
            "since": self.since.isoformat(),
            "next_attempt_at": self.next_attempt_at.isoformat() if self.next_attempt_at else None,
            "attempt": self.attempt,
        }

    @property
    def failing(self) -> bool:
        """Known to be failing: its last attempt failed and none succeeded since, so in error (waiting for
        the automatic reconnect, or for a user) or connecting again with that error. False when ready,
        not started, or starting afresh (first start, a changed configuration, after a disconnect).

        A listing names such a server at once with its last error instead of waiting a start-up
        timeout on every call while each reconnect attempt runs (cli40, R-3.2, R-3.11).
        """
        return self.state is ConnectionState.ERROR or (
            self.state is ConnectionState.CONNECTING and self.error is not None
        )


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of a temporary connection (R-2.2): what initialize and tools/list returned."""

    elapsed_ms: int
    tools: list[types.Tool]
    server_name: str | None
    server_version: str | None
    protocol_version: str | None
    quarantined: tuple[Quarantined, ...] = ()
    """The tools its `tools/list` listed that failed validation (not offered, calls refused; R-3.6)."""


class ConnectionFilter:
    """The tap observer of one connection: secret redaction, request log, catalog validation."""

    def __init__(self, logbook: ServerLogbook, connection_id: str) -> None:
        self.logbook = logbook
        self.connection_id = connection_id
        self.sanitizer = CatalogSanitizer()

    def outgoing(self, message: SessionMessage) -> None:
        """See `runtime.tap.MessageObserver`."""
        msg = message.message
        # A console request is shown as the server answered it: its list pages are not validated (and
        # must not count as the catalog's own pages, whose duplicate detection they would trip).
        if not (isinstance(msg, types.JSONRPCRequest) and str(msg.id).startswith(RAW_REQUEST_ID_PREFIX)):
            self.sanitizer.outgoing(message)
        self.logbook.sent(message, self.connection_id)

    def incoming(self, message: SessionMessage | Exception) -> SessionMessage | Exception:
        """See `runtime.tap.MessageObserver`."""
        if isinstance(message, SessionMessage):
            message = redact_message(message)
            message = self.sanitizer.incoming(message)
        self.logbook.received(message, self.connection_id)
        return message


def redact_message(message: SessionMessage) -> SessionMessage:
    """Remove known secret values from everything a server sends (R-1.5).

    A server may echo what it was given (its secret env, a secret header) in its name, a tool
    description, an error or a result; nothing it sends reaches the catalog, the logs, an API
    response or an agent with a secret in it.
    """
    if not default_redactor.active:
        return message
    msg = message.message
    if isinstance(msg, types.JSONRPCResponse):
        result = default_redactor.redact_values(msg.result)
        if result is msg.result:
            return message
        return SessionMessage(msg.model_copy(update={"result": result}), metadata=message.metadata)
    if isinstance(msg, types.JSONRPCError):
        data = default_redactor.redact_values(msg.error.data)
        text = default_redactor.redact(msg.error.message)
        if data is msg.error.data and text is msg.error.message:
            return message
        error = msg.error.model_copy(update={"message": text, "data": data})
        return SessionMessage(msg.model_copy(update={"error": error}), metadata=message.metadata)
    params = default_redactor.redact_values(msg.params)
    method = default_redactor.redact(msg.method)
    if params is msg.params and method is msg.method:
        return message
    return SessionMessage(msg.model_copy(update={"params": params, "method": method}), metadata=message.metadata)


class ConnectionOwner(Protocol):
    """What a running connection reports to (the manager, for the connection's server slot)."""

    def is_current(self, conn: Connection) -> bool:
        """Whether `conn` is still the server's connection for its current spec (R-3.3, R-3.5)."""
        ...

    def became_ready(self, conn: Connection) -> None:
        """`conn` finished its handshake and first catalog and is current."""
        ...

    def refreshed(self, conn: Connection, category: Category, outcome: RefreshOutcome) -> None:
        """A refresh of `category` on a ready `conn` ended (committed new content, or not)."""
        ...


Ending = Literal["stopped", "expired", "unhealthy", "closed"]


class Connection:
    """One client instance for one server. Only the manager creates these.

    Args:
        spec: What to connect to.
        logbook: The server's request log (survives this connection).
        previous: The catalog of the server's previous connection, if any: a category whose first
            listing fails here keeps that content until a retry succeeds (R-3.7).
    """

    def __init__(
        self,
        spec: ConnectionSpec,
        logbook: ServerLogbook,
        previous: Catalog | None = None,
        subscriptions: Collection[str] = (),
    ) -> None:
        self.connection_id = uuid.uuid4().hex
        self.spec = spec
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self._live = False
        """`ready` set and `closed` not: `is_live` without two event look-ups (four checks per
        forwarded call, issue 12); set with `ready`, cleared by `mark_closed`."""
        self.serving = False
        """`is_live` and not asked to stop (`stop`): the manager's hot path reads it instead of a
        property and two event look-ups per forwarded call (issue 12); set with `ready`, cleared by
        `stop` and `mark_closed`."""
        self.session: OpenSession | None = None
        self.catalog = Catalog()
        self.error: CenterError | None = None
        self.stop_requested = anyio.Event()
        self.cancel_scope = anyio.CancelScope()
        self.filter = ConnectionFilter(logbook, self.connection_id)
        self.expired = False
        self.stopped_by_us = False
        """The connection ended because we asked it to (stop, a superseded handshake)."""
        self.health_error: CenterError | None = None
        """Why the health ping gave up on this connection, if it did."""
        self.inflight = 0
        """Requests sent on this connection and not yet answered."""
        self._inflight_changed: anyio.Event | None = None
        self.hooks = SessionHooks()
        """The session's callbacks (elicitation, sampling, roots), for the lean forwarder."""
        self.raw: RawForwarder | None = None
        """The lean forwarder of a Streamable HTTP connection, once built (`ConnectionManager.forward`)."""
        self._previous = previous
        self._subscriptions = subscriptions
        """The resource URIs the server's earlier sessions were subscribed to (the manager's live set):
        this session is subscribed to them before it is ready (`_resubscribe`, R-8.1)."""
        self._refresh_wanted = anyio.Event()
        self._requested: set[Category] = set()
        self._refresh_times: deque[float] = deque()
        self._interval = REFRESH_MIN_INTERVAL_S
        self._refresh_done = anyio.Event()

    def inflight_changed(self) -> anyio.Event:
        """An event set the next time `inflight` changes (made when first asked for: most requests
        end with nobody waiting, and building an event per request cost CPU on the gateway's path)."""
        if self._inflight_changed is None:
            self._inflight_changed = anyio.Event()
        return self._inflight_changed

    def note_inflight_changed(self) -> None:
        """`inflight` changed: wake whoever waits on `inflight_changed()`."""
        changed, self._inflight_changed = self._inflight_changed, None
        if changed is not None:
            changed.set()

    def timed_out(
        self, what: str, seconds: float, probe: TransportProbe | None = None, *, since: float | None = None
    ) -> ServerTimeout:
        """The error for `what` on this connection not finishing within `seconds` (MCP_SERVER_TIMEOUT):
        `attribution.timeout_error` with `add_output_hints` (stdout noise, answers to unknown ids, the
        log command; ux35, R-3.1); the stdout lines named are those written since `since` (when the
        request was sent, `time.monotonic`; default: `seconds` ago, which a late timer makes later).
        `probe`: the session's, when the error should carry its stderr tail. Built only when a
        deadline passed, never per call."""
        error = timeout_error(what, seconds, probe)
        own = probe if probe is not None else (self.session.probe if self.session is not None else None)
        unknown = self.filter.logbook.unknown_answers(self.connection_id)
        waited_since = since if since is not None else time.monotonic() - seconds
        add_output_hints(error, own, unknown, server_id=self.spec.server_id, since=waited_since)
        return error

    def raw_forwarder(
        self,
        on_log: Callable[[types.LoggingMessageNotificationParams], Awaitable[None]],
        on_list_changed: Callable[[str], None],
    ) -> RawForwarder | None:
        """This connection's lean forwarder (Streamable HTTP only, R-8.1), built on first use.

        Args:
            on_log, on_list_changed: Where the server's log messages and list changes sent on a
                forwarded request's stream go (as for the SDK session's).
        """
        session = self.session
        if self.raw is not None or session is None or self.spec.transport is not TransportKind.STREAMABLE_HTTP:
            return self.raw
        http, client, url = session.probe.http, session.probe.http_client, self.spec.url
        if http is None or client is None or url is None:
            return None
        self.raw = RawForwarder(
            client=client,
            url=url,
            session_id=lambda: http.session_id,
            protocol_version=session.client.protocol_version or LATEST_HANDSHAKE_VERSION,
            session=session.client.session,
            hooks=self.hooks,
            logbook=self.filter.logbook,
            connection_id=self.connection_id,
            on_log=on_log,
            on_list_changed=on_list_changed,
            diagnostics=http,
            # Plain-HTTP servers without OAuth: our own HTTP/1.1 connections (runtime/http1.py).
            lite_headers=dict(self.spec.headers) if url.startswith("http://") and self.spec.auth is None else None,
            read_limits=session.probe.read_limits,
        )
        return self.raw

    @property
    def tools(self) -> list[types.Tool]:
        """The current validated tool catalog."""
        return self.catalog.tools

    def stop(self) -> None:
        """Ask the connection to close: gracefully when ready, by cancelling the handshake otherwise."""
        self.stop_requested.set()
        self.serving = False
        if not self.ready.is_set():
            self.cancel_scope.cancel()

    @property
    def is_live(self) -> bool:
        """Ready and not closed."""
        return self._live

    def mark_closed(self) -> None:
        """The connection has ended (its manager closed it): set `closed`; it is no longer live."""
        self._live = self.serving = False
        self.closed.set()

    def request_refresh(self, categories: tuple[Category, ...]) -> None:
        """Schedule a refresh of `categories` on the connection's refresh worker (coalesced)."""
        self._requested.update(categories)
        self._refresh_wanted.set()

    async def next_refresh(self) -> set[Category]:
        """Wait for requested categories, respecting the (storm-adaptive) minimum interval."""
        await self._refresh_wanted.wait()
        now = anyio.current_time()
        while self._refresh_times and now - self._refresh_times[0] > REFRESH_STORM_WINDOW_S:
            self._refresh_times.popleft()
        if len(self._refresh_times) >= REFRESH_STORM_LIMIT:
            self._interval = min(self._interval * 2, REFRESH_MAX_INTERVAL_S)
        else:
            self._interval = REFRESH_MIN_INTERVAL_S
        if self._refresh_times:
            wait = self._refresh_times[-1] + self._interval - now
            if wait > 0:
                await anyio.sleep(wait)
        self._refresh_wanted = anyio.Event()
        categories, self._requested = self._requested, set()
        self._refresh_times.append(anyio.current_time())
        return categories

    # ----- refreshing ------------------------------------------------------------------------------

    async def refresh(self, category: Category) -> RefreshOutcome:
        """Refresh one category with a new generation (R-3.7).

        The refresh is numbered when it starts; its answer (validated on its own, each page with its
        own notes) is committed only if no newer refresh committed meanwhile, so two overlapping
        refreshes never let the older answer win. A failure keeps the last valid content.

        Returns:
            "committed", "stale" (a newer refresh already committed: this answer was discarded) or
            "failed" (the error is in `catalog.errors[category]` unless a newer refresh committed;
            a listing not finished within the larger of the spec's `call_timeout_s` and
            `startup_timeout_s` seconds fails as MCP_SERVER_TIMEOUT).
        """
        assert self.session is not None
        server_id = self.spec.server_id
        generation = self.catalog.begin(category)
        limit_s = max(self.spec.call_timeout_s, self.spec.startup_timeout_s)
        asked = time.monotonic()
        try:
            # A server that never answers a list held a manual refresh (a REST request) and the
            # list_changed worker forever. The bound is the larger of a call's and a start's, so the
            # first catalog keeps the start's deadline it always had.
            with anyio.fail_after(limit_s):
                fetched = await fetch_category(self.session.client, category)
        except Exception as exc:  # noqa: BLE001 - a failed refresh keeps the last valid content
            error = (
                self.timed_out(LIST_METHODS[category], limit_s, self.session.probe, since=asked)
                if isinstance(exc, TimeoutError)
                else attribute(exc, self.session.probe, during=LIST_METHODS[category])
            )
            if self.catalog.fail(category, generation, {"code": error.code, "message": error.message}):
                logger.warning(
                    "server.catalog_refresh_failed",
                    extra={"server_id": server_id, "category": category, "code": error.code},
                )
            self._note_refresh()
            return "failed"
        if not self.catalog.commit(category, generation, fetched):
            logger.info(
                "server.catalog_refresh_superseded",
                extra={"server_id": server_id, "category": category, "generation": generation},
            )
            self._note_refresh()
            return "stale"
        for note in fetched.quarantined:
            logger.warning(
                "server.catalog_item_quarantined",
                extra={"server_id": server_id, "category": category, "reason": note.reason},
            )
        for normalized in fetched.normalized:
            logger.info(
                "server.catalog_item_normalized",
                extra={"server_id": server_id, "category": category, "changes": list(normalized.changes)},
            )
        self._note_refresh()
        return "committed"

    def _note_refresh(self) -> None:
        done, self._refresh_done = self._refresh_done, anyio.Event()
        done.set()

    def failed_categories(self) -> tuple[Category, ...]:
        """Categories whose last refresh failed (their content is older than that failure)."""
        return tuple(c for c in CATEGORIES if self.catalog.errors[c] is not None)

    async def _refresh_worker(self, owner: ConnectionOwner) -> None:
        while True:
            categories = await self.next_refresh()
            for category in CATEGORIES:
                if category in categories and owner.is_current(self):
                    outcome = await self.refresh(category)
                    owner.refreshed(self, category, outcome)
                    if outcome == "committed" and category == "tools":
                        release_freed_memory()

    async def _retry_worker(self) -> None:
        """List failed categories again, with backoff, until they succeed (issue 14, item 7)."""
        attempt = 0
        while True:
            failed = self.failed_categories()
            if not failed:
                attempt = 0
                await self._refresh_done.wait()
                continue
            attempt += 1
            await anyio.sleep(CATEGORY_RETRY.delay(attempt))
            logger.info("server.catalog_retry", extra={"server_id": self.spec.server_id, "categories": list(failed)})
            done = self._refresh_done
            self.request_refresh(failed)
            await done.wait()

    # ----- running ----------------------------------------------------------------------------------

    async def run(self, owner: ConnectionOwner, hooks: SessionHooks, transport_factory: Any) -> CenterError | None:
        """Connect, list, serve until the end; return the attributed error (None: ended by us).

        Sets `stopped_by_us` when the end was asked for (stop, or a handshake that was no longer
        wanted). Never raises but cancellation.
        """
        spec = self.spec
        probe = TransportProbe()
        error: CenterError | None = None
        try:
            with self.cancel_scope:  # cancelled by stop() while not ready
                with anyio.CancelScope(deadline=anyio.current_time() + spec.startup_timeout_s) as handshake:
                    async with open_session(spec, probe, hooks, transport_factory=transport_factory) as session:
                        self.session = session
                        await self._first_catalog(probe)
                        await self._resubscribe(session)
                        handshake.deadline = math.inf
                        if not owner.is_current(self):
                            self.stopped_by_us = True
                            return None
                        self.ready.set()
                        self._live = not self.closed.is_set()
                        self.serving = self._live and not self.stop_requested.is_set()
                        owner.became_ready(self)
                        release_freed_memory()  # the listing's garbage, once the registry is rebuilt
                        ended = await self._serve(owner, session)
                        error = await self._ending_error(ended, probe)
                if handshake.cancelled_caught and not self.ready.is_set():
                    error = startup_timeout_error("initialize", spec.startup_timeout_s, probe)
                    unknown = self.filter.logbook.unknown_answers(self.connection_id)
                    add_output_hints(error, probe, unknown, server_id=spec.server_id)
            if self.cancel_scope.cancelled_caught:
                self.stopped_by_us = True
        except Exception as exc:  # noqa: BLE001 - every failure becomes the connection's attributed error
            if self.stop_requested.is_set():
                self.stopped_by_us = True
            elif self.expired:
                error = _expired_error()
            else:
                error = attribute(exc, probe, during="the session" if self.ready.is_set() else "initialize")
        return None if self.stopped_by_us else error

    async def _resubscribe(self, session: OpenSession) -> None:
        """Subscribe this new session to every resource the server's earlier sessions were subscribed
        to for the gateway's agents (R-8.1): a subscription ends with the session it was sent on, and
        a server tells only its subscribed sessions, so without this an agent's subscription went
        silent after a reconnect, a disable and enable, or a configuration change. Runs before the
        connection is ready (within the handshake's deadline), so no request reaches the server
        before its subscriptions; a URI the server refuses is logged and kept (a later session may
        take it)."""
        capabilities = session.client.server_capabilities
        if not self._subscriptions or capabilities.resources is None or not capabilities.resources.subscribe:
            return
        for uri in sorted(self._subscriptions):
            try:
                await session.client.session.send_request(
                    types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                    types.EmptyResult,
                    request_read_timeout_seconds=RESUBSCRIBE_TIMEOUT_S,
                )
            except MCPError as exc:
                logger.warning(
                    "server.resubscribe_failed",
                    extra={"server_id": self.spec.server_id, "code": exc.error.code},
                )

    async def _first_catalog(self, probe: TransportProbe) -> None:
        if await self.refresh("tools") != "committed":
            tools_error = self.catalog.errors["tools"] or {}
            expired = probe.http is not None and probe.http.session_expired
            reason = ErrorReason.SESSION_EXPIRED if expired else ErrorReason.PROTOCOL
            raise ConnectionLost(
                f"the first tools/list failed: {tools_error.get('message', 'unknown error')}",
                details={"reason": reason.value},
            )
        for category in ("prompts", "resources", "resource_templates"):
            if await self.refresh(category) == "failed" and self._previous is not None:
                self.catalog.carry_over(self._previous, category)

    async def _ending_error(self, ended: Ending, probe: TransportProbe) -> CenterError | None:
        if ended == "stopped":
            self.stopped_by_us = True
            return None
        if ended == "unhealthy" and self.health_error is not None:
            return self.health_error
        if ended == "expired":
            return _expired_error()
        await settle_exit(probe)
        return attribute(SessionEnded(), probe, during="the session")

    async def _serve(self, owner: ConnectionOwner, session: OpenSession) -> Ending:
        """Run the ready connection until it ends; say how it ended."""
        expired = session.probe.http.expired if session.probe.http is not None else None
        unhealthy = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresh_worker, owner)
            tg.start_soon(self._retry_worker)
            if session.probe.stdio is None:
                tg.start_soon(self._health_worker, session, unhealthy)
            waits = [self.stop_requested, session.tapped.closed, unhealthy]
            waits += [expired] if expired is not None else []
            await wait_any(*waits)
            if expired is not None and expired.is_set() and not self.stop_requested.is_set():
                # Requests already sent on the expired session each get their own 404: let them
                # see it (and re-send once on the new session) before this one closes.
                with anyio.move_on_after(CLOSE_TIMEOUT_S):
                    while self.inflight and not self.stop_requested.is_set():
                        await wait_any(self.inflight_changed(), self.stop_requested)
            tg.cancel_scope.cancel()
        if self.stop_requested.is_set():
            return "stopped"
        if expired is not None and expired.is_set():
            self.expired = True
            return "expired"
        return "unhealthy" if unhealthy.is_set() and not session.tapped.closed.is_set() else "closed"

    async def _health_worker(self, session: OpenSession, unhealthy: anyio.Event) -> None:
        """Ping a remote server every `HEALTH_INTERVAL_S` seconds (R-3.11).

        An HTTP server that went away is otherwise "ready" until the next request fails, and the
        SDK's GET stream gives up silently. A ping the server answers — even with an error (it
        may not implement ping) — means alive; no answer in `HEALTH_TIMEOUT_S` seconds or a
        broken transport ends the connection with an attributed error; the next use reconnects.
        A Streamable HTTP server's GET stream that ends or cannot reopen (`stream_lost`) makes
        the next ping come at once (at most one per `EARLY_PING_MIN_INTERVAL_S`), so a server
        that died is seen in about a second, not at the next interval.
        """
        http = session.probe.http
        last_ping = anyio.current_time()
        while True:
            if http is None:
                await anyio.sleep(HEALTH_INTERVAL_S)
            else:
                with anyio.move_on_after(HEALTH_INTERVAL_S) as interval:
                    await http.stream_lost.wait()
                if not interval.cancelled_caught:
                    http.stream_lost = anyio.Event()
                    await anyio.sleep(max(0.0, last_ping + EARLY_PING_MIN_INTERVAL_S - anyio.current_time()))
            last_ping = anyio.current_time()
            try:
                with anyio.fail_after(HEALTH_TIMEOUT_S):
                    await session.client.session.send_ping()  # pyright: ignore[reportDeprecated]
                continue
            except MCPError as exc:
                if exc.code != types.CONNECTION_CLOSED and not session.tapped.closed.is_set():
                    continue  # the server answered: it is there
                self.health_error = attribute(exc, session.probe, during="a health ping")
            except TimeoutError:
                self.health_error = self.timed_out("a health ping", HEALTH_TIMEOUT_S, session.probe, since=last_ping)
            except Exception as exc:  # noqa: BLE001 - any other failure of the ping is the connection's
                self.health_error = attribute(exc, session.probe, during="a health ping")
            unhealthy.set()
            return


def _expired_error() -> ConnectionLost:
    return ConnectionLost(
        "the server's session expired (HTTP 404); the next use re-initializes",
        details={"reason": ErrorReason.SESSION_EXPIRED.value},
    )


def ready_status(conn: Connection) -> ServerStatus:
    """The `ready` status of a connection whose handshake finished."""
    assert conn.session is not None
    info = conn.session.client.server_info
    return ServerStatus(
        conn.spec.server_id,
        ConnectionState.READY,
        conn.connection_id,
        tool_count=len(conn.catalog.tools),
        server_name=info.name if info else None,
        server_version=info.version if info else None,
        protocol_version=conn.session.client.protocol_version,
    )


async def settle_exit(probe: TransportProbe) -> None:
    """When a stdio session ends, give the process a moment to be reaped so its exit code is known."""
    if probe.stdio is not None and probe.stdio.returncode is None:
        with anyio.move_on_after(SESSION_END_EXIT_WAIT_S):
            await probe.stdio.exited.wait()


async def wait_any(*events: anyio.Event) -> None:
    """Return as soon as one of `events` is set."""
    if any(e.is_set() for e in events):
        return
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
