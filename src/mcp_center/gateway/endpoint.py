"""`/mcp`: the gateway over Streamable HTTP, behind gateway tokens (R-8.1, R-7.1).

The SDK's session manager speaks the transport (sessions, SSE, the GET stream, DELETE). In
front of it sits one check: `Authorization: Bearer <gateway token>`. The admin token is not
accepted here — an MCP client's config file should hold a credential that can use tools through
the approval policy and nothing else. The host-wide Host allow-list and body-size limit apply.

A session belongs to the token that opened it: the SDK answers 404 to a request for it with
another token, and when that token is revoked (API, page or CLI — another process) the session
is ended within `SESSION_CHECK_S`: its open streams close, and its calls still waiting for an
approval or running are cancelled, so nothing a revoked client asked for is sent afterwards. A
2026-07-28 request has no session, so it is tracked per token while it runs (`_sessionless`), on
the lean path and on the SDK's alike, and cancelled by the same check (answered as the revoked
token's refusal, -32001).

Our policy, not spec: one token holds at most `MAX_SESSIONS_PER_TOKEN` sessions (a client that
re-initializes in a loop must not exhaust the host), and a session with nothing in flight for
`SESSION_IDLE_TIMEOUT_S` is ended. The idle clock is kept here rather than in the SDK, because the
SDK does not say when it drops a session: every way a session ends (DELETE, idle, revocation)
goes through this endpoint's table, so the table holds the sessions the SDK serves and no more.
(A session whose SDK task crashed stays in the table until its idle time runs out.)
"""

from __future__ import annotations

import functools
import hmac
import logging
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
import orjson
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from mcp_center.errors import GatewayAuthRequired, StorageError, did_you_mean
from mcp_center.gateway._answers import (
    accepted,
    bad_id_refusal,
    bad_id_unparsed,
    bad_listen_refusal,
    bad_meta_refusal,
    bad_request_id,
    bad_version,
    bad_version_refusal,
    batch_refusal,
    listen_gone_as_404,
    only_wide_integers,
    parsed_with_lone_surrogates,
    revoked_answer,
    server_deleted_error,
    session_elsewhere,
    unknown_server,
)
from mcp_center.gateway._disconnects import OneResponse, quiet_client_disconnects
from mcp_center.gateway.fastpath import (
    AgentLink,
    LeanPath,
    LeanRequest,
    body_shape,
    direct_lean_read,
    is_lean,
    is_modern,
    parsed_unlike_sdk,
    shallow,
)
from mcp_center.gateway.refusals import read_headers, sdk_refuses, sdk_refuses_read
from mcp_center.gateway.server import GATEWAY_PATH, CallerCard, Gateway, scope_of_path
from mcp_center.gateway.wire import DirectHandler
from mcp_center.models import is_object
from mcp_center.secrets import presented_bearer
from mcp_center.service import GatewayTokens
from mcp_center.service.gateway_tokens import STALE
from mcp_center.store.freshness import enter_request, leave_request, request_arrived, serving_request

__all__ = ["GATEWAY_PATH", "MAX_SESSIONS_PER_TOKEN", "SESSION_LIMIT_CODE", "GatewayEndpoint"]

MAX_SESSIONS_PER_TOKEN = 64
"""Sessions one gateway token may hold open at once (our policy, R-8.1, R-7.3).

An `initialize` beyond it is answered HTTP 429 with a JSON-RPC error whose message starts with
`SESSION_LIMIT_CODE` and whose `data` is `{"code": "GATEWAY_SESSION_LIMIT", "limit": N}`. A place
frees up when one of the token's sessions ends: its client's DELETE, `SESSION_IDLE_TIMEOUT_S`
without a request, or revocation. A few agents sharing one token stay far below it; without it
the only bound is the SDK's 10,000 sessions for the whole host."""
SESSION_LIMIT_CODE = "GATEWAY_SESSION_LIMIT"
"""Stable code of the refusal above (R-7.3)."""
SESSION_IDLE_TIMEOUT_S = 3600.0
"""A session with no request in flight (no call being served, no open GET stream) this long is
ended; its id then answers 404 and the client re-initializes transparently."""
SESSION_CHECK_S = 1.0
"""Seconds between checks for sessions to end (revoked token, idle)."""
SESSION_END_TIMEOUT_S = 5.0
"""Seconds one session may take to end before the check moves on (the SDK's own idle timeout, at
twice `SESSION_IDLE_TIMEOUT_S`, still ends it)."""

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=256)
def _principal(token_id: str) -> AuthenticatedUser:
    """The `scope["user"]` the SDK binds a session to (its `client_id`): the token's id, never the token.
    One object per token id (read-only; built once instead of two pydantic models per request)."""
    return AuthenticatedUser(AccessToken(token="", client_id=token_id, scopes=[]))


