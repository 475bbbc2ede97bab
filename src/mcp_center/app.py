"""Composition root: build the ASGI app (REST API, settings page, gateway at `/mcp`) whose lifespan
opens `McpCenter` (R-7.1, R-8.1), and own the data directory while `serve` runs (R-9.2, R-9.3).

`serve` starts in this order, so that a refused start touches no file: bind the port (`listen`:
a busy port stops here with SERVE_ADDRESS_IN_USE), claim the data directory (`own_data_dir`: a
second serve on it stops here with SERVE_DATA_DIR_IN_USE), stop what a crashed previous owner left
running and start this process's watchdog, open the key, token and store (`create_app`), serve
(`HostServer` announces its URL in `serve.json` once started), and at the very end, after every
server process stopped, give the directory up (`Ownership.release`). The first two steps live in
`mcp_center.launch`, so that `serve` runs them before it imports this module (re-exported here).
"""

from __future__ import annotations

import gc
import logging
import socket
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from types import FrameType

import anyio
import anyio.to_thread
import uvicorn
from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.lifespan.on import LifespanOn

from mcp_center.api import create_api, end_event_streams, guard_gateway
from mcp_center.api.instances import InstanceHeader
from mcp_center.api.security import MAX_BODY_BYTES, allowed_host_names, host_origin_refusal
from mcp_center.config import Settings
from mcp_center.errors import CenterError
from mcp_center.gateway import GATEWAY_PATH, Gateway, GatewayEndpoint
from mcp_center.gateway.refusals import read_headers
from mcp_center.gateway.wire import DirectHandler, DirectRoute
from mcp_center.launch import LISTEN_BACKLOG, Ownership, listen, open_store, own_data_dir
from mcp_center.secrets import install_log_redaction, load_or_create_admin_token
from mcp_center.service import McpCenter
from mcp_center.store import Store
from mcp_center.web import BrowserSessions, install_web

__all__ = [
    "LISTEN_BACKLOG",
    "HostServer",
    "Ownership",
    "create_app",
    "interrupt_waiting_calls",
    "listen",
    "open_store",
    "own_data_dir",
]

logger = logging.getLogger(__name__)


def create_app(settings: Settings, *, store: Store | None = None) -> tuple[FastAPI, str, bool]:
    """Build the app for `settings`, on `store` (already opened by `open_store`, which `serve` calls
    before it imports this module) or on the store `settings` ask for, opened here.

    Returns:
        `(app, admin_token, token_created_now)`; `serve` prints the token only when it was
        created now (R-7.1).
    Raises:
        SecretStoreError: the admin token file is unusable.
        StorageError: a data file is damaged, truncated or of a newer schema (R-9.1): the message
            names the file and the fault, and `serve` stops before it opens its key or token (the
            damaged file is never written).
        StorageUnavailable: the database (`--database-url`) cannot be reached (R-10.1); nothing
            was created, in the database or in the data directory.
        StorageSchemaTooNew: the database was migrated by a newer mcp-center (R-10.1).
    """
    install_log_redaction()
    # First the store: files — complete an interrupted commit, remove temps, check every file;
    # a database — connect, migrate, check every row. A refusal here leaves no key or token behind.
    if store is None:
        store = open_store(settings)
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        token, created = load_or_create_admin_token(settings.data_dir, settings.admin_token)
    except BaseException:
        store.close()
        raise

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncGenerator[None]:
        await anyio.to_thread.run_sync(store.open)  # opened above; again after an earlier lifespan closed it
        try:
            async with McpCenter.open(settings, store=store) as center:
                app.state.center = center
                endpoint = GatewayEndpoint(Gateway(center), center.gateway_tokens, admin_token=token)
                async with endpoint.running():
                    app.state.gateway_endpoint = endpoint
                    app.state.direct_gateway.endpoint = endpoint  # read per request without `State`'s lookup
                    yield
        except CenterError as exc:
            if getattr(app.state, "center", None) is None:  # refused before it served: `HostServer` says so
                app.state.startup_refusal = exc
            raise
        finally:
            await anyio.to_thread.run_sync(store.close)

    sessions = BrowserSessions(settings.public_url)
    app = create_api(settings, token, lifespan=lifespan, sessions=sessions)
    install_web(app, settings=settings, admin_token=token, sessions=sessions)
    gateway_route = _GatewayRoute(app)
    # Gateway requests skip the REST app's router and middleware stack: the same Host and
    # body-size checks run in front of the endpoint, and the routes below stay for completeness.
    # `serve` puts `gateway_first(app)` in front of FastAPI itself (its own outer layers included).
    guarded = InstanceHeader(guard_gateway(gateway_route, settings), name=settings.instance_label)
    app.state.guarded_gateway = guarded
    app.state.direct_gateway = _DirectGateway(
        allowed_host_names(settings.host, settings.allowed_hosts, settings.public_url), guarded.header
    )
    app.add_middleware(_GatewayFirst, gateway=guarded)
    app.router.routes.append(Route(GATEWAY_PATH, endpoint=gateway_route, methods=["GET", "POST", "DELETE"]))
    # One server under its own names, same tokens and policy.
    app.router.routes.append(
        Route(GATEWAY_PATH + "/{server_id}", endpoint=gateway_route, methods=["GET", "POST", "DELETE"])
    )
    return app, token, created


