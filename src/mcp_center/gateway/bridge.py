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
from typing import TextIO

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
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


def _error_line(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


async def bridge_stdio(
    url: str,
    token: str,
    *,
    verify: ssl.SSLContext | bool = True,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> None:
    """Bridge newline-delimited JSON-RPC on stdin/stdout to the gateway at `url` until stdin ends.

    Args:
        url: The gateway endpoint, e.g. `http://127.0.0.1:8765/mcp`.
        token: A gateway token (`Authorization: Bearer`).
        verify: The HTTP client's `verify=`: True (the system trust store, loaded at start) or a
            context. `mcp-center gateway --stdio` passes `cli.host.client_tls(url)`, a context that
            trusts nothing for a plain `http://` host, so a bridge start does not load the CA
            bundle it never uses (~40 ms of CPU per start, issue 16).
    Raises:
        httpx2.HTTPError: the host cannot be reached.
    """
    source = anyio.wrap_file(stdin or sys.stdin)
    sink = anyio.wrap_file(stdout or sys.stdout)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(
            headers=headers, timeout=TIMEOUT, follow_redirects=False, trust_env=False, verify=verify
        ) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        anyio.create_task_group() as tg,
    ):
        unanswered: set[str] = set()
        all_answered = anyio.Event()

        async def downstream() -> None:
            nonlocal all_answered
            async for item in read:
                if isinstance(item, Exception):
                    logger.warning("gateway.bridge_error", extra={"error": type(item).__name__})
                    continue
                if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                    unanswered.discard(str(item.message.id))
                    if not unanswered:
                        all_answered.set()
                line = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await sink.write(line + "\n")
                await sink.flush()

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
                        await sink.write(refusal + "\n")
                        await sink.flush()
                    continue
                if isinstance(message, types.JSONRPCRequest):
                    unanswered.add(str(message.id))
                    all_answered = anyio.Event()
                await write.send(SessionMessage(message))
            # stdin ended: let the requests already sent be answered (or fail: an unreachable host
            # raises out of the transport) before the connection closes, within DRAIN_S.
            if unanswered:
                with anyio.move_on_after(DRAIN_S):
                    await all_answered.wait()
        tg.cancel_scope.cancel()
