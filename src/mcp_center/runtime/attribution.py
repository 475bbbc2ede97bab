"""Turn whatever a failed connection or request raised into one attributed `CenterError` (R-3.1).

SDK failures arrive as nested `ExceptionGroup`s of httpx2 errors, `MCPError`s and OS errors, and
the useful fact is often elsewhere: the HTTP status behind "Server returned an error response" is
in the transport probe's diagnostics, the exit code of a stdio server in its probe. This module
looks at all of it and picks the most specific reason. Messages name the server's origin or
program at most — never headers, env values or tokens — and a stdio server's stderr tail is
redacted before it is attached.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import ssl
from collections.abc import Iterable, Iterator
from typing import cast

import httpx2
import mcp_types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mcp_center.auth import BoundBearerAuth
from mcp_center.errors import (
    CenterError,
    ConnectionLost,
    ServerProtocolError,
    ServerRequestFailed,
    ServerTimeout,
    ServerUnreachable,
)
from mcp_center.models import ErrorReason, is_object
from mcp_center.runtime.logbook import UnknownAnswers
from mcp_center.secrets import default_redactor
from mcp_center.transports import TransportProbe
from mcp_center.transports.http import ResponseTooLarge
from mcp_center.transports.streamable import ERROR_DATA_KEY
from mcp_center.transports.wording import connect_reason, display_url, status_reason, unreachable_message

__all__ = [
    "PACKAGE_RUNNERS",
    "AnswerLost",
    "SessionEnded",
    "add_output_hints",
    "attribute",
    "exit_phrase",
    "leaves",
    "may_have_run",
    "startup_timeout_error",
    "telling_lines",
    "timeout_error",
]

STDERR_TAIL_IN_ERROR = 20
"""At most this many of a stdio server's last output lines in an error's `stderr_tail`/`output_tail`..."""
STDERR_CHARS_IN_ERROR = 2048
"""... and at most this many characters of them (the latest lines kept; one longer line is cut)."""


class AnswerLost(httpx2.ReadError):
    """The connection to a Streamable HTTP server ended after a request was written and before its
    answer did: the server may have run it. `attribute` makes it `ConnectionLost` (MCP_CONNECTION_LOST),
    not MCP_SERVER_UNREACHABLE, which says the request never reached the server (R-3.1, R-8.3).

    Raised by `forward.py` for a POST, caught as an `httpx2` error and attributed within runtime/."""


class SessionEnded(Exception):
    """The server side of a session ended (EOF, stream closed); `attribute` finds out why.

    An internal signal of runtime/ (tests/test_contracts.py): `attribute` turns it into a `CenterError`."""


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """Yield the non-group exceptions inside `exc` (depth-first), or `exc` itself."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        for inner in group.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def last_lines(lines: Iterable[str]) -> list[str]:
    """The last of `lines`, redacted: at most `STDERR_TAIL_IN_ERROR` lines and `STDERR_CHARS_IN_ERROR`
    characters, enough to see a traceback's cause (issue 16: 3 lines showed only its last frame).
    A line longer than what is left is cut (`…` and its end, where the pieces of a line cut into
    records join the next one) and ends the walk back."""
    kept: list[str] = []
    left = STDERR_CHARS_IN_ERROR
    for line in reversed(list(lines)[-STDERR_TAIL_IN_ERROR:]):
        shown = default_redactor.redact(line)
        if len(shown) > left:
            if left > 40 or not kept:
                kept.append("…" + shown[-max(left, 40) :])
            break
        kept.append(shown)
        left -= len(shown)
    return kept[::-1]


def _stderr_details(probe: TransportProbe | None) -> dict[str, object]:
    """`stderr_tail` (`last_lines`) and, when the process wrote more lines than it shows, `stderr_lines`:
    how many it wrote in all."""
    if probe is None or not probe.stderr_tail:
        return {}
    tail = last_lines(probe.stderr_tail)
    details: dict[str, object] = {"stderr_tail": tail}
    if probe.stderr_count > len(tail):
        details["stderr_lines"] = probe.stderr_count
    return details


def timeout_error(what: str, seconds: float, probe: TransportProbe | None = None) -> ServerTimeout:
    """The error for `what` not finishing within `seconds`."""
    return ServerTimeout(
        f"{what} timed out after {seconds:g} s",
        details={"reason": ErrorReason.TIMEOUT.value, "timeout_s": seconds, **_stderr_details(probe)},
    )


_FIRST_NOISE_CHARS = 120


