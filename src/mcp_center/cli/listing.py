"""`mcp-center list`: every server, with its live state
and tool count when `serve` runs for the same data directory (R-3.11), and under a stdio server's
command its sandbox policy (`sandboxed (network none)` or `unconfined`, R-11.1).

The configuration comes from the data directory (the CLI reads it in process); the live state only
exists in the running `serve`, so the list asks it (`GET /api/mcp/servers` with the admin token, at
the address `serve` recorded in `<data dir>/serve.json`). When no `serve` answers, the table says
so instead of showing states it cannot know; a `serve` that accepts the connection but does not
answer within `LIVE_TIMEOUT_S` is waited for once per command, and stderr says so in one line.
Ids are never cut or folded: they are what every other command takes; names and errors give way
instead. A terminal of `WIDE_COLUMNS` or more gets one table (the command under the name, in the
name's column); a narrower one one line per server with its command at the whole width under it
(`servers_lines`), and one too narrow for that line (a 32-character id at 40-57 columns) the id
alone on a line, the rest under it.
"""

from __future__ import annotations

import textwrap
from typing import Any, Final

from rich import box
from rich.table import Table
from rich.text import Text

from mcp_center.cli._sandbox import policy_line
from mcp_center.cli._shared import err
from mcp_center.cli._store_serve import store_owner
from mcp_center.cli._suggest import suggested
from mcp_center.cli._wording import counted
from mcp_center.cli.host import answer_within, client_tls
from mcp_center.config import Settings
from mcp_center.errors import CenterError
from mcp_center.models import ErrorReason, is_array, is_object
from mcp_center.secrets import read_admin_token

__all__ = [
    "LIVE_TIMEOUT_S",
    "REASON_WORDS",
    "SILENT",
    "WIDE_COLUMNS",
    "Silent",
    "errored_hints",
    "folded",
    "live_servers",
    "served_views",
    "servers_lines",
    "servers_table",
    "statuses",
]

LIVE_TIMEOUT_S = 5.0
"""Seconds to wait for the running `serve` before listing without live states."""

WIDE_COLUMNS = 120
"""Terminals at least this wide get the table (`servers_table`); narrower ones `servers_lines`."""


class Silent:
    """The answer of a `serve` that did not answer within `LIVE_TIMEOUT_S` (stopped, hung): the
    command says so once on stderr (`served_json`) and asks it nothing more (issue 16)."""

    __slots__ = ()


SILENT: Final = Silent()
"""The one `Silent` value."""

_TRANSPORT = {"stdio": "stdio", "streamable_http": "http", "sse": "sse"}


def live_servers(settings: Settings, url: str | None = None) -> dict[str, dict[str, Any]] | Silent | None:
    """`{server id: status}` from the `serve` running for this data directory, `SILENT` when it did
    not answer in time (said on stderr), or None when none answers.

    Never raises: a missing admin token, a stopped `serve` or an error answer all mean "not live".
    """
    views = served_views(settings, url)
    return views if views is None or isinstance(views, Silent) else statuses(views)


