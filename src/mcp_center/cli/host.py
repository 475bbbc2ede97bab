"""The CLI's one client for a running host's REST API (approvals, `auth`, live states).

Some commands must ask the running `mcp-center serve` instead of opening the data directory: an
OAuth authorization completes in the process that started it (R-4.9). They all go through
`HostClient`: the admin token of the data directory (never created here), the host's URL (`--url`
or `MCP_CENTER_URL`, else where its `serve` said it listens; never a default address, which may be
another directory's serve), and the API's error envelope (R-7.3) turned back into an
exception, `HostRequestFailed`, whose HTTP status gives the exit code (`exit_code_for_status`).
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from mcp_center.cli._shared import shown
from mcp_center.cli._store_serve import store_owner
from mcp_center.cli._suggest import suggested
from mcp_center.cli._where import data_dir_phrase, unreachable_why
from mcp_center.config import Settings
from mcp_center.errors import AdminAuthRequired, CenterError, HostRequestFailed, OptionValueInvalid, ServerUnreachable
from mcp_center.interchange.display import display_url
from mcp_center.models import is_object
from mcp_center.secrets import read_admin_token

__all__ = [
    "ANSWER_TIMEOUT_S",
    "HostClient",
    "answer_within",
    "checked_host_url",
    "client_tls",
    "exit_code_for",
    "exit_code_for_status",
    "host_url",
    "serve_url",
]

T = TypeVar("T")

ANSWER_TIMEOUT_S = 5.0
"""Seconds a read (`GET`: `approvals list`, `logs`) waits for the running host's answer, as `list`
and `show` wait (`listing.LIVE_TIMEOUT_S`): a serve that accepts but never answers (hung, stopped
with SIGSTOP) is said so in one line after this, not after the 30 s of a change (issue 16, F7)."""


def answer_within(request: Callable[[], T], seconds: float) -> T:
    """`request()` (one HTTP request and its whole answer), given `seconds` in all.

    An HTTP client's timeouts bound each network read, not the answer: a serve that sends its headers and
    then one byte every few seconds never trips them, and the command hung for ever (issue 16, F4).
    Here the request runs in a daemon thread and the caller waits for it once, up to the deadline;
    a request still running then is left to end on its own (the command goes on or exits).

    Args:
        request: Sends the request and reads the answer (it should also have per-read timeouts).
        seconds: The deadline for all of it, from now (seconds).
    Returns:
        What `request` returned.
    Raises:
        TimeoutError: the answer was not complete within `seconds` (as a socket read that timed out
            raises, so the caller's message for a silent serve applies).
        BaseException: whatever `request` raised.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(request())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            failure.append(exc)

    worker = threading.Thread(target=run, name="mcp-center-request", daemon=True)
    worker.start()
    worker.join(seconds)
    if failure:
        raise failure[0]
    if not outcome:
        raise TimeoutError(f"no complete answer within {seconds:g} s")
    return outcome[0]


def client_tls(base_url: str) -> ssl.SSLContext | bool:
    """`verify=` for a CLI client of the host at `base_url` (issue 16).

    `https://`: True, the system trust store, certificates and host names verified. Plain
    `http://` (a local serve): a context that trusts no certificate and still requires one. Such a
    client never does TLS (it follows no redirect), so loading the CA bundle, ~40 ms of CPU in every
    command that asks the host, is skipped; were TLS ever tried through it, it would fail, never
    connect unverified.
    """
    if base_url.lower().startswith("https:"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def host_url(settings: Settings, url: str | None = None) -> str:
    """The running host to talk to: `--url`, else where the `serve` of this data directory said it
    listens (`<data dir>/serve.json`), else the settings' base URL (no trailing slash).

    For words only (where a command looked), so shown as `display_url` shows it: no userinfo, no
    credential query values (break36, R-1.5); `HostClient` never sends to the settings' default
    address unless the user named it (R-9.2).
    """
    owner = store_owner(settings) if not url else None
    recorded = owner.address if owner is not None else None
    return display_url((url or recorded or settings.base_url).rstrip("/"))


def checked_host_url(url: str, *, option: str = "'--url' (or MCP_CENTER_URL)") -> str:
    """`url` (`--url` or `MCP_CENTER_URL`) without its trailing slash, when it can name a host: an
    http:// or https:// URL with a host (R-7.3, fix37). `option` is how the message names where the
    value came from (`'--url'` for a command whose option reads no environment variable).

    Raises:
        OptionValueInvalid: (exit 2) another scheme, no host or not a URL at all (`--url notaurl`
            used to be sent the admin token's question, ADMIN_AUTH_REQUIRED); the message shows the
            value as `display_url` does (no password, credential query values redacted).
    """
    try:
        parts = urlsplit(url)
        usable = parts.scheme in {"http", "https"} and bool(parts.hostname)
        _ = parts.port  # a port out of range raises ValueError
    except ValueError:
        usable = False
    if not usable:
        raise OptionValueInvalid(
            f"option {option} must be an http:// or https:// URL with a host, e.g. "
            f"http://127.0.0.1:8765 (got {shown(display_url(url))!r})",
            details={"option": "--url", "reason": "value"},
        )
    return url.rstrip("/")


def serve_url(settings: Settings, url: str | None = None) -> str:
    """The host a command may send the admin token to (no trailing slash): the URL the user gave
    (`--url` or `MCP_CENTER_URL`), else where the `serve` of this data directory said it listens,
    when it keeps this command's store (the same database, or files: `store_owner`).

    Never a default address: whatever listens on 127.0.0.1:8765 may be another data directory's
    serve, and asking it only confuses (its answer is "not this host's admin token") (R-9.2).

    Raises:
        ServerUnreachable: no URL given and no serve owns the data directory (exit 7); the message
            names the directory and how to start its serve or point elsewhere.
        OptionValueInvalid: the URL given is no http(s) URL with a host (`checked_host_url`).
    """
    if url:
        return checked_host_url(url)
    owner = store_owner(settings)  # a serve of other state is not this store's (trialfix36)
    recorded = owner.address if owner is not None else None
    if recorded is None and settings.database_display is not None:
        raise ServerUnreachable(
            f"no mcp-center serve of the database {settings.database_display} runs on the data directory "
            f"{settings.data_dir}; pass --url (or set MCP_CENTER_URL) with the address of one of its instances",
            details={"reason": "no_serve", "data_dir": str(settings.data_dir)},
        )
    if recorded is None:
        raise ServerUnreachable(
            f"no mcp-center serve runs on the data directory {settings.data_dir}; start one with "
            f"'{suggested('serve', settings=settings)}', or pass --url (or set MCP_CENTER_URL) "
            "to talk to a host elsewhere",
            details={"reason": "no_serve", "data_dir": str(settings.data_dir)},
        )
    return recorded.rstrip("/")


class HostClient:
    """A client for the REST API of the host running on `settings`' data directory.

    Args:
        settings: The data directory (its admin token) and the default base URL.
        url: `--url`, or None for the data directory's own `serve`.
        timeout_s: Seconds for one request and its whole answer (one deadline, `answer_within`).
        recorded: With no `url`: the address the data directory's serve recorded in serve.json, as
            the caller read it (`running_owner(...).address`), so it is not read again.
    Raises:
        ServerUnreachable: no `url` and no serve owns the data directory (exit 7; `serve_url`),
            checked first.
        AdminAuthRequired: no admin token in the data directory (a `--url` to a host whose serve
            never ran on this directory) (exit 6).
        SecretStoreError: the token file is readable by others.
    """

    def __init__(
        self, settings: Settings, url: str | None = None, *, timeout_s: float = 30.0, recorded: str | None = None
    ) -> None:
        # Where first: with no serve on the data directory (and no --url) the answer is "no serve
        # runs there" (exit 7), whether or not one ever ran and left its admin token (issue 16).
        # `recorded`: that serve's address, when the caller has just read serve.json itself (cli40).
        base_url = recorded.rstrip("/") if recorded and not url else serve_url(settings, url)
        token = read_admin_token(settings.data_dir, settings.admin_token)
        if token is None:
            raise AdminAuthRequired(
                _no_token_message(settings, base_url if url else None), details={"data_dir": str(settings.data_dir)}
            )
        self._settings = settings
        self._url = url
        self._timeout_s = timeout_s
        self.base_url = base_url
        self._token = token

    def __enter__(self) -> HostClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        return None

    def _send(self, method: str, path: str, body: object, timeout_s: float) -> tuple[int, bytes]:
        """One request on a connection of its own (the standard library's `http.client`: httpx2 and its
        client cost ~0.2 s of CPU, a fifth of a command that asks the serve, cli39); `(status, body)`.
        Never follows a redirect, reads no proxy setting; https verifies certificates and host names."""
        parts = urlsplit(self.base_url)
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        payload = None if body is None else json.dumps(body).encode()
        if payload is not None:
            headers["Content-Type"] = "application/json"
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=timeout_s, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout_s)
        try:
            connection.request(method, parts.path.rstrip("/") + path, body=payload, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def call(self, method: str, path: str, body: object = None, *, timeout_s: float | None = None) -> Any:
        """One request; the answer's JSON (`{}` for an empty body). `timeout_s`: this request's deadline
        for its whole answer (seconds), instead of the client's.

        Raises:
            ServerUnreachable: nothing answers (the message says whether a serve owns the directory;
                `details.reason` `refused`), the connection closed before the answer (`dropped`: the
                host may have acted on the request), or the host's whole answer did not come within the
                client's `timeout_s` (`details.reason` `timeout`; one deadline for the request,
                however slowly the answer trickles in).
            HostRequestFailed: the host answered with an error envelope (or a non-JSON error).
        """
        seconds = self._timeout_s if timeout_s is None else timeout_s
        try:
            status, content = answer_within(lambda: self._send(method, path, body, seconds), seconds)
        except TimeoutError:
            raise ServerUnreachable(
                f"the serve on {display_url(self.base_url)} did not answer within {seconds:g} s "
                "(is it hung or stopped?)",
                details={"reason": "timeout", "url": display_url(self.base_url)},
            ) from None
        except (ConnectionResetError, BrokenPipeError, http.client.IncompleteRead, http.client.BadStatusLine):
            # Connected, and the request (partly) sent: the serve may have acted on it before it
            # went away, so this is no "nothing answers" a caller may redo elsewhere (break39).
            raise ServerUnreachable(
                f"the serve on {display_url(self.base_url)} closed the connection before it answered "
                "(did it stop?); what was asked may have happened there",
                details={"reason": "dropped", "url": display_url(self.base_url)},
            ) from None
        except (OSError, http.client.HTTPException):
            raise ServerUnreachable(
                f"cannot reach mcp-center at {display_url(self.base_url)}: "
                f"{unreachable_why(self._settings, self._url, self.base_url)}",
                details={"reason": "refused"},
            ) from None
        try:
            answer: Any = json.loads(content) if content else {}
        except ValueError:
            answer = None
        if 200 <= status < 300 and answer is not None:
            return answer
        error: object = answer.get("error") if is_object(answer) else None
        if is_object(error) and isinstance(error.get("code"), str):
            details: object = error.get("details")
            raise HostRequestFailed(
                error["code"],
                str(error.get("message", "")),
                dict(details) if is_object(details) else {},
                status,
            )
        raise HostRequestFailed(f"HTTP_{status}", content.decode(errors="replace")[:200], {}, status)


def _no_token_message(settings: Settings, elsewhere: str | None) -> str:
    """Why no admin token, and how to give one: for a host named by `--url`/`MCP_CENTER_URL`
    (`elsewhere`), that host's token or the data directory its serve runs on, never "start a serve
    here", which would not be the host asked (issue 16, F7)."""
    if elsewhere is not None:
        return (
            f"no admin token for the host at {display_url(elsewhere)}: set MCP_CENTER_ADMIN_TOKEN to its admin token, "
            f"or pass the --data-dir its serve runs on (looked in {data_dir_phrase(settings)})"
        )
    return (
        f"no admin token in {data_dir_phrase(settings)}: no serve has run on it; start one with "
        f"'{suggested('serve', settings=settings)}', or set MCP_CENTER_ADMIN_TOKEN to its serve's admin token"
    )


def exit_code_for_status(status: int) -> int:
    """The CLI exit code for an HTTP status of the REST API (a CLI command that asked a running host).

    Read from the tree itself, most general class first (InvalidInput 422 → 2, NotFound 404 → 3,
    Conflict 409 → 4, ..., RequestTooLarge 413 → 2), so a command exits the same whether it raised
    the error in-process or got it from the API. 1 for a status no class answers with.
    """
    return next((family.exit_code for family in _error_tree() if family.http_status == status), CenterError.exit_code)


def exit_code_for(api_code: str, status: int) -> int:
    """The CLI exit code of an error the running host answered with: that of the error class whose
    `code` is `api_code` (what the same error raised in this process exits with: the 503s exit 9,
    10 or 12 by their code), else by the HTTP status (`exit_code_for_status`: a code this CLI does
    not know, `HTTP_<status>`) (cli39, docs/errors.md#in-the-cli-exit-codes)."""
    found = next((family.exit_code for family in _error_tree() if family.code == api_code), None)
    return found if found is not None else exit_code_for_status(status)


def _error_tree() -> Iterator[type[CenterError]]:
    """Every class of the error tree, most general first (breadth first from `CenterError`)."""
    level: list[type[CenterError]] = [CenterError]
    while level:
        yield from level
        level = [sub for family in level for sub in family.__subclasses__()]
