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
from mcp_center.config import Settings
from mcp_center.errors import AdminAuthRequired, CenterError, ServerUnreachable
from mcp_center.models import is_object
from mcp_center.store.running import running_owner

__all__ = ["CHANGE_TIMEOUT_S", "START_MARGIN_S", "served", "server_path", "start_wait_s"]

CHANGE_TIMEOUT_S = 120.0
"""Seconds `enable`, `test` and `tools` wait for the serve's whole answer: each may start the
server (a cold `npx`/`uvx` start can take a minute; the serve's own connect timeout ends it first)."""


START_MARGIN_S = 60.0
"""Seconds `start_wait_s` adds to a server's start-up timeout (the serve's own steps around it)."""


def start_wait_s(settings: Settings, server_id: str) -> float:
    """Seconds to wait for a serve's answer to a request that starts `server_id` (`enable`, `test`):
    its `startup_timeout_s` (up to 600 s) plus `START_MARGIN_S`, at least `CHANGE_TIMEOUT_S`; a fixed
    120 s ended the wait for a server allowed longer and blamed the serve (break39). The view is read
    from the serve when one owns the directory, else from nothing (the in-process path has its own)."""
    from mcp_center.cli.host import ANSWER_TIMEOUT_S, HostClient

    if not _serve_to_ask(settings):
        return CHANGE_TIMEOUT_S
    try:  # quietly: the request that follows says what is wrong, once
        with HostClient(settings, timeout_s=ANSWER_TIMEOUT_S) as client:
            view: object = client.call("GET", server_path(server_id))
    except CenterError:
        return CHANGE_TIMEOUT_S
    configured: object = view.get("startup_timeout_s") if is_object(view) else None
    if not isinstance(configured, int | float) or isinstance(configured, bool):
        return CHANGE_TIMEOUT_S
    return max(CHANGE_TIMEOUT_S, float(configured) + START_MARGIN_S)


def _serve_to_ask(settings: Settings) -> bool:
    """True when a live serve with file state owns the data directory and no database was given here."""
    if settings.database_url is not None:
        return False
    owner = running_owner(settings.data_dir)
    return owner is not None and owner.address is not None and owner.database is None


def server_path(server_id: str, *rest: str) -> str:
    """`/api/mcp/servers/{id}[/rest...]`, the id percent-encoded (an id is never a path of its own)."""
    return "/".join([f"/api/mcp/servers/{quote(server_id, safe='')}", *rest])


def served(settings: Settings, method: str, path: str, *, timeout_s: float = CHANGE_TIMEOUT_S) -> Any | None:
    """The answer (parsed JSON) of the serve that owns `settings`' data directory to `method path`,
    or None when there is no such serve to ask: a database given to this command
    (`MCP_CENTER_DATABASE_URL`), no live serve on the directory, one whose state is in a database
    (the in-process path refuses that, exit 4), one not listening yet or no longer (connection
    refused), or no admin token known here. The caller then runs the command in-process.

    Raises:
        typer.Exit: the serve answered with an error (printed as `fail` prints one: its code, next
            step, did-you-mean; the exit code of that code), or accepted the request and gave no
            whole answer within `timeout_s` seconds (MCP_SERVER_UNREACHABLE, exit 7: a change may
            have happened there, so it is not done again here).
    """
    if not _serve_to_ask(settings):
        return None
    from mcp_center.cli.host import HostClient

    try:
        with HostClient(settings, timeout_s=timeout_s) as client:
            return client.call(method, path)
    except AdminAuthRequired:
        return None
    except ServerUnreachable as exc:
        if exc.details.get("reason") == "refused":
            return None
        raise fail(exc, settings=settings, serve=True) from None
    except CenterError as exc:  # the serve's error answer (HostRequestFailed) among them
        raise fail(exc, settings=settings) from None
