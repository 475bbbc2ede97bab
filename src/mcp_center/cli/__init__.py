"""The `mcp-center` command line: `serve`, and verbs that call the same `McpCenter` code.

The verbs open the data directory in-process (the store's file lock makes that safe beside a
running `serve`, which notices the change within a second and reconciles, R-3.3). Errors print
`error [CODE]: message` and exit with the error's `exit_code`.

Which data directory a command used is easy to get wrong (`--data-dir` on `serve` but not on the
next command), so every message whose meaning depends on it names it — "no servers yet in X",
"looked in X" after a not-found error, the directory a new gateway token went to — and says
whether a `serve` owns it (`cli._where`): a token created beside no serve works once serve runs on
that directory (R-9.2). Commands that only read or change existing servers never create the
directory.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import anyio
import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from mcp_center import __version__
from mcp_center.cli._sandbox import WRITABLE_PREFIX, log_lines, sandbox_body, support_lines, warm_up_lines
from mcp_center.cli._where import data_dir_phrase, serve_state, unreachable_why
from mcp_center.config import Settings
from mcp_center.errors import (
    CenterError,
    FieldError,
    ImportNothingToApply,
    ImportTooLarge,
    ImportValuesInvalid,
    NotFound,
    RequestInvalid,
    SecretStoreError,
    ServerNotFound,
)
from mcp_center.interchange import EXPORT_FORMATS, IMPORT_FORMATS, MAX_IMPORT_BYTES, decode_text
from mcp_center.runtime.attribution import leaves
from mcp_center.secrets import install_log_redaction, read_admin_token
from mcp_center.service import ApplyRequest, GatewayTokens, Importer, ImportPreviews, McpCenter
from mcp_center.store import Store, store_for
from mcp_center.store.running import running_owner, running_url

__all__ = ["app", "main"]

T = TypeVar("T")

app = typer.Typer(
    name="mcp-center",
    help="A self-hosted MCP host: register, trust, test, enable and call MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        out.print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """A self-hosted MCP host: register, trust, test, enable and call MCP servers."""
    del show_version


secret_app = typer.Typer(help="Set or delete secret values (write-only).", no_args_is_help=True)
app.add_typer(secret_app, name="secret")
approvals_app = typer.Typer(help="Agent calls waiting for your decision in a running host: list, approve ID, deny ID.")
app.add_typer(approvals_app, name="approvals")
gateway_app = typer.Typer(
    help="The MCP gateway agents connect to: run it over stdio, manage its tokens.",
    invoke_without_command=True,
)
app.add_typer(gateway_app, name="gateway")
gateway_token_app = typer.Typer(help="Gateway tokens (what MCP clients present at /mcp).", no_args_is_help=True)
gateway_app.add_typer(gateway_token_app, name="token")
sandbox_app = typer.Typer(
    help="Sandboxed stdio servers: check this host, warm up a server's caches.", no_args_is_help=True
)
app.add_typer(sandbox_app, name="sandbox")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
"""soft_wrap: long lines are not broken at 80 columns when the output is piped."""

_NEXT_STEP = {
    "MCP_SERVER_NOT_TRUSTED": "mcp-center trust {server}",
    "MCP_SERVER_NOT_TESTED": "mcp-center test {server}",
    "MCP_SERVER_DISABLED": "mcp-center enable {server}",
    "OAUTH_AUTHORIZATION_REQUIRED": "mcp-center auth {server}",
    "MCP_SERVER_VERSION_CONFLICT": "mcp-center show {server}  (then apply your change again)",
}
"""What to run next after a refused step, by error code."""

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Data directory (default: $MCP_CENTER_DATA_DIR or the user data dir).")
]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="local (default) or production.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="postgresql://user:password@host:port/db: keep the shared state there (default: "
        "$MCP_CENTER_DATABASE_URL, else the data directory's files).",
    ),
]


def _settings(data_dir: Path | None, profile: str | None = None) -> Settings:
    return Settings.load(data_dir=data_dir, profile=profile)


@contextmanager
def _opened_store(settings: Settings) -> Generator[Store]:
    """The store of `settings` (files, or the database of `MCP_CENTER_DATABASE_URL`), open for the block."""
    store = store_for(settings)
    store.open()
    try:
        yield store
    finally:
        store.close()


def _host_url(settings: Settings, url: str | None = None) -> str:
    """The running host to talk to: `--url`, else where the `serve` of this data directory said it
    listens (`<data dir>/serve.json`), else the settings' base URL (no trailing slash)."""
    return (url or running_url(settings.data_dir) or settings.base_url).rstrip("/")


def _require_data_dir(settings: Settings, server_id: str) -> None:
    """Refuse a command about an existing server when the data directory does not exist (never create it)."""
    if not settings.database_url and not settings.data_dir.exists():
        raise _fail(
            ServerNotFound(f"no server with id '{server_id}'", details={"server_id": server_id}), settings=settings
        )


