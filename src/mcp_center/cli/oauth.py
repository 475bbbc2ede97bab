"""`mcp-center auth SERVER_ID`: authorize an OAuth server from a terminal (R-4.9), through a running host.

The authorization must complete in the process that started it (its PKCE verifier and `state` live
in that process's memory, and the browser returns to that process's `/oauth/callback`), so this
command talks to the REST API of the running `mcp-center serve` instead of opening the data
directory itself. It shows the issuer and scopes first, prints the URL to open (no browser is
launched: headless hosts are the point), then either waits for the callback by polling the server
view, or takes the redirected URL pasted by the user when the browser cannot reach this host.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from mcp_center.cli._prompts import ask
from mcp_center.cli._shared import DataDir, ProfileOpt, app, err, fail, fail_host, settings_for, styled
from mcp_center.cli.host import HostClient
from mcp_center.config import Settings
from mcp_center.errors import CenterError, HostRequestFailed
from mcp_center.interchange.display import display_url
from mcp_center.models import is_array
from mcp_center.secrets import install_log_redaction

__all__ = ["AuthReport", "HostRequestFailed", "authorize"]  # the error `authorize` raises, from errors.py

POLL_INTERVAL_S = 1.0
REQUEST_TIMEOUT_S = 60.0
"""Seconds for one API request (a start runs discovery and registration)."""


class AuthReport:
    """Where the command's output goes (the CLI prints; tests capture)."""

    def __init__(self, say: Callable[[str], None], ask: Callable[[str], str]) -> None:
        self.say = say
        self.ask = ask


def authorize(
    settings: Settings,
    server_id: str,
    report: AuthReport,
    *,
    base_url: str | None = None,
    issuer: str | None = None,
    wait: bool = True,
    paste: bool = False,
    timeout_s: float = 300.0,
) -> bool:
    """Run one authorization through the host's API.

    Args:
        settings: Locates the admin token (and the default base URL).
        base_url: The running host's URL (default: where the serve of the data directory listens).
        issuer: The issuer to use when the server lists several.
        wait: Poll until the callback arrived (at most `timeout_s` seconds).
        paste: Ask for the redirected URL instead of waiting (the browser cannot reach the host).
    Returns:
        True when the server is authorized at the end (False: not waited for).
    Raises:
        HostRequestFailed: the host refused a step (its code, message and status are kept).
        ServerUnreachable: no running host. AdminAuthRequired: no admin token.
        TimeoutError: no callback within `timeout_s` seconds.
    """
    with HostClient(settings, base_url, timeout_s=REQUEST_TIMEOUT_S) as client:
        path = f"/api/mcp/servers/{server_id}"
        shown: dict[str, Any] = client.call("GET", path).get("oauth") or {}
        before = shown.get("authorized_at")
        started = client.call("POST", f"{path}/oauth/start", {"issuer": issuer} if issuer else None)
        scopes = " ".join(started["scopes"]) or "(none requested)"
        if started.get("previous_issuer"):
            report.say(f"note: the authorization server changed from {started['previous_issuer']}")
        report.say(f"authorization server (issuer): {started['issuer']}")
        report.say(f"scopes: {scopes}")
        if started["authorized"]:
            report.say(f"authorized ({started['client_id_source']} client, no browser step)")
            return True
        report.say("open this URL in a browser and log in:")
        report.say(f"  {started['authorization_url']}")
        if paste:
            pasted = report.ask("paste the URL the browser was sent to after the login").strip()
            done = client.call("POST", f"{path}/oauth/complete", {"callback_url": pasted})
            report.say(f"authorized by {done['issuer']}")
            return True
        if not wait:
            report.say(
                f"the browser returns to {display_url(client.base_url)}/oauth/callback, "
                "which completes the authorization"
            )
            return False
        report.say("waiting for the login to finish (Ctrl+C to stop waiting) ...")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL_S)
            oauth: dict[str, Any] = client.call("GET", path).get("oauth") or {}
            if oauth.get("authorized") and oauth.get("authorized_at") != before:
                report.say(f"authorized by {oauth.get('issuer')} (scopes: {' '.join(oauth.get('scopes') or [])})")
                return True
            if not oauth.get("pending") and oauth.get("last_error"):
                error: dict[str, Any] = oauth["last_error"]
                raise HostRequestFailed(
                    str(error.get("code")), str(error.get("message")), dict(error.get("details") or {}), 409
                )
        raise TimeoutError(f"no login finished within {timeout_s:g} s; run the command again")


@app.command("auth")
def auth_(
    server_id: str,
    issuer: Annotated[str | None, typer.Option(help="The issuer to log in with when the server lists several.")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until the browser login completes.")] = True,
    paste: Annotated[
        bool, typer.Option("--paste", help="Paste the redirected URL (when the browser cannot reach this host).")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the login.")] = 300.0,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="MCP_CENTER_URL",
            help="URL of the running host (default: the serve of the data directory, from its serve.json).",
        ),
    ] = None,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Authorize an OAuth server: shows the issuer and scopes, prints the URL to open, waits.

    Talks to the running `mcp-center serve` (the browser returns to its /oauth/callback).
    """
    install_log_redaction()
    report = AuthReport(
        say=lambda line: print(line, flush=True),  # plain print: a long URL must not be wrapped
        ask=lambda question: ask(
            question, instead="run auth in a terminal, or without --paste to wait for the browser's return"
        ),
    )
    settings = settings_for(data_dir, profile)
    try:
        authorize(
            settings,
            server_id,
            report,
            base_url=url,
            issuer=issuer,
            wait=wait,
            paste=paste,
            timeout_s=timeout,
        )
    except HostRequestFailed as exc:
        exit = fail_host(exc)
        issuers = exc.details.get("issuers")
        if is_array(issuers) and issuers:
            err.print("  choose one with --issuer:", highlight=False)
            for item in issuers:
                err.print(f"    {item}", markup=False, highlight=False)
        raise exit from None
    except CenterError as exc:
        raise fail(exc, settings=settings, serve=url is None) from None
    except TimeoutError as exc:
        err.print(styled(("error", "red"), f": {exc}"))
        raise typer.Exit(8) from None
