"""Turn whatever a failed connection or request raised into one attributed `CenterError` (R-3.1).

SDK failures arrive as nested `ExceptionGroup`s of httpx2 errors, `MCPError`s and OS errors, and
the useful fact is often elsewhere: the HTTP status behind "Server returned an error response" is
in the transport probe's diagnostics, the exit code of a stdio server in its probe. This module
looks at all of it and picks the most specific reason. Messages name the server's origin or
program at most — never headers, env values or tokens — and a stdio server's stderr tail is
redacted before it is attached.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

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
from mcp_center.models import ErrorReason
from mcp_center.secrets import default_redactor
from mcp_center.transports import TransportProbe
from mcp_center.transports.http import ResponseTooLarge

__all__ = ["SessionEnded", "attribute", "leaves", "timeout_error"]

STDERR_TAIL_IN_ERROR = 5


class SessionEnded(Exception):
    """The server side of a session ended (EOF, stream closed); `attribute` finds out why.

    An internal signal of runtime/ (tests/test_contracts.py): `attribute` turns it into a `CenterError`."""


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """Yield the non-group exceptions inside `exc` (depth-first), or `exc` itself."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
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


def _stderr_details(probe: TransportProbe | None) -> dict[str, object]:
    if probe is None or not probe.stderr_tail:
        return {}
    tail = list(probe.stderr_tail)[-STDERR_TAIL_IN_ERROR:]
    return {"stderr_tail": [default_redactor.redact(line) for line in tail]}


def timeout_error(what: str, seconds: float, probe: TransportProbe | None = None) -> ServerTimeout:
    """The error for `what` not finishing within `seconds`."""
    return ServerTimeout(
        f"{what} timed out after {seconds:g} s",
        details={"reason": ErrorReason.TIMEOUT.value, "timeout_s": seconds, **_stderr_details(probe)},
    )


def _network_error(exc: BaseException, target: str | None) -> CenterError | None:
    where = f" ({target})" if target else ""

    def unreachable(what: str, reason: ErrorReason) -> ServerUnreachable:
        return ServerUnreachable(f"{what}{where}", details={"reason": reason.value})

    for link in _chain(exc):
        if isinstance(link, socket.gaierror):
            return unreachable("the server's host name does not resolve", ErrorReason.DNS)
        if isinstance(link, ssl.SSLError):
            return unreachable("the TLS handshake with the server failed", ErrorReason.TLS)
        if isinstance(link, ConnectionRefusedError) or (isinstance(link, OSError) and link.errno == errno.ECONNREFUSED):
            return unreachable("the server refused the connection", ErrorReason.REFUSED)
    text = str(exc).lower()
    if isinstance(exc, httpx2.ConnectTimeout | httpx2.ReadTimeout | httpx2.WriteTimeout | httpx2.PoolTimeout):
        return ServerTimeout(f"the server did not answer in time{where}", details={"reason": ErrorReason.TIMEOUT.value})
    if isinstance(exc, httpx2.ConnectError):
        if "name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
            return unreachable("the server's host name does not resolve", ErrorReason.DNS)
        if "certificate" in text or "ssl" in text or "tls" in text:
            return unreachable("the TLS handshake with the server failed", ErrorReason.TLS)
        if "refused" in text or "all connection attempts failed" in text:
            return unreachable("the server refused the connection", ErrorReason.REFUSED)
        return unreachable("cannot connect to the server", ErrorReason.NETWORK)
    if isinstance(exc, httpx2.TransportError):
        return unreachable("the network connection to the server failed", ErrorReason.NETWORK)
    return None


def _http_status_error(probe: TransportProbe) -> CenterError | None:
    diag = probe.http
    if diag is None or diag.last_status is None:
        return None
    status = diag.last_status
    challenge = (diag.www_authenticate or "").lower()
    if status == 401:
        return ServerUnreachable(
            "the server requires authorization (HTTP 401)",
            details={"reason": ErrorReason.AUTH_REQUIRED.value, "status": status},
        )
    if status == 403 and "insufficient_scope" in challenge:
        scopes = {"scopes": diag.challenge_scopes} if diag.challenge_scopes else {}
        return ServerUnreachable(
            "the server requires more scopes (HTTP 403 insufficient_scope)",
            details={"reason": ErrorReason.STEP_UP_REQUIRED.value, "status": status, **scopes},
        )
    return ServerUnreachable(
        f"the server answered HTTP {status}",
        details={"reason": ErrorReason.HTTP_STATUS.value, "status": status},
    )


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
    found = list(leaves(exc))
    for leaf in found:
        if isinstance(leaf, CenterError):
            if probe is not None and "stderr_tail" not in leaf.details:
                leaf.details.update(_stderr_details(probe))
            return leaf
    for leaf in found:
        network = _network_error(leaf, probe.target if probe is not None else None)
        if network is not None:
            return network
    if probe is not None and probe.returncode is not None:
        code = probe.returncode
        shown = f"signal {-code}" if code < 0 else f"code {code}"
        return ServerUnreachable(
            f"the server process exited with {shown} during {during}",
            details={"reason": ErrorReason.PROCESS_EXITED.value, "exit_code": code, **_stderr_details(probe)},
        )
    for leaf in found:
        if isinstance(leaf, MCPError):
            # The SDK turns an HTTP error status into a synthesized JSON-RPC error (-32603 or,
            # before a session exists, -32601 "Not Found"); the diagnostics know the status.
            if leaf.code in (mcp_types.INTERNAL_ERROR, mcp_types.METHOD_NOT_FOUND) and probe is not None:
                status_error = _http_status_error(probe)
                if status_error is not None:
                    return status_error
            if leaf.code == mcp_types.CONNECTION_CLOSED:
                return ConnectionLost(
                    f"the connection closed during {during}",
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
