"""Failures outside the host's control: a server, an authorization server, a timeout, a stopped host (R-3.1, R-7.3).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_center.errors._base import CenterError, UpstreamError

__all__ = [
    "AgentRequestFailed",
    "CallInterrupted",
    "ConnectionLost",
    "HostRequestFailed",
    "OAuthDiscoveryFailed",
    "OAuthRegistrationFailed",
    "OAuthTokenFailed",
    "SandboxUnavailable",
    "ServerProtocolError",
    "ServerRequestFailed",
    "ServerTimeout",
    "ServerUnreachable",
]


class ServerUnreachable(UpstreamError):
    code = "MCP_SERVER_UNREACHABLE"


class ServerProtocolError(UpstreamError):
    code = "MCP_PROTOCOL_ERROR"


class ServerRequestFailed(UpstreamError):
    """The server answered a JSON-RPC error; `details` has its `rpc_code`.

    `rpc_error` is the error as the server sent it, redacted: `{"code", "message", "data"?}`
    (None when unknown). The gateway hands it to the agent unchanged (R-8.1), where the REST
    API shows only this error's own envelope.
    """

    code = "MCP_SERVER_ERROR"
    rpc_error: dict[str, Any] | None = None


class AgentRequestFailed(UpstreamError):
    """The agent's client answered the gateway's request (sampling, roots, elicitation) with an
    error, or went away before it answered (R-8.5); `details` has its `rpc_code` when it answered."""

    code = "GATEWAY_AGENT_ERROR"


class ConnectionLost(UpstreamError):
    """The session ended while a request was open; the request may or may not have run."""

    code = "MCP_CONNECTION_LOST"


class OAuthDiscoveryFailed(UpstreamError):
    """OAuth discovery failed or was refused by a rule of R-4.2-R-4.4. `details.rule` is stable:
    `url_refused` (not https, not loopback, credentials, or a cross-origin `resource_metadata`),
    `redirect_refused`, `resource_metadata_not_found`, `resource_metadata_invalid`, `resource_mismatch`,
    `issuer_not_listed`, `authorization_server_metadata_not_found`, `authorization_server_metadata_invalid`,
    `issuer_mismatch`, `pkce_s256_unsupported`, `http_status` (`details.status`), `network`."""

    code = "OAUTH_DISCOVERY_FAILED"


class OAuthRegistrationFailed(UpstreamError):
    """Dynamic client registration (RFC 7591) failed or returned an unusable client (R-4.8):
    `details.rule` is `no_registration_endpoint`, `http_status`, `invalid_response`, `client_id_invalid`
    or `unusable_auth_method`."""

    code = "OAUTH_REGISTRATION_FAILED"


class OAuthTokenFailed(UpstreamError):
    """The token endpoint refused a request: `details.oauth_error` is the RFC 6749 §5.2 error code
    (`invalid_grant`, `invalid_client`, ...) when it sent one, `details.status` the HTTP status."""

    code = "OAUTH_TOKEN_FAILED"


class ServerTimeout(CenterError):
    code = "MCP_SERVER_TIMEOUT"
    http_status = 504
    exit_code = 8


class CallInterrupted(CenterError):
    """The host stopped while the call waited for a human (an approval or an elicitation card), or
    while it ran at its server (`details.interrupted_by` "shutdown").

    Nothing was delivered after that point: an approval never reached the server
    (`details.reached_server` false, as a call that started once the host was stopping); an
    elicitation answer never did either, and the tool did not finish; a running call was cancelled
    at its server (`details.reached_server` true: the server may have done part of its work). The
    call is never re-sent automatically (R-6.3); the message says to retry once serve is back only
    when it never reached the server, and otherwise that its result was lost and it may have run.
    """

    code = "MCP_CALL_INTERRUPTED"
    http_status = 503
    exit_code = 9


class HostRequestFailed(CenterError):
    """The running host answered a CLI request with an error envelope (`mcp-center auth` drives the
    host through its REST API): `api_code`, `message` and `details` are the host's, `status` its
    HTTP status. The CLI prints the host's code and exits as that code's class does, by the status
    for a code it does not know (`cli.host.exit_code_for`).

    Args:
        api_code: The envelope's `code` (`HTTP_<status>` when the answer had no envelope).
        message: The envelope's message (already redacted by the host).
        details: The envelope's details.
        status: The HTTP status of the answer.
    """

    code = "HOST_REQUEST_FAILED"

    def __init__(self, api_code: str, message: str, details: Mapping[str, Any], status: int) -> None:
        super().__init__(message, details=details)
        self.api_code = api_code
        self.status = status


class SandboxUnavailable(CenterError):
    """A sandboxed stdio server cannot start because this host lacks what the sandbox needs (R-11.1).

    `details.missing` names it: `bubblewrap` (not installed), `util-linux` (no prlimit/setpriv),
    `user_namespaces` (the kernel or a security module refuses them), `linux`, or
    `bubblewrap_failed` (a trial sandbox failed for another reason, quoted in the message).
    """

    code = "MCP_SANDBOX_UNAVAILABLE"
    http_status = 503
    exit_code = 12
