"""Ask the serve that owns the data directory, instead of running the host in this process (cli39).

`enable`, `disable`, `test` and `tools` change or read a server's live state. Beside a running
`serve` (R-9.2: one serve owns the directory), that state is the serve's: run in-process, they
started a throw-away copy of the server (`enable` printed that copy's "state: ready", `tools` listed
what that copy offered a client declaring no roots, sampling or elicitation) and spent the host's
imports, seconds of CPU. `served` sends the command's REST request to that serve instead (admin
token of the directory, `cli.host.HostClient`); when none can be asked the command runs in-process
as before.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from mcp_center.cli._shared import fail
from mcp_center.cli._suggest import suggested
from mcp_center.config import Settings
from mcp_center.errors import AdminAuthRequired, CenterError, HostRequestFailed, ServerUnreachable
from mcp_center.interchange.display import display_url
from mcp_center.models import is_object
from mcp_center.secrets.keyfiles import ADMIN_TOKEN_FILE
from mcp_center.store.running import running_owner

__all__ = [
    "CHANGE_TIMEOUT_S",
    "START_MARGIN_S",
    "hung",
    "no_token_beside_serve",
    "serve_to_ask",
    "served",
    "server_path",
    "start_wait_s",
]

CHANGE_TIMEOUT_S = 120.0
"""Seconds `enable`, `disable`, `test` and `tools` wait at least for the serve's whole answer, once it
answered the look at the server (`served`): each may start the server (a cold `npx`/`uvx` start can
take a minute; the serve's own connect timeout ends it first)."""


START_MARGIN_S = 60.0
"""Seconds `start_wait_s` adds to a server's start-up timeout (the serve's own steps around it)."""


def start_wait_s(view: object) -> float:
    """Seconds to wait for a serve's answer to a request that may start the server of `view` (its JSON
    from `GET /api/mcp/servers/{id}`): its `startup_timeout_s` (up to 600 s) plus `START_MARGIN_S`, at
    least `CHANGE_TIMEOUT_S`; a fixed 120 s ended the wait for a server allowed longer and blamed the
    serve (break39). `CHANGE_TIMEOUT_S` for a view without one (an error answer)."""
    configured: object = view.get("startup_timeout_s") if is_object(view) else None
    if not isinstance(configured, int | float) or isinstance(configured, bool):
        return CHANGE_TIMEOUT_S
    return max(CHANGE_TIMEOUT_S, float(configured) + START_MARGIN_S)


def serve_to_ask(settings: Settings) -> str | None:
    """The address of the live serve with file state that owns the data directory (from its
    serve.json), or None: none, one not listening yet, one on a database, or a database given here."""
    if settings.database_url is not None:
        return None
    owner = running_owner(settings.data_dir)
    return owner.address if owner is not None and owner.database is None else None


def server_path(server_id: str, *rest: str) -> str:
    """`/api/mcp/servers/{id}[/rest...]`, the id percent-encoded (an id is never a path of its own)."""
    return "/".join([f"/api/mcp/servers/{quote(server_id, safe='')}", *rest])


def served(settings: Settings, method: str, server_id: str, action: str) -> Any | None:
    """The answer (parsed JSON) of the serve that owns `settings`' data directory to `method
    /api/mcp/servers/{server_id}/{action}`, or None when there is no such serve to ask: a database
    given to this command (`MCP_CENTER_DATABASE_URL`), no live serve on the directory, one whose state
    is in a database (the in-process path refuses that, exit 4), or one not listening yet or no
    longer (connection refused). The caller then runs the command in-process.

    Two requests on one client (serve.json and the admin token read once): first the server's view,
    which the serve answers from its store without starting anything, within `ANSWER_TIMEOUT_S`
    (5 s); a serve that accepts the connection and says nothing in that time is said so at once (busy,
    hung or stopped: `hung`). Then the action, whose answer may wait for the server to start: up to
    `start_wait_s` of that view (cli40).

    Raises:
        typer.Exit: the serve answered with an error (printed as `fail` prints one: its code, next
            step, did-you-mean; the exit code of that code), did not answer the look at the server
            within `ANSWER_TIMEOUT_S` (MCP_SERVER_UNREACHABLE, `details.reason` `hung`, exit 7:
            nothing was asked of it), or accepted the action and gave no whole answer in its wait
            (MCP_SERVER_UNREACHABLE, exit 7: a change may have happened there, so it is not done
            again here); no admin token here to ask the live serve with (ADMIN_AUTH_REQUIRED, exit 6,
            `no_token_beside_serve`: run here, the command would start a second copy of the server).
    """
    address = serve_to_ask(settings)
    if address is None:
        return None
    from mcp_center.cli.host import ANSWER_TIMEOUT_S, HostClient

    try:
        with HostClient(settings, timeout_s=ANSWER_TIMEOUT_S, recorded=address) as client:
            try:
                view: object = client.call("GET", server_path(server_id))
            except HostRequestFailed:  # it answers: the action says what is wrong, once
                view = None
            except ServerUnreachable as exc:
                if exc.details.get("reason") != "timeout":
                    raise
                raise hung(settings, client.base_url, ANSWER_TIMEOUT_S) from None
            return client.call(method, server_path(server_id, action), timeout_s=start_wait_s(view))
    except AdminAuthRequired:
        raise fail(no_token_beside_serve(settings, address), settings=settings, serve=True) from None
    except ServerUnreachable as exc:
        if exc.details.get("reason") == "refused":
            return None
        raise fail(exc, settings=settings, serve=True) from None
    except CenterError as exc:  # the serve's error answer (HostRequestFailed) among them
        raise fail(exc, settings=settings) from None


def no_token_beside_serve(settings: Settings, address: str) -> AdminAuthRequired:
    """The refusal of a command that must ask the live serve at `address` but finds no admin token
    here (no MCP_CENTER_ADMIN_TOKEN, and `<data dir>/admin-token` missing: deleted, or the serve got
    its token from its environment). Running it in this process instead would start a second copy of
    the server beside the serve's (two sessions, a tool call run outside the serve's logs), so it is
    not run at all (exit 6); the message names the file and the two ways to give the token."""
    path = settings.data_dir / ADMIN_TOKEN_FILE
    return AdminAuthRequired(
        f"a serve runs on this data directory at {display_url(address)}, and this command must ask it "
        f"(run here, it would start a second copy of the server beside the serve's), but there is no "
        f"admin token to ask it with: {path} is missing and MCP_CENTER_ADMIN_TOKEN is not set. Set "
        "MCP_CENTER_ADMIN_TOKEN to the serve's admin token, or restart the serve without one in its "
        "environment (it writes a new admin-token file when it starts); nothing was done",
        details={"data_dir": str(settings.data_dir), "token_file": str(path), "reason": "no_token_beside_serve"},
    )


def hung(
    settings: Settings, url: str, seconds: float, unsent: str = "nothing was asked of it yet", *, again: bool = True
) -> ServerUnreachable:
    """The serve took the connection and did not answer a look (one server's record, or its pending
    questions) in `seconds`. It is not starting a server (that look never waits for one), but it may
    be busy (its event loop blocked for a while), or hung, or stopped (SIGSTOP): the message says it
    did not answer in time, never that it is dead (cli36). `unsent` says what was therefore not
    asked (`call`: "the call was not sent"), or what became of what was; `again`: whether running
    the command again is the next step (not for a call that was sent: it may have run)."""
    shown = display_url(url)
    restart = f"see its log and restart it ('{suggested('serve', settings=settings)}' once it is stopped)"
    step = (
        f"Run this command again in a moment; if the serve still does not answer, {restart}"
        if again
        else f"If the serve stays silent, {restart}"
    )
    return ServerUnreachable(
        f"the serve on {shown} accepted the connection but did not answer within {seconds:g} s: it may "
        f"be busy, or hung or stopped; {unsent}. {step}",
        details={"reason": "hung", "url": shown},
    )
