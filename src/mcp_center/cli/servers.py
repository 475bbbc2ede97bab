"""Server commands: list, show, add, trust, test, enable, disable, delete, tools, call, secret (R-1, R-2).

They open the data directory in-process (`run_center`); a running `serve` notices the change
within a second and reconciles (R-3.3). `enable`, `disable`, `test` and `tools`, which change or
read a server's live state, ask that serve instead when one owns the directory (`_served`, cli39);
so does `call`, whose serve runs it in its live session (`_served_call`, call40).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table
from rich.text import Text

from mcp_center.cli._clip import FullOpt, description_cells, full_hint
from mcp_center.cli._prompts import ask, confirm
from mcp_center.cli._sandbox import WRITABLE_PREFIX, legend_lines, log_lines, sandbox_body, unconfined_means
from mcp_center.cli._served import served
from mcp_center.cli._shared import (
    DataDir,
    HostUrl,
    JsonOut,
    ProfileOpt,
    app,
    cells,
    err,
    fail,
    has_state,
    host_request,
    out,
    print_json,
    print_stderr_tail,
    run_center,
    secret_app,
    settings_for,
    settings_for_server,
    styled,
    yes,
)
from mcp_center.cli._suggest import suggested
from mcp_center.cli._where import data_dir_phrase, serve_state
from mcp_center.cli._wording import counted
from mcp_center.errors import AnswerRequired, CenterError, FieldError, RequestInvalid, ServerAlreadyRegistered
from mcp_center.interchange.display import display_url
from mcp_center.models import is_array, is_object
from mcp_center.store.running import running_owner

if TYPE_CHECKING:  # the service and the SDK's types load when a command runs the host (`run_center`)
    from mcp_center.config import Settings, ToolPolicy
    from mcp_center.service import McpCenter, ServerView
    from mcp_center.store.records import TestResult


@app.command("list")
def list_(
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
    as_json: JsonOut = False,
    url: Annotated[str | None, typer.Option("--url", help="The running host to ask for live states.")] = None,
) -> None:
    """List servers: enabled, live state and tool count (when serve runs), stdio sandbox policy, next step."""
    from mcp_center.cli.host import checked_host_url
    from mcp_center.cli.listing import (
        WIDE_COLUMNS,
        Silent,
        errored_hints,
        folded,
        live_servers,
        served_views,
        servers_lines,
        servers_table,
        statuses,
    )

    settings = settings_for(data_dir, profile)
    try:
        url = None if url is None else checked_host_url(url, option="'--url'")  # list's reads no MCP_CENTER_URL
    except CenterError as exc:
        raise fail(exc) from None
    stored = has_state(settings)
    # The serve of this data directory lists the same views (its store is these files) with their
    # live states: asking it first spares this process the host's imports (about 1.5 s of CPU).
    served = served_views(settings) if stored and url is None and settings.database_url is None else None
    live: dict[str, dict[str, Any]] | Silent | None
    instance_url: str | None = None  # with a database: where its live instance listens
    if served is not None and not isinstance(served, Silent):
        servers, live = served, statuses(served)
    else:
        servers, instance_url = run_center(settings, partial(_servers_and_instance, settings)) if stored else ([], None)
        # A serve that did not answer (said on stderr) is not asked a second time (issue 16). With a
        # database, a live instance of it is asked (trialfix36), never a serve of other state.
        live = served if served is not None else live_servers(settings, url or instance_url) if servers else None
    silent = isinstance(live, Silent)
    if isinstance(live, Silent):
        live = None
    if as_json:
        print_json([{**s, "status": live[s["id"]]} if live and s["id"] in live else s for s in servers])
        return
    if not servers:
        out.print(
            f"no servers yet in {data_dir_phrase(settings)}: add one with "
            f"'{suggested('add', 'NAME', '--', 'COMMAND')}' or the REST API",
            highlight=False,
            markup=False,
        )
        if running_owner(settings.data_dir) is None:
            out.print(f"({serve_state(settings)})", highlight=False, markup=False)
        return
    if out.width >= WIDE_COLUMNS:
        out.print(servers_table(servers, live))
    else:  # the command at the terminal's whole width, under its server's line (issue 16)
        for line in servers_lines(servers, live, out.width):
            out.print(line, overflow="fold", soft_wrap=False, highlight=False)
    # Under the table, folded at the terminal's width (a long path never runs past 80 columns), with
    # no trailing spaces at the breaks.
    for hint in [data_dir_phrase(settings), *legend_lines(servers), *errored_hints(servers, live, settings)]:
        for line in folded(hint, out.width):
            out.print(line, soft_wrap=True, markup=False, highlight=False)
    if live is None and not silent:
        if url is not None:
            source = (
                f"the 'mcp-center serve' at {display_url(url)} (--url); it did not answer with this data "
                f"directory's admin token ({settings.data_dir}): is it running there, and is the URL right?"
            )
        elif settings.database_display is not None:
            source = (
                f"a live instance of the database {settings.database_display}: {display_url(instance_url)} "
                "did not answer with this admin token (MCP_CENTER_ADMIN_TOKEN, as the instances have it)"
                if instance_url is not None
                else f"a live instance of the database {settings.database_display}; none runs"
            )
        else:
            source = f"a running 'mcp-center serve' for {settings.data_dir}; none answered"
        err.print(f"live state and tool counts come from {source}", markup=False, highlight=False)


async def _servers_and_instance(settings: Settings, center: McpCenter) -> tuple[list[dict[str, Any]], str | None]:
    """Every server's view, and with a database where this machine reaches its oldest live instance
    (its instances table: the serve to ask for live states, R-10.2); None without one."""
    from mcp_center.cli._store_serve import local_address

    servers = [view.to_dict() for view in await center.list_servers()]
    if settings.database_url is None:
        return servers, None
    found = (local_address(view.info) for view in (await center.instances()).instances)
    return servers, next((address for address in found if address is not None), None)


@app.command()
def show(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Show one server: configuration (no secret values), summary, digest, last test."""
    from mcp_center.cli.listing import served_view

    settings = settings_for_server(server_id, data_dir, profile)
    # As `list`: the serve of this data directory answers with the same view (and its live status),
    # sparing this process the host's imports; anything else (no serve, an unknown id) reads the directory.
    served = served_view(settings, server_id) if settings.database_url is None else None
    view = served if served is not None else run_center(settings, lambda c: c.get_server(server_id)).to_dict()
    print_json(view)
    note = quarantine_note(server_id, view)
    if note is not None:  # on stderr: stdout stays the JSON a script reads
        err.print(note, markup=False, highlight=False)


