"""The requests the host sends on a server's live session: tools, prompts, resources, raw forwards (R-3.8, R-8.1).

The connection manager (`runtime/manager.py`) owns the sessions; it exposes each request as a method
and runs it here. Every function builds one `send(conn, timeout_s)` and hands it to the host's
`run_request`, which admits the operation (so a cancel by operation id also ends a wait for a
connection), connects lazily, sends once and re-sends once after a Streamable HTTP session expiry
(R-3.10). What is particular to each request is here:

- a tool call asks for progress; each progress notification is recorded in the activity feed,
  published as `operation.progress` and restarts the call's deadline, up to `progress_max_factor`
  times the timeout in total (issue 14 item 4); the deadline pauses while a human answers (R-6.1);
- a tool result is checked against the tool's outputSchema (`results.check_output`) and bounded
  (R-3.9); a mismatch is logged and noted in the server's logbook;
- `forward` is the gateway's lean path: the params as they came, a raw result, no typed models.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import httpx2
import mcp_types as types
from mcp.shared.dispatcher import CallOptions, ProgressFnT

from mcp_center.errors import CenterError
from mcp_center.runtime import eras
from mcp_center.runtime.activity import ActivityRecorder
from mcp_center.runtime.attribution import attribute
from mcp_center.runtime.connection import Connection
from mcp_center.runtime.console import RawAnswer, send_level, send_raw
from mcp_center.runtime.deadlines import CallDeadlines, PausableDeadline
from mcp_center.runtime.events import EventBus
from mcp_center.runtime.forward import RawForwarder
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.operations import Operations
from mcp_center.runtime.requests import progress_relay, require_capability, total_timeout
from mcp_center.runtime.results import bound_raw_result, bound_result, check_output, check_raw_output

__all__ = [
    "EarlyAnswer",
    "RequestHost",
    "call_tool",
    "forward",
    "get_prompt",
    "read_resource",
    "request_raw",
    "set_level",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

EarlyAnswer = Callable[[dict[str, Any]], Awaitable[None]]
"""Writes a forwarded request's final result to whoever asked (`forward`'s `answer`); raises nothing
but a cancellation (a failure to write is the caller's to keep and raise later)."""


class RequestHost(Protocol):
    """What the request functions need of the connection manager."""

    operations: Operations
    deadlines: CallDeadlines
    events: EventBus
    activity: ActivityRecorder

    @property
    def progress_max_factor(self) -> float:
        """How many times its timeout a tool call that keeps reporting progress may run in total."""
        ...

    def logbook(self, server_id: str) -> ServerLogbook:
        """The server's request/response records."""
        ...

    def current(self, server_id: str) -> Connection | None:
        """The server's live connection, or None."""
        ...

    def max_result_bytes(self, server_id: str) -> int:
        """The server's result size bound (R-3.9)."""
        ...

    def raw_forwarder(self, server_id: str, conn: Connection) -> RawForwarder | None:
        """The connection's lean forwarder (Streamable HTTP only)."""
        ...

    async def run_request(
        self,
        server_id: str,
        what: str,
        send: Callable[[Connection, float], Awaitable[T]],
        operation_id: str | None,
        timeout_s: float | None,
    ) -> T:
        """Admit, connect, `send(conn, timeout_s)` once (once more after a session expiry)."""
        ...

    async def run_admitted(
        self,
        server_id: str,
        what: str,
        send: Callable[[Connection, float], Awaitable[T]],
        timeout_s: float | None,
    ) -> T:
        """`run_request` inside an admission the caller entered (same task, same operation)."""
        ...


async def call_tool(
    host: RequestHost,
    server_id: str,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    operation_id: str | None,
    timeout_s: float | None,
    max_result_bytes: int | None,
    progress: ProgressFnT | None,
) -> types.CallToolResult:
    """`tools/call` on the server's live session; see `ConnectionManager.call_tool` for the contract."""
    arguments_dict = dict(arguments or {})
    what = f"tools/call '{name}'"
    forward_to = progress
    with host.operations.admit(operation_id) as op_id:

        async def send(conn: Connection, timeout_s: float) -> types.CallToolResult:
            assert conn.session is not None
            require_capability(conn, "tools", what)
            factor = host.progress_max_factor
            max_total_s = timeout_s * factor
            # `send_request`, not `ClientSession.call_tool`: the latter throws a whole result away
            # when its structured output breaks the outputSchema (and may list tools behind our
            # back); we check it ourselves and keep the content (`check_output`).
            request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments_dict))
            with host.deadlines.deadline(conn.connection_id, timeout_s, max_total_s=max_total_s) as deadline:
                record = functools.partial(host.activity.progress, server_id, conn.connection_id, op_id)
                on_progress = progress_relay(deadline, host.events, server_id, op_id, name, forward_to, record=record)
                answer = await conn.session.client.session.send_request(
                    request, types.CallToolResult, request_read_timeout_seconds=None, progress_callback=on_progress
                )
                tool = conn.catalog.tool(name)
                checked, problem = check_output(answer, tool)
                if problem is not None:
                    _note_mismatch(host, server_id, conn, name, problem)
                return checked
            if deadline.total_reached:
                raise total_timeout(what, max_total_s, factor)
            raise conn.timed_out(
                f"{what} (no answer or progress; call_timeout_s)", timeout_s, since=deadline.entered_at
            )

        result = await host.run_admitted(server_id, what, send, timeout_s)  # admitted above
    limit = max_result_bytes if max_result_bytes is not None else host.max_result_bytes(server_id)
    return bound_result(result, limit)


