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
from typing import Any

import httpx2

from mcp_center.config import Settings
from mcp_center.errors import HostRequestFailed, ServerUnreachable
from mcp_center.secrets import load_or_create_admin_token
from mcp_center.secrets.keyfiles import ADMIN_TOKEN_FILE

__all__ = ["AuthReport", "HostRequestFailed", "authorize"]  # the error `authorize` raises, from errors.py

POLL_INTERVAL_S = 1.0
REQUEST_TIMEOUT_S = 60.0
"""Seconds for one API request (a start runs discovery and registration)."""


class AuthReport:
    """Where the command's output goes (the CLI prints; tests capture)."""

    def __init__(self, say: Callable[[str], None], ask: Callable[[str], str]) -> None:
        self.say = say
        self.ask = ask


def _admin_token(settings: Settings) -> str:
    if settings.admin_token is None and not (settings.data_dir / ADMIN_TOKEN_FILE).exists():
        raise ServerUnreachable(
            f"no admin token in {settings.data_dir} (data directory): start 'mcp-center serve' with this data "
            "directory first",
            details={"reason": "refused"},
        )
    token, _ = load_or_create_admin_token(settings.data_dir, settings.admin_token)
    return token


def _call(client: httpx2.Client, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    try:
        response = client.request(method, path, **kwargs)
    except httpx2.TransportError:
        raise ServerUnreachable(
            f"cannot reach mcp-center at {client.base_url}: is 'mcp-center serve' running (or pass --url)?",
            details={"reason": "refused"},
        ) from None
    body: Any = response.json() if response.content else {}
    if response.status_code >= 400:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        raise HostRequestFailed(
            str(error.get("code", f"HTTP_{response.status_code}")),
            str(error.get("message", response.reason_phrase)),
            dict(error.get("details") or {}),
            response.status_code,
        )
    return dict(body)


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
        base_url: The running host's URL (default `settings.base_url`).
        issuer: The issuer to use when the server lists several.
        wait: Poll until the callback arrived (at most `timeout_s` seconds).
        paste: Ask for the redirected URL instead of waiting (the browser cannot reach the host).
    Returns:
        True when the server is authorized at the end (False: not waited for).
    Raises:
        HostRequestFailed: the host refused a step (its code and message are kept).
        ServerUnreachable: no running host or no admin token.
        TimeoutError: no callback within `timeout_s` seconds.
    """
    token = _admin_token(settings)
    with httpx2.Client(
        base_url=base_url or settings.base_url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_TIMEOUT_S,
        trust_env=False,
    ) as client:
        path = f"/api/mcp/servers/{server_id}"
        before = (_call(client, "GET", path).get("oauth") or {}).get("authorized_at")
        started = _call(client, "POST", f"{path}/oauth/start", json={"issuer": issuer} if issuer else None)
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
            done = _call(client, "POST", f"{path}/oauth/complete", json={"callback_url": pasted})
            report.say(f"authorized by {done['issuer']}")
            return True
        if not wait:
            report.say(
                f"the browser returns to {(base_url or settings.base_url).rstrip('/')}/oauth/callback, "
                "which completes the authorization"
            )
            return False
        report.say("waiting for the login to finish (Ctrl+C to stop waiting) ...")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL_S)
            oauth = _call(client, "GET", path).get("oauth") or {}
            if oauth.get("authorized") and oauth.get("authorized_at") != before:
                report.say(f"authorized by {oauth.get('issuer')} (scopes: {' '.join(oauth.get('scopes') or [])})")
                return True
            if not oauth.get("pending") and oauth.get("last_error"):
                error = oauth["last_error"]
                raise HostRequestFailed(
                    str(error.get("code")), str(error.get("message")), dict(error.get("details") or {}), 409
                )
        raise TimeoutError(f"no login finished within {timeout_s:g} s; run the command again")