def quarantine_note(server_id: str, view: Mapping[str, Any]) -> str | None:
    """The line `show` adds about quarantined tools (R-3.6), or None when there is nothing to say.

    Args:
        view: The server's JSON view (`ServerView.to_dict()`): its `quarantined` (the live session's,
            null without one) wins over `last_test.quarantined` (what the last test saw), so a server
            fixed and reconnected since its test is not still said to have quarantined tools.
    Returns:
        "note: its live session lists N tool(s) quarantined ...", or, without a live session, "note:
        its last test found ..."; with a live session that lists none where the last test found
        some, a note that they are no longer quarantined.
    """
    live: object = view.get("quarantined")
    last_test: object = view.get("last_test")
    tested: object = last_test.get("quarantined") if is_object(last_test) else None
    found = [str(q.get("name")) for q in tested if is_object(q)] if is_array(tested) else []
    if is_array(live):
        names = [str(q.get("name")) for q in live if is_object(q)]
        if names:
            return (
                f"note: its live session lists {counted(len(names), 'tool')} quarantined (an invalid definition: "
                f"not offered to agents, calls refused): {', '.join(names)}; reasons in quarantined, or run "
                f"'{suggested('tools', server_id)}'"
            )
        if found:
            return (
                f"note: its last test found {', '.join(found)} quarantined; its live session lists no quarantined "
                "tool now (the server was fixed since)"
            )
        return None
    if not found:
        return None
    return (
        f"note: its last test found {counted(len(found), 'tool')} quarantined (an invalid definition: not "
        f"offered to agents, calls refused): {', '.join(found)}; reasons in last_test.quarantined, or run "
        f"'{suggested('test', server_id)}'"
    )


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
    """Add a server: a local program after `--` (stdio), or a remote server's URL.

    For example (a package pinned to one release, as the PACKAGE_NOT_PINNED warning asks):

        mcp-center add time -- uvx --isolated --from mcp-server-time==2026.10.19 mcp-server-time
        mcp-center add docs https://mcp.example.com/mcp

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
        raise fail(exc) from None

    async def create(center: McpCenter) -> ServerView:
        # The same name and configuration again (a pasted command run twice) is refused unless
        # --id names the copy: MCP_SERVER_ALREADY_REGISTERED, exit 4 (issue 16).
        try:
            return await center.create_server(plan.body)
        except ServerAlreadyRegistered as exc:  # the service's words name no flag; ours do
            raise ServerAlreadyRegistered(
                exc.message.replace("give it a new id", "pass --id NEW_ID"), details=exc.details
            ) from None

    settings = settings_for(data_dir, profile)
    view = run_center(settings, create)
    line = Text("added ")
    line.append(view.id, style="bold")
    line.append(f" to {data_dir_phrase(settings)}; next: {suggested('trust', view.id)}")
    out.print(line, highlight=False)
    shared = any(w.code == "SERVER_NAME_SHARED" for w in view.warnings)  # its note says why the id differs
    if server_id is None and view.id != name and not shared:  # later commands take an id not typed
        err.print(
            f"note: its id is {view.id!r}, made from the name {name!r} (an id is a-z, 0-9 and '-'); "
            "later commands take the id",
            markup=False,
            highlight=False,
        )
    if plan.secrets:
        out.print(
            f"stored as write-only secrets (encrypted, never shown again): {', '.join(plan.secrets)}",
            markup=False,
            highlight=False,
        )
    for warning in view.warnings:
        if warning.code == "SERVER_NAME_SHARED":
            err.print(f"note: {warning.message}", markup=False, highlight=False)
        elif warning.code in {"PACKAGE_NOT_PINNED", "COMMAND_NOT_FOUND"}:  # `trust` shows them again
            err.print(f"warning [{warning.code}]: {warning.message}", markup=False, highlight=False)


@app.command()
def trust(
    server_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm without asking.")] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Show the connection summary and confirm it."""
    settings = settings_for_server(server_id, data_dir, profile)
    view = run_center(settings, lambda c: c.get_server(server_id))
    out.print(styled("connection summary of ", (server_id, "bold"), ":"))
    print_json(view.summary)
    if view.summary.get("transport") == "stdio" and view.summary.get("sandbox") is None:
        out.print(f'"sandbox": null means {unconfined_means()}', markup=False, highlight=False)
    out.print(f"digest: {view.digest}")
    for warning in view.warnings:
        err.print(f"warning: {warning.message}", markup=False, highlight=False)
    if view.trusted:
        then = "" if view.tested else f"; next: {suggested('test', server_id)}"
        out.print(
            f"{server_id} is already trusted with this digest; nothing changed{then}", markup=False, highlight=False
        )
        return
    if not yes and not confirm("Trust this configuration?"):
        err.print("not trusted; nothing changed", markup=False, highlight=False)
        raise typer.Exit(1)
    run_center(settings, lambda c: c.trust(server_id, view.digest))
    out.print(f"trusted; next: {suggested('test', server_id)}", markup=False, highlight=False)


