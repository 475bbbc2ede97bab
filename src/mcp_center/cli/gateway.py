"""`mcp-center gateway`: the stdio bridge to a running gateway, and gateway tokens (R-7.1, R-8)."""

from __future__ import annotations

import logging
import sys
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import typer
from rich.table import Table
from rich.text import Text

from mcp_center.cli._log_format import LOG_FORMAT, FieldsFormatter
from mcp_center.cli._shared import (
    DataDir,
    JsonOut,
    err,
    fail,
    gateway_app,
    gateway_token_app,
    has_state,
    opened_store,
    out,
    print_json,
    settings_for,
)
from mcp_center.cli._store_serve import store_owner
from mcp_center.cli._suggest import suggested
from mcp_center.cli._where import data_dir_phrase, unreachable_why
from mcp_center.cli.host import client_tls, serve_url
from mcp_center.config import Settings
from mcp_center.errors import CenterError, GatewayAuthRequired, GatewayTokenNotFound, RequestInvalid, ServerUnreachable
from mcp_center.interchange.display import display_url
from mcp_center.secrets import install_log_redaction

if TYPE_CHECKING:
    from mcp_center.store.coordination import InstanceInfo


@gateway_app.callback()
def gateway(
    ctx: typer.Context,
    stdio: Annotated[bool, typer.Option("--stdio", help="Bridge stdin/stdout to the running host's gateway.")] = False,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="MCP_CENTER_URL",
            help="The gateway URL, or the running host's (then /mcp is added) (default: the serve of the data "
            "directory, from its serve.json).",
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Run the gateway over stdio for clients that only spawn processes (`--stdio`).

    Needs a running `mcp-center serve` and a gateway token in MCP_CENTER_GATEWAY_TOKEN (create one
    with `mcp-center gateway token create NAME`). Approvals and cards appear in the settings page.

    \f
    The bridge talks to the serve it finds the way the other verbs do (R-9.2): `--url` or
    `MCP_CENTER_URL`, else the serve recorded for the data directory; never a default address,
    which may be another directory's serve (whose answer would be "not this host's token"). Every
    refusal is one `error [CODE]: ...` line: GATEWAY_AUTH_REQUIRED (exit 6) for a missing token,
    REQUEST_INVALID (exit 2) for a bad URL, MCP_SERVER_UNREACHABLE (exit 7) when there is no serve
    to talk to (R-7.3, R-8.1).
    When stdin ends the bridge writes the answers owed (or an error line for each) and exits 0;
    when its stdout is closed first it says so on stderr and exits 0 (`bridge_stdio`).
    """
    if ctx.invoked_subcommand is not None:
        return
    if not stdio:
        err.print(ctx.get_help(), markup=False, highlight=False)
        raise typer.Exit(2)
    import os

    import anyio

    from mcp_center.gateway import bridge_stdio

    settings = settings_for(data_dir)  # first: the hint below names this --data-dir (issue 16, F7)
    token = os.environ.get("MCP_CENTER_GATEWAY_TOKEN")
    if not token:
        create = suggested("gateway", "token", "create", "NAME")
        raise fail(
            GatewayAuthRequired(
                f"set MCP_CENTER_GATEWAY_TOKEN to a gateway token ({create})",
                details={"setting": "MCP_CENTER_GATEWAY_TOKEN"},
            )
        )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FieldsFormatter(LOG_FORMAT))  # each line's `extra=` fields as key=value
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    install_log_redaction()
    try:
        target = bridge_url(settings, url)
    except CenterError as exc:
        raise fail(exc) from None
    try:
        delivered = anyio.run(partial(bridge_stdio, target, token, verify=client_tls(target)))
    except Exception as exc:  # noqa: BLE001 - a bridge that cannot reach the host says so and exits
        from mcp_center.runtime.attribution import leaves  # the runtime loads only on this error path

        cause = next(leaves(exc))  # the SDK's task groups wrap a connect error twice
        detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        why = unreachable_why(settings, url, target)
        raise fail(
            ServerUnreachable(
                f"the gateway at {display_url(target)} is not reachable ({detail}): {why}. "
                "If serve runs with another --port or --data-dir, pass --url <its gateway URL> "
                "(the settings page's Gateway section shows it) or the same --data-dir.",
                details={"reason": "unreachable", "url": display_url(target)},
            )
        ) from None
    if not delivered:
        _stdout_closed()


def _stdout_closed() -> None:
    """The client closed the bridge's stdout before every answer was written (EPIPE): one line on
    stderr and exit 0 (the reader chose to stop reading; `| head -1` is not a failure), with stdout
    pointed at /dev/null first so the interpreter's flush at exit raises no BrokenPipeError."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    err.print(
        "the client closed the bridge's stdout: it stopped, answers still owed were not delivered",
        markup=False,
        highlight=False,
    )
    raise typer.Exit(0)