def _fail(
    exc: CenterError, server_id: str | None = None, *, settings: Settings | None = None, serve: bool = False
) -> typer.Exit:
    """Print `exc` (code, message, field errors, stderr tail, next step) and return the exit to raise.

    With `settings`, a not-found error also names the data directory it looked in; with `serve`,
    say whether a serve owns that directory (for errors about reaching the running host)."""
    line = Text("error", style="red")
    line.append(f" [{exc.code}]: {exc.message}", style="")
    err.print(line, highlight=False)
    for item in exc.details.get("errors", []) if isinstance(exc.details.get("errors"), list) else []:
        if isinstance(item, dict) and "field" in item:
            err.print(
                f"  - {item['field']}: {item.get('message', '')} [{item.get('code', '')}]",
                highlight=False,
                markup=False,
            )
    tail = exc.details.get("stderr_tail")
    if isinstance(tail, list) and tail:
        err.print("  server stderr (last lines):", highlight=False)
        for stderr_line in tail:
            err.print(f"    {stderr_line}", highlight=False, markup=False)
    close = exc.details.get("did_you_mean")
    if isinstance(close, list) and close:
        err.print(f"  did you mean: {', '.join(str(c) for c in close)}?", highlight=False, markup=False)
    server = server_id or exc.details.get("server_id")
    hint = _NEXT_STEP.get(exc.code)
    if hint and isinstance(server, str):
        err.print(f"  next: {hint.format(server=server)}", highlight=False, markup=False)
    if settings is not None and isinstance(exc, NotFound):
        err.print(
            f"  looked in {data_dir_phrase(settings)}; use --data-dir or MCP_CENTER_DATA_DIR for another",
            highlight=False,
            markup=False,
        )
    if settings is not None and serve:
        err.print(f"  {serve_state(settings)}", highlight=False, markup=False)
    return typer.Exit(exc.exit_code)


def _run(settings: Settings, action: Callable[[McpCenter], Awaitable[T]]) -> T:
    """Open the center (no start-up connections), run `action`, close everything.

    Opening creates the data directory (and its key) if it is missing: commands about existing
    servers call `_require_data_dir` first."""
    install_log_redaction()

    async def main() -> T:
        # A one-shot command cannot show a form: it advertises no elicitation (R-6; a server that
        # needs an answer gets "not supported" — use the API or settings page of a running host).
        async with McpCenter.open(settings, connect=False, elicitation=False) as center:
            return await action(center)

    try:
        return anyio.run(main)
    except CenterError as exc:
        raise _fail(exc, settings=settings) from None


def _print_json(value: Any) -> None:
    out.print_json(json.dumps(value, default=str))


@app.command()
def serve(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8765).")] = None,
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
    import uvicorn

    from mcp_center.app import HostServer, Ownership, create_app, gateway_first, listen, own_data_dir

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # Per-request lines of the HTTP client would log every upstream URL; keep them for debug runs.
    if log_level.lower() != "debug":
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    install_log_redaction()
    sockets: list[socket.socket] = []
    ownership: Ownership | None = None
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
        asgi_app, token, created = create_app(settings)
    except BaseException as exc:
        for sock in sockets:
            sock.close()
        if ownership is not None:
            ownership.release()
        if isinstance(exc, CenterError):
            raise _fail(exc) from None
        raise
    if settings.host not in {"127.0.0.1", "localhost", "::1"}:
        err.print(
            f"[yellow]warning[/yellow]: binding {settings.host} exposes mcp-center beyond this machine. "
            "Put it behind TLS (a reverse proxy) and pass --allowed-host for the names it is reached by.",
        )
    shared = f", shared state: {settings.database_display}" if settings.database_url else ""
    err.print(
        f"mcp-center {__version__} on {settings.base_url}  (data: {settings.data_dir}{shared}, "
        f"profile: {settings.profile}, instance: {settings.instance_label})"
    )
    err.print(f"gateway for MCP clients: {settings.base_url}/mcp  (token: mcp-center gateway token create NAME)")
    if created:
        err.print(f"admin token (shown once, stored in {settings.data_dir / 'admin-token'}):")
        print(token, file=sys.stderr, flush=True)
    elif settings.admin_token:
        err.print("admin token: from MCP_CENTER_ADMIN_TOKEN")
    else:
        err.print(f"admin token: in {settings.data_dir / 'admin-token'}")
    reaped = ownership.reaped
    if reaped.stopped.found:
        err.print(
            f"stopped {reaped.stopped.found} server process(es) that a serve which did not stop cleanly "
            f"(pid {reaped.previous_pid}) left running",
            highlight=False,
        )
    config = uvicorn.Config(
        gateway_first(asgi_app),
        host=settings.host,
        port=settings.port,
        log_level=log_level.lower(),
        lifespan="on",
        timeout_graceful_shutdown=5,
        server_header=False,
        # uvloop and httptools (pinned dependencies): the event loop and HTTP parser every gateway
        # request goes through; asyncio's loop and h11 cost several times more CPU per request.
        loop="uvloop",
        http="httptools",
    )
    try:
        HostServer(config, asgi_app, settings, ownership).run(sockets=sockets)
    finally:
        ownership.release()  # HostServer released it already, unless it never started


@app.command("list")
def list_(
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
    as_json: JsonOut = False,
    url: Annotated[str | None, typer.Option("--url", help="The running host to ask for live states.")] = None,
) -> None:
    """List servers: enabled, live state and tool count (when serve runs), stdio sandbox policy, next step."""
    from mcp_center.cli.listing import live_servers, servers_table

    settings = _settings(data_dir, profile)
    has_data = settings.database_url is not None or settings.data_dir.exists()
    servers = _run(settings, lambda c: c.list_servers()) if has_data else []
    live = live_servers(settings, url) if servers else None
    if as_json:
        _print_json([{**s, "status": live[s["id"]]} if live and s["id"] in live else s for s in servers])
        return
    if not servers:
        out.print(
            f"no servers yet in {data_dir_phrase(settings)}: add one with 'mcp-center add' or the REST API",
            highlight=False,
            markup=False,
        )
        if running_owner(settings.data_dir) is None:
            out.print(f"({serve_state(settings)})", highlight=False, markup=False)
        return
    out.print(servers_table(servers, live))
    # Under the table, folded at the terminal's width (a long path never runs past 80 columns).
    out.print(Text(data_dir_phrase(settings), overflow="fold"), soft_wrap=False, highlight=False)
    if live is None:
        err.print(
            f"live state and tool counts come from a running 'mcp-center serve' for {settings.data_dir}; none answered",
            markup=False,
            highlight=False,
        )