@app.command()
def test(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None, as_json: JsonOut = False) -> None:
    """Test with a temporary connection: initialize + tools/list + close.

    Beside a running serve, that serve runs the test (`POST .../test`): its log keeps the test's lines.
    """
    settings = settings_for_server(server_id, data_dir, profile)

    async def tested(center: McpCenter) -> tuple[TestResult, list[str]]:
        return await _own_log(center, server_id, await center.test(server_id))

    log: list[str] | None = None  # the test's log lines, when it ran in this process
    # Said at once, terminal or not: a first start of an npx/uvx server downloads its package, and
    # the command printed nothing for 20-36 s where the spinner is not drawn (trialfix36). On stderr,
    # so `--json` output stays the result alone.
    err.print(
        f"testing {server_id}: starting it (a first start may download packages)...", markup=False, highlight=False
    )
    with err.status(f"waiting for {server_id}..."):
        answer = served(settings, "POST", server_id, "test")
        if answer is None:
            own, log = run_center(settings, tested)
            answer = own.model_dump(mode="json")
    result: dict[str, Any] = answer
    if as_json:
        print_json(result)
    elif result.get("ok"):
        out.print(
            styled(
                ("ok", "green"),
                f": {result.get('server_name') or '?'} {result.get('server_version') or ''} "
                f"(protocol {result.get('protocol_version')}), {counted(result.get('tool_count') or 0, 'tool')}, "
                f"{result.get('elapsed_ms')} ms",
            )
        )
        print_quarantined(server_id, _quarantined(result.get("quarantined")))
    else:
        error: dict[str, Any] = result.get("error") or {}
        err.print(styled(("failed", "red"), f" [{error.get('code')}]: {error.get('message')}"))
        if log is None:  # the serve ran the test: its log has every line
            rest = f"the serve that ran this test keeps its log: '{suggested('logs', server_id)}'"
        else:  # this test ran in this process: the lines before the tail were not kept anywhere
            show = suggested("show", server_id)
            rest = (
                f"the earlier lines were not kept; to see them, run the server's command yourself ('{show}' prints it)"
            )
        print_stderr_tail(error.get("details") or {}, rest)
        if log:
            err.print("  server log (kept by this command only):", markup=False, highlight=False)
            for line in log:
                err.print(f"    {line}", markup=False, highlight=False)
    if not result.get("ok"):
        raise typer.Exit(1)


