"""Lean forwarding of one JSON-RPC request on a live Streamable HTTP session (R-8.1, R-8.3).

The gateway's hot path sends an agent's `tools/call` (and the other forwarded methods) to the
server as it came. Through the SDK's client that costs a task per POST, three memory-stream hops,
a pydantic model of every message and the dispatcher's bookkeeping; here it is one POST on the
connection's own `httpx2.AsyncClient` (its auth, its connection pool, its diagnostics hook, its
body bound), the answer parsed once (orjson), and nothing else.

What it keeps, as the SDK session would:
- the session: `Mcp-Session-Id` and `MCP-Protocol-Version` of the live session; a 404 for it is
  "session expired" (`HttpDiagnostics`), which the manager answers by re-initializing once (R-3.10);
- the answer as JSON or as an SSE stream; a stream that ends before the answer is resumed with
  `Last-Event-ID`, as our SDK transport does (`transports/streamable.py`, issue 14 item 8): spaced by
  `streamable.RESUME_BACKOFF` (the server's `retry` a minimum), given up with `MCP_CONNECTION_LOST`
  after `streamable.RESUME_ATTEMPTS` resumptions in a row that brought no message (R-3.10);
- what the server sends on that stream before the answer: progress for our request goes to the
  caller; `notifications/message` and list changes go where the SDK session sends them (`on_log`,
  `on_list_changed`); its requests (elicitation, sampling, roots, ping) are answered through the
  connection's own callbacks and POSTed back (R-6.1, R-8.5);
- cancellation: a caller that gives up (the agent cancelled, the deadline expired) sends
  `notifications/cancelled` for the request (R-3.8);
- the per-server log (R-3.11) and redaction of everything the server sends (R-1.5); our request's
  record is made right after it is written (`Http1Client.send`'s `written`), off the critical path;
- the read cap of answers (issue 14, item 2): `httpx2`'s transport clips what it reads, and
  `Http1Client` answers go through the same clipper (`transports.http.clip_body`); what was cut
  is reported in the result's `_meta["mcp-center/clipped"]`, as the SDK session's tap does.

A server's JSON-RPC error is raised as the SDK raises it (`MCPError`), so the manager's
attribution applies unchanged.

A `tools/call` may instead go as a 2026-07-28 sessionless request when the server speaks that
version and the tool has shown it needs nothing only the session carries (`runtime/eras.py` says
when and why): no session headers, the version, our client info and capabilities in `_meta`,
`Mcp-Method`/`Mcp-Name` headers; an `input_required` answer is resolved through the same callbacks
and re-sent; giving up aborts the POST (the 2026-07-28 cancellation) instead of a notification;
the result is answered in the session era's shape.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import orjson
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcp_center.models import is_object
from mcp_center.runtime import eras
from mcp_center.runtime.attribution import AnswerLost
from mcp_center.runtime.forward_reads import (
    ClippedResponse,
    Httpx2Response,
    Response,
    SseParser,
    ignore_clip,
    media_type,
)
from mcp_center.runtime.http1 import Http1Client, Http1Error, Http1Response
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.session import CLIENT_INFO, SessionHooks
from mcp_center.secrets import default_redactor
from mcp_center.transports import MAX_MESSAGE_BYTES, HttpDiagnostics, streamable
from mcp_center.transports.clip import CLIPPED_META_KEY, ClipReport, ReadLimits

__all__ = ["RawForwarder"]

logger = logging.getLogger(__name__)

DRAIN_S = 0.5
"""Seconds to read a POST stream to its end after its answer (servers end it right after), so its
connection goes back to the pool instead of being closed; a stream still open then is closed."""
MAX_SSE_STREAM_BYTES = 16 * MAX_MESSAGE_BYTES
"""Bytes one POST stream may carry in all (events before the answer included)."""
CANCEL_SEND_TIMEOUT_S = 2.0
"""Seconds to deliver `notifications/cancelled` for a request the caller gave up on."""
_OUT = "client→server"
_IN = "server→client"
_ELICIT_PARAMS: TypeAdapter[types.ElicitRequestParams] = TypeAdapter(types.ElicitRequestParams)
_IDS = itertools.count(1)
MODERN_HEADS = 1024
"""Methods and tool names whose 2026-07-28 headers one connection keeps rendered (`_modern_head`);
the table starts over when full (a server's tools are bounded by its catalog)."""


class RawForwarder:
    """Forwards requests on one live Streamable HTTP session (built by the manager per connection).

    Args:
        client: The connection's HTTP client; `url` its MCP endpoint.
        lite_headers: For an `http://` server without OAuth, its configured headers: requests then
            go over `Http1Client` (`runtime/http1.py`) instead of `client`, and `diagnostics`
            (the connection's `HttpDiagnostics`) is told about failed POSTs as `client`'s hook
            would be.
        session_id: Returns the session's current `Mcp-Session-Id` (None before one was assigned).
        protocol_version: The negotiated version, sent as `MCP-Protocol-Version`.
        session: The SDK session the callbacks in `hooks` expect in their context.
        hooks: The connection's elicitation, sampling and roots callbacks.
        on_log: Receives the server's `notifications/message` params.
        on_list_changed: Receives the method of a `notifications/*/list_changed`.
        read_limits: The connection's read cap (`clip.read_limits`), applied to `Http1Client`
            answers; None reads them whole (up to `MAX_MESSAGE_BYTES`).
    """

    def __init__(
        self,
        *,
        client: httpx2.AsyncClient,
        url: str,
        session_id: Callable[[], str | None],
        protocol_version: str,
        session: ClientSession,
        hooks: SessionHooks,
        logbook: ServerLogbook,
        connection_id: str,
        on_log: Callable[[types.LoggingMessageNotificationParams], Awaitable[None]] | None = None,
        on_list_changed: Callable[[str], None] | None = None,
        diagnostics: HttpDiagnostics | None = None,
        lite_headers: Mapping[str, str] | None = None,
        read_limits: ReadLimits | None = None,
    ) -> None:
        self._limits = read_limits
        self._client = client
        self._diagnostics = diagnostics
        self._lite = Http1Client(url, dict(lite_headers)) if lite_headers is not None else None
        self._url = url
        self._session_id = session_id
        self._version = protocol_version
        self._session = session
        self._hooks = hooks
        self._logbook = logbook
        self._connection_id = connection_id
        self._on_log = on_log
        self._on_list_changed = on_list_changed
        self.era = eras.EraChoice()
        """Which of this connection's tools go as 2026-07-28 requests (`runtime/eras.py`)."""
        self._client_info = CLIENT_INFO.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._whole_bound = (
            MAX_MESSAGE_BYTES
            if read_limits is None
            else min(
                MAX_MESSAGE_BYTES, read_limits.max_message_bytes, read_limits.max_string_bytes, read_limits.max_tokens
            )
        )
        """The largest JSON answer read whole at once (`_round_trip`): one the read cap cannot cut (no
        string, message or token count can exceed its limits), or the read bound without a cap."""
        self._envelopes: dict[tuple[bool, bool, bool], dict[str, Any]] = {}
        """Our 2026-07-28 `_meta` envelope (`eras.envelope_of`) per set of callbacks (read-only)."""
        self._modern_heads: dict[tuple[str, str | None], tuple[dict[str, str], str | None]] = {}
        """`_modern_head`'s made headers per method and tool name (read-only)."""

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"accept": accept, "content-type": "application/json", "mcp-protocol-version": self._version}
        session_id = self._session_id()
        if session_id:
            headers["mcp-session-id"] = session_id
        return headers

    async def request(
        self, method: str, params: Mapping[str, Any] | None, *, progress: ProgressFnT | None = None
    ) -> dict[str, Any]:
        """Send `method` with `params` and return the server's `result` object.

        A `tools/call` goes as a 2026-07-28 request when `era` says so (`_modern_call` for the rounds
        of an `input_required` answer; a tool that asked without a back-channel is pinned to the
        session, one refused before it ran goes over the session at once); the first
        `tools/call` of a connection asks the server which versions it speaks (`server/discover`).

        Raises:
            MCPError: the server's JSON-RPC error (redacted); INVALID_REQUEST for a 404 of our
                session (the diagnostics say it expired); CONNECTION_CLOSED when the stream ended
                without an answer and could not be resumed.
            httpx2.HTTPError: the HTTP exchange failed.
        """
        name = (params or {}).get("name") if method == "tools/call" else None
        if method == "tools/call":
            era = self.era
            if era.speaks_modern is None and not era.probing:  # `era.wants_probe()` in line (issue 12)
                await self._discover()
            if era.modern_for(name):
                given: Mapping[str, Any] = params or {}
                try:  # `_modern_call`'s first round in line: one coroutine frame less per call (issue 12)
                    result = await self._modern_once("tools/call", given, progress)
                    if result.get("resultType") == "input_required":
                        result = await self._modern_call(given, result, progress)
                    return eras.session_shaped(result)
                except MCPError as exc:
                    if eras.is_no_back_channel(exc.error.code, exc.error.message):
                        self.era.pin(name)
                        detail = f"'{name}' asked the client without a back-channel; its calls now use the session"
                        self._logbook.note(self._connection_id, "tools/call", "era_fallback", detail)
                        raise
                    if not eras.refused_before_running(exc.error.code):
                        raise
                    self._refused(str(name), exc)
        request_id = f"mcpc-{next(_IDS)}"
        out = dict(params or {})
        if progress is not None:
            out["_meta"] = {**cast(dict[str, Any], out.get("_meta") or {}), "progressToken": request_id}
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": out})
        stream = _Position()
        try:
            message = await self._exchange(
                request_id,
                body,
                progress,
                stream,
                partial(self._logbook.request, self._connection_id, _OUT, request_id, method, len(body)),
                method != "tools/call",  # a tool may not be idempotent: never sent twice
            )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_SEND_TIMEOUT_S):
                await self._cancelled(request_id)
            raise
        if name is not None:
            self.era.learned(name, stream.needs_session)
        return _result(message)

    def _refused(self, name: str, exc: MCPError) -> None:
        """A 2026-07-28 call refused before it ran: `name` goes over the session (the caller re-sends)."""
        self.era.pin(name)
        if exc.error.code == types.UNSUPPORTED_PROTOCOL_VERSION:
            self.era.speaks_modern = False
        detail = f"'{name}' refused as a 2026-07-28 request ({exc.error.message}); sent over the session"
        self._logbook.note(self._connection_id, "tools/call", "era_fallback", detail)

    async def _discover(self) -> None:
        """Ask the server (once) whether it speaks 2026-07-28; any failure keeps the session."""
        self.era.probing = True
        speaks = False
        try:
            with anyio.move_on_after(eras.DISCOVER_TIMEOUT_S):  # a server silent on it keeps the session
                result = await self._modern_once("server/discover", {}, None)
                speaks = eras.discovered(result)
        except (MCPError, httpx2.HTTPError):
            logger.debug("server.discover_refused")
        finally:
            self.era.probing = False
        self.era.speaks_modern = speaks

    async def _modern_call(
        self, params: Mapping[str, Any], result: dict[str, Any], progress: ProgressFnT | None
    ) -> dict[str, Any]:
        """The rounds of a 2026-07-28 `tools/call` after its first (`request`), whose `result` was
        `input_required`: re-sent with the answers while the server answers so (at most
        `eras.INPUT_ROUNDS` rounds in all); the final result as the server gave it.

        Raises:
            MCPError: the server's JSON-RPC error; a callback's refusal of an input request; too
                many rounds (INTERNAL_ERROR).
        """
        for _round in range(eras.INPUT_ROUNDS):
            asked: object = result.get("inputRequests")
            answers: dict[str, Any] = {}
            for key, request in cast(dict[str, Any], asked if isinstance(asked, dict) else {}).items():
                answers[key] = await self._input(key, request)
            if not answers:  # only `requestState`: the server is not ready yet (spaced as the SDK client does)
                await anyio.sleep(min(0.05 * 2**_round, 0.25))
            sent = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
            if answers:
                sent["inputResponses"] = answers
            if isinstance(result.get("requestState"), str):
                sent["requestState"] = result["requestState"]
            result = await self._modern_once("tools/call", sent, progress)
            if result.get("resultType") != "input_required":
                return result
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"the server asked for input more than {eras.INPUT_ROUNDS} times for one call",
        )

    async def _input(self, key: str, request: object) -> dict[str, Any]:
        """One input request of an `input_required` answer, answered through the connection's callbacks.

        Raises:
            MCPError: the callback refused it (its error).
        """
        asked = cast(dict[str, Any], request) if isinstance(request, dict) else {}
        method = asked.get("method")
        params = asked.get("params")
        outcome = await self._outcome(
            key,
            method if isinstance(method, str) else "",
            cast(dict[str, Any], params) if isinstance(params, dict) else {},
        )
        if isinstance(outcome, types.ErrorData):
            raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
        return outcome

    async def _modern_once(
        self, method: str, params: Mapping[str, Any], progress: ProgressFnT | None
    ) -> dict[str, Any]:
        """One 2026-07-28 request and its `result` (no session, no resumption: a stream that ends
        without the answer is CONNECTION_CLOSED).

        Raises:
            MCPError: the server's JSON-RPC error; CONNECTION_CLOSED.
            httpx2.HTTPError: the HTTP exchange failed.
        """
        request_id = f"mcpc-{next(_IDS)}"
        hooks = self._hooks
        asks = (
            hooks.elicitation_callback is not None,
            hooks.sampling_callback is not None,
            hooks.list_roots_callback is not None,
        )
        envelope = self._envelopes.get(asks)
        if envelope is None:  # once per set of callbacks (they are the connection's, set when it opens)
            envelope = self._envelopes[asks] = eras.envelope_of(self._client_info, eras.capabilities_of(*asks))
        out = eras.modern_envelope(params, envelope, request_id if progress is not None else None)
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": out})
        name = params.get("name")
        headers, block = self._modern_head(method, name if isinstance(name, str) else None)
        stream = _Position(True)  # modern
        clipped: list[ClipReport] = []
        logged = partial(self._logbook.request, self._connection_id, _OUT, request_id, method, len(body))
        answer = await self._round_trip(
            "POST", headers, body, request_id, progress, stream, clipped.append, block, logged, method != "tools/call"
        )
        if answer is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")
        return _result(self._marked(answer, request_id, clipped))

    def _modern_head(self, method: str, name: str | None) -> tuple[dict[str, str], str | None]:
        """The headers of a 2026-07-28 POST of `method` (`name`: its tool), and their rendered head
        for `Http1Client.send` (None without one): both made once per method and name (read-only),
        at most `MODERN_HEADS` kept (issue 12, R-8.3)."""
        key = (method, name)
        made = self._modern_heads.get(key)
        if made is None:
            if len(self._modern_heads) >= MODERN_HEADS:
                self._modern_heads.clear()
            headers = eras.modern_headers(method, name)
            block = self._lite.head_block("POST", headers) if self._lite is not None else None
            made = self._modern_heads[key] = (headers, block)
        return made

    async def _exchange(
        self,
        request_id: str,
        body: bytes,
        progress: ProgressFnT | None,
        stream: _Position,
        logged: Callable[[], None],
        resend: bool,
    ) -> dict[str, Any]:
        """POST `body` (`logged` once it is written), then (resuming if the stream ends early) return the
        JSON-RPC answer to `request_id`. `resend`: whether the POST may run twice (`_round_trip`)."""
        clipped: list[ClipReport] = []
        accept = self._headers("application/json, text/event-stream")
        answer = await self._round_trip(
            "POST", accept, body, request_id, progress, stream, clipped.append, None, logged, resend
        )
        empty = 0
        while answer is None and stream.last_event_id is not None:
            if empty >= streamable.RESUME_ATTEMPTS:
                error = streamable.resumptions_exhausted(self._url, empty)
                raise MCPError(code=error.code, message=error.message, data=error.data)
            hint_s = stream.retry_ms / 1000 if stream.retry_ms is not None else None
            await anyio.sleep(streamable.RESUME_BACKOFF.delay(empty + 1, hint_s=hint_s))
            headers = {**self._headers("text/event-stream"), "last-event-id": stream.last_event_id}
            messages = stream.messages
            try:
                answer = await self._round_trip("GET", headers, b"", request_id, progress, stream, clipped.append)
            except httpx2.TransportError:
                logger.debug("server.resumption_failed")
            empty = 0 if stream.messages > messages else empty + 1
        if answer is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")
        return self._marked(answer, request_id, clipped)

    def _marked(self, answer: dict[str, Any], request_id: str, clipped: list[ClipReport]) -> dict[str, Any]:
        """`answer` with what the read cap cut from it in its result's `_meta` (issue 14, item 2)."""
        noted = self._diagnostics.clipped.pop(request_id, None) if self._diagnostics is not None else None
        cut = [report for report in clipped if report.clipped] if clipped else None  # most: none (issue 12)
        report = cut[-1].to_dict() if cut else noted
        result = answer.get("result")
        if report is None or not isinstance(result, dict):
            return answer
        result = cast(dict[str, Any], result)
        meta: object = result.get("_meta")
        own = dict(cast(dict[str, Any], meta)) if isinstance(meta, dict) else {}
        own[CLIPPED_META_KEY] = report
        return {**answer, "result": {**result, "_meta": own}}

    async def _round_trip(
        self,
        method: str,
        headers: dict[str, str],
        body: bytes,
        request_id: str,
        progress: ProgressFnT | None,
        stream: _Position,
        on_clip: Callable[[ClipReport], None],
        block: str | None = None,
        written: Callable[[], None] | None = None,
        resend: bool = True,
    ) -> dict[str, Any] | None:
        """One exchange and its answer (`_read`); a resumption GET answered with a status of 300 or
        more gives None (the caller counts it as a resumption that brought nothing). `block`: the
        rendered head of `headers` (`Http1Client.head_block`), when the caller kept one; `written`:
        called once the request is written (`Http1Client.send`; before it over `httpx2`); `resend`:
        whether the request may run twice (`Http1Client.send`: never for a `tools/call`).

        Over `Http1Client` without a context manager: the rest of a POST stream after its answer is
        read in the background (`Http1Client.done`, at most `DRAIN_S`, nothing kept); the answer
        itself goes through the connection's read cap as with `_send` (issue 14 item 2, R-8.3).

        Raises:
            httpx2.TransportError: the exchange failed.
        """
        lite = self._lite
        if lite is None:
            if written is not None:
                written()
            try:
                async with self._send(method, headers, body, on_clip) as response:
                    if method == "GET" and response.status_code >= 300:
                        return None
                    return await self._read(response, request_id, progress, stream)
            except (httpx2.ReadError, httpx2.RemoteProtocolError) as exc:
                # Written, then the connection ended before its answer: it may have run (sec37, R-3.1).
                if method != "POST" or isinstance(exc, AnswerLost):
                    raise
                raise AnswerLost(str(exc) or type(exc).__name__) from exc
        try:
            raw = await lite.send(method, headers, body, block=block, written=written, resend=resend)
        except Http1Error as exc:
            raise _transport_error(exc, method) from exc.__cause__
        aborted = False
        try:
            diagnostics = self._diagnostics
            # `_note`'s first test in line: no coroutine per answer when there is nothing to note (issue 12).
            if (
                method == "POST"
                and diagnostics is not None
                and (raw.status_code >= 400 or diagnostics.last_status is not None)
            ):
                await self._note(raw, headers)
            if method == "GET" and raw.status_code >= 300:
                return None
            if raw.status_code == 200 and media_type(raw.headers) != "text/event-stream":
                # A JSON answer already whole and below every limit of the read cap (most answers):
                # read here, as `_read` would, without its and the clipper's coroutines (issue 12, R-8.3).
                data = raw.whole_body(self._whole_bound)
                if data is not None:
                    return self._json_answer(raw.status_code, data)
            response: Response = raw if self._limits is None else ClippedResponse(raw, self._limits, on_clip)
            return await self._read(response, request_id, progress, stream, drain=False)
        except Http1Error as exc:
            raise _transport_error(exc, method) from exc
        except anyio.get_cancelled_exc_class():
            if stream.modern:  # 2026-07-28: closing the request's connection is the cancellation
                aborted = True
                lite.abort(raw)
            raise
        finally:
            if not aborted:
                lite.done(raw)

    @asynccontextmanager
    async def _send(
        self,
        method: str,
        headers: dict[str, str],
        body: bytes = b"",
        on_clip: Callable[[ClipReport], None] | None = None,
    ) -> AsyncGenerator[Response]:
        """One HTTP exchange, over `Http1Client` or the connection's `httpx2` client.

        `on_clip` receives what the read cap cut from an `Http1Client` answer (the `httpx2` client's
        transport notes it in the diagnostics instead).

        Raises:
            httpx2.TransportError: the exchange failed (`Http1Error` is raised as one, for attribution).
        """
        if self._lite is None:
            async with self._client.stream(method, self._url, content=body or None, headers=headers) as response:
                yield Httpx2Response(response)
            return
        try:
            async with self._lite.request(method, headers, body) as response:
                if method == "POST" and self._diagnostics is not None:
                    await self._note(response, headers)
                if self._limits is None:
                    yield response
                else:
                    yield ClippedResponse(response, self._limits, on_clip or ignore_clip)
        except Http1Error as exc:
            raise _transport_error(exc, method) from exc.__cause__

    async def _note(self, response: Http1Response, headers: dict[str, str]) -> None:
        """Tell the connection's diagnostics about a POST as `httpx2`'s response hook would (R-3.1, R-3.10)."""
        assert self._diagnostics is not None
        if response.status_code < 400 and self._diagnostics.last_status is None:
            return  # nothing to record and nothing to clear
        request = httpx2.Request("POST", self._url, headers=headers)
        await self._diagnostics.on_response(
            httpx2.Response(response.status_code, headers=response.headers, request=request)
        )

    async def _read(
        self,
        response: Response,
        request_id: str,
        progress: ProgressFnT | None,
        stream: _Position,
        *,
        drain: bool = True,
    ) -> dict[str, Any] | None:
        """The answer to `request_id` in `response` (JSON or SSE), handling what comes before it; None
        when an SSE stream ended without it (`stream` then says where to resume). With `drain`, the
        rest of the stream is read here."""
        status = response.status_code
        content_type = media_type(response.headers)
        if status == 404 and not stream.modern and self._session_id() is not None:
            raise MCPError(code=types.INVALID_REQUEST, message="Session terminated")
        if content_type == "text/event-stream" and status < 300:
            parser = SseParser()
            chunks = aiter(response.aiter_bytes(MAX_SSE_STREAM_BYTES))
            async for chunk in chunks:
                for event_id, retry, data in parser.feed(chunk):
                    if event_id:
                        stream.last_event_id = event_id
                    if retry is not None:
                        stream.retry_ms = retry
                    if not data.strip():
                        continue  # a priming event
                    try:
                        parsed: dict[str, Any] | None = orjson.loads(data)  # checked exactly below
                    except orjson.JSONDecodeError:
                        logger.info("server.bad_sse_message")
                        continue
                    if type(parsed) is not dict:
                        continue
                    stream.messages += 1
                    message = self._incoming(parsed, len(data))
                    if message.get("id") == request_id and "method" not in message:
                        if drain:
                            await _drain(chunks)
                        return message
                    await self._interim(message, request_id, progress, stream)
            return None
        return self._json_answer(status, await response.aread(MAX_MESSAGE_BYTES))

    def _json_answer(self, status: int, data: bytes) -> dict[str, Any]:
        """The JSON-RPC answer in the JSON body `data` of a response with HTTP `status` (`_read`).

        Raises:
            MCPError: no answer in it: for a 2xx `streamable.non_answer_error` (our MCP_PROTOCOL_ERROR
                naming the status), never what would pass for the server's own JSON-RPC error; for
                any other status INTERNAL_ERROR naming it (the attribution reads the status).
        """
        try:
            answer: dict[str, Any] | None = orjson.loads(data) if data else None  # checked exactly below
        except orjson.JSONDecodeError:
            answer = None
        if type(answer) is dict and ("result" in answer or "error" in answer):
            return self._incoming(answer, len(data))
        if status >= 300:  # the attribution names the status (and what it means: authorization...)
            raise MCPError(code=types.INTERNAL_ERROR, message=f"Server returned an error response (HTTP {status})")
        if status == 202:
            message = "the server accepted a request without answering it (HTTP 202)"
        elif data:
            message = f"the server answered HTTP {status} with a body that is no JSON-RPC answer"
        else:
            message = f"the server answered HTTP {status} with no body"
        error = streamable.non_answer_error(self._url, message, status)
        raise MCPError(code=error.code, message=error.message, data=error.data)

    def _incoming(self, message: dict[str, Any], size: int) -> dict[str, Any]:
        """A message from the server, redacted (R-1.5) and logged (R-3.11)."""
        if default_redactor.active:
            message = cast(dict[str, Any], default_redactor.redact_values(message))
        request_id = message.get("id")
        method = message.get("method")
        if isinstance(method, str):
            if request_id is None:
                self._logbook.notification(self._connection_id, _IN, method, size)
            else:
                self._logbook.request(self._connection_id, _IN, str(request_id), method, size)
        elif request_id is not None:
            error = message.get("error")
            self._logbook.answer(
                self._connection_id,
                _IN,
                str(request_id),
                size,
                cast(dict[str, Any], error) if isinstance(error, dict) else None,
            )
        return message

    async def _interim(
        self, message: dict[str, Any], request_id: str, progress: ProgressFnT | None, stream: _Position
    ) -> None:
        """A notification or request the server sent on our stream before its answer."""
        method = message.get("method")
        params = message.get("params")
        params = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        if not isinstance(method, str):
            return
        if method != "notifications/progress" and method != "ping":
            stream.needs_session = True
        if "id" in message:
            await self._answer(message["id"], method, params)
        elif method == "notifications/progress":
            if progress is not None and params.get("progressToken") == request_id:
                total = params.get("total")
                text = params.get("message")
                await progress(
                    float(params.get("progress", 0)),
                    float(total) if isinstance(total, int | float) else None,
                    text if isinstance(text, str) else None,
                )
        elif method == "notifications/message":
            if self._on_log is not None:
                try:
                    await self._on_log(types.LoggingMessageNotificationParams.model_validate(params, by_name=False))
                except ValidationError:
                    logger.info("server.bad_log_message")
        elif method.endswith("/list_changed") and self._on_list_changed is not None:
            self._on_list_changed(method)

    async def _answer(self, server_request_id: object, method: str, params: dict[str, Any]) -> None:
        """Answer a server's request through the connection's callbacks and POST the answer back."""
        outcome = await self._outcome(server_request_id, method, params)
        if isinstance(outcome, types.ErrorData):
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": server_request_id,
                "error": outcome.model_dump(exclude_none=True),
            }
        else:
            reply = {"jsonrpc": "2.0", "id": server_request_id, "result": outcome}
        body = orjson.dumps(reply)
        error = reply.get("error")
        self._logbook.answer(self._connection_id, _OUT, str(server_request_id), len(body), error)
        await self._post_notice(body)

    async def _outcome(self, server_request_id: object, method: str, params: dict[str, Any]) -> Any:
        """A server's request (elicitation, sampling, roots, ping) answered through the connection's
        callbacks: the result as JSON values, or the `ErrorData` to answer instead."""
        context = ClientRequestContext(session=self._session, request_id=cast(types.RequestId, server_request_id))
        outcome: Any
        try:
            if method == "ping":
                outcome = {}
            elif method == "elicitation/create" and self._hooks.elicitation_callback is not None:
                outcome = await self._hooks.elicitation_callback(context, _ELICIT_PARAMS.validate_python(params))
            elif method == "sampling/createMessage" and self._hooks.sampling_callback is not None:
                asked = types.CreateMessageRequestParams.model_validate(params, by_name=False)
                outcome = await self._hooks.sampling_callback(context, asked)
            elif method == "roots/list" and self._hooks.list_roots_callback is not None:
                outcome = await self._hooks.list_roots_callback(context)
            else:
                outcome = types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"{method} is not supported")
        except ValidationError:
            outcome = types.ErrorData(code=types.INVALID_PARAMS, message=f"invalid {method} params")
        if isinstance(outcome, types.ErrorData) or is_object(outcome):
            return outcome
        return outcome.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _cancelled(self, request_id: str) -> None:
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
        body = orjson.dumps(notice)
        self._logbook.notification(self._connection_id, _OUT, "notifications/cancelled", len(body))
        try:
            await self._post_notice(body)
        except httpx2.HTTPError:
            logger.info("server.cancel_not_delivered")

    async def _post_notice(self, body: bytes) -> None:
        """POST a response or notification (the server answers 202)."""
        async with self._send("POST", self._headers("application/json, text/event-stream"), body) as response:
            await response.aread(MAX_MESSAGE_BYTES)

    async def aclose(self) -> None:
        """Close the idle connections of `Http1Client` (the `httpx2` client belongs to the transport)."""
        if self._lite is not None:
            await self._lite.aclose()