def _yes(value: object) -> str:
    return "yes" if value else "no"


@app.command()
def show(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Show one server: configuration (no secret values), summary, digest, last test."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    _print_json(_run(settings, lambda c: c.get_server(server_id)))


@app.command()
def add(
    name: Annotated[str, typer.Argument(help="Display name.")],
    target: Annotated[
        list[str] | None,
        typer.Argument(help="A remote server's URL, or (stdio) the program and its arguments after '--'."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="Remote server URL (or give it after the name).")] = None,
    transport: Annotated[
        str | None, typer.Option("--transport", "-t", help="stdio, http (Streamable HTTP, default for a URL) or sse.")
    ] = None,
    server_id: Annotated[str | None, typer.Option("--id", help="Server id (default: derived from the name).")] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", "-e", help="Env var KEY=value (stdio); credential-looking ones become secrets."),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", "-H", help="Header 'Name: value' (remote); credential-looking ones become secrets."),
    ] = None,
    plain: Annotated[
        list[str] | None,
        typer.Option("--plain", help="Keep this env var or header in plain text even if it looks like a credential."),
    ] = None,
    sandbox: Annotated[bool, typer.Option("--sandbox", help="stdio: run it in a bubblewrap sandbox.")] = False,
    network: Annotated[
        str | None, typer.Option(help="stdio, sandboxed: none (default) or egress. Implies --sandbox.")
    ] = None,
    sandbox_path: Annotated[
        list[str] | None,
        typer.Option(
            "--sandbox-path",
            help=f"stdio, sandboxed: a host path it may see, read-only ({WRITABLE_PREFIX}PATH: writable). "
            "Implies --sandbox.",
        ),
    ] = None,
    memory_mb: Annotated[
        int | None, typer.Option(help="stdio, sandboxed: memory limit per process in MiB (0: none). Implies --sandbox.")
    ] = None,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Add a server, e.g. `mcp-center add time -- uvx mcp-server-time` or `mcp-center add docs https://...`.

    Like `claude mcp add`: `-e KEY=value` and `-H "Name: value"`; values that look like credentials
    (`*_TOKEN`, `*_KEY`, `Authorization`, `Bearer ...`) are stored as write-only secrets.
    """
    from mcp_center.cli.adding import plan_add

    try:
        plan = plan_add(
            name,
            list(target or []),
            url=url,
            transport=transport,
            server_id=server_id,
            env=env,
            headers=header,
            plain=plain,
        )
        policy = sandbox_body(sandbox=sandbox, network=network, paths=sandbox_path, memory_mb=memory_mb)
        if policy is not None:
            if plan.body.get("transport") != "stdio":
                raise RequestInvalid(
                    "--sandbox: only a stdio server runs in a sandbox",
                    details={"errors": [FieldError("sandbox", "FIELD_INVALID", "only for stdio servers").to_dict()]},
                )
            plan.body["sandbox"] = policy
    except CenterError as exc:
        raise _fail(exc) from None

    async def create(center: McpCenter) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        view = await center.create_server(plan.body)
        return view, await center.list_servers()

    settings = _settings(data_dir, profile)
    view, everyone = _run(settings, create)
    line = Text("added ")
    line.append(view["id"], style="bold")
    line.append(f" to {data_dir_phrase(settings)}; next: mcp-center trust {view['id']}")
    out.print(line, highlight=False)
    if plan.secrets:
        out.print(
            f"stored as write-only secrets (encrypted, never shown again): {', '.join(plan.secrets)}",
            markup=False,
            highlight=False,
        )
    same = [s["id"] for s in everyone if s["id"] != view["id"] and s["name"].strip().lower() == name.strip().lower()]
    if same:
        err.print(
            f"note: another server is already named '{name}' ({', '.join(same)}); both show that name",
            markup=False,
            highlight=False,
        )


@app.command()
def trust(
    server_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm without asking.")] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Show the connection summary and confirm it."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    view = _run(settings, lambda c: c.get_server(server_id))
    out.print(f"connection summary of [bold]{server_id}[/bold]:")
    _print_json(view["summary"])
    out.print(f"digest: {view['digest']}")
    for warning in view.get("warnings", []):
        err.print(f"warning: {warning['message']}", markup=False, highlight=False)
    if not yes and not typer.confirm("Trust this configuration?"):
        err.print("not trusted; nothing changed")
        raise typer.Exit(1)
    _run(settings, lambda c: c.trust(server_id, view["digest"]))
    out.print(f"trusted; next: mcp-center test {server_id}")


@app.command()
def test(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None, as_json: JsonOut = False) -> None:
    """Test with a temporary connection: initialize + tools/list + close."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    with err.status(f"testing {server_id} (a cold npx/uvx start can take a while)..."):
        result = _run(settings, lambda c: c.test(server_id))
    if as_json:
        _print_json(result.model_dump(mode="json"))
    elif result.ok:
        out.print(
            f"[green]ok[/green]: {result.server_name or '?'} {result.server_version or ''} "
            f"(protocol {result.protocol_version}), {result.tool_count} tools, {result.elapsed_ms} ms"
        )
    else:
        assert result.error is not None
        err.print(f"[red]failed[/red] [{result.error.code}]: {result.error.message}")
        for line in result.error.details.get("stderr_tail", []) or []:
            err.print(f"    {line}", markup=False, highlight=False)
    if not result.ok:
        raise typer.Exit(1)