def add_output_hints(
    error: CenterError,
    probe: TransportProbe | None,
    unknown: UnknownAnswers | None,
    *,
    server_id: str,
    since: float | None = None,
) -> None:
    """Say in a timeout's message what the server wrote that could not be an answer (ux35, R-3.1).

    A request waits for its whole timeout when the server's answer never reaches it: a stdio server
    that writes its logs or a banner on stdout (those lines are skipped and logged), or a server that
    answers with an id mcp-center never sent (dropped, `ServerLogbook.unknown_answers`). Without a
    word about either the user sees a bare MCP_SERVER_TIMEOUT.

    Adds to `error.message` and `error.details`: `noise_lines` and `first_noise` (redacted, at most
    200 characters), `unknown_id_answers` and `first_unknown_id`, and `log_command` (the command that
    shows the server's log, whose output lines hold them). Changes nothing when there was neither.

    Args:
        since: When the request that timed out began waiting (`time.monotonic`, seconds): only the
            stdout lines written since then are named (a start-up banner cannot have swallowed a
            later call's answer, and naming it in every timeout misled). None (a start-up
            timeout): every line since the process started. `noise_lines` is then a lower bound
            when more than `NOISE_KEPT` lines came in the wait (`noise_lines_at_least`).
    """
    noise, first, at_least = _noise_since(probe, since)
    if not noise and unknown is None:
        return
    if noise:
        first = default_redactor.redact(first)
        lines = (
            "1 line on stdout that is" if noise == 1 else f"{noise}{'+' if at_least else ''} lines on stdout that are"
        )
        when = "" if since is None else " while the request waited"
        error.message += (
            f"; the server wrote {lines} not JSON-RPC{when} (first: {first[:_FIRST_NOISE_CHARS]!r}) "
            "— an MCP server must write only JSON-RPC on stdout (logs belong on stderr)"
        )
        error.details.update(noise_lines=noise, first_noise=first[:200])
        if at_least:
            error.details["noise_lines_at_least"] = True
    if unknown is not None:
        times = "once" if unknown.count == 1 else f"{unknown.count} times"
        error.message += (
            f"; the server answered {times} with a request id mcp-center never sent (first: {unknown.first_id!r}), "
            "so the answer reached no request"
        )
        error.details.update(unknown_id_answers=unknown.count, first_unknown_id=unknown.first_id)
    command = f"mcp-center logs {server_id}"
    error.message += f"; see the server's log with '{command}'"
    error.details["log_command"] = command


def _noise_since(probe: TransportProbe | None, since: float | None) -> tuple[int, str, bool]:
    """(lines, the first of them, whether the count is a lower bound): the non-JSON-RPC stdout lines
    `probe` saw since `since` (all of them when None)."""
    if probe is None or not probe.noise_count:
        return 0, "", False
    if since is None:
        return probe.noise_count, probe.first_noise or "", False
    recent = [line for at, line in probe.recent_noise if at >= since]
    if not recent:
        return 0, "", False
    kept = probe.recent_noise
    at_least = len(recent) == len(kept) == kept.maxlen and probe.noise_count > len(kept)
    return len(recent), recent[0], at_least


PACKAGE_RUNNERS = frozenset({"npx", "uvx", "uv", "pipx", "bunx", "pnpm", "yarn", "npm", "deno", "bun"})
"""Commands that may download and install the server before starting it (a cold start takes a while)."""
_INSTALLING = re.compile(
    r"\b(npm (warn|notice|http|info|verb)|will be installed|need to install|(added|installed|resolved|prepared|"
    r"audited) \d+ packages?|downloading|downloaded|collecting|installing|building|fetching)\b",
    re.IGNORECASE,
)
_OUTPUT_LINES_IN_MESSAGE = 3
_OUTPUT_LINE_CHARS = 200


_TELLING = re.compile(
    r"\b((?-i:E[A-Z0-9]{3,})\b|not found|unknown|unrecognized|invalid|no such|cannot|can't|could not|couldn't|"
    r"not in this registry|permission denied|fatal|panic|\w*(Error|Exception)\b(?=:))",
    re.IGNORECASE,
)
"""A stderr line that says what went wrong (npm's `E404` and `404 Not Found`, a launcher's `Unknown
transport: x`, a traceback's last line `ValueError: ...`), not a usage listing or a log pointer."""


