"""The JSON-RPC console and the log level of a live session (R-12.1), for `ConnectionManager`.

`send_raw` sends one request as given on the session's own dispatcher: no typed request or result
model is built, so a server's malformed answer is shown as it came (redacted by the tap, R-1.5).
Its ids start with `RAW_REQUEST_ID_PREFIX`, so the request log says where they came from and the
connection's catalog check leaves their list pages alone (`connection.ConnectionFilter`).
`send_level` sends `logging/setLevel` without the SDK's deprecated helper; `check_level` refuses a
level that is not MCP's.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_center.errors import RequestInvalid
from mcp_center.runtime.activity import LOG_LEVELS
from mcp_center.runtime.session import OpenSession

__all__ = ["RAW_REQUEST_ID_PREFIX", "RawAnswer", "check_level", "send_level", "send_raw"]

RAW_REQUEST_ID_PREFIX = "console-"
"""JSON-RPC ids of requests sent by `send_raw` (the console): the request log shows where they came from."""


@dataclass(frozen=True)
class RawAnswer:
    """What the server answered to a raw request (R-12.1): exactly one of `result` and `error`.

    Attributes:
        result: The JSON-RPC `result` object.
        error: The JSON-RPC `error` object (`code`, `message`, optional `data`), redacted.
        elapsed_ms: From sending the request to its answer, in milliseconds.
        connection_id: The client instance that carried it (R-3.5).
    """

    result: dict[str, Any] | None
    error: dict[str, Any] | None
    elapsed_ms: float
    connection_id: str


async def send_raw(
    session: OpenSession, connection_id: str, method: str, params: Mapping[str, Any] | None, timeout_s: float
) -> RawAnswer:
    """Send `method` with `params` on `session` and return the answer or the server's JSON-RPC error.

    Raises:
        MCPError: `CONNECTION_CLOSED` or `REQUEST_TIMEOUT` (the caller attributes them).
    """
    dispatcher = session.client.session._dispatcher  # pyright: ignore[reportPrivateUsage]
    started = anyio.current_time()
    try:
        request_id = f"{RAW_REQUEST_ID_PREFIX}{uuid.uuid4().hex[:12]}"
        result = await dispatcher.send_raw_request(
            method, dict(params) if params is not None else None, {"timeout": timeout_s, "request_id": request_id}
        )
    except MCPError as exc:
        if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
            raise  # ours to attribute: a lost connection or our deadline
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return RawAnswer(None, error, _elapsed_ms(started), connection_id)
    return RawAnswer(result, None, _elapsed_ms(started), connection_id)


def check_level(level: str) -> None:
    """Refuse a `logging/setLevel` level that is not one of MCP's (`LOG_LEVELS`).

    Raises:
        RequestInvalid: with a field error `level` / FIELD_INVALID.
    """
    if level not in LOG_LEVELS:
        raise RequestInvalid(
            f"level: must be one of {', '.join(LOG_LEVELS)}",
            details={"errors": [{"field": "level", "code": "FIELD_INVALID", "message": "not an MCP logging level"}]},
        )


async def send_level(session: OpenSession, level: str, timeout_s: float) -> None:
    """`logging/setLevel` without the SDK's deprecated helper (the capability is deprecated from 2026-07-28 on).

    Raises:
        MCPError: the server refused it, or it timed out after `timeout_s` seconds.
    """
    await session.client.session.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),  # pyright: ignore[reportArgumentType]
        types.EmptyResult,
        request_read_timeout_seconds=timeout_s,
    )


def _elapsed_ms(started: float) -> float:
    return round((anyio.current_time() - started) * 1000, 1)