async def get_prompt(
    host: RequestHost, server_id: str, name: str, arguments: Mapping[str, str] | None, *, operation_id: str | None
) -> types.GetPromptResult:
    """`prompts/get` on the server's live session (R-5.4 builds on this)."""

    async def send(conn: Connection, timeout_s: float) -> types.GetPromptResult:
        assert conn.session is not None
        require_capability(conn, "prompts", f"prompts/get '{name}'")
        return await conn.session.client.session.send_request(
            types.GetPromptRequest(params=types.GetPromptRequestParams(name=name, arguments=dict(arguments or {}))),
            types.GetPromptResult,
            request_read_timeout_seconds=timeout_s,
        )

    return await host.run_request(server_id, f"prompts/get '{name}'", send, operation_id, None)


async def read_resource(
    host: RequestHost, server_id: str, uri: str, *, operation_id: str | None
) -> types.ReadResourceResult:
    """`resources/read` on the server's live session (R-5.5 builds on this)."""

    async def send(conn: Connection, timeout_s: float) -> types.ReadResourceResult:
        assert conn.session is not None
        require_capability(conn, "resources", "resources/read")
        return await conn.session.client.session.send_request(
            types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri)),
            types.ReadResourceResult,
            request_read_timeout_seconds=timeout_s,
        )

    return await host.run_request(server_id, "resources/read", send, operation_id, None)