def bridge_url(settings: Settings, url: str | None) -> str:
    """The gateway URL the stdio bridge connects to (R-8.1, R-9.2).

    Args:
        settings: The data directory whose serve is meant when `url` is None.
        url: `--url` or `MCP_CENTER_URL`: a gateway URL (`http://127.0.0.1:8765/mcp`, or a server's
            `/mcp/<id>`) used as given, or a host URL (no path) whose path becomes `/mcp` (its query
            and fragment kept after it).
    Returns:
        An http(s) URL without a trailing slash; plain http only to a loopback address.
    Raises:
        ServerUnreachable: no `url` and no serve owns the data directory (never the default address).
        OptionValueInvalid: `url` is not an http(s) URL with a host (`host.checked_host_url`).
        RequestInvalid: `url` is plain http beyond this machine (the gateway token would travel in clear).
    """
    base = serve_url(settings, url)
    parts = urlsplit(base)
    # `/mcp` is the URL's path: a query (`http://h/?token=x`) stays after it, not before (sec37).
    host_only = parts.scheme in {"http", "https"} and parts.path in {"", "/"}
    target = urlunsplit(parts._replace(path="/mcp")) if host_only else base
    if parts.scheme == "http" and parts.hostname not in {"127.0.0.1", "localhost", "::1"}:
        raise RequestInvalid(
            f"refusing to send the gateway token over plain http to {parts.hostname}: use https, or a loopback address",
            details={"field": "url"},
        )
    return target


@gateway_token_app.command("create")
def gateway_token_create(name: str, data_dir: DataDir = None) -> None:
    """Create a gateway token and print it (shown once; only its hash is stored).

    The token goes to stdout alone (`GW=$(mcp-center gateway token create NAME)`); which data
    directory holds it, and whether a serve on that directory accepts it now, go to stderr.
    """
    from mcp_center.service import GatewayTokens

    settings = settings_for(data_dir)
    try:
        with opened_store(settings) as store:
            tokens = GatewayTokens(store)
            record, token = tokens.create(name)
            namesakes = [r.id for r in tokens.list() if r.name == record.name and r.id != record.id]
            live = store.instances() if settings.database_url else []  # the serves of that database
    except CenterError as exc:
        raise fail(exc, settings=settings) from None
    err.print(
        f"gateway token '{record.name}' (id {record.id}) in {data_dir_phrase(settings)}; it is shown once:",
        markup=False,
        highlight=False,
    )
    if namesakes:
        err.print(
            f"warning: another live gateway token is named '{record.name}' ({', '.join(namesakes)}); "
            f"revoke by id ({suggested('gateway', 'token', 'revoke', namesakes[0])}) to tell them apart",
            markup=False,
            highlight=False,
        )
    print(token, flush=True)
    err.print(_who_accepts(settings, live), markup=False, highlight=False)


def _who_accepts(settings: Settings, live: list[InstanceInfo]) -> str:
    """Which running serve accepts a token just created, in words: only a serve of this store does
    (trialfix36: beside an exported database URL, a single-instance serve of the data directory was
    said to accept it, and answered 401). With a database, its live instances (`live`)."""
    owner = store_owner(settings)
    if settings.database_display is None:
        if owner is None:
            return (
                f"no mcp-center serve runs on {settings.data_dir}: the token works once "
                f"'{suggested('serve', settings=settings)}' runs"
            )
        return f"the serve of this data directory (pid {owner.pid}, {owner.address or 'still starting'}) accepts it now"
    if live:
        named = ", ".join(f"{i.name or i.hostname} (pid {i.pid}, {i.url or 'still starting'})" for i in live)
        return f"the live instances of {settings.database_display} accept it now: {named}"
    return (
        f"no mcp-center serve runs on the database {settings.database_display}: the token works once a serve "
        f"started with that MCP_CENTER_DATABASE_URL runs"
    )


@gateway_token_app.command("list")
def gateway_token_list(data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """List gateway tokens (names and ids; never the tokens)."""
    from mcp_center.service import GatewayTokens

    settings = settings_for(data_dir)
    try:
        records: list[dict[str, Any]] = []
        if has_state(settings):
            with opened_store(settings) as store:
                records = [r.view() for r in GatewayTokens(store).list()]
    except CenterError as exc:
        raise fail(exc, settings=settings) from None
    if as_json:
        print_json(records)
        return
    if not records:
        out.print(f"no gateway tokens in {data_dir_phrase(settings)}", markup=False, highlight=False)
        return
    table = Table("id", "name", "created", caption=Text(data_dir_phrase(settings)))
    for record in records:
        table.add_row(record["id"], Text(record["name"]), record["created_at"])
    out.print(table)


@gateway_token_app.command("revoke")
def gateway_token_revoke(
    token: Annotated[
        str, typer.Argument(metavar="ID_OR_NAME", help="The token's id, or its name if one live token has it.")
    ],
    data_dir: DataDir = None,
) -> None:
    """Revoke a gateway token: clients using it are refused from their next request.

    A name that several live tokens carry is refused (GATEWAY_TOKEN_AMBIGUOUS, exit 2) with their
    ids; a token revoked before (or a name whose tokens are all revoked) is said to be so, and
    nothing changes (exit 0).
    """
    from mcp_center.service import GatewayTokens

    settings = settings_for(data_dir)
    try:
        if not has_state(settings):
            raise GatewayTokenNotFound(f"no gateway token with id or name '{token}'", details={"id": token})
        with opened_store(settings) as store:
            tokens = GatewayTokens(store)
            done = tokens.revoke(tokens.find(token).id)
    except CenterError as exc:
        raise fail(exc, settings=settings) from None
    record = done.record
    if done.already:
        out.print(
            f"already revoked: {record.id} ('{record.name}', at {record.revoked_at}) in {data_dir_phrase(settings)}; "
            "nothing changed",
            markup=False,
            highlight=False,
        )
        return
    out.print(f"revoked {record.id} ('{record.name}') in {data_dir_phrase(settings)}", markup=False, highlight=False)
