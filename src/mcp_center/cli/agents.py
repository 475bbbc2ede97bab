"""What agents see, from a terminal: prompts, resources, and approvals of a running host (R-5.3 to R-5.5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from mcp_center.cli._clip import FullOpt, clip, description_cells, full_hint
from mcp_center.cli._shared import (
    DataDir,
    HostUrl,
    JsonOut,
    ProfileOpt,
    app,
    approvals_app,
    cells,
    err,
    fail,
    has_state,
    host_request,
    out,
    print_json,
    run_center,
    settings_for,
    shown,
)
from mcp_center.cli._suggest import suggested
from mcp_center.cli._where import data_dir_phrase
from mcp_center.cli.host import host_url
from mcp_center.errors import ApprovalAmbiguous
from mcp_center.models import is_object

if TYPE_CHECKING:  # the registry needs the SDK's types: loaded by the commands that use it
    from mcp_center.registry import PromptEntry, ResourceEntry


@app.command()
def prompts(data_dir: DataDir = None, profile: ProfileOpt = None, as_json: JsonOut = False) -> None:
    """List the prompts of enabled servers as /server:prompt commands.

    \f
    R-5.4 (the help text ends at the form feed above).
    """
    settings = settings_for(data_dir, profile)
    items: list[PromptEntry] = []
    if has_state(settings):
        with err.status("connecting to enabled servers..."):
            items = run_center(settings, lambda c: c.list_prompts())
    if as_json:
        print_json([prompt.to_dict() for prompt in items])
        return
    if not items:
        out.print(f"no prompts from enabled servers in {data_dir_phrase(settings)}", highlight=False, markup=False)
        return
    table = Table("command", "arguments", "description")
    for prompt in items:
        arguments = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
        table.add_row(*cells(prompt.command, arguments, (prompt.prompt.description or "")[:80]))
    out.print(table)


@app.command()
def resources(
    query: Annotated[str, typer.Argument(help="Matches name, title, URI and description (blank: all).")] = "",
    limit: Annotated[int, typer.Option(help="At most this many results (1-500).")] = 50,
    full: FullOpt = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
    as_json: JsonOut = False,
) -> None:
    """Search the resources and resource templates of enabled servers, like an @ mention.

    A description longer than one table line is cut at a word, marked "…"; `--full` (or `--json`)
    shows it whole.

    \f
    R-5.5 (the help text ends at the form feed above); cli36: descriptions were cut at 60
    characters mid-word, now as `tools` cuts them (`_clip.description_cells`).
    """
    settings = settings_for(data_dir, profile)
    found: tuple[ResourceEntry, ...] = ()
    if has_state(settings):
        with err.status("connecting to enabled servers..."):
            found = run_center(settings, lambda c: c.search_resources(query, limit=limit)).resources
    if as_json:
        print_json([entry.to_dict() for entry in found])
        return
    if not found:
        what = f"matching {query!r}" if query else "at all"
        out.print(
            f"no resources {what} in enabled servers of {data_dir_phrase(settings)}", highlight=False, markup=False
        )
        return
    table = Table("kind", "mention", "name", "description")
    shown, cut = description_cells((entry.item.description or "" for entry in found), full=full)
    for entry, description in zip(found, shown, strict=True):
        table.add_row(*cells(entry.kind, entry.mention, entry.item.name, description))
    out.print(table)
    if cut:  # once, under the table, as `tools` says it
        again = [*([query] if query else []), *([f"--limit={limit}"] if limit != 50 else []), "--full"]
        out.print(full_hint(suggested("resources", *again)), markup=False, highlight=False)


WIDE_TABLE_COLUMNS = 110
"""Terminal width from which approvals are a table; narrower ones get one block per approval."""


def _who(caller: object) -> str:
    """Who asked, from an approval's `caller` (`GET /api/approvals`): the token's name, the MCP
    client (`clientInfo` name and version) and the way in, e.g. `ci-bot, client claude-code 2.1,
    via gateway`; `-` when unknown (R-5.3)."""
    if not is_object(caller):
        return "-"
    words: list[str] = []
    token = caller.get("token_name")
    if isinstance(token, str) and token:
        words.append(token)
    client = caller.get("client")
    if is_object(client) and isinstance(client.get("name"), str):
        version = client.get("version")
        words.append(f"client {client['name']}" + (f" {version}" if isinstance(version, str) and version else ""))
    via = caller.get("via")
    if isinstance(via, str) and via:
        words.append(f"via {via}")
    return ", ".join(words) or "-"


def _approvals_view(items: list[dict[str, Any]], width: int) -> Table | Group:
    """Approvals for a terminal `width` characters wide: a table, or (narrower than
    `WIDE_TABLE_COLUMNS`) one block per approval, so ids, states and hints are never cut or folded
    word by word. The id is what `approve ID` takes; "asked by" is the `caller` (token, client, way in)."""
    rows = [
        (
            item["id"],
            item["state"],
            item["tool"],
            _who(item.get("caller")),
            clip(json.dumps(item["arguments"], ensure_ascii=False), 60),
            ", ".join(f"{k}={v}" for k, v in item["hints"].items()),
            item["expires_at"],
        )
        for item in items
    ]
    if width < WIDE_TABLE_COLUMNS:
        blocks: list[Text] = []
        for approval_id, state, tool, who, arguments, hints, expires in rows:
            block = Text(f"{approval_id}  {state}\n", style="bold")
            block.append(f"  tool:      {tool}\n  asked by:  {who}\n  arguments: {arguments}\n", style="")
            block.append(f"  hints:     {hints or '-'}\n  expires:   {expires}\n", style="")
            blocks.append(block)
        return Group(*blocks)
    table = Table("id", "state", "tool", "asked by", "arguments", "hints", "expires")
    table.columns[0].no_wrap = table.columns[1].no_wrap = True  # the id is what `approve ID` takes
    for column in table.columns[2:]:
        column.overflow = "fold"
    for row in rows:
        table.add_row(*cells(*row))
    return table


def _show_approvals(include_closed: bool, url: str | None, data_dir: Path | None, as_json: bool) -> None:
    query = "?include_closed=true" if include_closed else ""
    items: list[dict[str, Any]] = host_request(settings_for(data_dir), url, "GET", f"/api/approvals{query}")[
        "approvals"
    ]
    if as_json:
        print_json(items)
        return
    if not items:
        settings = settings_for(data_dir)
        out.print(
            f"no pending approvals at {host_url(settings, url)} (data directory {settings.data_dir})",
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


APPROVAL_ID_CHARS = 32
"""An approval id is 32 hex digits; a shorter one given to `approve`/`deny` is a prefix of one."""
MIN_PREFIX_CHARS = 4
"""The shortest prefix looked up: shorter ones are sent as they are (and not found)."""


def approval_of_prefix(prefix: str, approvals: list[dict[str, Any]]) -> str:
    """The id of the one approval `prefix` names, as git takes a unique prefix of a commit (issue 16).

    Args:
        prefix: What was typed: a whole id, or at least `MIN_PREFIX_CHARS` of its first characters.
        approvals: `GET /api/approvals?include_closed=true`'s items (`id`, `state`).
    Returns:
        The whole id (lowercase, as ids are lowercase hex; an uppercase prefix matches too) of the one
        approval, pending or closed, whose id starts with `prefix`; `prefix` itself (lowercased)
        when it is a whole id, shorter than `MIN_PREFIX_CHARS` or names none (the host then answers
        MCP_APPROVAL_NOT_FOUND).
    Raises:
        typer.Exit: code 2 after `error [MCP_APPROVAL_AMBIGUOUS]` (R-5.3) when several approvals,
            whatever their states, start with it (git's rule: a closed one the user looked at never
            gives way to a newer pending one): nothing is decided.
    """
    prefix = prefix.lower()
    if len(prefix) >= APPROVAL_ID_CHARS or len(prefix) < MIN_PREFIX_CHARS:
        return prefix
    matching = [a for a in approvals if str(a.get("id", "")).startswith(prefix)]
    if len(matching) == 1:
        return str(matching[0]["id"])
    if not matching:
        return prefix
    ids = [str(a["id"]) for a in matching]
    pending = sum(1 for a in matching if a.get("state") == "pending")
    raise fail(
        ApprovalAmbiguous(
            f"{len(ids)} approvals ({pending} pending) have ids starting with '{shown(prefix)}': "
            f"nothing was decided; give more of the id (see '{suggested('approvals', 'list')}')",
            details={"prefix": prefix, "count": len(ids), "pending": pending, "ids": ids[:10]},
        )
    )


def _decide(approval_id: str, decision: str, url: str | None, data_dir: Path | None) -> None:
    settings = settings_for(data_dir)
    approval_id = approval_id.lower()
    if MIN_PREFIX_CHARS <= len(approval_id) < APPROVAL_ID_CHARS:
        listed = host_request(settings, url, "GET", "/api/approvals?include_closed=true")["approvals"]
        approval_id = approval_of_prefix(approval_id, listed)
    decided = host_request(settings, url, "POST", f"/api/approvals/{approval_id}", {"decision": decision})
    out.print(f"{decided['state']}: {decided['tool']} ({decided['id']})", markup=False, highlight=False)


ApprovalId = Annotated[
    str, typer.Argument(help="The approval's id, or its first characters (at least 4) when no other starts so.")
]


@approvals_app.command("approve")
def approvals_approve(approval_id: ApprovalId, url: HostUrl = None, data_dir: DataDir = None) -> None:
    """Approve a pending call: it is sent to the server."""
    _decide(approval_id, "approve", url, data_dir)


@approvals_app.command("deny")
def approvals_deny(approval_id: ApprovalId, url: HostUrl = None, data_dir: DataDir = None) -> None:
    """Deny a pending call: the server never sees it."""
    _decide(approval_id, "deny", url, data_dir)
