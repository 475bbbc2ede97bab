"""A pass-through transport that observes every message and notices when the connection ends.

The SDK's `ClientSession` exposes neither "the read stream ended" nor the raw messages. Wrapping
the transport gives the runtime both: `closed` is set when the server side ends (process exit,
SSE stream closed), and an optional observer sees each message in both directions — for the
request log (R-3.11) and to validate catalog pages before the SDK parses them (R-3.6).
Forwarding uses zero-buffer memory streams, so back-pressure is unchanged.

It also corrects one thing the SDK says on our behalf: its `initialize` advertises elicitation in
both modes whenever an elicitation callback is set (docs/sdk-notes.md#elicitation), but mcp-center answers form mode
only (R-6.1) and would decline every URL-mode request. The tap removes `url` from the advertised
elicitation capability, so a server that needs URL mode knows before it asks.

And it watches the version negotiation (issue 14, item 10): it notes in `HandshakeNotes` which
protocol version our `initialize` offered and what the server answered or refused, and when the
runtime retries a refused handshake it offers the version the server said it supports instead of
the SDK's latest (`offer_version`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Protocol, cast

import anyio
from mcp import types
from mcp.client import Transport
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from mcp_center.errors import CenterError
from mcp_center.transports.clip import CLIPPED_META_KEY
from mcp_center.transports.handshake import HandshakeNotes

__all__ = ["MessageObserver", "TappedTransport", "advertise_form_elicitation_only", "offer_protocol_version"]


def offer_protocol_version(message: SessionMessage, version: str) -> SessionMessage:
    """`message`, or for an `initialize` request a copy offering protocol `version` (a retry, item 10)."""
    msg = message.message
    if not isinstance(msg, types.JSONRPCRequest) or msg.method != "initialize" or not isinstance(msg.params, dict):
        return message
    return SessionMessage(
        msg.model_copy(update={"params": {**msg.params, "protocolVersion": version}}), message.metadata
    )


def advertise_form_elicitation_only(message: SessionMessage) -> SessionMessage:
    """`message`, or for an `initialize` request whose capabilities advertise URL-mode elicitation,
    a copy advertising form mode only (R-6.1). Every other message is returned unchanged."""
    msg = message.message
    if not isinstance(msg, types.JSONRPCRequest) or msg.method != "initialize" or not isinstance(msg.params, dict):
        return message
    capabilities: object = msg.params.get("capabilities")
    if not isinstance(capabilities, dict):
        return message
    advertised = cast("dict[str, Any]", capabilities)
    elicitation: object = advertised.get("elicitation")
    if not isinstance(elicitation, dict) or "url" not in elicitation:
        return message
    form_only = {key: value for key, value in cast("dict[str, Any]", elicitation).items() if key != "url"}
    form_only.setdefault("form", {})
    params = {**msg.params, "capabilities": {**advertised, "elicitation": form_only}}
    return SessionMessage(msg.model_copy(update={"params": params}), message.metadata)


class MessageObserver(Protocol):
    """Sees each message and may rewrite what the session receives; must not block.

    `incoming` returns the item to deliver (validation may replace a message, R-3.6).
    """

    def outgoing(self, message: SessionMessage) -> None: ...

    def incoming(self, message: SessionMessage | Exception) -> SessionMessage | Exception: ...


class TappedTransport:
    """Wrap `inner`; `closed` is set once the server-to-client stream ends.

    Args:
        inner: An un-entered transport; entered and exited together with this one.
        observer: Optional message observer.
    """

    def __init__(
        self,
        inner: Transport,
        observer: MessageObserver | None = None,
        on_fatal: Callable[[CenterError], None] | None = None,
        *,
        handshake: HandshakeNotes | None = None,
        offer_version: str | None = None,
        clipped: dict[str, dict[str, object]] | None = None,
    ) -> None:
        self._inner = inner
        self._observer = observer
        self._on_fatal = on_fatal
        self._handshake = handshake
        self._offer_version = offer_version
        self._clipped = clipped
        self._initialize_id: str | None = None
        self._stack: AsyncExitStack | None = None
        self.closed = anyio.Event()

    async def __aenter__(self) -> TransportStreams:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            read, write = await stack.enter_async_context(self._inner)
            to_session, session_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            session_write, from_session = anyio.create_memory_object_stream[SessionMessage](0)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            stack.callback(self.closed.set)
            tg.start_soon(self._pump_in, read, to_session)
            tg.start_soon(self._pump_out, from_session, write)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return session_read, session_write

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            return await stack.__aexit__(*exc_info)
        return None

    async def _pump_in(self, read: Any, to_session: anyio.abc.ObjectSendStream[SessionMessage | Exception]) -> None:
        try:
            async with to_session:
                async for item in read:
                    item = self._mark_clipped(item)
                    if self._observer is not None:
                        item = self._observer.incoming(item)
                    self._note_answer(item)
                    await to_session.send(item)
                    if isinstance(item, CenterError) and "limit_bytes" in item.details:
                        # A message over the size limit was discarded: its request can never be
                        # answered. End the session now so every pending request fails at once
                        # (with this error) instead of waiting for its timeout.
                        if self._on_fatal is not None:
                            self._on_fatal(item)
                        break
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            self.closed.set()

    def _mark_clipped(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """Move what the HTTP client cut from this answer into its result's `_meta` (issue 14, item 2)."""
        if not self._clipped or not isinstance(item, SessionMessage):
            return item
        msg = item.message
        if not isinstance(msg, types.JSONRPCResponse):
            return item
        report = self._clipped.pop(str(msg.id), None)
        if report is None:
            return item
        meta: object = msg.result.get("_meta")
        own = dict(cast("dict[str, Any]", meta)) if isinstance(meta, dict) else {}
        own[CLIPPED_META_KEY] = report
        return SessionMessage(msg.model_copy(update={"result": {**msg.result, "_meta": own}}), item.metadata)

    def _note_offer(self, message: SessionMessage) -> SessionMessage:
        msg = message.message
        if not isinstance(msg, types.JSONRPCRequest) or msg.method != "initialize":
            return message
        if self._offer_version is not None:
            message = offer_protocol_version(message, self._offer_version)
            msg = message.message
            assert isinstance(msg, types.JSONRPCRequest)
        self._initialize_id = str(msg.id)
        offered: object = msg.params.get("protocolVersion") if isinstance(msg.params, dict) else None
        if self._handshake is not None and isinstance(offered, str):
            self._handshake.offered = offered
        return message

    def _note_answer(self, item: SessionMessage | Exception) -> None:
        if self._handshake is None or self._initialize_id is None or not isinstance(item, SessionMessage):
            return
        msg = item.message
        if isinstance(msg, types.JSONRPCResponse) and str(msg.id) == self._initialize_id:
            version: object = msg.result.get("protocolVersion")
            self._handshake.answer_seen = True
            self._handshake.answered = version if isinstance(version, str) else None
        elif isinstance(msg, types.JSONRPCError) and str(msg.id) == self._initialize_id:
            self._handshake.note_refusal(msg.error.message)

    async def _pump_out(self, from_session: anyio.abc.ObjectReceiveStream[SessionMessage], write: Any) -> None:
        try:
            async with from_session, write:
                async for message in from_session:
                    message = advertise_form_elicitation_only(message)
                    message = self._note_offer(message)
                    if self._observer is not None:
                        self._observer.outgoing(message)
                    await write.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
