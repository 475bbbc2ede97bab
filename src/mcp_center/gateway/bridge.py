"""`mcp-center gateway --stdio`: the gateway for clients that can only spawn a process (docs/requirements.md#faces).

A message-level bridge: JSON-RPC lines on stdin go to the running host's `/mcp` over Streamable
HTTP, and everything the gateway sends comes back as lines on stdout — requests, results,
notifications, and the gateway's own requests (elicitation) with the client's answers. The host
stays the single owner of connections, approvals and cards, so an approval asked on behalf of a
spawned client shows up in the settings page like any other.
"""

from __future__ import annotations

import json
import logging
import ssl
import sys
from collections.abc import Callable
from typing import TextIO

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_center.models import is_object, is_request_id

__all__ = ["bridge_stdio"]

logger = logging.getLogger(__name__)

TIMEOUT = httpx2.Timeout(connect=10.0, read=None, write=30.0, pool=30.0)
"""Seconds; no read timeout: a call may wait minutes for a human approval."""
DRAIN_S = 30.0
"""After stdin ends, seconds to wait for the answers to requests already sent (a client that writes
one request and closes stdin still gets its answer, or the error that the host cannot be reached)."""


def _refusal(line: str) -> str | None:
    """The JSON-RPC error answer to a line that is not a valid message, or None when nothing may answer it.

    Not JSON: -32700 Parse error with id null. A JSON object carrying an id: -32600 Invalid Request
    for that id, so a client waiting on it is not left hanging. Anything else (a malformed
    notification or response) gets no answer, as JSON-RPC 2.0 requires.
    """
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return _error_line(None, types.PARSE_ERROR, "Parse error: the line is not JSON")
    if not is_object(doc):
        return _error_line(None, types.INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    request_id = doc.get("id")
    if not is_request_id(request_id) or "method" not in doc:
        return None
    return _error_line(request_id, types.INVALID_REQUEST, "Invalid Request: not a valid MCP JSON-RPC request")


def _routing(message: types.JSONRPCMessage) -> ClientMessageMetadata | None:
    """The HTTP headers a 2026-07-28 request travels with, from its own `params._meta`, or None for
    anything else (a message of a 2025-11-25-era session needs none beyond the session's).

    A sessionless request names its protocol version in `_meta`; over HTTP the same version goes in
    `MCP-Protocol-Version`, its method in `Mcp-Method` and, for `tools/call`, `prompts/get` and
    `resources/read`, its name or URI in `Mcp-Name` (MCP 2026-07-28 transports, "Streamable HTTP"),
    which the gateway checks against the body. The stdio client wrote only the body.
    """
    if not isinstance(message, types.JSONRPCRequest) or not is_object(message.params):
        return None
    meta = message.params.get("_meta")
    version = meta.get(types.PROTOCOL_VERSION_META_KEY) if is_object(meta) else None
    if version not in MODERN_PROTOCOL_VERSIONS:
        return None
    headers = {MCP_PROTOCOL_VERSION_HEADER: str(version), MCP_METHOD_HEADER: message.method}
    name_key = NAME_BEARING_METHODS.get(message.method)
    if name_key is not None and isinstance(name := message.params.get(name_key), str):
        headers[MCP_NAME_HEADER] = encode_header_value(name)
    return ClientMessageMetadata(headers=headers)


def _error_line(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


async def bridge_stdio(
    url: str,
    token: str,
    *,
    verify: ssl.SSLContext | bool = True,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> bool:
    """Bridge newline-delimited JSON-RPC on stdin/stdout to the gateway at `url` until stdin ends.

    When stdin ends, every request already read is finished: the bridge waits up to `DRAIN_S`
    seconds for the answers still owed and writes them; a request still unanswered then gets a
    -32001 error line, and when the host cannot be reached every request owed gets a -32000 error
    line before the error is raised (a client is never left waiting in silence). An `initialize`
    is answered before the next line is forwarded, as a stdio client that waits for it would do:
    a piped `notifications/initialized` must not reach the host before the session exists.

    Args:
        url: The gateway endpoint, e.g. `http://127.0.0.1:8765/mcp`.
        token: A gateway token (`Authorization: Bearer`).
        verify: The HTTP client's `verify=`: True (the system trust store, loaded at start) or a
            context. `mcp-center gateway --stdio` passes `cli.host.client_tls(url)`, a context that
            trusts nothing for a plain `http://` host, so a bridge start does not load the CA
            bundle it never uses (~40 ms of CPU per start, issue 16).
        stdin: Where lines are read (default `sys.stdin`).
        stdout: Where lines are written (default `sys.stdout`).
    Returns:
        True when the input ended and every answer was written; False when stdout was closed by
        its reader first (EPIPE): the bridge stopped at once, the answers owed undelivered.
    Raises:
        httpx2.HTTPError: the host cannot be reached (wrapped in the transport's exception groups).
    """
    output = _Output(stdout or sys.stdout)
    owed: dict[types.RequestId, anyio.Event] = {}
    with anyio.CancelScope() as stop:
        output.on_closed = stop.cancel
        try:
            await _forward(url, token, verify, anyio.wrap_file(stdin or sys.stdin), output, owed)
        except Exception:
            # The transport failed (the host went away): say so to every request still owed.
            await output.errors(owed, types.CONNECTION_CLOSED, "the bridge lost the gateway: no answer will come")
            raise
        await output.errors(
            owed, types.REQUEST_TIMEOUT, f"the bridge's input ended and no answer came within {DRAIN_S:g} s"
        )
    return not output.closed


async def _forward(
    url: str,
    token: str,
    verify: ssl.SSLContext | bool,
    source: anyio.AsyncFile[str],
    output: _Output,
    owed: dict[types.RequestId, anyio.Event],
) -> None:
    """Forward `source`'s lines to the gateway and its messages to `output` until `source` ends and
    the answers `owed` are written (at most `DRAIN_S` seconds after it ended).

    `owed` maps the id of each request forwarded and not yet answered to an event set once its
    answer is written; what is left in it when this returns (or raises) was never answered.
    """
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=TIMEOUT, follow_redirects=False, trust_env=False, verify=verify
        ) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        anyio.create_task_group() as tg,
    ):

        async def downstream() -> None:
            async for item in read:
                if isinstance(item, Exception):
                    logger.warning("gateway.bridge_error", extra={"error": type(item).__name__})
                    continue
                message = item.message
                await output.line(message.model_dump_json(by_alias=True, exclude_unset=True))
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
                    answered = owed.pop(message.id, None)  # after the write: a drain ends only once it is out
                    if answered is not None:
                        answered.set()

        tg.start_soon(downstream)
        async with write:
            async for line in source:
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValidationError:
                    logger.warning("gateway.bridge_bad_line")
                    refusal = _refusal(line)
                    if refusal is not None:
                        await output.line(refusal)
                    continue
                answered = None
                if isinstance(message, types.JSONRPCRequest):
                    answered = owed[message.id] = anyio.Event()
                    if message.method != "initialize":
                        answered = None
                await write.send(SessionMessage(message, metadata=_routing(message)))
                if answered is not None:  # an initialize: the session (its id) exists before anything else is sent
                    with anyio.move_on_after(DRAIN_S):  # a hung host: on, and the drain's -32001 (break39)
                        await answered.wait()
            # stdin ended: let the requests already sent be answered (or fail: an unreachable host
            # raises out of the transport) before the connection closes, within DRAIN_S.
            with anyio.move_on_after(DRAIN_S):
                for answered in list(owed.values()):
                    await answered.wait()
        tg.cancel_scope.cancel()


class _Output:
    """The bridge's stdout, written a line at a time; after its reader closed it (EPIPE), `closed`
    is True, `on_closed` has been called once, and every later write is dropped."""

    def __init__(self, stream: TextIO) -> None:
        self._file = anyio.wrap_file(stream)
        self.closed = False
        self.on_closed: Callable[[], object] = lambda: None

    async def line(self, text: str) -> None:
        """Write `text` and a newline, flushed."""
        if self.closed:
            return
        try:
            await self._file.write(text + "\n")
            await self._file.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.closed = True
            self.on_closed()

    async def errors(self, owed: dict[types.RequestId, anyio.Event], code: int, message: str) -> None:
        """Answer every request in `owed` with the JSON-RPC error `code`/`message`, and empty it."""
        with anyio.CancelScope(shield=True):
            for request_id in list(owed):
                await self.line(_error_line(request_id, code, message))
            owed.clear()