async def forward(
    host: RequestHost,
    server_id: str,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    operation_id: str | None,
    timeout_s: float | None,
    progress: ProgressFnT | None,
    answer: EarlyAnswer | None = None,
) -> dict[str, Any]:
    """One request with its params as they came (less the agent's 2026-07-28 envelope, which is
    hop-by-hop: `eras.without_envelope`), the raw result back; see `ConnectionManager.forward`.

    `answer`: given the final result (a `tools/call`'s checked and bounded) as soon as the server's
    answer is read, in that event-loop step, before the call's bookkeeping unwinds (its deadline,
    in-flight count, admission): the agent's answer is written first (issue 12, R-8.3). A failure
    of the checks is raised where it was without `answer`, after the admission."""
    params = eras.without_envelope(params)
    is_call = method == "tools/call"
    tool_name = (params or {}).get("name") if is_call else None
    what = f"tools/call '{tool_name}'" if is_call else method
    forward_to = progress
    held: Exception | None = None
    admission = host.operations.admit(operation_id)
    with admission as op_id:

        async def send(conn: Connection, timeout_s: float) -> dict[str, Any]:
            nonlocal held
            assert conn.session is not None
            if is_call and "tools" not in conn.session.offers:  # `require_capability`'s test in line (issue 12)
                require_capability(conn, "tools", what)
            raw = conn.raw  # built on the connection's first use (`raw_forwarder`), then read here
            if raw is None:
                raw = host.raw_forwarder(server_id, conn)
            factor = host.progress_max_factor
            max_total_s = timeout_s * factor if is_call else None

            def expired(deadline: PausableDeadline) -> CenterError:
                if max_total_s is not None and deadline.total_reached:
                    return total_timeout(what, max_total_s, factor)
                return conn.timed_out(method, timeout_s, since=deadline.entered_at)

            # The deadline rides the admission's scope (nothing between them enters one: `run_admitted`
            # admits nothing), so its expiry is raised by the admission.
            # `host.deadlines.deadline(...)`'s instance made here: a frame less per call (issue 12).
            # Positional (`max_total_s`, `riding`, `expiry`): no dictionary of keywords per call (issue 12).
            with PausableDeadline(
                timeout_s, host.deadlines, conn.connection_id, max_total_s, admission, expired
            ) as deadline:
                watched = None
                if is_call or forward_to is not None:
                    # Every forwarded call asks for progress (it keeps the call alive, item 4); the
                    # activity feed records it and the agent gets it if it asked.
                    record = functools.partial(host.activity.progress, server_id, conn.connection_id, op_id)
                    watched = progress_relay(
                        deadline, host.events, server_id, op_id, tool_name, forward_to, record=record
                    )
                if raw is not None:
                    try:
                        result = await raw.request(method, params, progress=watched)
                    except httpx2.HTTPError as exc:
                        raise attribute(exc, conn.session.probe, during=what) from None
                else:  # stdio and legacy SSE: the session's own dispatcher, still without typed models.
                    dispatcher = conn.session.client.session._dispatcher  # pyright: ignore[reportPrivateUsage]
                    opts: CallOptions = {}
                    if watched is not None:
                        opts["on_progress"] = watched
                    result = await dispatcher.send_raw_request(method, params, opts)
                if answer is None:
                    return result
                if is_call:
                    try:  # `_final_raw` in line: one frame less before the answer
                        checked = _checked_raw(host, server_id, str(tool_name), result)
                        result = bound_raw_result(checked, host.max_result_bytes(server_id))
                    except Exception as exc:  # noqa: BLE001 - not attributed by `send_once`: raised after the admission
                        held = exc
                        return result
                await answer(result)
                return result
            raise expired(deadline)  # a deadline of its own (the admission was entered by an outer block)

        result = await host.run_admitted(server_id, what, send, timeout_s)  # admitted above
    if answer is not None:  # checked, bounded and answered in `send`
        if held is not None:
            raise held
        return result
    return _final_raw(host, server_id, str(tool_name), result) if is_call else result


async def request_raw(
    host: RequestHost,
    server_id: str,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    operation_id: str | None,
    timeout_s: float | None,
) -> RawAnswer:
    """One JSON-RPC request as given, the server's answer as it came (R-12.1); see `ConnectionManager.request_raw`."""

    async def send(conn: Connection, timeout_s: float) -> RawAnswer:
        assert conn.session is not None
        return await send_raw(conn.session, conn.connection_id, method, params, timeout_s)

    return await host.run_request(server_id, method, send, operation_id, timeout_s)


async def set_level(host: RequestHost, server_id: str, level: str) -> None:
    """`logging/setLevel` on the live session (the caller checked `level`, R-12.1)."""

    async def send(conn: Connection, timeout_s: float) -> bool:
        assert conn.session is not None
        await send_level(conn.session, level, timeout_s)
        return True

    await host.run_request(server_id, "logging/setLevel", send, None, None)


def _final_raw(host: RequestHost, server_id: str, name: str, result: dict[str, Any]) -> dict[str, Any]:
    """A raw `tools/call` result as the agent gets it: checked (`_checked_raw`), then bounded (R-3.9)."""
    return bound_raw_result(_checked_raw(host, server_id, name, result), host.max_result_bytes(server_id))


def _checked_raw(host: RequestHost, server_id: str, name: str, result: dict[str, Any]) -> dict[str, Any]:
    """A raw `tools/call` result checked against the tool's outputSchema (`results.check_raw_output`)."""
    conn = host.current(server_id)
    tool = conn.catalog.tool(name) if conn is not None else None
    checked, problem = check_raw_output(result, tool)
    if problem is not None and conn is not None:
        _note_mismatch(host, server_id, conn, name, problem)
    return checked


def _note_mismatch(host: RequestHost, server_id: str, conn: Connection, name: str, problem: str) -> None:
    """A tool result that breaks its outputSchema: a log line and a `check` entry in the server's logbook."""
    logger.warning("server.output_schema_mismatch", extra={"server_id": server_id, "tool": name})
    host.logbook(server_id).note(conn.connection_id, "tools/call", "output_invalid", f"'{name}': {problem}")
