"""`mcp-center serve`: run the host (REST API, settings page, gateway) on one data directory (R-9)."""

from __future__ import annotations

import logging
import socket
import sys
from dataclasses import replace
from typing import Annotated

import typer

from mcp_center import __version__
from mcp_center.cli._log_format import LOG_FORMAT, FieldsFormatter
from mcp_center.cli._shared import DatabaseUrl, DataDir, ProfileOpt, app, err, fail, styled
from mcp_center.cli._suggest import suggested
from mcp_center.cli._wording import option_value_refused
from mcp_center.config import Settings
from mcp_center.config.settings import DATABASE_URL_FORM, is_database_url
from mcp_center.errors import AddressInUse, CenterError, ServeAlreadyRunning
from mcp_center.secrets import install_log_redaction


def _name_the_holder(exc: AddressInUse, settings: Settings | None) -> CenterError:
    """`exc`, naming the mcp-center serve that holds the port when it is the serve of this data
    directory or of the default one (their `serve.json`; nothing else is searched) (R-7.3, R-9.2).

    Returns:
        `ServeAlreadyRunning` (SERVE_ALREADY_RUNNING, with the URL to open) when it is this data
        directory's own serve: the user started it twice; else `AddressInUse`, whose `details` gain
        `pid` and `data_dir` when the holder is the default directory's serve."""
    if settings is None:
        return exc
    from mcp_center.cli._where import serve_on_port

    default_dir = Settings.load(environ={}).data_dir
    found = serve_on_port(settings.port, [settings.data_dir, default_dir])
    if found is None:
        return exc
    data_dir, owner = found
    if data_dir == settings.data_dir:
        where = owner.url or owner.address
        return ServeAlreadyRunning(
            f"mcp-center serve is already running on this data directory (pid {owner.pid}): open {where}",
            details={**exc.details, "pid": owner.pid, "data_dir": str(data_dir), "url": where},
        )
    return AddressInUse(
        f"{settings.host}:{settings.port} is already in use by mcp-center serve (pid {owner.pid}) of the data "
        f"directory {data_dir}; stop it, use it (--data-dir {data_dir}), or choose another port with --port",
        details={**exc.details, "pid": owner.pid, "data_dir": str(data_dir)},
    )


_LOG_LEVELS = ("debug", "info", "warning", "error")


class _HeldLogs(logging.Handler):
    """The root logger's only handler while `serve` runs its start-up checks: it keeps their log
    records, so that a refused start prints its one error line first (and those records not at
    all: `drop`), and a start that passed prints them after its banner (`replay`) (R-7.3, fix37).

    Args:
        level: `--log-level` (checked), the root logger's level from now on.
    """

    def __init__(self, level: str) -> None:
        super().__init__()
        self._level = level.upper()
        self._records: list[logging.LogRecord] = []
        logging.getLogger().addHandler(self)
        logging.getLogger().setLevel(self._level)

    def emit(self, record: logging.LogRecord) -> None:
        self._records.append(record)

    def drop(self) -> None:
        """Stop holding and forget what was held."""
        logging.getLogger().removeHandler(self)
        self._records.clear()

    def replay(self) -> None:
        """Stop holding, set up the log's own handler (stderr, `LOG_FORMAT` and each line's `extra=`
        fields as key=value: `FieldsFormatter`), and log what was held."""
        logging.getLogger().removeHandler(self)
        handler = logging.StreamHandler()
        handler.setFormatter(FieldsFormatter(LOG_FORMAT))
        logging.basicConfig(level=self._level, handlers=[handler])
        records, self._records = self._records, []
        for record in records:
            logging.getLogger(record.name).handle(record)


KEEP_ALIVE_S = 75
"""Seconds an idle keep-alive connection to `serve` stays open: no request is lost to a reset (R-7.3)."""


