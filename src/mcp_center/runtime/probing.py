"""The temporary connection of a server test: initialize + tools/list + close (R-2.2).

Runs in the caller's task, independent of any long-lived connection of the server. It advertises
what a live session of the server advertises (elicitation, sampling, roots) — servers list tools by
the client's capabilities, so the test's count matches the live one — but nobody is behind it to
answer: questions are declined, sampling and roots refused.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_center.runtime.attribution import SessionEnded, add_output_hints, attribute, leaves, startup_timeout_error
from mcp_center.runtime.catalog import fetch_category
from mcp_center.runtime.connection import ConnectionFilter, ProbeResult, settle_exit
from mcp_center.runtime.logbook import ServerLogbook
from mcp_center.runtime.session import SessionHooks, open_session
from mcp_center.transports import ConnectionSpec, TransportProbe

__all__ = ["probe_connection"]

logger = logging.getLogger(__name__)


async def probe_connection(
    spec: ConnectionSpec,
    logbook: ServerLogbook,
    transport_factory: Any,
) -> ProbeResult:
    """Open a temporary connection, list its tools and close it; its traffic goes to `logbook`.

    Args:
        transport_factory: Opens the transport (`open_transport`-compatible).
    Raises:
        ServerTimeout: initialize + tools/list took longer than `spec.startup_timeout_s`.
        CenterError: attributed failure (refused, DNS, process exited with code N, ...); a
            failing `tools/list` is attributed to it, while the server still runs.
    """
    probe = TransportProbe()
    filt = ConnectionFilter(logbook, f"test-{uuid.uuid4().hex[:12]}")
    hooks = SessionHooks(on_stderr=logbook.add_stderr, on_noise=logbook.add_noise, observer=filt)
    # Advertise what serve's live sessions advertise (form elicitation, sampling, roots), whichever
    # process runs the test — serve, or a one-shot CLI that has no agent and shows no forms:
    # servers (server-everything among them) list tools by the client's capabilities, so every
    # test's count matches serve's. Asked during a test, each is declined or refused.
    hooks.elicitation_callback = _decline_during_test
    hooks.sampling_callback = _refuse_sampling_during_test
    hooks.list_roots_callback = _refuse_roots_during_test
    started = anyio.current_time()
    result: ProbeResult | None = None
    deadline = anyio.move_on_after(spec.startup_timeout_s)
    try:
        with deadline:
            async with open_session(spec, probe, hooks, transport_factory=transport_factory) as session:
                try:
                    fetched = await fetch_category(session.client, "tools")
                except Exception as exc:  # noqa: BLE001 - attributed to tools/list while the server still runs
                    if _connection_closed(exc):
                        # A process that died after initialize closes stdout before it is reaped: wait
                        # (bounded) for its exit, or the test reads "connection closed" without the
                        # exit status and last stderr lines the transport records.
                        await settle_exit(probe)
                    raise attribute(exc, probe, during="tools/list") from None
                info = session.client.server_info
                result = ProbeResult(
                    elapsed_ms=int((anyio.current_time() - started) * 1000),
                    tools=fetched.items,
                    server_name=info.name if info else None,
                    server_version=info.version if info else None,
                    protocol_version=session.client.protocol_version,
                    quarantined=tuple(fetched.quarantined),
                )
    except Exception as exc:  # noqa: BLE001 - every failure is attributed, none is swallowed
        if result is None:
            raise attribute(exc, probe, during="initialize") from None
        logger.info("server.test.close_failed", extra={"server_id": spec.server_id})
    finally:
        logbook.connection_closed(filt.connection_id)
    if result is None:
        if deadline.cancelled_caught:
            error = startup_timeout_error("initialize and tools/list", spec.startup_timeout_s, probe)
            add_output_hints(error, probe, logbook.unknown_answers(filt.connection_id), server_id=spec.server_id)
            raise error
        raise attribute(SessionEnded(), probe, during="initialize")
    return result


def _connection_closed(exc: BaseException) -> bool:
    """True when `exc` is (or holds) the SDK's "connection closed": the server side ended."""
    return any(isinstance(leaf, MCPError) and leaf.code == types.CONNECTION_CLOSED for leaf in leaves(exc))


async def _decline_during_test(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """A test connection calls no tool, so nobody could answer a question asked during it."""
    del context, params
    return types.ElicitResult(action="decline")


async def _refuse_sampling_during_test(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
    """No agent is behind a test connection to sample for (R-8.5)."""
    del context, params
    return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is not available during a test connection")


async def _refuse_roots_during_test(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
    """No agent is behind a test connection to list roots for (R-8.5)."""
    del context
    return types.ErrorData(code=types.INVALID_REQUEST, message="roots are not available during a test connection")
