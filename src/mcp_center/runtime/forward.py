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
  `Last-Event-ID` (after the server's `retry`), at most `RESUME_ATTEMPTS` times (R-3.10);
- what the server sends on that stream before the answer: progress for our request goes to the
  caller; `notifications/message` and list changes go where the SDK session sends them (`on_log`,
  `on_list_changed`); its requests (elicitation, sampling, roots, ping) are answered through the
  connection's own callbacks and POSTed back (R-6.1, R-8.5);
- cancellation: a caller that gives up (the agent cancelled, the deadline expired) sends
  `notifications/cancelled` for the request (R-3.8);
- the per-server log (R-3.11) and redaction of everything the server sends (R-1.5).

A server's JSON-RPC error is raised as the SDK raises it (`MCPError`), so the manager's
attribution applies unchanged.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import orjson
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.session import SessionHooks
from mcp_center.secrets import default_redactor
from mcp_center.transports import MAX_MESSAGE_BYTES

__all__ = ["RESUME_ATTEMPTS", "RawForwarder"]

logger = logging.getLogger(__name__)

DRAIN_S = 0.5
"""Seconds to read a POST stream to its end after its answer (servers end it right after), so its
connection goes back to the pool instead of being closed; a stream still open then is closed."""
RESUME_ATTEMPTS = 2
"""Times a POST stream that ended before its answer is resumed with `Last-Event-ID`."""
CANCEL_SEND_TIMEOUT_S = 2.0
"""Seconds to deliver `notifications/cancelled` for a request the caller gave up on."""
_OUT = "client→server"
_IN = "server→client"
_ELICIT_PARAMS: TypeAdapter[types.ElicitRequestParams] = TypeAdapter(types.ElicitRequestParams)
_IDS = itertools.count(1)


class RawForwarder:
    """Forwards requests on one live Streamable HTTP session (built by the manager per connection).

    Args:
        client: The connection's HTTP client; `url` its MCP endpoint.
        session_id: Returns the session's current `Mcp-Session-Id` (None before one was assigned).
        protocol_version: The negotiated version, sent as `MCP-Protocol-Version`.
        session: The SDK session the callbacks in `hooks` expect in their context.
        hooks: The connection's elicitation, sampling and roots callbacks.
        on_log: Receives the server's `notifications/message` params.
        on_list_changed: Receives the method of a `notifications/*/list_changed`.
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
    ) -> None:
        self._client = client
        self._url = url
        self._session_id = session_id
        self._version = protocol_version
        self._session = session
        self._hooks = hooks
        self._logbook = logbook
        self._connection_id = connection_id
        self._on_log = on_log
        self._on_list_changed = on_list_changed

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

        Raises:
            MCPError: the server's JSON-RPC error (redacted); INVALID_REQUEST for a 404 of our
                session (the diagnostics say it expired); CONNECTION_CLOSED when the stream ended
                without an answer and could not be resumed.
            httpx2.HTTPError: the HTTP exchange failed.
        """
        request_id = f"mcpc-{next(_IDS)}"
        out = dict(params or {})
        if progress is not None:
            out["_meta"] = {**cast(dict[str, Any], out.get("_meta") or {}), "progressToken": request_id}
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": out})
        self._logbook.request(self._connection_id, _OUT, request_id, method, len(body))
        try:
            message = await self._exchange(request_id, body, progress)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_SEND_TIMEOUT_S):
                await self._cancelled(request_id)
            raise
        error = message.get("error")
        if isinstance(error, dict):
            error = cast(dict[str, Any], error)
            raise MCPError(
                code=int(error.get("code", types.INTERNAL_ERROR)),
                message=str(error.get("message", "")),
                data=error.get("data"),
            )
        result = message.get("result")
        return cast(dict[str, Any], result) if isinstance(result, dict) else {}

    async def _exchange(self, request_id: str, body: bytes, progress: ProgressFnT | None) -> dict[str, Any]:
        """POST `body`, then (resuming if the stream ends early) return the JSON-RPC answer to `request_id`."""
        last_event: list[str] = []
        retry_ms: list[int] = []
        async with self._client.stream(
            "POST", self._url, content=body, headers=self._headers("application/json, text/event-stream")
        ) as response:
            answer = await self._read(response, request_id, progress, last_event, retry_ms)
        for _attempt in range(RESUME_ATTEMPTS):
            if answer is not None or not last_event:
                break
            await anyio.sleep((retry_ms[-1] if retry_ms else 1000) / 1000)
            headers = {**self._headers("text/event-stream"), "last-event-id": last_event[-1]}
            async with self._client.stream("GET", self._url, headers=headers) as response:
                answer = await self._read(response, request_id, progress, last_event, retry_ms)
        if answer is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")
        return answer

    async def _read(
        self,
        response: httpx2.Response,
        request_id: str,
        progress: ProgressFnT | None,
        last_event: list[str],
        retry_ms: list[int],
    ) -> dict[str, Any] | None:
        """The answer to `request_id` in `response` (JSON or SSE), handling what comes before it; None
        when an SSE stream ended without it."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if status == 404 and self._session_id() is not None:
            raise MCPError(code=types.INVALID_REQUEST, message="Session terminated")
        if content_type == "text/event-stream" and status < 300:
            events = aiter(httpx2.EventSource(response, max_event_size=MAX_MESSAGE_BYTES))
            async for event in events:
                if event.id:
                    last_event.append(event.id)
                if event.retry is not None:
                    retry_ms.append(event.retry)
                if not event.data.strip():
                    continue  # a priming event
                message = self._incoming(orjson.loads(event.data), len(event.data))
                if message.get("id") == request_id and "method" not in message:
                    await _drain(events)
                    return message
                await self._interim(message, request_id, progress)
            return None
        data = await response.aread()
        try:
            parsed = orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and ("result" in parsed or "error" in parsed):
            return self._incoming(cast(dict[str, Any], parsed), len(data))
        if status == 202:
            raise MCPError(code=types.INTERNAL_ERROR, message="the server accepted a request without answering it")
        raise MCPError(code=types.INTERNAL_ERROR, message=f"Server returned an error response (HTTP {status})")

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

    async def _interim(self, message: dict[str, Any], request_id: str, progress: ProgressFnT | None) -> None:
        """A notification or request the server sent on our stream before its answer."""
        method = message.get("method")
        params = message.get("params")
        params = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        if not isinstance(method, str):
            return
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
        if isinstance(outcome, types.ErrorData):
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": server_request_id,
                "error": outcome.model_dump(exclude_none=True),
            }
        else:
            result = (
                outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
                if not isinstance(outcome, dict)
                else outcome
            )
            reply = {"jsonrpc": "2.0", "id": server_request_id, "result": result}
        body = orjson.dumps(reply)
        error = reply.get("error")
        self._logbook.answer(self._connection_id, _OUT, str(server_request_id), len(body), error)
        await self._post_notice(body)

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
        response = await self._client.post(
            self._url, content=body, headers=self._headers("application/json, text/event-stream")
        )
        await response.aclose()


async def _drain(events: AsyncIterator[httpx2.ServerSentEvent]) -> None:
    """Read what is left of a POST stream (usually nothing) for at most `DRAIN_S` seconds."""
    with anyio.move_on_after(DRAIN_S):
        async for _event in events:
            pass