def telling_lines(tail: list[str]) -> tuple[str, list[str]]:
    """The lines of a stdio server's output `tail` (redacted, oldest first; stdout lines start with
    `[stdout] `) that a one-line summary quotes, and how it calls them (trial35 MED 4, R-3.1, R-7.3).

    Returns:
        ("its error output", the first `_OUTPUT_LINES_IN_MESSAGE` distinct stderr lines that look
        like an error (`_TELLING`)), else ("its last output", the last lines of `tail`): a usage text
        printed after the error, or npm's closing notes, no longer hide the line that says why.
    """
    telling: list[str] = []
    for line in tail:
        if not line.startswith("[stdout] ") and _TELLING.search(line) and line not in telling:
            telling.append(line)
    if telling:
        return "its error output", telling[:_OUTPUT_LINES_IN_MESSAGE]
    return "its last output", tail[-_OUTPUT_LINES_IN_MESSAGE:]


def _output_note(probe: TransportProbe | None) -> tuple[str, dict[str, object]]:
    """`("; its error output: '...'", {"output_tail": [...]})` for a stdio server that printed
    something (the lines `telling_lines` picks)."""
    if probe is None or not probe.output_tail:
        return "", {}
    tail = last_lines(probe.output_tail)
    label, lines = telling_lines(tail)
    shown = " | ".join(repr(line[:_OUTPUT_LINE_CHARS]) for line in lines)
    return f"; {label}: {shown}", {"output_tail": tail}


def startup_timeout_error(what: str, seconds: float, probe: TransportProbe | None) -> ServerTimeout:
    """The error for a handshake that did not finish within `startup_timeout_s` (issue 14, item 15).

    It names the setting that raises the limit and, for a stdio server, says whether the process was
    still installing packages (a package runner's output was seen) — a cold `npx` or `uvx` start can
    take most of a minute — and quotes its last output.
    """
    error = timeout_error(what, seconds, probe)
    error.message += " (startup_timeout_s; raise it for a server that needs longer to start)"
    error.details["setting"] = "startup_timeout_s"
    stdio = probe.stdio if probe is not None else None
    if stdio is None:
        return error
    assert probe is not None
    installing = [line for line in probe.output_tail if _INSTALLING.search(line)]
    runner = os.path.basename(stdio.command)
    if installing:
        last = default_redactor.redact(installing[-1])[:_OUTPUT_LINE_CHARS]
        error.message += f"; the process was still installing packages (its install output: {last!r})"
        error.details["installing"] = True
    elif runner in PACKAGE_RUNNERS:
        error.message += f"; {runner} printed no install output"
        error.details["installing"] = False
    note, details = _output_note(probe)
    if not installing:
        error.message += note
    error.details.update(details)
    return error


def _request_of(exc: BaseException) -> tuple[str | None, str | None]:
    """`(method, url)` of the httpx2 request an error belongs to, if it carries one."""
    if isinstance(exc, httpx2.RequestError):
        try:
            request = exc.request
        except RuntimeError:
            return None, None
        return request.method, str(request.url)
    return None, None


def _network_error(exc: BaseException, target: str | None) -> CenterError | None:
    """The attributed error for a network failure, naming the request's method and URL (issue 14 item 14)."""
    method, url = _request_of(exc)
    url = url or target
    if isinstance(exc, httpx2.ConnectTimeout | httpx2.ReadTimeout | httpx2.WriteTimeout | httpx2.PoolTimeout):
        return ServerTimeout(
            unreachable_message(method, url, ErrorReason.TIMEOUT),
            details={"reason": ErrorReason.TIMEOUT.value, **({"url": display_url(url)} if url else {})},
        )
    if isinstance(exc, httpx2.ConnectError) or (
        not isinstance(exc, httpx2.TransportError)
        and any(isinstance(link, socket.gaierror | ssl.SSLError | ConnectionRefusedError) for link in _chain(exc))
    ):
        reason = connect_reason(exc)
    elif isinstance(exc, httpx2.TransportError):
        reason = ErrorReason.NETWORK
    else:
        return None
    details: dict[str, object] = {"reason": reason.value}
    if url:
        details["url"] = display_url(url)
    return ServerUnreachable(unreachable_message(method, url, reason), details=details)