@app.command()
def serve(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default $MCP_CENTER_PORT, else 8765).")] = None,
    profile: ProfileOpt = None,
    public_url: Annotated[str | None, typer.Option(help="URL users reach this host at (OAuth redirects).")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option(help="Extra Host header values to accept.")] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    database_url: DatabaseUrl = None,
    instance_name: Annotated[
        str | None,
        typer.Option(help="This instance's name on pages and in X-MCP-Center-Instance (default host:port)."),
    ] = None,
) -> None:
    """Run the web UI, the REST API and the gateway in one process.

    With --database-url (or MCP_CENTER_DATABASE_URL) the shared state lives in PostgreSQL and
    several serve instances, each with its own --data-dir and port, run behind a load balancer.
    """
    # Only what the refusals before the host need; the host itself (`mcp_center.app`:
    # the SDK, fastapi, the service, about 2 s of CPU) is imported once the port and the directory
    # are this process's, so a refused start ends without it (issue 16).
    from mcp_center.launch import (
        Ownership,
        check_instance_name,
        check_secret_key,
        listen,
        open_store,
        own_data_dir,
        without_pydantic_v1,
    )

    if port is not None and not 0 <= port <= 65535:  # as every bad option value (MCP_CENTER_PORT: SETTING_INVALID)
        raise fail(option_value_refused("mcp-center serve", "--port", "must be between 0 and 65535"))
    if database_url is not None and not is_database_url(database_url):  # one code; the URL is not echoed
        raise fail(option_value_refused("mcp-center serve", "--database-url", f"must be {DATABASE_URL_FORM}"))
    if log_level.lower() not in _LOG_LEVELS:
        what = f"must be one of: {', '.join(_LOG_LEVELS)}"
        raise fail(option_value_refused("mcp-center serve", "--log-level", what, given=log_level, allowed=_LOG_LEVELS))
    # Per-request lines of the HTTP client would log every upstream URL; keep them for debug runs.
    if log_level.lower() != "debug":
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    install_log_redaction()
    held = _HeldLogs(log_level)  # the checks' log lines wait for the banner: a refusal comes first
    sockets: list[socket.socket] = []
    ownership: Ownership | None = None
    settings: Settings | None = None  # for the error of a busy port (`_name_the_holder`)
    try:
        settings = Settings.load(
            data_dir=data_dir,
            host=host,
            port=port,
            profile=profile,
            public_url=public_url,
            allowed_hosts=tuple(allowed_host or ()),
            database_url=database_url,
            instance_name=instance_name,
        )
        # Listen first: a busy port fails here, before the banner, the data directory or the
        # runtime — a second `serve` never touches the running one's data.
        sockets = listen(settings.host, settings.port)
        if settings.port == 0:
            settings = replace(settings, port=sockets[0].getsockname()[1])
        # Then own the data directory: a second `serve` on it (on another port) stops
        # here, before it touches its key, token, serve.json or any server; then what a crashed
        # owner left running is stopped before this one starts its own copies.
        ownership = own_data_dir(settings)
        # Then the store: a damaged data file or an unreachable database refuses here, still
        # without the host's imports.
        store = open_store(settings)
        try:
            check_secret_key(settings, store)  # a wrong key: one error line, never after the banner
            check_instance_name(settings, store)  # a live instance's name: the same
            without_pydantic_v1()  # fastapi would import it to check each route's models
            from mcp_center.app import create_app

            asgi_app, token, created = create_app(settings, store=store)
        except BaseException:
            store.close()
            raise
    except BaseException as exc:
        for sock in sockets:
            sock.close()
        if ownership is not None:
            ownership.release()
        if isinstance(exc, AddressInUse):
            held.drop()
            raise fail(_name_the_holder(exc, settings)) from None
        if isinstance(exc, CenterError):
            held.drop()  # the refusal line says it all (its log lines repeated it, before it)
            raise fail(exc) from None
        held.replay()  # an unexpected fault: its log lines, then the traceback
        raise
    if settings.host not in {"127.0.0.1", "localhost", "::1"}:
        err.print(
            styled(
                ("warning", "yellow"),
                f": binding {settings.host} exposes mcp-center beyond this machine. "
                "Put it behind TLS (a reverse proxy) and pass --allowed-host for the names it is reached by.",
            ),
        )
    shared = f", shared state: {settings.database_display}" if settings.database_url else ""
    # Where it listens, and the public URL when one is set: behind a proxy they differ.
    public = f", public URL {settings.public_url}" if settings.public_url else ""
    err.print(
        f"mcp-center {__version__} listening on {settings.listen_url}{public}  (data: {settings.data_dir}{shared}, "
        f"profile: {settings.profile}, instance: {settings.instance_label})",
        highlight=False,
    )
    create_hint = suggested("gateway", "token", "create", "NAME", settings=settings)  # the default dir left out
    err.print(
        f"gateway for MCP clients: {settings.base_url}/mcp  (token: {create_hint})", markup=False, highlight=False
    )
    if created:
        err.print(f"admin token (shown once, stored in {settings.data_dir / 'admin-token'}):")
        print(token, file=sys.stderr, flush=True)
    elif settings.admin_token:
        err.print("admin token: from MCP_CENTER_ADMIN_TOKEN")
    else:
        err.print(f"admin token: in {settings.data_dir / 'admin-token'}")
    held.replay()
    reaped = ownership.reaped
    if reaped.stopped.found:
        err.print(
            f"stopped {reaped.stopped.found} server process(es) that a serve which did not stop cleanly "
            f"(pid {reaped.previous_pid}) left running",
            highlight=False,
        )
    import uvicorn

    from mcp_center.api.health import quiet_passed_probes
    from mcp_center.app import HostServer, gateway_first
    from mcp_center.gateway.wire import CoalescingHttpToolsProtocol

    quiet_passed_probes()  # a balancer's passing health checks would be most of the log

    config = uvicorn.Config(
        gateway_first(asgi_app),
        host=settings.host,
        port=settings.port,
        log_level=log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=5,
        # An idle keep-alive connection is closed by its client, not by us: with uvicorn's 5 s, the
        # same idle limit as Node's and httpx's pools, a request sent on a connection just as serve
        # closed it met a reset (a non-idempotent POST is not retried: a test's login POST over
        # Playwright's pool failed so). Longer than common clients' limits, as nginx's 75 s.
        timeout_keep_alive=KEEP_ALIVE_S,
        server_header=False,
        # uvloop and httptools (pinned dependencies): the event loop and HTTP parser every gateway
        # request goes through; asyncio's loop and h11 cost several times more CPU per request.
        # The httptools protocol writes a response's head and body in one call (`gateway.wire`).
        loop="uvloop",
        # Bounded reads of a request (`MCP_CENTER_REQUEST_TIMEOUT_S`): slow senders hold no connection.
        http=CoalescingHttpToolsProtocol.with_request_timeout(settings.request_timeout_s),
    )
    server = HostServer(config, asgi_app, settings, ownership)
    try:
        server.run(sockets=sockets)
        if server.lost_name is not None:  # another live instance took the name meanwhile: exit 4
            raise fail(server.lost_name)
    except CenterError as exc:  # the host's start-up refused (`HostServer.startup`): one line, its exit code
        raise fail(exc) from None
    finally:
        ownership.release()  # HostServer released it already, unless it never started