def gateway_first(app: FastAPI) -> ASGIApp:
    """The ASGI app `serve` runs: `/mcp` and `/mcp/{server_id}` go to the guarded gateway endpoint
    before FastAPI's own layers (exception telemetry, body limit, error middleware), everything
    else (lifespan included) to `app` (R-8.3). `app` comes from `create_app`.

    It also offers `gateway.wire`'s protocol a `direct_route` (issue 12): a sessionless 2026-07-28
    lean request to `/mcp` is answered without uvicorn's ASGI request cycle, after the same Host
    and Origin check, body-size limit and instance header as the guarded endpoint (`_DirectGateway`)."""
    return _GatewayFirst(app, gateway=app.state.guarded_gateway, direct=app.state.direct_gateway)


class _DirectGateway:
    """`gateway.wire.DirectRoute` for `/mcp`: what the guarded endpoint checks before the endpoint
    (Host and Origin, R-7.2; a declared body within `MAX_BODY_BYTES`, R-7.3) decides what it wants;
    the endpoint's `direct` decides what it takes (its sessionless lean requests), after the same
    token and request checks as `GatewayEndpoint.__call__`. Everything else is left to uvicorn's
    request cycle and so to the guarded endpoint, which answers it as before."""

    def __init__(self, allowed: frozenset[str], instance_header: tuple[bytes, bytes]) -> None:
        self._allowed = allowed
        self.response_headers = (instance_header,)
        self.endpoint: GatewayEndpoint | None = None
        """The gateway endpoint, set by the app's lifespan once it runs (as `app.state.gateway_endpoint`)."""
        self._passing: set[bytes] = set()
        """Host values that passed the Host check in a request without an Origin (at most
        `_PASSING_HOSTS`): such a request passes again without the check's call (issue 12)."""

    def wants(self, url: bytes, headers: Sequence[tuple[bytes, bytes]]) -> Mapping[bytes, str] | None:
        """`/mcp` exactly (no query), a declared length within the limit and no other framing, no
        session id, a passing Host and Origin: then what the endpoint reads of the headers, read in
        the same pass (`read_headers`), for `take`."""
        if url != _GATEWAY_URL:
            return None
        found, declared, host, origin = read_headers(headers)
        if declared is None or declared > MAX_BODY_BYTES or b"mcp-session-id" in found:
            return None
        if origin is None and host in self._passing:
            return found
        refusal = host_origin_refusal(
            self._allowed,
            None if host is None else host.decode("latin-1"),
            None if origin is None else origin.decode("latin-1"),
            "POST",
        )
        if refusal is not None:
            return None
        if origin is None and host is not None and len(self._passing) < _PASSING_HOSTS:
            self._passing.add(host)
        return found

    def take(
        self, url: bytes, headers: Sequence[tuple[bytes, bytes]], body: bytes, read: Mapping[bytes, str]
    ) -> DirectHandler | None:
        """The endpoint's direct handler for this request, or None (also while the gateway is starting)."""
        endpoint = self.endpoint
        return None if endpoint is None else endpoint.direct(headers, body, read)