def statuses(views: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`{server id: status}` of `served_views`' views (an empty status for a view without one)."""
    return {view["id"]: view.get("status") or {} for view in views}


def served_views(settings: Settings, url: str | None = None) -> list[dict[str, Any]] | Silent | None:
    """The server views (`GET /api/mcp/servers`: `ServerView.to_dict()` with `status`) of the `serve`
    running for this data directory (or at `url`), `SILENT` when it did not answer within
    `LIVE_TIMEOUT_S` seconds (said on stderr), or None when none answers.

    Never raises: a missing admin token, a stopped `serve` or an error answer all mean "not live".
    """
    answer = served_json(settings, "/api/mcp/servers", url)
    if isinstance(answer, Silent):
        return answer
    listed: object = answer.get("servers") if is_object(answer) else None
    if not is_array(listed) or not all(is_object(view) and isinstance(view.get("id"), str) for view in listed):
        return None
    return listed


def served_view(settings: Settings, server_id: str) -> dict[str, Any] | None:
    """One server's view (`GET /api/mcp/servers/{id}`, with its live `status`) from the `serve` of
    this data directory, or None when none answers or it answers anything but that view (an unknown
    id too: the caller then reads the data directory itself, and says what is wrong as always).

    Never raises.
    """
    from urllib.parse import quote

    answer = served_json(settings, f"/api/mcp/servers/{quote(server_id, safe='')}")
    return answer if is_object(answer) and answer.get("id") == server_id else None


def served_json(settings: Settings, path: str, url: str | None = None) -> object:
    """The parsed JSON of a successful `GET path` to the `serve` running for this data directory (or at
    `url`), with the directory's admin token; None when none runs, no token is known, or the request
    fails or is refused; `SILENT` when no whole answer came within `LIVE_TIMEOUT_S` seconds (one
    deadline, `host.answer_within`), after one line on stderr naming the serve and that the data
    directory's view is shown instead (issue 16).

    Never raises.
    """
    import httpx2

    owner = store_owner(settings) if url is None else None  # only a serve of this store (trialfix36)
    base = url or (owner.address if owner is not None else None)
    if base is None:
        return None
    try:
        token = read_admin_token(settings.data_dir, settings.admin_token)
    except CenterError:
        return None
    if token is None:
        return None

    def get() -> httpx2.Response:
        with httpx2.Client(
            base_url=base.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=LIVE_TIMEOUT_S,
            trust_env=False,
            verify=client_tls(base),
        ) as client:
            return client.get(path)

    try:
        response = answer_within(get, LIVE_TIMEOUT_S)
        return response.json() if response.is_success else None
    except (httpx2.TimeoutException, TimeoutError):  # a read's timeout, or `answer_within`'s deadline
        err.print(
            f"the serve on {base} did not answer within {LIVE_TIMEOUT_S:g} s; showing the data directory's view",
            markup=False,
            highlight=False,
        )
        return SILENT
    except (httpx2.HTTPError, ValueError):
        return None


REASON_WORDS: dict[str, str] = {
    ErrorReason.DNS: "host name not found",
    ErrorReason.REFUSED: "connection refused",
    ErrorReason.TLS: "TLS failed",
    ErrorReason.HTTP_STATUS: "unexpected HTTP status",
    ErrorReason.AUTH_REQUIRED: "authorization required",
    ErrorReason.STEP_UP_REQUIRED: "more scopes required",
    ErrorReason.PROTOCOL: "protocol error",
    ErrorReason.TIMEOUT: "timed out",
    ErrorReason.PROCESS_EXITED: "process exited",
    ErrorReason.SPAWN_FAILED: "could not start",
    ErrorReason.SANDBOX_REQUIRED: "needs a sandbox",
    ErrorReason.SANDBOX_UNAVAILABLE: "sandbox unavailable",
    ErrorReason.NETWORK: "network error",
    ErrorReason.SESSION_EXPIRED: "session expired",
    ErrorReason.CLOSED: "connection closed",
}
"""Each attributed reason (`details.reason`) in plain words, as the settings page says it
(`web/static/js/format.js`, REASON_PHRASE); the API word stays in the JSON (`list --json`)."""


def _state(status: dict[str, Any] | None, enabled: bool) -> Text:
    if not enabled:
        return Text("off", style="dim")
    if status is None:
        return Text("?", style="dim")
    state = str(status.get("state") or "disconnected")
    if state == "error":
        error: dict[str, Any] = status.get("error") or {}
        details: dict[str, Any] = error.get("details") or {}
        reason = str(details.get("reason") or "")
        words = REASON_WORDS.get(reason) or str(error.get("code") or "")
        return Text(f"error\n{words}" if words else "error", style="red")
    style = {"ready": "green", "connecting": "cyan"}.get(state, "dim" if not enabled else "")
    return Text(state, style=style)


def _name_and_target(view: dict[str, Any]) -> Text:
    """The name, and under it (dim) what the server runs or contacts, whole: a cut command could
    look like another, real one; for a stdio server, its sandbox policy on a line of its own."""
    target = view.get("url") or " ".join([str(view.get("command", "")), *map(str, view.get("args") or [])])
    text = Text(str(view.get("name") or ""))
    if target:
        text.append("\n" + target, style="dim")
    if view.get("transport") == "stdio":
        text.append("\n" + policy_line(view), style="dim")
    return text


def servers_table(servers: list[dict[str, Any]], live: dict[str, dict[str, Any]] | None) -> Table:
    """The list as a table: id, name (and the command or URL), type (transport), state (`off` when
    disabled) and tools when live, else on (enabled), and the next step (`trust`, `test` or
    `enable`: the `mcp-center` command to run with the id).

    `live` is `live_servers()`: None leaves the state and tool columns out (no `serve` to ask).
    """
    # Live, a disabled server's state is "off": the state column says what "on" would.
    columns = ["id", "name", "type", *(["state", "tools"] if live is not None else ["on"])]
    columns.append("next")
    table = Table(*columns, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.columns[0].no_wrap = True  # what every other command takes: never cut
    table.columns[1].overflow = "fold"
    table.columns[1].ratio = 1  # the name takes what is left, and wraps
    fixed = {"type": 5, "on": 3, "state": 12, "tools": 5, "next": 6}
    for index, name in enumerate(columns):
        if name in fixed:
            table.columns[index].width = fixed[name]
            table.columns[index].overflow = "fold"
    for view in servers:
        enabled = bool(view.get("enabled"))
        step = _step(view, live)
        row = [
            Text(view["id"]),
            _name_and_target(view),
            Text(_TRANSPORT.get(str(view.get("transport")), str(view.get("transport")))),
        ]
        if live is not None:
            status = live.get(view["id"])
            count = status.get("tool_count") if status else None
            row += [_state(status, enabled), Text("-" if count is None else str(count))]
        else:
            row.append(Text("yes" if enabled else "no"))
        row.append(Text(step))
        table.add_row(*row)
    return table


def _step(view: dict[str, Any], live: dict[str, dict[str, Any]] | None) -> str:
    """The next `mcp-center` command for the server: what it needs (`trust`, `test`), `enable`, or
    `logs` when it is enabled and its live state is `error` (see why, then `test`: `errored_hints`)."""
    listed: list[str] = view.get("needs") or []
    needs = [n for n in listed if n != "enable"]
    if needs:
        return needs[0]
    if not view.get("enabled"):
        return "enable"
    return "logs" if _errored(view, live) else "-"


def _errored(view: dict[str, Any], live: dict[str, dict[str, Any]] | None) -> bool:
    status = live.get(view["id"]) if live is not None else None
    return bool(view.get("enabled")) and status is not None and status.get("state") == "error"


def errored_hints(
    servers: list[dict[str, Any]], live: dict[str, dict[str, Any]] | None, settings: Settings
) -> list[str]:
    """One line per enabled server whose live state is `error`: the commands that show why
    (`mcp-center logs ID`) and check it again (`mcp-center test ID`), for under the list (issue 16)."""
    return [
        f"{view['id']} is in error: see why with '{suggested('logs', str(view['id']), settings=settings)}', "
        f"then '{suggested('test', str(view['id']), settings=settings)}'"
        for view in servers
        if _errored(view, live)
    ]


def servers_lines(servers: list[dict[str, Any]], live: dict[str, dict[str, Any]] | None, width: int) -> list[Text]:
    """The list for a terminal narrower than `WIDE_COLUMNS`: one line per server (id, name, type, state
    and tools or on, next), and under it, indented and at the terminal's whole width, what it runs or
    contacts (whole, broken at spaces), its sandbox policy and an error's reason.

    In the table, at 80 columns the command had the name's column (about 38 characters), so
    `npx -y @modelcontextprotocol/server-github@2025.4.8` took three lines broken inside words (issue
    16). Here a name longer than its column ends in "…" (the id beside it is what commands take);
    the id and the command are never cut.

    Args:
        width: The terminal's width in columns.
    Returns:
        The lines to print, the header and its rule first; none is wider than `width` unless an id
        is (a wrapped command's later lines are indented further).
    """
    states = live is not None
    id_width = max([2, *(len(str(view["id"])) for view in servers)])
    tail = [("type", 5), *([("state", 12), ("tools", 5)] if states else [("on", 3)]), ("next", 6)]
    fixed = id_width + 1 + sum(w + 1 for _, w in tail)
    if fixed + _MIN_NAME > width:  # the row would wrap its header and every line (a long id at 40-57 columns)
        return _stacked_lines(servers, live, width)
    longest_name = max([len("name"), *(len(str(view.get("name") or "")) for view in servers)])
    name_width = max(_MIN_NAME, min(width - fixed, longest_name))  # sized to the names, never padded past them

    def row(cells_: list[tuple[Text, int]]) -> Text:
        line = Text()
        for index, (cell, cell_width) in enumerate(cells_):
            cell.truncate(cell_width, overflow="ellipsis", pad=index < len(cells_) - 1)
            line.append_text(cell)
            if index < len(cells_) - 1:
                line.append(" ")
        return line

    header = [(Text("id"), id_width), (Text("name"), name_width), *((Text(n), w) for n, w in tail)]
    lines = [row(header), Text("─" * min(width, fixed + name_width))]
    for view in servers:
        shown = [(Text(str(view["id"])), id_width), (Text(str(view.get("name") or "")), name_width)]
        kind = str(view.get("transport"))
        shown.append((Text(_TRANSPORT.get(kind, kind)), 5))
        reason = ""
        if live is not None:
            state_line, count, reason = _live_state(live, view)
            shown += [(state_line, 12), (Text("-" if count is None else str(count)), 5)]
        else:
            shown.append((Text("yes" if view.get("enabled") else "no"), 3))
        shown.append((Text(_step(view, live)), 6))
        lines.append(row(shown))
        lines += _details(view, reason, width)
    return lines


def folded(text: str, width: int) -> list[str]:
    """`text` broken at spaces into lines of at most `width` columns, with no trailing space (rich's
    own wrapping left one at each break); a word longer than that (a path) is cut across lines."""
    return textwrap.wrap(text, max(8, width), break_on_hyphens=False) or [""]


def _live_state(live: dict[str, dict[str, Any]], view: dict[str, Any]) -> tuple[Text, int | None, str]:
    """A server's live state for a row of `servers_lines` or `_stacked_lines`: the state's first line
    (styled), its tool count (None when unknown) and the error reason under it ("" when none)."""
    status = live.get(view["id"])
    count = status.get("tool_count") if status else None
    state = _state(status, bool(view.get("enabled")))
    state_line, _, reason = state.plain.partition("\n")
    return Text(state_line, style=state.style), count, reason


_MIN_NAME = 8
"""Columns the name keeps in a row of `servers_lines`; with fewer, `_stacked_lines` is used."""


def _details(view: dict[str, Any], reason: str, width: int) -> list[Text]:
    """What a server runs or contacts, its sandbox policy and an error's reason, indented, broken at
    spaces to `width` (a word longer than that stays whole)."""
    target = view.get("url") or " ".join([str(view.get("command", "")), *map(str, view.get("args") or [])])
    details = [str(target)] if target else []
    details += [policy_line(view)] if view.get("transport") == "stdio" else []
    details += [f"error: {reason}"] if reason else []
    lines: list[Text] = []
    for detail in details:
        wrapped = textwrap.wrap(
            detail,
            max(8, width),
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
            drop_whitespace=True,
        )
        lines += [Text(part, style="dim") for part in wrapped]
    return lines


def _stacked_lines(servers: list[dict[str, Any]], live: dict[str, dict[str, Any]] | None, width: int) -> list[Text]:
    """`servers_lines` for a terminal too narrow for its row (an id of 32 characters at 40-57
    columns wrapped the header and every row): each server's id alone on a line, never cut, its name
    under it (broken at spaces), then its type, state, tools and next step joined by " · " (each
    whole, as many on a line as fit), then its details."""
    lines = [
        Text("id"),
        Text("  name"),
        Text("  type · " + ("state · tools" if live is not None else "on") + " · next"),
    ]
    for line in lines:
        line.truncate(width, overflow="ellipsis")
    lines.append(Text("─" * min(width, max(len(str(v["id"])) for v in servers))))
    for view in servers:
        kind = str(view.get("transport"))
        parts = [_TRANSPORT.get(kind, kind)]
        reason = ""
        if live is not None:
            state_line, count, reason = _live_state(live, view)
            parts += [state_line.plain, "- tools" if count is None else counted(count, "tool")]
        else:
            parts.append("on" if view.get("enabled") else "off")
        parts.append(f"next: {_step(view, live)}")
        lines.append(Text(str(view["id"]), style="bold"))
        name = textwrap.wrap(str(view.get("name") or ""), max(8, width), initial_indent="  ", subsequent_indent="    ")
        lines += [Text(part) for part in name]
        packed = [f"  {parts[0]}"]  # each fact whole: "next: trust" is never broken after its colon
        for part in parts[1:]:
            if len(packed[-1]) + 3 + len(part) <= width:
                packed[-1] += f" · {part}"
            else:
                packed.append(f"  {part}")
        lines += [Text(part) for part in packed]
        lines += _details(view, reason, width)
    return lines