async def _own_log(center: McpCenter, server_id: str, result: TestResult) -> tuple[TestResult, list[str]]:
    """`result` and the log lines of a test that failed in this process and whose error points at the
    server's log (`details.log_command`: stray stdout, answers to unknown ids), with that pointer
    taken out of the error: `mcp-center logs` asks a running serve, whose log never saw this test
    (trial35 MED 5, R-3.11). The message says the log follows instead; `(result, [])` otherwise."""
    error = result.error
    if error is None or "log_command" not in error.details:
        return result, []
    details = dict(error.details)
    pointer = f"; see the server's log with '{details.pop('log_command')}'"
    message = error.message.replace(pointer, "; the server's log of this test follows")
    shown = result.model_copy(update={"error": error.model_copy(update={"message": message, "details": details})})
    return shown, log_lines((await center.logs(server_id)).to_dict())


@app.command()
def enable(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Enable a trusted, tested server.

    Beside a running serve, that serve enables it and connects it: the state printed is its.
    """
    settings = settings_for_server(server_id, data_dir, profile)
    view = served(settings, "POST", server_id, "enable")
    if view is None:
        view = run_center(settings, lambda c: c.enable(server_id)).to_dict()
    status: dict[str, Any] = view.get("status") or {}
    out.print(f"enabled {server_id} (state: {status.get('state', '?')})")


@app.command()
def disable(server_id: str, data_dir: DataDir = None, profile: ProfileOpt = None) -> None:
    """Disable a server."""
    settings = settings_for_server(server_id, data_dir, profile)
    if served(settings, "POST", server_id, "disable") is None:
        run_center(settings, lambda c: c.disable(server_id))
    out.print(f"disabled {server_id}")


@app.command()
def delete(
    server_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Delete a server and its secrets."""
    settings = settings_for_server(server_id, data_dir, profile)
    if not yes:  # an unknown id is refused (with its did-you-mean) before the question, not after it
        run_center(settings, lambda c: c.get_server(server_id))
    if not yes and not confirm(f"Delete {server_id} and its secrets?"):
        err.print("not deleted; nothing changed", markup=False, highlight=False)
        raise typer.Exit(1)
    run_center(settings, lambda c: c.delete_server(server_id))
    out.print(f"deleted {server_id}")


@app.command()
def tools(
    server_id: str,
    full: FullOpt = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
    as_json: JsonOut = False,
) -> None:
    """List an enabled server's tools.

    Beside a running serve, the tools of its live session (what agents and the settings page see).
    A description longer than one table line is cut at a word, marked "…"; `--full` (or `--json`)
    shows it whole.
    """
    settings = settings_for_server(server_id, data_dir, profile)

    async def listed(center: McpCenter) -> dict[str, Any]:
        items = await center.list_tools(server_id)
        quarantined = (await center.catalog(server_id)).catalog.quarantined["tools"]
        return {"tools": [item.to_dict() for item in items], "quarantined": [q.to_dict() for q in quarantined]}

    with err.status(f"connecting to {server_id}..."):
        answer = served(settings, "GET", server_id, "tools")
        if answer is None:
            answer = run_center(settings, listed)
    items: list[dict[str, Any]] = answer.get("tools") or []
    if as_json:
        print_json(items)
        return
    table = Table("tool", "enabled", "policy", "description")
    # A tool's name is what `call` takes: never cut ("trigger-long-running-opera…" at 80 columns);
    # the description gives way (wrapped in its column) instead.
    longest = max([len("tool"), *(len(str(item.get("name"))) for item in items)])
    table.columns[0].no_wrap = True
    table.columns[0].min_width = longest
    table.columns[3].overflow = "fold"
    # Its header whole when the row leaves room (borders, padding, "enabled" and "policy": 26 columns).
    table.columns[3].min_width = max(4, min(len("description"), out.width - 26 - longest))
    shown, cut = description_cells((str(item.get("description") or "") for item in items), full=full)
    for item, description in zip(items, shown, strict=True):
        table.add_row(*cells(str(item.get("name")), yes(item.get("enabled")), str(item.get("policy")), description))
    out.print(table)
    if cut:  # once, under the table: how to read what the "…" hides
        from mcp_center.cli.listing import folded

        for line in folded(full_hint(suggested("tools", server_id, "--full")), out.width):
            out.print(line, markup=False, highlight=False)
    print_quarantined(server_id, _quarantined(answer.get("quarantined")))


def _quarantined(listed: object) -> list[tuple[str | None, str]]:
    """`(name, reason)` of quarantined tools as JSON lists them (a test's result, `GET .../tools`)."""
    items = [q for q in listed if is_object(q)] if is_array(listed) else []
    return [(None if q.get("name") is None else str(q.get("name")), str(q.get("reason"))) for q in items]


def print_quarantined(server_id: str, quarantined: Sequence[tuple[str | None, str]]) -> None:
    """Under a tool list or a test's line: the tools `server_id` listed whose definition failed validation
    (`(name, reason)`), which agents are not offered and whose calls are refused (MCP_TOOL_QUARANTINED,
    R-3.6), and how they are checked again. Prints nothing when there are none."""
    if not quarantined:
        return
    out.print(
        f"{counted(len(quarantined), 'tool')} quarantined (the server's definition is invalid: not offered to agents, "
        "calls refused with MCP_TOOL_QUARANTINED):",
        markup=False,
        highlight=False,
    )
    for name, reason in quarantined:
        out.print(f"  {name if name is not None else '(no name)'}: {reason}", markup=False, highlight=False)
    out.print(
        f"  they are checked again each time the tool list is read (fix the server, then "
        f"'{suggested('test', server_id)}'; a running serve re-reads it on the server's tools/list_changed "
        "or a reconnect)",
        markup=False,
        highlight=False,
    )


@app.command()
def call(
    server_id: str,
    tool: str,
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Call a tool of an enabled server and print the result.

    Beside a running serve, that serve calls it in its live session (its REST call; Ctrl-C cancels it there).
    """
    from mcp_center.cli._served_call import missing_example, print_call_result, served_call
    from mcp_center.service.tool_arguments import check_arguments_safe, nested_too_deep

    try:
        arguments: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        err.print(f"error [REQUEST_INVALID]: --args is not valid JSON ({exc.msg} at column {exc.colno})")
        raise typer.Exit(2) from None
    except RecursionError:  # thousands of levels: the parser gives up where the check would refuse (fixb36)
        raise fail(nested_too_deep()) from None
    try:  # NaN, 1e400, "\ud800": refused as the service refuses them, before a serve is asked (cli36)
        check_arguments_safe(arguments)
    except RequestInvalid as exc:
        raise fail(exc) from None
    settings = settings_for_server(server_id, data_dir, profile)

    example: list[str] = []

    async def called(center: McpCenter) -> dict[str, Any]:
        # A required argument left out is refused by the service (`tool_arguments`), as for REST
        # and the page (bridge39); the CLI adds the `--args` to pass.
        try:
            return (await center.call_tool(server_id, tool, arguments)).to_dict()
        except RequestInvalid as exc:
            example.extend(filter(None, [missing_example(exc, arguments)]))
            raise

    with err.status(f"calling {tool} on {server_id}..."):
        result = served_call(settings, server_id, tool, arguments)
        if result is None:
            try:
                result = run_center(settings, called)
            except typer.Exit:
                for shown_example in example:
                    err.print(f"  pass --args '{shown_example}'", markup=False, highlight=False)
                raise
    print_call_result(result)


@secret_app.command("set")
def secret_set(
    server_id: str,
    key: str,
    kind: Annotated[
        str,
        typer.Option(
            help="environment (a stdio server's env var), header (a remote server's), bearer (key token) "
            "or oauth (client_secret, private_key)."
        ),
    ],
    new: Annotated[
        bool,
        typer.Option(
            "--new",
            help="KEY is a new env var or header for this server: without it, a key the server does not "
            "use yet is refused (a typo would add a secret nothing reads).",
        ),
    ] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Set a secret value, read from a hidden prompt (or stdin when piped).

    The kind, the server and the key are checked before the value is asked for. KEY must be an
    env var (environment) or header (header) the server already has, plain or secret, unless
    --new says it is a new one.
    """
    from mcp_center.cli._secret_keys import check_secret_key, secret_kind

    checked = secret_kind(kind)
    settings = settings_for_server(server_id, data_dir, profile)
    view = run_center(settings, lambda c: c.get_server(server_id))
    check_secret_key(server_id, view.config, checked, key, new=new)
    value = _secret_value()
    after = run_center(settings, lambda c: c.set_secret(server_id, kind, key, value))
    out.print(f"secret {key} set", markup=False, highlight=False)
    notice = summary_change_notice(
        view, after, change="its secret changed", part="the secret is part of the connection summary"
    )
    for line in notice:
        out.print(line, markup=False, highlight=False)


@app.command()
def policy(
    server_id: str,
    tool: Annotated[str, typer.Argument(help="The tool's name as its server lists it (see `mcp-center tools ID`).")],
    decision: Annotated[
        str,
        typer.Argument(
            metavar="ask|allow|deny",
            help="ask: each agent's call waits for your approval (the default); allow: agents' calls run; "
            "deny: calls are refused and agents do not see the tool. Your own calls (`mcp-center call`, the "
            "page's playground) never wait; deny refuses them too.",
        ),
    ],
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Set whether an agent's calls of a tool wait for approval (ask), run (allow) or are refused (deny).

    Agents call through the gateway, `POST /api/tools/{name}/call` or the library's
    `call_agent_tool`; your own calls (`mcp-center call`, the page's playground) never wait, and
    deny refuses them too. The policies are part of the connection summary: a change clears trust,
    and an enabled server is disabled until it is trusted, tested and enabled again, as on the
    settings page.
    """
    # R-5.3 (only the user changes a policy), R-1.4 (a high-risk change: trust, test, enable again).
    settings = settings_for_server(server_id, data_dir, profile)
    chosen = cast("ToolPolicy", decision)  # checked by the service: REQUEST_INVALID otherwise

    async def change(center: McpCenter) -> tuple[ServerView, ServerView]:
        before = await center.get_server(server_id)
        return before, await center.set_tool_policy(server_id, tool, chosen, version=before.version)

    view, after = run_center(settings, change)
    if after.version == view.version:
        out.print(f"{tool} of {server_id}: already {decision}; unchanged", markup=False, highlight=False)
        return
    out.print(f"{tool} of {server_id}: {decision}", markup=False, highlight=False)
    for warning in after.warnings:
        if warning.code == "TOOL_NOT_KNOWN_YET":
            err.print(f"warning [{warning.code}]: {warning.message}", markup=False, highlight=False)
    notice = summary_change_notice(
        view, after, change="its tool policy changed", part="the tool policies are part of the connection summary"
    )
    for line in notice:
        out.print(line, markup=False, highlight=False)


def summary_change_notice(before: ServerView, after: ServerView, *, change: str, part: str) -> list[str]:
    """What a change of something in the connection summary (a secret, a tool policy) did to the
    server, in the settings page's words (R-1.4, R-2.1 to R-2.4).

    A new value changes the summary's digest, which clears trust and the last test and disables the
    server. The page says "This change touched something security-relevant: confirm the new
    summary, then test and enable again"; the CLI says the same and, for a server that was enabled,
    that it no longer is (`secret set` used to print "needs trust and test again" whatever happened,
    and never that the server had stopped).

    Args:
        change: What changed, as the notice says it ("its secret changed").
        part: Why trust was cleared, for a server that was trusted but not enabled ("the secret is
            part of the connection summary").
    Returns:
        The lines to print after the command's own line: none when trust was not touched.
    """
    if after.trusted or not before.trusted:
        return []
    steps = f"{suggested('trust', after.id)}, then {suggested('test', after.id)} and {suggested('enable', after.id)}"
    if before.enabled and not after.enabled:
        return [
            f"server '{after.id}' was disabled: {change}, which touched something security-relevant; "
            f"confirm the new summary, then test and enable again: {steps}"
        ]
    return [f"its trust was cleared: {part}; next: {steps}"]


def _secret_value() -> str:
    """The value for `secret set`: a hidden prompt on a terminal, else the first line of standard input.

    Raises:
        typer.Exit: code 2 (ANSWER_REQUIRED) when no value comes: standard input closed, or at its
            end before a line (an empty pipe would otherwise have set an empty secret). Nothing changed.
    """
    instead = (
        "pipe the value on standard input, e.g. printf '%s\\n' \"$VALUE\" | "
        f"{suggested('secret', 'set', 'ID', 'KEY', '--kind', 'KIND')}"
    )
    stdin = sys.stdin
    if stdin is not None and not stdin.closed and stdin.isatty():  # pyright: ignore[reportUnnecessaryComparison]
        return ask("value", instead=instead, hide_input=True)
    unanswerable = AnswerRequired(
        f"no value (standard input is closed or empty): nothing changed; {instead}", details={"question": "value"}
    )
    try:
        line = stdin.readline() if stdin is not None else ""  # pyright: ignore[reportUnnecessaryComparison]
    except (OSError, ValueError, RuntimeError):
        raise fail(unanswerable) from None
    if not line:
        raise fail(unanswerable)
    return line.rstrip("\n")


@secret_app.command("delete")
def secret_delete(
    server_id: str,
    key: str,
    kind: Annotated[str, typer.Option(help="environment, header, bearer or oauth.")],
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Delete a secret value and its ciphertext."""
    settings = settings_for_server(server_id, data_dir, profile)
    run_center(settings, lambda c: c.delete_secret(server_id, kind, key))
    out.print(f"secret {key} deleted")


@app.command()
def logs(server_id: str, url: HostUrl = None, data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """Show a server's last requests and stderr lines from the running host; sandbox refusals are marked."""
    settings = settings_for(data_dir)
    found = host_request(settings, url, "GET", f"/api/mcp/servers/{server_id}/logs")
    if as_json:
        print_json(found)
        return
    for line in log_lines(found):
        out.print(line, markup=False, highlight=False)