def exit_phrase(code: int) -> str:
    """How a server process ended, from its exit status `code` (a negative one: the signal that ended
    it, as Python reports it): "was killed by SIGKILL (signal 9)"; "exited with code 137 (killed by
    SIGKILL: 128 + 9)", as a shell or a package runner (npx) reports a child's signal; "exited with
    code 1" (trial35 LOW, R-3.1)."""
    if code < 0:
        return f"was killed by {_signal_name(-code)} (signal {-code})"
    if 128 < code < 128 + 65 and _signal_name(code - 128) != f"signal {code - 128}":
        return f"exited with code {code} (killed by {_signal_name(code - 128)}: 128 + {code - 128})"
    return f"exited with code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def may_have_run(during: str) -> str:
    """What a request whose session ended after it was sent may have done, and what to do next: the
    one wording of every MCP_CONNECTION_LOST with a request open, whichever transport lost it (an
    HTTP connection that closed, an HTTP answer lost on the lean path, a stdio process that exited)
    (R-3.1, R-6.3: a call is never re-sent, so the user decides).

    Args:
        during: the request, as `attribute`'s `during` ("tools/call 'die'", "resources/read").
    Returns:
        For a tool call, "the tool may have run in part or in full; check its effect before calling
        it again"; for another request, "the request was sent and may have run".
    """
    if during.startswith("tools/call"):
        return "the tool may have run in part or in full; check its effect before calling it again"
    return "the request was sent and may have run"


def _answer_lost(leaf: AnswerLost, probe: TransportProbe | None, during: str) -> ConnectionLost:
    """The attributed error of a request whose connection ended before its answer (`AnswerLost`)."""
    _method, url = _request_of(leaf)
    url = url or (probe.target if probe is not None else None)
    details: dict[str, object] = {"reason": ErrorReason.CLOSED.value, **_stderr_details(probe)}
    if url:
        details["url"] = display_url(url)
    return ConnectionLost(
        f"the connection to the server ended before it answered {during}: {may_have_run(during)}",
        details=details,
    )


def _http_status_error(probe: TransportProbe) -> CenterError | None:
    diag = probe.http
    if diag is None or diag.last_status is None:
        return None
    status = diag.last_status
    reason = status_reason(status, diag.www_authenticate)
    where = f"{diag.last_method or 'POST'} {display_url(diag.last_url or probe.target or '')}".rstrip()
    details: dict[str, object] = {"reason": reason.value, "status": status}
    if diag.last_url:
        details["url"] = display_url(diag.last_url)
    if reason is ErrorReason.AUTH_REQUIRED:
        return ServerUnreachable(f"{where} requires authorization (HTTP {status})", details=details)
    if reason is ErrorReason.STEP_UP_REQUIRED:
        if diag.challenge_scopes:
            details["scopes"] = diag.challenge_scopes
        return ServerUnreachable(f"{where} requires more scopes (HTTP 403 insufficient_scope)", details=details)
    return ServerUnreachable(f"{where} answered HTTP {status}", details=details)


_TYPED: dict[str, type[CenterError]] = {
    cls.code: cls
    for cls in (ConnectionLost, ServerProtocolError, ServerTimeout, ServerUnreachable, ServerRequestFailed)
}


def _typed_from_rpc(exc: MCPError, during: str) -> CenterError | None:
    """The typed error a transport of ours put in a JSON-RPC error's `data`, rebuilt (None if none).

    `streamable.ERROR_DATA_KEY` carries `{"code", "message", "details"}`; the legacy SSE transport
    puts `{"code", **details}` with the message in the error itself. Only our own codes are rebuilt.
    """
    data: object = exc.data
    if not is_object(data):
        return None
    carried: object = data.get(ERROR_DATA_KEY)
    if is_object(carried):
        code, message, details = carried.get("code"), carried.get("message"), carried.get("details")
    else:
        code, message, details = data.get("code"), exc.message, {k: v for k, v in data.items() if k != "code"}
    cls = _TYPED.get(code) if isinstance(code, str) else None
    if cls is None or not isinstance(message, str) or not is_object(details) or "reason" not in details:
        return None
    return cls(f"{during}: {default_redactor.redact(message)[:800]}", details=dict(details))


def _auth_failure(probe: TransportProbe | None) -> CenterError | None:
    """The typed error an OAuth auth raised on this connection (R-4.7, R-4.5), if any.

    Raising inside an `httpx2.Auth` tears the transport down, so callers see only "connection closed"
    (docs/sdk-notes.md#oauth-broker); the auth's own record names the real cause: authorization or step-up
    required.
    """
    if probe is not None and isinstance(probe.auth, BoundBearerAuth):
        return probe.auth.failure
    return None