_GATEWAY_URL = GATEWAY_PATH.encode("ascii")
_PASSING_HOSTS = 64
"""Bound on the Host values `_DirectGateway` remembers as passing (a Host may carry any port)."""


class _GatewayFirst:
    """ASGI middleware: `/mcp` and `/mcp/{server_id}` go straight to the guarded gateway endpoint;
    `direct_route` (when given) is what `gateway.wire`'s protocol may answer without ASGI."""

    def __init__(self, app: ASGIApp, gateway: ASGIApp, direct: DirectRoute | None = None) -> None:
        self._app = app
        self._gateway = gateway
        self.direct_route = direct

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and (path == GATEWAY_PATH or path.startswith(GATEWAY_PATH + "/")):
            await self._gateway(scope, receive, send)
            return
        await self._app(scope, receive, send)


class _GatewayRoute:
    """`/mcp` → the gateway endpoint the lifespan created (R-8.1)."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint: GatewayEndpoint | None = getattr(self._app.state, "gateway_endpoint", None)
        if endpoint is None:
            response = JSONResponse({"error": "the gateway is starting"}, status_code=503)
            await response(scope, receive, send)
            return
        await endpoint(scope, receive, send)


async def interrupt_waiting_calls(app: FastAPI) -> None:
    """Fail every call that waits for a human (approval, elicitation card) with MCP_CALL_INTERRUPTED.

    Called when the HTTP server starts to stop, while connections are still open: the callers
    get an explicit "not delivered" answer instead of a dropped connection, and pending cards are
    stored as interrupted (R-6.3).
    """
    center: McpCenter | None = getattr(app.state, "center", None)
    if center is None:
        return
    try:
        await center.interrupt_pending()
    except Exception:
        logger.exception("shutdown.interrupt_failed")


async def end_listen_streams(app: FastAPI) -> None:
    """End the gateway's open `subscriptions/listen` streams gracefully and wait for them
    (`GatewayEndpoint.end_listen_streams`), when the HTTP server starts to stop (R-8.1)."""
    endpoint: GatewayEndpoint | None = getattr(app.state, "gateway_endpoint", None)
    if endpoint is None:
        return
    try:
        await endpoint.end_listen_streams()
    except Exception:
        logger.exception("shutdown.listen_end_failed")


def freeze_startup_heap() -> None:
    """Move every object alive once `serve` has started (modules, SDK and pydantic models, the store's
    parsed state: most of its heap) out of the garbage collector's generations (`gc.freeze`, R-8.3).

    Those objects live as long as the process; left in the oldest generation, each full collection
    walked all of them: a pause of tens to hundreds of milliseconds every few thousand gateway calls,
    a measurable share of the gateway's CPU per call and of its p99. Reference counting still frees
    them as before; only a cycle among them that becomes garbage later is never collected (the
    startup's own garbage is collected first). `HostServer` (`serve`) only: a library or a test
    process creating apps keeps its heap collectable.
    """
    gc.collect()
    gc.freeze()


class HostServer(uvicorn.Server):
    """uvicorn's server, which first interrupts calls waiting for a human and ends the gateway's
    listen streams when it is asked to stop.

    With `settings` and the `ownership` of the data directory, it announces where it listens in
    `<data dir>/serve.json` once its socket is bound (the real port, also for `--port 0`), so the
    CLI finds this host without `--url` (`mcp_center.store.running`), and it releases the
    ownership (record included) once the app's lifespan has closed every server, before uvicorn
    re-raises the signal that stopped it. A second Ctrl-C skips uvicorn's waits but never the app's
    shutdown (its servers and their process-group record), and the first signal already stops
    new sends and approvals (`McpCenter.begin_stop`, R-6.3).
    """

    def __init__(
        self,
        config: uvicorn.Config,
        app: FastAPI,
        settings: Settings | None = None,
        ownership: Ownership | None = None,
    ) -> None:
        super().__init__(config)
        self._app = app
        self._settings = settings
        self._ownership = ownership
        self.lost_name: CenterError | None = None
        """Set when the serve stopped because another live instance took its name (`on_tick`)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Open settings pages hold /api/events streams: end them, or the exit waits them out.
        end_event_streams(self._app)
        # From the signal on, no approval is decided and no tool call is sent.
        center: McpCenter | None = getattr(self._app.state, "center", None)
        if center is not None:
            center.begin_stop()
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start, except that a refusal of the host's start-up (a `CenterError` of the
        lifespan before it served, e.g. `SERVE_INSTANCE_NAME_IN_USE` when another instance claimed
        the name first, R-10.2) is raised as itself, for `serve` to print as one error line with its
        exit code, instead of uvicorn's traceback and exit 3.

        Raises:
            CenterError: the lifespan's refusal.
        """
        uvicorn_log = logging.getLogger("uvicorn.error")

        def not_a_refusal(_record: logging.LogRecord) -> bool:  # its traceback: `serve` prints the refusal
            return getattr(self._app.state, "startup_refusal", None) is None

        uvicorn_log.addFilter(not_a_refusal)
        try:
            await super().startup(sockets)
        except SystemExit:
            refusal = getattr(self._app.state, "startup_refusal", None)
            if isinstance(refusal, CenterError):
                raise refusal from None
            raise
        finally:
            uvicorn_log.removeFilter(not_a_refusal)
        if self.started and self._settings is not None:
            freeze_startup_heap()
            bound = [sock.getsockname() for server in self.servers for sock in server.sockets or ()]
            port = bound[0][1] if bound else self._settings.port
            if sockets:  # uvicorn logs where it listens only for sockets it bound itself
                address: str = sockets[0].getsockname()[0]
                shown = f"[{address}]" if ":" in address else address
                logging.getLogger("uvicorn.error").info(
                    "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, port
                )
            # The public URL for users and remote clients; where it listens for this machine's CLI
            # and stdio bridge (a public URL is often a proxy this machine cannot or need not reach).
            local_url = replace(self._settings, port=port, public_url=None).base_url
            url = self._settings.public_url or local_url
            if self._ownership is not None:
                try:
                    self._ownership.lock.announce(url, local_url=local_url)
                except CenterError:
                    logger.warning("serve.record_failed", exc_info=True)

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick (every 0.1 s), and: stop when this instance lost its name (R-10.2, fixa36).
        Another live instance took the name while this one was away from the database; answering on
        under it would make two instances indistinguishable, so `serve` stops and exits 4 with
        `SERVE_INSTANCE_NAME_IN_USE` (`lost_name`, already logged by the lease)."""
        center: McpCenter | None = getattr(self._app.state, "center", None)
        lease = center.name_lease if center is not None else None
        if center is not None and lease is not None and lease.lost is not None and self.lost_name is None:
            self.lost_name = lease.lost
            end_event_streams(self._app)
            center.begin_stop()
            self.should_exit = True
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await interrupt_waiting_calls(self._app)
        await end_listen_streams(self._app)  # before uvicorn waits for open responses
        await super().shutdown(sockets)  # ends with the lifespan: every server has stopped
        lifespan = self.lifespan
        if self.force_exit and isinstance(lifespan, LifespanOn) and not lifespan.shutdown_event.is_set():
            # A second Ctrl-C skips uvicorn's waits, and with them the app's shutdown: run it still,
            # or the lifespan is cancelled (a traceback) with the servers' groups and record left.
            await lifespan.shutdown()
        if self._ownership is not None:
            self._ownership.release()