@app.command()
def enable(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Enable a trusted, tested server."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    view = _run(settings, lambda c: c.enable(server_id))
    out.print(f"enabled {server_id} (state: {view['status']['state']})")


@app.command()
def disable(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Disable a server."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    _run(settings, lambda c: c.disable(server_id))
    out.print(f"disabled {server_id}")


@app.command()
def delete(
    server_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Delete a server and its secrets."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    if not yes and not typer.confirm(f"Delete {server_id} and its secrets?"):
        raise typer.Exit(1)
    _run(settings, lambda c: c.delete_server(server_id))
    out.print(f"deleted {server_id}")


@app.command()
def tools(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None, as_json: JsonOut = False) -> None:
    """List an enabled server's tools."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    with err.status(f"connecting to {server_id}..."):
        items = _run(settings, lambda c: c.list_tools(server_id))
    if as_json:
        _print_json(items)
        return
    table = Table("tool", "enabled", "policy", "description")
    for tool in items:
        table.add_row(
            *_cells(tool["name"], _yes(tool["enabled"]), tool["policy"], (tool.get("description") or "")[:80])
        )
    out.print(table)


@app.command()
def call(
    server_id: str,
    tool: str,
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Call a tool of an enabled server and print the result."""
    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        err.print(f"error [REQUEST_INVALID]: --args is not valid JSON ({exc.msg} at column {exc.colno})")
        raise typer.Exit(2) from None
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    with err.status(f"calling {tool} on {server_id}..."):
        result = _run(settings, lambda c: c.call_tool(server_id, tool, arguments))
    texts = 0
    for block in result.get("content", []):
        kind = block.get("type")
        if kind == "text":
            texts += 1
            out.print(block.get("text", ""), markup=False, highlight=False)
        elif kind in {"image", "audio"}:
            size = len(block.get("data", "")) * 3 // 4
            out.print(f"[{kind} {block.get('mimeType', '?')}, about {size} bytes]", markup=False, highlight=False)
        elif kind == "resource_link":
            out.print(f"[resource link {block.get('uri', '')}]", markup=False, highlight=False)
        elif kind == "resource":
            resource = block.get("resource", {})
            shown = resource.get("text") if "text" in resource else f"[binary {resource.get('mimeType', '?')}]"
            out.print(f"[resource {resource.get('uri', '')}]\n{shown}", markup=False, highlight=False)
        else:
            _print_json(block)
    if "structuredContent" in result and not texts:
        _print_json(result["structuredContent"])
    if result.get("isError"):
        raise typer.Exit(1)


@secret_app.command("set")
def secret_set(
    server_id: str,
    key: str,
    kind: Annotated[str, typer.Option(help="environment, header or bearer.")],
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Set a secret value, read from a hidden prompt (or stdin when piped)."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    value = sys.stdin.readline().rstrip("\n") if not sys.stdin.isatty() else typer.prompt("value", hide_input=True)
    _run(settings, lambda c: c.set_secret(server_id, kind, key, value))
    out.print(f"secret {key} set; the server needs trust and test again")


@secret_app.command("delete")
def secret_delete(
    server_id: str,
    key: str,
    kind: Annotated[str, typer.Option(help="environment, header or bearer.")],
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Delete a secret value and its ciphertext."""
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    _run(settings, lambda c: c.delete_secret(server_id, kind, key))
    out.print(f"secret {key} deleted")


@app.command("import")
def import_(
    file: Annotated[
        str, typer.Argument(help="A client configuration file (.mcp.json, mcp.json, ...), or - for stdin.")
    ],
    format: Annotated[str, typer.Option("--format", help=", ".join(IMPORT_FORMATS) + ".")] = "auto",
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Apply without asking; refused when a variable needs a value.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the preview and stop.")] = False,
    as_json: JsonOut = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Import the servers of a Claude Code, Claude Desktop, Cursor, VS Code or Windsurf file.

    Shows the preview (ids, transports, secrets, variables, rejected entries), asks for each
    variable's value (hidden for secrets; a file default is used only if you accept it), asks
    before applying, and creates every server or none. Imported servers start untrusted and
    disabled: trust, test and enable each one.
    """
    if format not in IMPORT_FORMATS:
        err.print(f"--format must be one of: {', '.join(IMPORT_FORMATS)}")
        raise typer.Exit(2)
    settings = _settings(data_dir, profile)
    text = _read_import(file)
    previews = ImportPreviews()
    preview = _run(settings, lambda c: Importer(c, previews).preview(text, format))
    if as_json:
        _print_json({k: v for k, v in preview.items() if k != "token"})
    else:
        _print_preview(preview)
    if dry_run:
        return
    if not preview["servers"]:
        raise _fail(ImportNothingToApply("nothing to import: every entry was rejected"))
    variables: list[dict[str, Any]] = preview["variables"]
    if yes and variables:
        errors = [FieldError(f"values.{v['name']}", "VALUE_REQUIRED", "needs a value") for v in variables]
        raise _fail(
            ImportValuesInvalid(
                "--yes applies only when no variable needs a value; run without --yes to be asked",
                details={"errors": [e.to_dict() for e in errors]},
            )
        )
    values, use_defaults = _ask_values(variables)
    count = len(preview["servers"])
    if not yes and not typer.confirm(f"Import {count} server{'s' if count != 1 else ''}?"):
        raise typer.Exit(1)
    request = ApplyRequest(preview["token"], preview["digest"], text, format, values, tuple(use_defaults))
    created = _run(settings, lambda c: Importer(c, previews).apply(request))
    ids = [view["id"] for view in created]
    out.print(f"imported {len(ids)} (untrusted, disabled): {', '.join(ids)}; next: mcp-center trust {ids[0]}")


def _read_import(file: str) -> str:
    """The text of an import file (or stdin), refused above `MAX_IMPORT_BYTES` before it is read whole."""
    try:
        if file == "-":
            data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        else:
            path = Path(file)
            size = path.stat().st_size
            if size > MAX_IMPORT_BYTES:
                raise _fail(
                    ImportTooLarge(
                        f"{file} is {size} bytes; the limit is {MAX_IMPORT_BYTES} bytes (1 MiB)",
                        details={"limit_bytes": MAX_IMPORT_BYTES, "size_bytes": size},
                    )
                )
            data = path.read_bytes()
        return decode_text(data)
    except OSError as exc:
        err.print(f"cannot read {file}: {exc.strerror}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    except CenterError as exc:
        raise _fail(exc) from None


def _print_preview(preview: dict[str, Any]) -> None:
    out.print(f"format: {preview['format']}", markup=False, highlight=False)
    if preview["servers"]:
        table = Table("id", "name", "transport", "target", "secrets", "notes", title="will be created")
        table.columns[0].no_wrap = True  # a renamed id ("x-2") must be read whole
        for column in table.columns[1:]:
            column.overflow = "fold"
        for s in preview["servers"]:
            config = s["config"]
            target = config.get("url") or " ".join([config.get("command", ""), *config.get("args", [])])
            notes = [f"id taken ({s['clash']['with']}): renamed from {s['clash']['slug']}"] if s["clash"] else []
            notes += [f"{w['field']}: {w['code']}" for w in s["warnings"]]
            secrets = [f"{x['kind']} {x['key']} ({x['value']})" for x in s["secrets"]]
            table.add_row(
                *_cells(s["id"], s["name"], s["transport"], _clip(target, 70), "\n".join(secrets), "\n".join(notes))
            )
        out.print(table)
    if preview["variables"]:
        table = Table("variable", "kind", "secret", "default", "used in", title="values you will be asked for")
        for v in preview["variables"]:
            default = "(hidden)" if v["secret"] and v["has_default"] else (v["default"] if v["has_default"] else "-")
            used = ", ".join(f"{u['server']}.{u['field']}" for u in v["used_in"])
            table.add_row(*_cells(v["name"], v["kind"], _yes(v["secret"]), str(default), used))
        out.print(table)
    if preview["rejected"]:
        table = Table("name", "source", "why", title="rejected")
        for r in preview["rejected"]:
            why = "\n".join(f"{e['code']}: {e['field'] or 'entry'} {e['message']}" for e in r["errors"])
            table.add_row(*_cells(r["name"], r["source"], why))
        out.print(table)


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the cut marked with "…" (a cut never looks whole)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cells(*values: str) -> list[Text]:
    """Table cells as plain text: names and values from an imported file are never rich markup."""
    return [Text(value) for value in values]


def _ask_values(variables: list[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """Ask for every variable: hidden input for secrets; a default only when the user accepts it."""
    values: dict[str, str] = {}
    use_defaults: list[str] = []
    for v in variables:
        name = v["name"]
        label = f"{name}" + (f" ({v['description']})" if v["description"] else "")
        if v["secret"]:
            if v["has_default"]:
                value = typer.prompt(
                    f"{label} [secret; Enter for the file's default]", default="", hide_input=True, show_default=False
                )
                if value:
                    values[name] = value
                elif typer.confirm(f"Use the default for {name} from the file?"):
                    use_defaults.append(name)
                else:
                    values[name] = typer.prompt(f"{label} [secret]", hide_input=True)
            else:
                values[name] = typer.prompt(f"{label} [secret]", hide_input=True)
        elif v["has_default"]:
            value = typer.prompt(label, default=v["default"])
            if value == v["default"]:
                use_defaults.append(name)
            else:
                values[name] = value
        else:
            values[name] = typer.prompt(label)
    return values, use_defaults


@app.command()
def export(
    format: Annotated[str, typer.Option("--format", help=", ".join(EXPORT_FORMATS) + ".")],
    gateway: Annotated[
        bool, typer.Option("--gateway", help="Print the snippet that points the client at this host's gateway instead.")
    ] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Print the servers as a client configuration, secrets as placeholders.

    The JSON goes to stdout (redirect it into the client's file); the placeholders to set and
    what could not be expressed go to stderr.
    """
    settings = _settings(data_dir, profile)
    if settings.public_url is None and (running := running_url(settings.data_dir)):
        settings = replace(settings, public_url=running)  # the gateway URL of the serve that runs
    document = _run(settings, lambda c: Importer(c, ImportPreviews()).export(format))
    print(json.dumps(document["gateway"]["config"] if gateway else document["config"], indent=2))
    if gateway:
        err.print(
            f"gateway: {document['gateway']['url']}; set MCP_CENTER_GATEWAY_TOKEN to a gateway token",
            markup=False,
            highlight=False,
        )
        if running_owner(settings.data_dir) is None and settings.public_url is None:
            err.print(
                f"  {serve_state(settings)}: this is the default address; the serve you start "
                "with this data directory may listen elsewhere",
                markup=False,
                highlight=False,
            )
        return
    err.print(f"for {document['filename']}", highlight=False)
    for item in document["placeholders"]:
        err.print(
            f"  set {item['name']}: {item['server_id']} secret {item['kind']} {item['key']}",
            markup=False,
            highlight=False,
        )
    for note in document["notes"]:
        err.print(
            f"  not exported: {note['server_id']}.{note['field']} [{note['code']}] {note['message']}",
            markup=False,
            highlight=False,
        )


@app.command("auth")
def auth_(
    server_id: str,
    issuer: Annotated[str | None, typer.Option(help="The issuer to log in with when the server lists several.")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until the browser login completes.")] = True,
    paste: Annotated[
        bool, typer.Option("--paste", help="Paste the redirected URL (when the browser cannot reach this host).")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the login.")] = 300.0,
    url: Annotated[str | None, typer.Option("--url", help="URL of the running host (default: its base URL).")] = None,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Authorize an OAuth server: shows the issuer and scopes, prints the URL to open, waits.

    Talks to the running `mcp-center serve` (the browser returns to its /oauth/callback).
    """
    from mcp_center.cli.oauth import AuthReport, HostRequestFailed, authorize

    install_log_redaction()
    report = AuthReport(
        say=lambda line: print(line, flush=True),  # plain print: a long URL must not be wrapped
        ask=lambda question: typer.prompt(question),
    )
    settings = _settings(data_dir, profile)
    try:
        authorize(
            settings,
            server_id,
            report,
            base_url=_host_url(settings, url),
            issuer=issuer,
            wait=wait,
            paste=paste,
            timeout_s=timeout,
        )
    except HostRequestFailed as exc:
        err.print(f"[red]error[/red] [{exc.api_code}]: {exc.message}", highlight=False)
        issuers = exc.details.get("issuers")
        if isinstance(issuers, list) and issuers:
            err.print("  choose one with --issuer:", highlight=False)
            for item in issuers:
                err.print(f"    {item}", markup=False, highlight=False)
        raise typer.Exit(4 if exc.status == 409 else 1) from None
    except CenterError as exc:
        raise _fail(exc, settings=settings, serve=url is None) from None
    except TimeoutError as exc:
        err.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(8) from None


@app.command()
def prompts(data_dir: DataDir = None, profile: ProfileOpt = None, as_json: JsonOut = False) -> None:
    """List the prompts of enabled servers as /server:prompt commands.

    \f
    R-5.4 (the help text ends at the form feed above).
    """
    settings = _settings(data_dir, profile)
    items: list[dict[str, Any]] = []
    if settings.data_dir.exists():
        with err.status("connecting to enabled servers..."):
            items = _run(settings, lambda c: c.list_prompts())
    if as_json:
        _print_json(items)
        return
    if not items:
        out.print(f"no prompts from enabled servers in {data_dir_phrase(settings)}", highlight=False, markup=False)
        return
    table = Table("command", "arguments", "description")
    for prompt in items:
        arguments = ", ".join(a["name"] + ("" if a["required"] else "?") for a in prompt["arguments"])
        table.add_row(*_cells(prompt["command"], arguments, (prompt.get("description") or "")[:80]))
    out.print(table)


@app.command()
def resources(
    query: Annotated[str, typer.Argument(help="Matches name, title, URI and description (blank: all).")] = "",
    limit: Annotated[int, typer.Option(help="At most this many results (1-500).")] = 50,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
    as_json: JsonOut = False,
) -> None:
    """Search the resources and resource templates of enabled servers, like an @ mention.

    \f
    R-5.5 (the help text ends at the form feed above).
    """
    settings = _settings(data_dir, profile)
    found: dict[str, Any] = {"resources": []}
    if settings.data_dir.exists():
        with err.status("connecting to enabled servers..."):
            found = _run(settings, lambda c: c.search_resources(query, limit=limit))
    if as_json:
        _print_json(found["resources"])
        return
    if not found["resources"]:
        what = f"matching {query!r}" if query else "at all"
        out.print(
            f"no resources {what} in enabled servers of {data_dir_phrase(settings)}", highlight=False, markup=False
        )
        return
    table = Table("kind", "mention", "name", "description")
    for item in found["resources"]:
        table.add_row(*_cells(item["kind"], item["mention"], item["name"], _clip(item.get("description") or "", 60)))
    out.print(table)


HostUrl = Annotated[
    str | None, typer.Option("--url", help="The running host (default: its base URL from the settings).")
]
_EXIT_BY_STATUS = {401: 6, 403: 5, 404: 3, 409: 4, 422: 2, 502: 7, 503: 9, 504: 8}


def _host(settings: Settings, url: str | None, method: str, path: str, body: object = None) -> Any:
    """Call the REST API of the running host that owns this data directory; print its error envelope on failure."""
    import httpx2

    try:
        token = read_admin_token(settings.data_dir, settings.admin_token)
    except SecretStoreError as exc:
        raise _fail(exc) from None
    if token is None:
        err.print(
            f"no admin token in {data_dir_phrase(settings)}: no serve has run on it; "
            f"start one with 'mcp-center serve --data-dir {settings.data_dir}'",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(6)
    base = _host_url(settings, url)
    try:
        with httpx2.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30, trust_env=False
        ) as client:
            response = client.request(method, path, json=body)
    except httpx2.TransportError:
        err.print(f"cannot reach mcp-center at {base}: {unreachable_why(settings, url)}", markup=False, highlight=False)
        raise typer.Exit(7) from None
    if response.is_success:
        return response.json()
    try:
        error = response.json()["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code, message = f"HTTP_{response.status_code}", response.text[:200]
    err.print(f"error [{code}]: {message}", markup=False, highlight=False)
    raise typer.Exit(_EXIT_BY_STATUS.get(response.status_code, 1))


WIDE_TABLE_COLUMNS = 110
"""Terminal width from which approvals are a table; narrower ones get one block per approval."""


def _approvals_view(items: list[dict[str, Any]], width: int) -> Table | Group:
    """Approvals for a terminal `width` characters wide: a table, or (narrower than
    `WIDE_TABLE_COLUMNS`) one block per approval, so ids, states and hints are never cut or folded
    word by word. The id is what `approve ID` takes."""
    rows = [
        (
            item["id"],
            item["state"],
            item["tool"],
            _clip(json.dumps(item["arguments"], ensure_ascii=False), 60),
            ", ".join(f"{k}={v}" for k, v in item["hints"].items()),
            item["expires_at"],
        )
        for item in items
    ]
    if width < WIDE_TABLE_COLUMNS:
        blocks: list[Text] = []
        for approval_id, state, tool, arguments, hints, expires in rows:
            block = Text(f"{approval_id}  {state}\n", style="bold")
            block.append(f"  tool:      {tool}\n  arguments: {arguments}\n", style="")
            block.append(f"  hints:     {hints or '-'}\n  expires:   {expires}\n", style="")
            blocks.append(block)
        return Group(*blocks)
    table = Table("id", "state", "tool", "arguments", "hints", "expires")
    table.columns[0].no_wrap = table.columns[1].no_wrap = True  # the id is what `approve ID` takes
    for column in table.columns[2:]:
        column.overflow = "fold"
    for row in rows:
        table.add_row(*_cells(*row))
    return table


def _show_approvals(include_closed: bool, url: str | None, data_dir: Path | None, as_json: bool) -> None:
    query = "?include_closed=true" if include_closed else ""
    items: list[dict[str, Any]] = _host(_settings(data_dir), url, "GET", f"/api/approvals{query}")["approvals"]
    if as_json:
        _print_json(items)
        return
    if not items:
        settings = _settings(data_dir)
        out.print(
            f"no pending approvals at {_host_url(settings, url)} (data directory {settings.data_dir})",
            markup=False,
            highlight=False,
        )
        return
    out.print(_approvals_view(items, out.width))


IncludeClosed = Annotated[bool, typer.Option("--all", help="Also recently decided, expired and cancelled ones.")]


@approvals_app.callback(invoke_without_command=True)
def approvals_default(
    ctx: typer.Context,
    include_closed: IncludeClosed = False,
    url: HostUrl = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Without a subcommand: list pending approvals."""
    if ctx.invoked_subcommand is None:
        _show_approvals(include_closed, url, data_dir, as_json)


@approvals_app.command("list")
def approvals_list(
    include_closed: IncludeClosed = False, url: HostUrl = None, data_dir: DataDir = None, as_json: JsonOut = False
) -> None:
    """List pending approvals (with --all, recent decisions too)."""
    _show_approvals(include_closed, url, data_dir, as_json)


def _decide(approval_id: str, decision: str, url: str | None, data_dir: Path | None) -> None:
    decided = _host(_settings(data_dir), url, "POST", f"/api/approvals/{approval_id}", {"decision": decision})
    out.print(f"{decided['state']}: {decided['tool']} ({decided['id']})", markup=False, highlight=False)


@approvals_app.command("approve")
def approvals_approve(approval_id: str, url: HostUrl = None, data_dir: DataDir = None) -> None:
    """Approve a pending call: it is sent to the server."""
    _decide(approval_id, "approve", url, data_dir)


@approvals_app.command("deny")
def approvals_deny(approval_id: str, url: HostUrl = None, data_dir: DataDir = None) -> None:
    """Deny a pending call: the server never sees it."""
    _decide(approval_id, "deny", url, data_dir)


@sandbox_app.command("check")
def sandbox_check() -> None:
    """Say whether sandboxed stdio servers can run on this host (bubblewrap, user namespaces), and how."""
    from mcp_center.transports import sandbox_support

    support = sandbox_support(refresh=True)
    for line in support_lines(support):
        out.print(line, markup=False, highlight=False)
    if not support.available:
        raise typer.Exit(10)


@sandbox_app.command("warm-up")
def sandbox_warm_up(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Fill a sandboxed npx/uvx server's package caches inside its sandbox, with egress for this run only.

    Only the package manager runs (the server does not start), so a server with network none can
    start offline afterwards. Needs the current summary confirmed.
    """
    settings = _settings(data_dir, profile)
    _require_data_dir(settings, server_id)
    with err.status(f"warming up {server_id} (downloads its package into the sandbox's home)..."):
        result = _run(settings, lambda c: c.warm_up_sandbox(server_id))
    for line in warm_up_lines(server_id, result):
        (out if result.ok else err).print(line, markup=False, highlight=False)
    if not result.ok:
        raise typer.Exit(1)


@app.command()
def logs(server_id: str, url: HostUrl = None, data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """Show a server's last requests and stderr lines from the running host; sandbox refusals are marked."""
    settings = _settings(data_dir)
    found = _host(settings, url, "GET", f"/api/mcp/servers/{server_id}/logs")
    if as_json:
        _print_json(found)
        return
    for line in log_lines(found):
        out.print(line, markup=False, highlight=False)


@app.command()
def version() -> None:
    """Print the version."""
    out.print(__version__)


@gateway_app.callback()
def gateway(
    ctx: typer.Context,
    stdio: Annotated[bool, typer.Option("--stdio", help="Bridge stdin/stdout to the running host's gateway.")] = False,
    url: Annotated[str | None, typer.Option(help="Gateway URL (default: <base URL>/mcp of the settings).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Run the gateway over stdio for clients that only spawn processes (`--stdio`).

    Needs a running `mcp-center serve` and a gateway token in MCP_CENTER_GATEWAY_TOKEN (create one
    with `mcp-center gateway token create NAME`). Approvals and cards appear in the settings page.
    """
    if ctx.invoked_subcommand is not None:
        return
    if not stdio:
        err.print(ctx.get_help(), markup=False, highlight=False)
        raise typer.Exit(2)
    import os

    from mcp_center.gateway import bridge_stdio

    token = os.environ.get("MCP_CENTER_GATEWAY_TOKEN")
    if not token:
        err.print("set MCP_CENTER_GATEWAY_TOKEN to a gateway token (mcp-center gateway token create NAME)")
        raise typer.Exit(2)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    install_log_redaction()
    settings = _settings(data_dir)
    target = url or f"{_host_url(settings)}/mcp"
    parts = urlsplit(target)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        err.print(
            f"error: --url must be an http(s) URL of the gateway, e.g. http://127.0.0.1:8765/mcp (got {target!r})"
        )
        raise typer.Exit(2)
    if parts.scheme == "http" and parts.hostname not in {"127.0.0.1", "localhost", "::1"}:
        err.print(
            f"error: refusing to send the gateway token over plain http to {parts.hostname}: "
            "use https, or a loopback address"
        )
        raise typer.Exit(2)
    try:
        anyio.run(bridge_stdio, target, token)
    except Exception as exc:  # noqa: BLE001 - a bridge that cannot reach the host says so and exits
        cause = next(leaves(exc))  # the SDK's task groups wrap a connect error twice
        detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        err.print(
            f"error: the gateway at {target} is not reachable ({detail}): {unreachable_why(settings, url)}. "
            "If serve runs with another --port or --data-dir, pass --url <its gateway URL> "
            "(the settings page's Gateway section shows it) or the same --data-dir.",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(7) from None


@gateway_token_app.command("create")
def gateway_token_create(name: str, data_dir: DataDir = None) -> None:
    """Create a gateway token and print it (shown once; only its hash is stored).

    The token goes to stdout alone (`GW=$(mcp-center gateway token create NAME)`); which data
    directory holds it, and whether a serve on that directory accepts it now, go to stderr.
    """
    settings = _settings(data_dir)
    try:
        with _opened_store(settings) as store:
            record, token = GatewayTokens(store).create(name)
    except CenterError as exc:
        raise _fail(exc, settings=settings) from None
    err.print(
        f"gateway token '{record.name}' (id {record.id}) in {data_dir_phrase(settings)}; it is shown once:",
        markup=False,
        highlight=False,
    )
    print(token, flush=True)
    owner = running_owner(settings.data_dir)
    if owner is None:
        err.print(
            f"no mcp-center serve runs on {settings.data_dir}: the token works once "
            f"'mcp-center serve --data-dir {settings.data_dir}' runs",
            markup=False,
            highlight=False,
        )
    else:
        err.print(
            f"the serve of this data directory (pid {owner.pid}, {owner.url or 'still starting'}) accepts it now",
            markup=False,
            highlight=False,
        )


@gateway_token_app.command("list")
def gateway_token_list(data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """List gateway tokens (names and ids; never the tokens)."""
    settings = _settings(data_dir)
    try:
        records: list[dict[str, Any]] = []
        if settings.database_url or settings.mcp_dir.exists():
            with _opened_store(settings) as store:
                records = [r.view() for r in GatewayTokens(store).list()]
    except CenterError as exc:
        raise _fail(exc, settings=settings) from None
    if as_json:
        _print_json(records)
        return
    if not records:
        out.print(f"no gateway tokens in {data_dir_phrase(settings)}", markup=False, highlight=False)
        return
    table = Table("id", "name", "created", caption=Text(data_dir_phrase(settings)))
    for record in records:
        table.add_row(record["id"], Text(record["name"]), record["created_at"])
    out.print(table)


@gateway_token_app.command("revoke")
def gateway_token_revoke(token_id: str, data_dir: DataDir = None) -> None:
    """Revoke a gateway token: clients using it are refused from their next request."""
    settings = _settings(data_dir)
    try:
        with _opened_store(settings) as store:
            GatewayTokens(store).revoke(token_id)
    except CenterError as exc:
        raise _fail(exc, settings=settings) from None
    out.print(f"revoked {token_id} in {data_dir_phrase(settings)}", markup=False, highlight=False)


@app.command()
def migrate(
    to: Annotated[str, typer.Option("--to", help="The target database: postgresql://user:password@host:port/db.")],
    data_dir: DataDir = None,
) -> None:
    """Copy a data directory's state into PostgreSQL, all or nothing (for several instances).

    Servers (trusted, tested, enabled as they are), secrets and OAuth credentials (still sealed with
    this data directory's key: start every instance with that key), gateway tokens, cards and
    approvals go over in one transaction. The data directory is left as it was. Stop its serve first.

    \f
    R-10.1 (the help text ends at the form feed above).
    """
    from mcp_center.service.migration import migrate_to_database

    try:
        settings = Settings.load(data_dir=data_dir, database_url=to)
        report = migrate_to_database(settings, to, display=settings.database_display or "postgresql")
    except CenterError as exc:
        raise _fail(exc) from None
    copied = ", ".join(f"{count} {section.replace('_', ' ')}" for section, count in report.counts.items())
    out.print(f"migrated {settings.data_dir} into {report.database}: {copied}", highlight=False, markup=False)
    err.print(
        "start every instance with this data directory's key (MCP_CENTER_SECRET_KEY, or a copy of "
        f"{settings.data_dir / 'secret.key'}) and --database-url",
        highlight=False,
        markup=False,
    )


def main() -> None:
    """Console-script entry point."""
    app()