def attribute(exc: BaseException, probe: TransportProbe | None, *, during: str) -> CenterError:
    """Map a failure to one attributed `CenterError`.

    Args:
        exc: What was raised (possibly an ExceptionGroup).
        probe: The transport probe of the failed connection, or None.
        during: A short phrase for the message, e.g. "initialize" or "tools/call".
    Returns:
        The most specific error; its `details["reason"]` is an `ErrorReason` value. An OAuth failure
        recorded by the connection's `BoundBearerAuth` wins (`auth_required`, `step_up_required`).
    """
    auth_failure = _auth_failure(probe)
    if auth_failure is not None:
        return auth_failure
    if probe is not None and probe.fatal is not None:
        return probe.fatal
    if probe is not None and during == "initialize":
        version_error = probe.collect_refusal().version_error()
        if version_error is not None:
            return version_error
    found = list(leaves(exc))
    for leaf in found:
        if isinstance(leaf, CenterError):
            if probe is not None and "stderr_tail" not in leaf.details:
                leaf.details.update(_stderr_details(probe))
            return leaf
    for leaf in found:
        if isinstance(leaf, AnswerLost):
            return _answer_lost(leaf, probe, during)
        network = _network_error(leaf, probe.target if probe is not None else None)
        if network is not None:
            return network
    if probe is not None and probe.returncode is not None:
        code = probe.returncode
        shown = exit_phrase(code)
        note, output = _output_note(probe)
        return ServerUnreachable(
            f"the server process {shown} during {during}{note}",
            details={
                "reason": ErrorReason.PROCESS_EXITED.value,
                "exit_code": code,
                **_stderr_details(probe),
                **output,
            },
        )
    for leaf in found:
        typed = _typed_from_rpc(leaf, during) if isinstance(leaf, MCPError) else None
        if typed is not None:
            return typed
    for leaf in found:
        if isinstance(leaf, MCPError):
            return _from_rpc_error(leaf, probe, during)
    if probe is not None:
        status_error = _http_status_error(probe)
        if status_error is not None:
            return status_error
    for leaf in found:
        if isinstance(leaf, ValidationError | ValueError | RuntimeError):
            return ServerProtocolError(
                f"the server broke the MCP protocol during {during}",
                details={"reason": ErrorReason.PROTOCOL.value, **_stderr_details(probe)},
            )
    return ServerUnreachable(
        f"the connection failed during {during}",
        details={"reason": ErrorReason.CLOSED.value, **_stderr_details(probe)},
    )


def _from_rpc_error(leaf: MCPError, probe: TransportProbe | None, during: str) -> CenterError:
    """The attributed error for a JSON-RPC error the SDK raised (a real one, or one it synthesized
    from an HTTP status, a closed connection, a timeout or bytes that are not JSON-RPC)."""
    # The SDK turns an HTTP error status into a synthesized JSON-RPC error (-32603 or,
    # before a session exists, -32601 "Not Found"); the diagnostics know the status.
    if leaf.code in (mcp_types.INTERNAL_ERROR, mcp_types.METHOD_NOT_FOUND) and probe is not None:
        status_error = _http_status_error(probe)
        if status_error is not None:
            return status_error
    if leaf.code == mcp_types.CONNECTION_CLOSED:
        return ConnectionLost(
            f"the connection closed during {during}: {may_have_run(during)}",
            details={"reason": ErrorReason.CLOSED.value, **_stderr_details(probe)},
        )
    if leaf.code == mcp_types.REQUEST_TIMEOUT:
        return ServerTimeout(f"{during} timed out", details={"reason": ErrorReason.TIMEOUT.value})
    if leaf.code == mcp_types.PARSE_ERROR and probe is not None and probe.http is not None:
        limit = probe.http.response_too_large
        if limit is not None:
            return ResponseTooLarge(
                f"the server answered {during} with more than {limit} bytes",
                details={"reason": ErrorReason.PROTOCOL.value, "limit_bytes": limit},
            )
    if leaf.code == mcp_types.PARSE_ERROR:
        return ServerProtocolError(
            f"the server sent a message that is not valid JSON-RPC during {during}",
            details={"reason": ErrorReason.PROTOCOL.value},
        )
    message = default_redactor.redact(leaf.message)
    failed = ServerRequestFailed(
        f"the server answered {during} with error {leaf.code}: {message[:500]}",
        details={"reason": ErrorReason.PROTOCOL.value, "rpc_code": leaf.code},
    )
    failed.rpc_error = {"code": leaf.code, "message": message}
    if leaf.error.data is not None:
        failed.rpc_error["data"] = default_redactor.redact_values(leaf.error.data)
    return failed