@dataclass(eq=False)
class _Session:
    """A session the SDK serves, as this endpoint tracks it."""

    token_id: str
    """Id of the gateway token that opened it."""
    link: AgentLink = field(default_factory=lambda: AgentLink(None, {}))
    """Its scope (`/mcp/{server_id}`), the capabilities its agent declared, its lean requests."""
    in_flight: int = 0
    """Requests for it being served now (an open GET stream counts until it closes)."""
    idle_since_s: float = field(default_factory=anyio.current_time)
    """`anyio.current_time()` when `in_flight` last became 0."""
    answer_headers: tuple[tuple[bytes, bytes], ...] = ()
    """`mcp-session-id: <its id>`, sent with every lean answer as the SDK sends it with its own."""

    def request_done(self) -> None:
        """One of its requests was answered (or its stream closed): the idle clock starts at the last."""
        self.in_flight -= 1
        if self.in_flight == 0:
            self.idle_since_s = anyio.current_time()


class GatewayEndpoint:
    """ASGI app for `/mcp`. Enter `running()` (in the app's lifespan) before serving requests.

    Args:
        gateway: The gateway MCP server.
        tokens: Verifies presented gateway tokens.
    """

    def __init__(self, gateway: Gateway, tokens: GatewayTokens, *, admin_token: str | None = None) -> None:
        self.gateway = gateway
        self._tokens = tokens
        self._admin_token = admin_token
        """Only to say "the admin token is not accepted here" instead of "not recognised"; never accepted."""
        self._manager = StreamableHTTPSessionManager(
            app=gateway.server,
            json_response=False,
            stateless=False,
            security_settings=None,  # the app's HostGuard checks Host and Origin for every path
            session_idle_timeout=2 * SESSION_IDLE_TIMEOUT_S,  # a backstop only: `_end_stale_sessions` ends them first
        )
        self._sessions: dict[str, _Session] = {}
        """Session id → the session; bounded by the sessions the SDK serves."""
        self._opening: Counter[str] = Counter()
        """Token id → its requests without a session id being answered now (each may open one)."""
        self._sessionless: dict[str, set[AgentLink]] = {}
        """Token id → the links of its sessionless (2026-07-28) requests being served now (lean, or
        handed to the SDK): ended by `_take_stale` when the token is revoked, as its sessions are."""
        self._tg: anyio.abc.TaskGroup | None = None
        """The task group of `running()`: sessions of a deleted server's endpoint are ended in it."""
        self._listens: set[anyio.Event] = set()
        """One event per `subscriptions/listen` stream the SDK serves now, set once its response ended."""
        self._lean = LeanPath(gateway)
        self.lean = True
        """False: every request goes to the SDK's stack, none to the lean or direct path (the reference
        the lean paths' answers are compared with, issue 12; a way out should the lean path misbehave)."""

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the session manager, the gateway's forwarding tasks and the check that ends sessions;
        while running, an agent that goes away mid-request is logged as one line (`_disconnects`, R-3.11)."""
        with quiet_client_disconnects():
            async with self._manager.run(), self.gateway.running(), anyio.create_task_group() as tg:
                self._tg = tg
                unhook = self.gateway.when_endpoint_gone(self._end_endpoint_sessions)
                tg.start_soon(self._end_stale_sessions)
                try:
                    yield
                finally:
                    unhook()
                    self._tg = None
                    tg.cancel_scope.cancel()

    async def end_listen_streams(self, timeout_s: float = SESSION_END_TIMEOUT_S) -> int:
        """End every open `subscriptions/listen` stream gracefully (`Gateway.end_listening`: each
        ends with its result, a later one at once) and wait until their responses have ended, at
        most `timeout_s` seconds (R-8.1). `serve` calls this when it starts to stop, before uvicorn
        waits for open responses: a listen stream never ends by itself, so each would otherwise hold
        the exit up for the whole graceful-shutdown timeout and then be cancelled with a traceback.

        Returns:
            How many streams were still open when it was called.
        """
        open_now = list(self._listens)
        self.gateway.end_listening()
        with anyio.move_on_after(timeout_s) as deadline:
            for ended in open_now:
                await ended.wait()
        if deadline.cancelled_caught:
            logger.warning("gateway.listen_end_timeout", extra={"open": sum(not e.is_set() for e in open_now)})
        return len(open_now)

    def open_sessions(self, token_id: str) -> int:
        """How many sessions the token `token_id` holds now, counting those being opened (R-8.1).

        Returns:
            0 for an unknown or revoked token id (a revoked token's sessions are forgotten when
            the check ends them, within `SESSION_CHECK_S` seconds).
        """
        return sum(1 for s in self._sessions.values() if s.token_id == token_id) + self._opening[token_id]

    async def _end_stale_sessions(self) -> None:
        while True:
            await anyio.sleep(SESSION_CHECK_S)
            for session_id, token_id in self._take_stale():
                await self._terminate(session_id, token_id)
                await self.gateway.session_ended(session_id)
            try:  # a server deleted elsewhere (the CLI, another instance): its endpoint's streams and sessions end
                await self.gateway.end_gone_endpoints({s.link.server_id for s in self._sessions.values()})
            except Exception:  # an unreadable store must not stop the session checks
                logger.exception("gateway.endpoint_check_failed")

    def _end_endpoint_sessions(self, server_id: str) -> None:
        """The server `server_id` was deleted (`Gateway.when_endpoint_gone`): the sessions opened on
        `/mcp/{server_id}` end as a revoked token's do — forgotten now, their lean calls cancelled,
        then ended in the SDK (its GET stream closes, their id answers 404 from then on), so a client
        that re-initializes learns that the endpoint is gone (R-8.4). `/mcp` sessions stay."""
        ending = [(sid, s) for sid, s in self._sessions.items() if s.link.server_id == server_id]
        gone = server_deleted_error(server_id) if ending else None
        for session_id, session in ending:
            del self._sessions[session_id]
            session.link.end(gone)
            logger.info("gateway.session_server_deleted", extra={"token_id": session.token_id})
        if ending and self._tg is not None:
            self._tg.start_soon(self._end_sessions, [(sid, s.token_id) for sid, s in ending])

    async def _end_sessions(self, sessions: list[tuple[str, str]]) -> None:
        """End each `(session id, token id)` in the SDK and release what it held."""
        for session_id, token_id in sessions:
            await self._terminate(session_id, token_id)
            await self.gateway.session_ended(session_id)

    def _take_stale(self) -> list[tuple[str, str]]:
        """Remove and return `(session id, token id)` of the sessions to end: revoked token, or idle."""
        try:
            holders = {s.token_id for s in self._sessions.values()} | self._sessionless.keys()
            revoked = {t for t in holders if not self._tokens.is_current(t)}
        except Exception:  # an unreadable token file must not stop the gateway (nor the idle check)
            logger.exception("gateway.revocation_check_failed")
            revoked = set[str]()
        for token_id in revoked:
            for link in list(self._sessionless.get(token_id, ())):
                logger.info("gateway.sessionless_revoked", extra={"token_id": token_id})
                link.end()
        now = anyio.current_time()
        stale: list[tuple[str, str]] = []
        for session_id, session in list(self._sessions.items()):
            if session.token_id in revoked:
                logger.info("gateway.session_revoked", extra={"token_id": session.token_id})
            elif session.in_flight == 0 and now - session.idle_since_s >= SESSION_IDLE_TIMEOUT_S:
                logger.info("gateway.session_idle", extra={"token_id": session.token_id})
            else:
                continue
            del self._sessions[session_id]
            session.link.end()
            stale.append((session_id, session.token_id))
        return stale

    async def _terminate(self, session_id: str, token_id: str) -> None:
        """End a session as its client's DELETE would (the SDK's public entry point, no private state)."""
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": GATEWAY_PATH,
            "raw_path": GATEWAY_PATH.encode("ascii"),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"mcp-session-id", session_id.encode("latin-1"))],
            "client": None,
            "server": None,
            "user": _principal(token_id),
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_message: Message) -> None:
            return None

        with anyio.move_on_after(SESSION_END_TIMEOUT_S) as deadline:
            try:
                await self._manager.handle_request(scope, receive, send)
            except Exception:  # one session that cannot be ended must not stop the others
                logger.exception("gateway.session_end_failed")
        if deadline.cancelled_caught:
            logger.warning("gateway.session_end_timeout", extra={"token_id": token_id})

    def _refusal(self, presented: str | None) -> str:
        """Why a request with the bearer credential `presented` (None: none) was refused, in words that
        tell a missing token from a wrong one (never echoing it)."""
        how = "create one with 'mcp-center gateway token create NAME' or on the settings page's Gateway page"
        code = GatewayAuthRequired.code  # the error class's code, one source of truth (cli36)
        if presented is None:
            return f"{code}: send 'Authorization: Bearer <gateway token>' ({how})"
        if self._admin_token and hmac.compare_digest(presented.encode(), self._admin_token.encode()):
            return f"{code}: the admin token is not accepted by the gateway; use a gateway token ({how})"
        return f"{code}: this gateway token is not recognised (mistyped, or revoked); {how}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        # Counted once its head is in: the store's stamps taken from now on are fresh for it.
        with serving_request(request_arrived()):
            await self._handle(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        response_once = OneResponse(send)
        send = response_once
        headers = read_headers(scope.get("headers", []))[0]
        presented = presented_bearer(headers.get(b"authorization"))
        try:
            named = self._tokens.identify_cached(presented)
            if named == STALE:  # the tokens changed: read them in a worker thread, not on this loop
                await self._tokens.refresh()
                named = self._tokens.identify_named(presented)
        except StorageError as exc:  # the shared database is away: say so, retryable
            logger.warning("gateway.token_check_failed", extra={"code": exc.code})
            error = {"code": -32603, "message": f"{exc.code}: {exc.message}", "data": {"code": exc.code}}
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=exc.http_status)(
                scope, receive, send
            )
            return
        if named is None:
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": self._refusal(presented)}},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="mcp-center gateway"'},
            )
            await response(scope, receive, send)
            return
        token_id, token_name = named
        scope["user"] = _principal(token_id)
        server_id = scope_of_path(scope.get("path", GATEWAY_PATH))
        session_id = headers.get(b"mcp-session-id")
        version = headers.get(b"mcp-protocol-version")
        message: object = None
        may_lean = self.lean
        if scope.get("method") == "POST":
            body = await _read_body(receive)
            if body is None:  # the agent hung up before its body was complete: nobody to answer
                logger.info("gateway.client_gone", extra={"reason": "ClientDisconnect", "during": "reading the body"})
                return
            receive = _replay(body, receive)
            try:
                message = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                if bad_id_unparsed(body):  # an id of 1e400: no SDK answer names what is wrong (sec39)
                    await bad_id_refusal()(scope, receive, send)
                    return
                message = parsed_with_lone_surrogates(body, str(exc))  # else None: the SDK answers -32700
            if isinstance(message, list):
                await batch_refusal()(scope, receive, send)
                return
            if may_lean and parsed_unlike_sdk(body, message):
                may_lean = False  # a wide integer or a deep nesting: the SDK's parser, and answer, decide
            if bad_version(message):
                await bad_version_refusal(message)(scope, receive, send)
                return
            if bad_request_id(message):
                if not only_wide_integers(body, modern=is_modern(version)):
                    await bad_id_refusal()(scope, receive, send)
                    return
                message = None  # an id beyond 64 bits, which `orjson` cannot keep: the SDK serves it
            if (refusal := bad_meta_refusal(message, modern=is_modern(version))) is not None:
                if not only_wide_integers(body, modern=is_modern(version)):
                    await refusal(scope, receive, send)
                    return
                message = None  # likewise a progressToken beyond 64 bits
        if server_id is not None and session_id is None and not await self._server_known(server_id):
            await unknown_server(server_id, await self._closest_servers(server_id))(scope, receive, send)
            return
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # 2026-07-28 and later, or unknown (refused by the SDK): one request at a time, no session.
            if may_lean and is_object(message) and is_modern(version) and self._modern_lean(headers, message):
                token = (token_id, token_name)
                lean = self._modern_lean_request(message, server_id, token, scope.get("headers", ()), _meta_of(message))
                await self._serve_sessionless(token_id, lean, receive, send)
                return
            if is_modern(version) and (refusal := bad_listen_refusal(headers, message)) is not None:
                await refusal(scope, receive, send)
                return
            await self._hand_over_sessionless(token_id, message, scope, receive, response_once)
        elif session_id is None:
            await self._open(token_id, server_id, message, scope, receive, response_once)
        else:
            token = (token_id, token_name)
            await self._serve(session_id, token, message, headers, scope, receive, response_once, lean=may_lean)

    def direct(
        self, headers: Sequence[tuple[bytes, bytes]], body: bytes, found: Mapping[bytes, str] | None = None
    ) -> DirectHandler | None:
        """The lean answer to a POST to `/mcp` (lower-case `headers`, the whole `body`) that `__call__`
        would serve on its sessionless (2026-07-28) lean branch, as a handler of plain `receive` and
        `send` (`gateway.wire`'s direct requests, issue 12); None for any other request, which then
        goes through `__call__` as before (nothing is answered or kept here, so its refusals, the
        SDK's answers and their order stay `__call__`'s). Same token check, same request checks.
        `found`: what `read_headers` reads of `headers`, when the caller read it already (the direct
        route's one pass); None: read here."""
        if found is None:
            found = read_headers(headers)[0]
        version = found.get(b"mcp-protocol-version")
        if (
            not self.lean
            or b"mcp-session-id" in found
            or version is None
            or version in HANDSHAKE_PROTOCOL_VERSIONS
            or not is_modern(version)
        ):
            return None
        arrival = request_arrived()  # its bytes are in (see `__call__`)
        serving = enter_request(arrival)  # `serving_request(arrival)` without its frames (issue 12)
        try:
            named = self._tokens.identify_cached(presented_bearer(found.get(b"authorization")))
        except StorageError:
            return None
        finally:
            leave_request(serving)
        if named is None or named == STALE:  # STALE: `__call__` reads the changed tokens off the loop
            return None
        try:
            message: dict[str, Any] | None = orjson.loads(body)  # checked exactly below
        except orjson.JSONDecodeError:
            return None
        if type(message) is not dict or (read := direct_lean_read(message)) is None:
            return None
        shape = body_shape(body)
        if parsed_unlike_sdk(body, message, shape):
            return None  # a wide integer or a deep nesting: `__call__` leaves it to the SDK
        if sdk_refuses_read(found, message, *read):
            return None  # `__call__`'s checks (bad_version ... _modern_lean) in one pass
        lean = self._modern_lean_request(message, None, named, headers, read[2])
        lean.safe_json = shallow(shape[1])
        token_id = named[0]
        return functools.partial(self._serve_direct, arrival, token_id, lean)  # no lambda's frame per call (issue 12)

    async def _serve_direct(self, arrival: int, token_id: str, lean: LeanRequest, receive: Receive, send: Send) -> None:
        """`_serve_sessionless` for `direct`, in its own task: the request's arrival mark set again there.
        Its lines rather than a call to it: one coroutine frame less on every resume (issue 12)."""
        link = lean.link
        serving = enter_request(arrival)  # `serving_request(arrival)` without its frames (issue 12)
        links = self._track(token_id, link)
        try:
            await self._lean.serve(lean, receive, send)
        finally:
            self._untrack(token_id, link, links)
            leave_request(serving)

    async def _serve_sessionless(self, token_id: str, lean: LeanRequest, receive: Receive, send: Send) -> None:
        """Serve a sessionless lean request of the token `token_id`, known to `_take_stale` meanwhile:
        revoking the token cancels its call (`AgentLink.end`), as it ends the token's sessions."""
        link = lean.link
        links = self._track(token_id, link)  # `_tracked`, without a generator's frames per call (issue 12)
        try:
            await self._lean.serve(lean, receive, send)
        finally:
            self._untrack(token_id, link, links)

    async def _hand_over_sessionless(
        self, token_id: str, message: object, scope: Scope, receive: Receive, send: OneResponse
    ) -> None:
        """`_hand_over` of a request without a session (2026-07-28) of the token `token_id` (`message`,
        its parsed body), known to `_take_stale` meanwhile as `_serve_sessionless` makes a lean one:
        revoking the token cancels the SDK's handling of it (its upstream call with it) and it is
        answered as the lean path answers a revoked call (-32001 GATEWAY_AUTH_REQUIRED, R-8.1)."""
        link = AgentLink(None, {})
        handling = link.calls[None] = anyio.CancelScope()
        ended = anyio.Event()
        sending: Send = send
        if is_object(message) and message.get("method") == "subscriptions/listen":
            self._listens.add(ended)
            if scope_of_path(scope.get("path", GATEWAY_PATH)) is not None:
                sending = listen_gone_as_404(send)  # deleted after it was let in: the endpoint's 404
        try:
            with self._tracked(token_id, link), handling:
                await self._hand_over(scope, receive, sending, send)
        finally:
            self._listens.discard(ended)
            ended.set()
        if handling.cancel_called and not send.complete:
            request_id = message.get("id") if is_object(message) else None
            await revoked_answer(request_id, streaming=send.started)(send)

    @contextmanager
    def _tracked(self, token_id: str, link: AgentLink) -> Generator[None]:
        """Keep `link` under `token_id` in `_sessionless` while a sessionless request runs, so that
        `_take_stale` ends it (`AgentLink.end`) when the token is revoked; forgotten afterwards."""
        links = self._track(token_id, link)
        try:
            yield
        finally:
            self._untrack(token_id, link, links)

    def _track(self, token_id: str, link: AgentLink) -> set[AgentLink]:
        """The start of `_tracked`: `link` kept under `token_id`; returns the set it is kept in."""
        links = self._sessionless.setdefault(token_id, set())
        links.add(link)
        return links

    def _untrack(self, token_id: str, link: AgentLink, links: set[AgentLink]) -> None:
        """The end of `_tracked`: `link` forgotten (and the token's set, once empty)."""
        links.discard(link)
        if not links and self._sessionless.get(token_id) is links:
            del self._sessionless[token_id]

    def _modern_lean_request(
        self,
        message: dict[str, Any],
        server_id: str | None,
        token: tuple[str, str | None],
        headers: Sequence[tuple[bytes, bytes]],
        meta: dict[str, Any] | None,
    ) -> LeanRequest:
        """The lean request of a sessionless (2026-07-28) `message` (with its ASGI `headers`) from the
        token `(id, name)` for `/mcp` (`server_id` None) or `/mcp/{server_id}`: its capabilities
        (`{}` without them) and client (None without one) from `meta`, its `params._meta` as read
        (`_meta_of`, or the direct route's one pass), read here without a helper's call (issue 12)."""
        token_id, token_name = token
        capabilities: dict[str, Any] | None = None
        client: dict[str, Any] | None = None
        if meta is not None:  # declared types, checked exactly (parsed JSON has no subclasses)
            capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
            client = meta.get(types.CLIENT_INFO_META_KEY)
        link = AgentLink(
            server_id,
            capabilities if type(capabilities) is dict else {},
            client if type(client) is dict else None,  # client (positional: issue 12)
        )
        tokens = self._tokens
        # Positional, in the fields' order (a class called with keywords costs a dictionary of them
        # and its unpacking, about 0.5 µs per direct call, issue 12).
        return LeanRequest(
            message,
            link,
            True,  # modern
            lambda: tokens.is_current(token_id),  # caller_allowed: `_allowed(token_id)` in line (issue 12)
            CallerCard(token_id, token_name, link.client),  # caller
            headers,
        )

    def _allowed(self, token_id: str) -> Callable[[], bool]:
        tokens = self._tokens
        return lambda: tokens.is_current(token_id)

    @staticmethod
    def _modern_lean(headers: dict[bytes, str], message: dict[str, Any]) -> bool:
        """A 2026-07-28 request the lean path may answer: well-formed, and nothing the SDK's own entry
        would refuse (`refusals.sdk_refuses`: headers, the `_meta` envelope); else the SDK answers it."""
        return is_lean(message, modern=True) and not sdk_refuses(headers, message, modern=True)

    async def _server_known(self, server_id: str) -> bool:
        return await self.gateway.center.server_exists(server_id)

    async def _closest_servers(self, server_id: str) -> list[str]:
        """The registered ids closest to an unknown `/mcp/{server_id}` (every token may open each)."""
        return did_you_mean(server_id, await self.gateway.center.server_ids()) if len(server_id) <= 100 else []

    async def _serve(
        self,
        session_id: str,
        token: tuple[str, str | None],
        message: object,
        headers: dict[bytes, str],
        scope: Scope,
        receive: Receive,
        send: OneResponse,
        *,
        lean: bool,
    ) -> None:
        """A request for session `session_id` by the token `(id, name)` (its `headers` as `read_headers`
        read them), keeping its idle clock; a DELETE that ended it forgets it. `lean`: the lean path
        may answer it (`GatewayEndpoint.lean`, and no integer beyond 64 bits in its body)."""
        token_id, token_name = token
        session = self._sessions.get(session_id)
        if session is None or session.token_id != token_id:  # unknown, or another token's: the SDK answers 404
            await self._hand_over(scope, receive, send, send)
            return
        if session.link.server_id != scope_of_path(scope.get("path", GATEWAY_PATH)):
            # A session belongs to the endpoint that opened it: elsewhere it does not exist.
            await session_elsewhere()(scope, receive, send)
            return
        if lean and is_object(message) and not sdk_refuses(headers, message, modern=False):
            link = session.link
            if ("method" not in message and link.answer(message)) or (
                message.get("method") == "notifications/cancelled" and link.cancel(message)
            ):
                await accepted(send, session.answer_headers)
                return
            if is_lean(message, modern=False):
                session.in_flight += 1
                try:
                    request = LeanRequest(
                        message,
                        link,
                        modern=False,
                        caller_allowed=self._allowed(token_id),
                        caller=CallerCard(token_id, token_name, link.client),
                        response_headers=session.answer_headers,
                    )
                    await self._lean.serve(request, receive, send)
                finally:
                    session.request_done()
                return
        status: int | None = None

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        session.in_flight += 1
        try:
            await self._hand_over(scope, receive, send_noting_status, send)
        finally:
            session.request_done()
        ended = status is not None and (status < 300 or status == 404)  # 404: the SDK no longer has it
        if scope.get("method") == "DELETE" and ended and self._sessions.get(session_id) is session:
            del self._sessions[session_id]
            session.link.end()
            await self.gateway.session_ended(session_id)

    async def _open(
        self, token_id: str, server_id: str | None, message: object, scope: Scope, receive: Receive, send: OneResponse
    ) -> None:
        """A request without a session id (an `initialize`), within the token's session limit.

        A session on `/mcp/{id}` is registered only if its server is still there then
        (`Gateway.endpoint_exists`, then no pause): one whose server was deleted after the endpoint
        let the `initialize` in is ended in the SDK and answered as the endpoint answers after the
        deletion (404 MCP_SERVER_NOT_FOUND), instead of living until the periodic check (R-8.4)."""
        if self.open_sessions(token_id) >= MAX_SESSIONS_PER_TOKEN:
            logger.warning("gateway.session_limit", extra={"token_id": token_id})
            await self._limit_refusal()(scope, receive, send)
            return
        self._opening[token_id] += 1
        opened: _Session | None = None
        refused: str | None = None
        """The SDK's id of a session refused because its server was deleted; its answer is not sent."""
        link = AgentLink(server_id, _declared_capabilities(message), client=_declared_client(message))

        async def send_noting_session(message: Message) -> None:
            nonlocal opened, refused
            if refused is not None:
                return
            if message["type"] == "http.response.start" and opened is None:
                if message["status"] >= 400:
                    # Refused (a request other than `initialize`, a malformed one): the SDK discards the
                    # session it made for it, so its id is not sent (a client would keep a dead id).
                    kept = [(n, v) for n, v in message.get("headers", []) if n.lower() != b"mcp-session-id"]
                    message = {**message, "headers": kept}
                else:
                    for name, value in message.get("headers", []):
                        if name.lower() != b"mcp-session-id":
                            continue
                        if server_id is not None and not await self.gateway.endpoint_exists(server_id):
                            refused = value.decode("latin-1")
                            return
                        # No pause from the look to here: a deletion noticed from now on ends this session.
                        opened = _Session(token_id, link, in_flight=1, answer_headers=((b"mcp-session-id", value),))
                        self._sessions[value.decode("latin-1")] = opened
                        self._release_opening(token_id)
            await send(message)

        try:
            await self._hand_over(scope, receive, send_noting_session, send)
        finally:
            if opened is None:
                self._release_opening(token_id)
            else:
                opened.request_done()
        if refused is not None and server_id is not None:
            logger.info("gateway.session_server_deleted", extra={"token_id": token_id})
            await self._terminate(refused, token_id)
            await self.gateway.session_ended(refused)
            await unknown_server(server_id)(scope, receive, send)

    async def _hand_over(self, scope: Scope, receive: Receive, send: Send, response: OneResponse) -> None:
        """Let the SDK's session manager serve the request.

        When the session ends while one of its requests is being handed over (its client's DELETE
        racing a `notifications/cancelled`, a revocation, the idle timeout), the SDK logs that
        (`_disconnects` makes it one line) and then re-raises the closed stream's error after it
        has answered: that ends the request here instead of reaching uvicorn as a traceback. The
        same error before the request was answered (`response.complete`) is not that case and propagates.
        A response the SDK started and returned from without ending (an SSE stream open when `serve`
        stops) is ended here (`OneResponse.finish`).
        """
        try:
            await self._manager.handle_request(scope, receive, send)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            if not response.complete:
                raise
            logger.debug("gateway.session_gone_under_request", extra={"reason": type(exc).__name__})
        else:
            await response.finish()

    def _release_opening(self, token_id: str) -> None:
        self._opening[token_id] -= 1
        if self._opening[token_id] <= 0:
            del self._opening[token_id]

    def _limit_refusal(self) -> JSONResponse:
        limit = MAX_SESSIONS_PER_TOKEN
        message = (
            f"{SESSION_LIMIT_CODE}: this gateway token already has {limit} open sessions, the most one token "
            "may hold; end one (a client's DELETE, or let it go idle) or give each agent its own token"
        )
        error = {"code": types.INTERNAL_ERROR, "message": message, "data": {"code": SESSION_LIMIT_CODE, "limit": limit}}
        return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=429)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body (the host's `BodySizeLimit` bounds it before this runs); None when the
    agent disconnected before it was complete."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` once more (to the SDK), then waits on the real one (disconnect)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _declared_capabilities(message: object) -> dict[str, Any]:
    """The `capabilities` an `initialize` request declares (empty when it is not one)."""
    if not is_object(message) or message.get("method") != "initialize":
        return {}
    params = message.get("params")
    caps = params.get("capabilities") if is_object(params) else None
    return cast(dict[str, Any], caps) if is_object(caps) else {}


def _declared_client(message: object) -> dict[str, Any] | None:
    """The `clientInfo` an `initialize` request declares (None when it is not one or has none)."""
    if not is_object(message) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    info = params.get("clientInfo") if is_object(params) else None
    return cast(dict[str, Any], info) if is_object(info) else None


def _meta_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """A 2026-07-28 request's `params._meta` object (None when absent or not an object)."""
    params: dict[str, Any] | None = message.get("params")
    meta: dict[str, Any] | None = params.get("_meta") if type(params) is dict else None
    return meta if type(meta) is dict else None