@dataclass
class _Position:
    """Where a request's event stream is: what to resume from, how many messages it brought, whether
    it is a 2026-07-28 request (`modern`: no session), and whether the server used it for more than
    progress (`needs_session`: a request of its own, a log message, a list change; `runtime/eras.py`)."""

    modern: bool = False
    """First, so that a 2026-07-28 request's is made as `_Position(True)` (no keyword's dictionary, issue 12)."""
    last_event_id: str | None = None
    retry_ms: int | None = None
    messages: int = 0
    needs_session: bool = False


def _result(message: dict[str, Any]) -> dict[str, Any]:
    """The `result` of a JSON-RPC answer.

    Raises:
        MCPError: the answer is an error (as the SDK raises it).
    """
    error = message.get("error")
    if isinstance(error, dict):
        error = cast(dict[str, Any], error)
        raise MCPError(
            code=int(error.get("code", types.INTERNAL_ERROR)),
            message=str(error.get("message", "")),
            data=error.get("data"),
        )
    result: dict[str, Any] | None = message.get("result")
    return result if type(result) is dict else {}  # parsed JSON: exact types, no cast call (issue 12)


def _transport_error(exc: Http1Error, method: str) -> httpx2.TransportError:
    """`Http1Error` as the `httpx2` error the manager's attribution expects: `AnswerLost` for a POST
    whose connection ended after it was written (it may have run: MCP_CONNECTION_LOST), a connect
    error when it never left (MCP_SERVER_UNREACHABLE)."""
    cause = exc.__cause__
    if isinstance(cause, OSError | TimeoutError) and "connect" in str(exc):
        return httpx2.ConnectError(str(exc))
    if exc.sent and method == "POST":
        return AnswerLost(str(exc))
    return httpx2.ReadError(str(exc))


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a POST stream (usually nothing) for at most `DRAIN_S` seconds."""
    with anyio.move_on_after(DRAIN_S):
        async for _chunk in chunks:
            pass
