"""Open one initialized MCP session for a `ConnectionSpec` (transport + tap + SDK `Client`).

Used by both the long-lived connections of the manager and the temporary connection of a test
(R-2.2). The SDK `Client` is pinned to the 2025-11-25 initialize handshake (`mode="legacy"`) with
its response cache off (docs/sdk-notes.md#client-mode): sessions, the GET stream, Last-Event-ID and
DELETE only exist in that era, and our catalog generations must stay authoritative.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

import mcp_types as types
from mcp.client import Client, Transport
from mcp.client.session import ElicitationFnT, ListRootsFnT, LoggingFnT, MessageHandlerFnT, SamplingFnT

from mcp_center import __version__
from mcp_center.errors import CenterError
from mcp_center.runtime.tap import MessageObserver, TappedTransport
from mcp_center.transports import ConnectionSpec, TransportProbe, open_transport

__all__ = ["CLIENT_INFO", "OpenSession", "SessionHooks", "open_session"]

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="mcp-center", version=__version__)


@dataclass
class SessionHooks:
    """Callbacks wired into one session; all optional."""

    message_handler: MessageHandlerFnT | None = None
    elicitation_callback: ElicitationFnT | None = None
    sampling_callback: SamplingFnT | None = None
    """Advertises sampling; the gateway forwards a call's sampling request to its agent (R-8.5)."""
    list_roots_callback: ListRootsFnT | None = None
    """Advertises roots; the gateway forwards a call's roots/list to its agent (R-8.5)."""
    logging_callback: LoggingFnT | None = None
    on_stderr: Callable[[str], None] | None = None
    on_noise: Callable[[str], None] | None = None
    observer: MessageObserver | None = None


@dataclass
class OpenSession:
    """An initialized session and what we know about its transport."""

    client: Client
    tapped: TappedTransport
    probe: TransportProbe = field(repr=False)
    offers: frozenset[str] = field(init=False, repr=False)
    """Which of `tools`, `prompts` and `resources` the server declared in its `initialize` answer,
    read once: they cannot change within a session (the client runs `initialize` once, in legacy
    mode, before this is made; a reconnect or a restarted server is a new session), so a forwarded
    call checks a set instead of asking the SDK's client each time (`requests.require_capability`,
    issue 12, issue 14 item 16)."""

    def __post_init__(self) -> None:
        declared = self.client.server_capabilities
        offered = {"tools": declared.tools, "prompts": declared.prompts, "resources": declared.resources}
        self.offers = frozenset(name for name, capability in offered.items() if capability is not None)


@asynccontextmanager
async def _open_once(
    spec: ConnectionSpec,
    probe: TransportProbe,
    hooks: SessionHooks,
    transport_factory: Callable[..., AbstractAsyncContextManager[Transport]],
    offer_version: str | None,
) -> AsyncGenerator[OpenSession]:
    async with transport_factory(spec, probe, on_stderr=hooks.on_stderr, on_noise=hooks.on_noise) as transport:

        def fatal(error: CenterError) -> None:
            probe.fatal = error

        tapped = TappedTransport(
            transport,
            hooks.observer,
            on_fatal=fatal,
            handshake=probe.handshake,
            offer_version=offer_version,
            clipped=probe.http.clipped if probe.http is not None else None,
        )
        client = Client(
            tapped,
            mode="legacy",
            cache=None,
            client_info=CLIENT_INFO,
            message_handler=hooks.message_handler,
            elicitation_callback=hooks.elicitation_callback,
            sampling_callback=hooks.sampling_callback,
            list_roots_callback=hooks.list_roots_callback,
            logging_callback=hooks.logging_callback,
        )
        async with client:
            yield OpenSession(client=client, tapped=tapped, probe=probe)


@asynccontextmanager
async def open_session(
    spec: ConnectionSpec,
    probe: TransportProbe,
    hooks: SessionHooks,
    *,
    transport_factory: Callable[..., AbstractAsyncContextManager[Transport]] = open_transport,
) -> AsyncGenerator[OpenSession]:
    """Open the transport, run `initialize`, and yield the session; close everything on exit.

    A server that refuses the protocol version we offered but names versions it supports (an HTTP
    400 "Unsupported protocol version (supported versions: ...)", or a JSON-RPC error to
    `initialize`) gets one more handshake, on a new transport, offering the newest version both
    speak (issue 14, item 10). No deadline is applied here: callers wrap the handshake in their own
    cancel scope.

    Raises:
        BaseException: whatever the transport or handshake raised (often an ExceptionGroup);
            callers map it with `runtime.attribution.attribute(exc, probe, ...)`.
    """
    offer: str | None = None
    while True:
        stack = AsyncExitStack()
        try:
            session = await stack.enter_async_context(_open_once(spec, probe, hooks, transport_factory, offer))
        except Exception:
            fallback = probe.collect_refusal().fallback()
            if fallback is None:
                raise
            logger.info(
                "server.protocol_version_retry",
                extra={"server_id": spec.server_id, "refused": probe.handshake.offered, "offering": fallback},
            )
            probe.handshake.retried_from = probe.handshake.offered
            probe.handshake.reset_refusal()
            offer = fallback
            continue
        async with stack:
            yield session
        return
