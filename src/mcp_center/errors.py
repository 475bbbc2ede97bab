"""One exception tree with stable codes (SPEC R-7.3).

Every error mcp-center raises on purpose is a `CenterError`. Its `code` is API: clients, tests and
docs match on it, so a code is never renamed. `http_status` is what the REST API answers,
`exit_code` what the CLI exits with. The message is for humans, names the offending field where
there is one, and never contains a secret, a token or an env value; `details` carries
machine-readable context (field paths, reasons) under the same rule.

    CenterError (500 INTERNAL_ERROR)
    ├── InvalidInput (422)
    │   ├── ConfigInvalid            CONFIG_INVALID            a server configuration breaks R-1 rules
    │   ├── RequestInvalid           REQUEST_INVALID           a request body or parameter is malformed
    │   ├── SecretKeyInvalid         SECRET_KEY_INVALID        a secret key name is not allowed
    │   ├── RequestTooLarge (413)    REQUEST_TOO_LARGE         a request body over the size limit
    │   ├── ImportTooLarge (413)     IMPORT_TOO_LARGE          R-1.8: an import file over the size limit
    │   ├── ImportJsonInvalid        IMPORT_JSON_INVALID       R-1.8: not JSON even leniently (line, column)
    │   ├── ImportFormatUnknown      IMPORT_FORMAT_UNKNOWN     R-1.8: no client configuration shape found
    │   ├── ImportFormatMismatch     IMPORT_FORMAT_MISMATCH    R-1.8: the file is not of the format asked for
    │   ├── ImportValuesInvalid      IMPORT_VALUES_INVALID     R-1.8: supplied variable values missing/invalid
    │   ├── ImportNothingToApply     IMPORT_NOTHING_TO_APPLY   R-1.8: the preview creates no server
    │   ├── SandboxWarmUpUnsupported MCP_SANDBOX_WARM_UP_UNSUPPORTED R-11.1: not sandboxed, or not npx/uvx
    │   ├── ElicitationAnswerInvalid ELICITATION_ANSWER_INVALID R-6.1: an answer breaks the requested schema
    │   ├── AddressUnavailable       SERVE_ADDRESS_UNAVAILABLE `serve` cannot listen on --host/--port (no such
    │   │                                                      local address, a privileged port, ...)
    │   └── OAuthCallbackInvalid     OAUTH_CALLBACK_INVALID    R-4.9: unknown/used/expired state, iss mismatch,
    │                                                          or the authorization server said no
    ├── NotFound (404)
    │   ├── ServerNotFound           MCP_SERVER_NOT_FOUND
    │   ├── ToolNotFound             MCP_TOOL_NOT_FOUND
    │   ├── SecretNotFound           MCP_SECRET_NOT_FOUND
    │   ├── PromptNotFound           MCP_PROMPT_NOT_FOUND          R-5.4
    │   ├── ResourceNotFound         MCP_RESOURCE_NOT_FOUND        R-5.5: the server has no such resource
    │   ├── ApprovalNotFound         MCP_APPROVAL_NOT_FOUND        R-5.3
    │   ├── GatewayTokenNotFound     GATEWAY_TOKEN_NOT_FOUND       R-7.1: no gateway token with that id
    │   ├── CapabilityNotOffered     MCP_CAPABILITY_NOT_OFFERED    the server declared no such capability in
    │   │                                                          initialize (resources, prompts, tools); not asked
    │   └── InteractionNotFound      MCP_INTERACTION_NOT_FOUND     R-6.1
    ├── Conflict (409)
    │   ├── ServerExists             MCP_SERVER_EXISTS
    │   ├── AddressInUse             SERVE_ADDRESS_IN_USE          another process (often another `serve`) listens
    │   │                                                          on --host:--port; found before anything starts
    │   ├── DataDirInUse             SERVE_DATA_DIR_IN_USE         R-9.2: a live `serve` owns the data directory
    │   │                                                          (exit 4; `details`: data_dir, pid, url)
    │   ├── ServerVersionConflict    MCP_SERVER_VERSION_CONFLICT   R-1.3
    │   ├── TrustDigestMismatch      MCP_TRUST_DIGEST_MISMATCH     R-2.1
    │   ├── ServerNotTrusted         MCP_SERVER_NOT_TRUSTED        R-2.3
    │   ├── ServerNotTested          MCP_SERVER_NOT_TESTED         R-2.3
    │   ├── ServerDisabled           MCP_SERVER_DISABLED           R-2.4
    │   ├── CallCancelled            MCP_CALL_CANCELLED            R-3.8 (cancelled by operation id)
    │   ├── OperationInUse           MCP_OPERATION_IN_USE          the operation id belongs to a running call
    │   ├── ImportPreviewUnknown     IMPORT_PREVIEW_UNKNOWN        R-1.8: no such preview token
    │   ├── ImportPreviewExpired     IMPORT_PREVIEW_EXPIRED        R-1.8: the preview token expired
    │   ├── ImportInputChanged       IMPORT_INPUT_CHANGED          R-1.8: apply sent other input than previewed
    │   ├── ImportPreviewStale       IMPORT_PREVIEW_STALE          R-1.8: the preview would now be different
    │   ├── ApprovalExpired          MCP_APPROVAL_EXPIRED          R-5.3: nobody decided before the approval timed out
    │   ├── ApprovalStale            MCP_APPROVAL_STALE            R-5.3: approved, but the server or caller changed
    │   ├── ApprovalClosed           MCP_APPROVAL_CLOSED           R-5.3: the approval was already decided or ended
    │   ├── InteractionClosed        MCP_INTERACTION_CLOSED        R-6.1: the card was already answered or ended
    │   ├── InteractionNotDelivered  MCP_INTERACTION_NOT_DELIVERED R-6.3: the server's request did not survive a restart
    │   ├── OAuthNotConfigured       OAUTH_NOT_CONFIGURED          the server's auth is not OAuth
    │   ├── OAuthAuthorizationRequired  OAUTH_AUTHORIZATION_REQUIRED  R-4.7, R-4.9: a user must authorize
    │   ├── OAuthStepUpRequired      OAUTH_STEP_UP_REQUIRED        R-4.5: more scopes (`details.scopes`)
    │   ├── OAuthStepUpLimitReached  OAUTH_STEP_UP_LIMIT_REACHED   R-4.5: step-ups that never satisfy the server
    │   ├── OAuthIssuerChoiceRequired  OAUTH_ISSUER_CHOICE_REQUIRED  R-4.3: several issuers (`details.issuers`)
    │   └── CapabilityNotDeclared    MCP_CAPABILITY_NOT_DECLARED   R-12.1: the server did not declare what this needs
    ├── Forbidden (403)
    │   ├── SandboxRequired          MCP_SANDBOX_REQUIRED          R-2.5
    │   ├── ToolDisabled             MCP_TOOL_DISABLED             R-5.2
    │   ├── ToolDenied               MCP_TOOL_DENIED               R-5.3: the user's policy for this tool is deny
    │   ├── ApprovalDenied           MCP_APPROVAL_DENIED           R-5.3: the user denied this call
    │   ├── HostNotAllowed           HOST_NOT_ALLOWED              R-7.2
    │   ├── OriginNotAllowed         ORIGIN_NOT_ALLOWED            R-7.2
    │   └── CsrfTokenInvalid         CSRF_TOKEN_INVALID            R-7.2 (browser session without its CSRF token)
    ├── Unauthorized (401)
    │   └── AdminAuthRequired        ADMIN_AUTH_REQUIRED           R-7.1
    ├── UpstreamError (502)
    │   ├── ServerUnreachable        MCP_SERVER_UNREACHABLE        connect failed (reason attributed, R-3.1)
    │   ├── ServerProtocolError      MCP_PROTOCOL_ERROR            the server broke the protocol
    │   ├── ServerRequestFailed      MCP_SERVER_ERROR              the server answered a JSON-RPC error
    │   ├── AgentRequestFailed       GATEWAY_AGENT_ERROR           the agent's client refused a forwarded request
    │   ├── ConnectionLost           MCP_CONNECTION_LOST           the session ended while a request was open
    │   ├── OAuthDiscoveryFailed     OAUTH_DISCOVERY_FAILED        R-4.2-R-4.4 refused or failed (`details.rule`)
    │   ├── OAuthRegistrationFailed  OAUTH_REGISTRATION_FAILED     R-4.8: dynamic client registration failed
    │   └── OAuthTokenFailed         OAUTH_TOKEN_FAILED            the token endpoint refused (`details.oauth_error`)
    ├── ServerTimeout (504)          MCP_SERVER_TIMEOUT
    ├── CallInterrupted (503)        MCP_CALL_INTERRUPTED          R-6.3: the host stopped while the call waited for
    │                                                              a human; nothing was delivered after that point
    ├── HostRequestFailed (500)      HOST_REQUEST_FAILED           the running host refused a CLI request (its own
    │                                                              code in `api_code`, exit by its `status`)
    ├── SandboxUnavailable (503)     MCP_SANDBOX_UNAVAILABLE       R-11.1: this host cannot run sandboxed servers
    │                                                              (exit 12; `details.missing`: bubblewrap,
    │                                                              util-linux, user_namespaces, ...)
    ├── StorageError (500)           STORAGE_ERROR                 the data directory cannot be read or written
    │   ├── StorageUnavailable (503) STORAGE_UNAVAILABLE           R-10.1: the database cannot be reached now (exit 10;
    │   │                                                          `details.database`: the URL without its password)
    │   └── StorageSchemaTooNew      STORAGE_SCHEMA_TOO_NEW        R-10.1: the database's schema is newer than this
    │                                                              mcp-center (exit 11; `details`: both versions)
    └── SecretStoreError (500)       SECRET_STORE_ERROR            the key is missing or a ciphertext does not open
        └── SecretKeyMismatch        SECRET_KEY_MISMATCH           R-10.1: this instance's key is not the key the
                                                                   shared database's ciphertexts were sealed with

A name that is not found (a server id, a tool) carries `details.did_you_mean`: the closest
existing names (`did_you_mean()`), so the CLI and the page can offer them.

Spec: R-7.3, docs/requirements.md#R-7.3 ("every bad input gets a clear error with a stable code, HTTP status and
message; nothing is half-applied or lost").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

__all__ = [
    "AddressInUse",
    "AddressUnavailable",
    "AdminAuthRequired",
    "AgentRequestFailed",
    "ApprovalClosed",
    "ApprovalDenied",
    "ApprovalExpired",
    "ApprovalNotFound",
    "ApprovalStale",
    "CallCancelled",
    "CallInterrupted",
    "CapabilityNotDeclared",
    "CapabilityNotOffered",
    "CenterError",
    "ConfigInvalid",
    "Conflict",
    "ConnectionLost",
    "CsrfTokenInvalid",
    "DataDirInUse",
    "ElicitationAnswerInvalid",
    "FieldError",
    "Forbidden",
    "GatewayTokenNotFound",
    "HostNotAllowed",
    "HostRequestFailed",
    "ImportFormatMismatch",
    "ImportFormatUnknown",
    "ImportInputChanged",
    "ImportJsonInvalid",
    "ImportNothingToApply",
    "ImportPreviewExpired",
    "ImportPreviewStale",
    "ImportPreviewUnknown",
    "ImportTooLarge",
    "ImportValuesInvalid",
    "InteractionClosed",
    "InteractionNotDelivered",
    "InteractionNotFound",
    "InvalidInput",
    "NotFound",
    "OAuthAuthorizationRequired",
    "OAuthCallbackInvalid",
    "OAuthDiscoveryFailed",
    "OAuthIssuerChoiceRequired",
    "OAuthNotConfigured",
    "OAuthRegistrationFailed",
    "OAuthStepUpLimitReached",
    "OAuthStepUpRequired",
    "OAuthTokenFailed",
    "OperationInUse",
    "OriginNotAllowed",
    "PromptNotFound",
    "RequestInvalid",
    "RequestTooLarge",
    "ResourceNotFound",
    "SandboxRequired",
    "SandboxUnavailable",
    "SandboxWarmUpUnsupported",
    "SecretKeyInvalid",
    "SecretKeyMismatch",
    "SecretNotFound",
    "SecretStoreError",
    "ServerDisabled",
    "ServerExists",
    "ServerNotFound",
    "ServerNotTested",
    "ServerNotTrusted",
    "ServerProtocolError",
    "ServerRequestFailed",
    "ServerTimeout",
    "ServerUnreachable",
    "ServerVersionConflict",
    "StorageError",
    "StorageSchemaTooNew",
    "StorageUnavailable",
    "ToolDenied",
    "ToolDisabled",
    "ToolNotFound",
    "TrustDigestMismatch",
    "Unauthorized",
    "UpstreamError",
    "did_you_mean",
]

DID_YOU_MEAN = 3
"""At most this many suggestions in `details.did_you_mean`."""


def did_you_mean(name: str, known: Iterable[str]) -> list[str]:
    """The existing names closest to a `name` that was not found, best first (at most `DID_YOU_MEAN`).

    Case is ignored; a known name that starts with or contains `name` counts as close even when
    it is much longer (`time` → `time-2`). Returns [] when nothing is close.
    """
    names = sorted(set(known))
    if not name or not names:
        return []
    lowered = {n.lower(): n for n in names}
    wanted = name.lower()
    close = [lowered[m] for m in difflib.get_close_matches(wanted, list(lowered), n=DID_YOU_MEAN, cutoff=0.6)]
    close += [n for n in names if wanted in n.lower() and n not in close and n != name]
    return close[:DID_YOU_MEAN]


class CenterError(Exception):
    """Base of every error we raise on purpose. `code` is API: never rename it.

    Args:
        message: Human-readable text; names the field when there is one. Never a secret.
        details: JSON-serializable context (field paths, reasons, ids). Never a secret.
    """

    code: ClassVar[str] = "INTERNAL_ERROR"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        """Return the error envelope body `{"code", "message", "details"}` (R-7.3)."""
        return {"code": self.code, "message": self.message, "details": self.details}


class FieldError:
    """One violated rule on one field: `field` is a dotted path (`headers.Host`), `code` stable."""

    __slots__ = ("code", "field", "message")

    def __init__(self, field: str, code: str, message: str) -> None:
        self.field = field
        self.code = code
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """Return `{"field", "code", "message"}`."""
        return {"field": self.field, "code": self.code, "message": self.message}

    def __repr__(self) -> str:
        return f"FieldError({self.field!r}, {self.code!r})"


class InvalidInput(CenterError):
    """The caller sent something we refuse; nothing was changed."""

    http_status = 422
    exit_code = 2


class ConfigInvalid(InvalidInput):
    """A server configuration breaks an R-1 rule. `details.errors` lists every `FieldError`."""

    code = "CONFIG_INVALID"

    def __init__(self, errors: list[FieldError]) -> None:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{first.field}: {first.message}{more}", details={"errors": [e.to_dict() for e in errors]})
        self.errors = errors


class RequestInvalid(InvalidInput):
    """A request body or query parameter is malformed (wrong JSON shape, unknown enum value)."""

    code = "REQUEST_INVALID"


class RequestTooLarge(InvalidInput):
    """A request body is larger than the limit (`details.limit_bytes`); refused before it is parsed."""

    code = "REQUEST_TOO_LARGE"
    http_status = 413


class SecretKeyInvalid(InvalidInput):
    """A secret key (env name or header name) is not acceptable for its kind."""

    code = "SECRET_KEY_INVALID"


class ImportTooLarge(InvalidInput):
    """An import file is bigger than the limit; refused before parsing (R-1.8).

    `details`: `limit_bytes`, and `size_bytes` when known.
    """

    code = "IMPORT_TOO_LARGE"
    http_status = 413


class ImportJsonInvalid(InvalidInput):
    """An import file is not JSON, even allowing comments, trailing commas and a BOM (R-1.8).

    `details`: `line` and `column` (1-based, characters; absent when unknown) and `reason`.
    """

    code = "IMPORT_JSON_INVALID"


class ImportFormatUnknown(InvalidInput):
    """An import file has no `mcpServers`, `servers` or bare map of servers (R-1.8)."""

    code = "IMPORT_FORMAT_UNKNOWN"


class ImportFormatMismatch(InvalidInput):
    """An import file is not in the format the caller named (`details.format`, `details.expected`)."""

    code = "IMPORT_FORMAT_MISMATCH"


class ImportValuesInvalid(InvalidInput):
    """The values supplied for an import's variables are missing, unknown or make a server invalid.

    `details.errors` lists `{field, code, message}`: `values.<name>` with VALUE_REQUIRED,
    VALUE_UNKNOWN, DEFAULT_MISSING or VALUE_INVALID, or `servers.<id>.<field>` with an R-1 code.
    """

    code = "IMPORT_VALUES_INVALID"


class ImportNothingToApply(InvalidInput):
    """The confirmed import preview creates no server (every entry was rejected)."""

    code = "IMPORT_NOTHING_TO_APPLY"


class ElicitationAnswerInvalid(InvalidInput):
    """An answer to an elicitation card breaks the schema the server requested (R-6.1).

    `details.errors` lists `{field, code, message}` per property (`content.<name>`); the card stays
    pending so the user can correct the answer.
    """

    code = "ELICITATION_ANSWER_INVALID"


class AddressUnavailable(InvalidInput):
    """`serve` cannot listen on its host and port for another reason than "in use": the host is not
    an address of this machine, the port is privileged, ... `details`: `host`, `port`, `reason`."""

    code = "SERVE_ADDRESS_UNAVAILABLE"


class OAuthCallbackInvalid(InvalidInput):
    """An OAuth callback was refused (R-4.9): `details.reason` is `state_unknown` (unknown, used or
    expired state), `iss_mismatch` (RFC 9207), `code_missing`, or `authorization_denied` (the
    authorization server redirected with `error`, in `details.oauth_error`)."""

    code = "OAUTH_CALLBACK_INVALID"


class NotFound(CenterError):
    http_status = 404
    exit_code = 3


class ServerNotFound(NotFound):
    code = "MCP_SERVER_NOT_FOUND"


class ToolNotFound(NotFound):
    code = "MCP_TOOL_NOT_FOUND"


class SecretNotFound(NotFound):
    code = "MCP_SECRET_NOT_FOUND"


class PromptNotFound(NotFound):
    """No ready server offers this prompt (`/server:prompt`, R-5.4)."""

    code = "MCP_PROMPT_NOT_FOUND"


class ResourceNotFound(NotFound):
    """R-5.5: the server answered `resources/read` with "resource not found" (JSON-RPC -32002, or
    -32602 invalid params, which SDK servers send for an unknown URI); `details`: server_id, uri, rpc_code."""

    code = "MCP_RESOURCE_NOT_FOUND"


class GatewayTokenNotFound(NotFound):
    """R-7.1: no gateway token with that id (revoking an unknown or already revoked token)."""

    code = "GATEWAY_TOKEN_NOT_FOUND"


class CapabilityNotOffered(NotFound):
    """The server did not declare the capability a request needs (`resources`, `prompts`, `tools`) in
    `initialize`; the request was not sent (MCP 2025-11-25 lifecycle, "Capability Negotiation").
    `details.capability` names it."""

    code = "MCP_CAPABILITY_NOT_OFFERED"


class ApprovalNotFound(NotFound):
    """No approval with this id (never created, or forgotten after it ended; R-5.3)."""

    code = "MCP_APPROVAL_NOT_FOUND"


class InteractionNotFound(NotFound):
    """No interaction card with this id (R-6.1)."""

    code = "MCP_INTERACTION_NOT_FOUND"


class Conflict(CenterError):
    http_status = 409
    exit_code = 4


class ServerExists(Conflict):
    """A server with this id is already registered."""

    code = "MCP_SERVER_EXISTS"


class AddressInUse(Conflict):
    """Another process listens on the host and port `serve` was asked to use (R-7.3): found before
    the runtime starts, so a running instance's data is left alone. `details`: `host`, `port`."""

    code = "SERVE_ADDRESS_IN_USE"


class DataDirInUse(Conflict):
    """Another live `mcp-center serve` owns the data directory (R-9.2): one serve per data directory.

    Found before the second serve touches anything (no key, token, serve.json or server). Exit
    code 4, like every conflict. `details`: `data_dir`, and the owner's `pid` and `url` (None
    while it is still starting, or when its record cannot be read).
    """

    code = "SERVE_DATA_DIR_IN_USE"


class ServerVersionConflict(Conflict):
    """The server record changed since the caller read it (optimistic locking, R-1.3)."""

    code = "MCP_SERVER_VERSION_CONFLICT"


class TrustDigestMismatch(Conflict):
    """The digest the user confirmed is not the current connection summary's digest (R-2.1)."""

    code = "MCP_TRUST_DIGEST_MISMATCH"


class ServerNotTrusted(Conflict):
    """Enable refused: the current digest has not been confirmed by the user (R-2.3)."""

    code = "MCP_SERVER_NOT_TRUSTED"


class ServerNotTested(Conflict):
    """Enable refused: no successful test for the current digest (R-2.3)."""

    code = "MCP_SERVER_NOT_TESTED"


class ServerDisabled(Conflict):
    """The server is not enabled, so it has no long-lived session to use (R-2.4)."""

    code = "MCP_SERVER_DISABLED"


class CapabilityNotDeclared(Conflict):
    """The server's `initialize` did not declare the capability this request needs
    (`details.capability`: `completions`, `logging`, ...), so it is not sent (R-12.1)."""

    code = "MCP_CAPABILITY_NOT_DECLARED"


class CallCancelled(Conflict):
    """The call was cancelled by its operation id before or while it ran (R-3.8)."""

    code = "MCP_CALL_CANCELLED"


class ImportPreviewUnknown(Conflict):
    """The import preview token is unknown (never issued, already applied, or the host restarted)."""

    code = "IMPORT_PREVIEW_UNKNOWN"


class ImportPreviewExpired(Conflict):
    """The import preview token expired; preview again (R-1.8)."""

    code = "IMPORT_PREVIEW_EXPIRED"


class ImportInputChanged(Conflict):
    """Apply sent an input (content or format) other than the one previewed under this token (R-1.8)."""

    code = "IMPORT_INPUT_CHANGED"


class ImportPreviewStale(Conflict):
    """The preview the caller confirms is not what applying would do now (R-1.8).

    `details.reason`: `digest_mismatch` (the digest sent is not this preview's) or
    `servers_changed` (servers were added or removed since, so ids would differ).
    """

    code = "IMPORT_PREVIEW_STALE"


class ApprovalExpired(Conflict):
    """Nobody approved or denied the call before its approval timed out; the server never saw it (R-5.3)."""

    code = "MCP_APPROVAL_EXPIRED"


class ApprovalStale(Conflict):
    """Approved, but what was approved changed while the call waited: the server was deleted or
    re-created, its confirmed configuration (tool permissions included) changed, or the caller's
    gateway token was revoked. The server never saw the call (R-5.3, R-1.4)."""

    code = "MCP_APPROVAL_STALE"


class ApprovalClosed(Conflict):
    """The approval was already decided, expired or cancelled; `details.state` says which (R-5.3)."""

    code = "MCP_APPROVAL_CLOSED"


class InteractionClosed(Conflict):
    """The interaction card is no longer pending; `details.state` says how it ended (R-6.1)."""

    code = "MCP_INTERACTION_CLOSED"


class InteractionNotDelivered(Conflict):
    """The card's server request did not survive a restart of the host, so an answer cannot reach it (R-6.3).

    The call that asked failed explicitly; `details.retry` says whether the user may re-send it.
    """

    code = "MCP_INTERACTION_NOT_DELIVERED"


class OAuthNotConfigured(Conflict):
    """An OAuth action on a server whose `auth.kind` is not `oauth`."""

    code = "OAUTH_NOT_CONFIGURED"


class OAuthAuthorizationRequired(Conflict):
    """The server needs (new) authorization that only a user can give (R-4.7, R-4.9).

    Raised by runtime requests (`details.reason` is `auth_required`) after a 401 that one refresh
    could not cure, and by OAuth actions that need a login first. `details.hint` says why (for example
    `invalid_grant`: the refresh token was revoked). Start a login with `POST .../oauth/start`.
    """

    code = "OAUTH_AUTHORIZATION_REQUIRED"


class OAuthStepUpRequired(Conflict):
    """The server answered 403 `insufficient_scope` (R-4.5): `details.scopes` lists the scopes a
    step-up authorization will request (what was granted plus what the challenge asks for);
    `details.reason` is `step_up_required`."""

    code = "OAUTH_STEP_UP_REQUIRED"


class OAuthStepUpLimitReached(Conflict):
    """Step-up authorizations did not satisfy the server (R-4.5, no authorization loops): after
    `details.attempts` authorizations in a row the server still answers `insufficient_scope`. Forget the
    authorization (`DELETE .../oauth`) or change the configuration to try again."""

    code = "OAUTH_STEP_UP_LIMIT_REACHED"


class OAuthIssuerChoiceRequired(Conflict):
    """The protected resource names several authorization servers and none is bound yet (R-4.3): the
    broker does not guess. `details.issuers` lists them; start again with `{"issuer": ...}`."""

    code = "OAUTH_ISSUER_CHOICE_REQUIRED"


class OperationInUse(Conflict):
    """A call was started with the operation id of a call that is still running (ids name one call)."""

    code = "MCP_OPERATION_IN_USE"


class Forbidden(CenterError):
    http_status = 403
    exit_code = 5


class SandboxRequired(Forbidden):
    """The `production` profile starts a stdio server only with a sandbox policy (R-2.5, R-11.2)."""

    code = "MCP_SANDBOX_REQUIRED"


class ToolDisabled(Forbidden):
    """The user disabled this tool; it is invisible to agents and refused when called (R-5.2)."""

    code = "MCP_TOOL_DISABLED"


class ToolDenied(Forbidden):
    """The user's policy for this tool is `deny`: agents may not call it (R-5.3)."""

    code = "MCP_TOOL_DENIED"


class ApprovalDenied(Forbidden):
    """The user denied this call; the server never saw it (R-5.3)."""

    code = "MCP_APPROVAL_DENIED"


class HostNotAllowed(Forbidden):
    """The request's Host header is not on the allow-list (DNS rebinding defence, R-7.2)."""

    code = "HOST_NOT_ALLOWED"


class OriginNotAllowed(Forbidden):
    """A browser request came from another origin (CSRF defence, R-7.2)."""

    code = "ORIGIN_NOT_ALLOWED"


class CsrfTokenInvalid(Forbidden):
    """A state-changing request authenticated by the browser session cookie lacks its CSRF token (R-7.2)."""

    code = "CSRF_TOKEN_INVALID"


class Unauthorized(CenterError):
    http_status = 401
    exit_code = 6


class AdminAuthRequired(Unauthorized):
    """The admin token is missing or wrong (R-7.1)."""

    code = "ADMIN_AUTH_REQUIRED"


class UpstreamError(CenterError):
    """An MCP server failed us. `details.reason` attributes the failure (R-3.1)."""

    http_status = 502
    exit_code = 7


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
    """The host stopped while the call waited for a human (an approval or an elicitation card).

    Nothing was delivered after that point: an approval never reached the server
    (`details.reached_server` false); an elicitation answer never did either, and the tool did not
    finish (`details.reached_server` true: the server may have done part of its work). The call is
    never re-sent automatically (R-6.3).
    """

    code = "MCP_CALL_INTERRUPTED"
    http_status = 503
    exit_code = 9


class HostRequestFailed(CenterError):
    """The running host answered a CLI request with an error envelope (`mcp-center auth` drives the
    host through its REST API): `api_code`, `message` and `details` are the host's, `status` its
    HTTP status. The CLI prints the host's code; the status sets the exit (`cli.host.exit_code_for_status`).

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


class StorageError(CenterError):
    code = "STORAGE_ERROR"


class StorageUnavailable(StorageError):
    """The database cannot be reached now (refused, gone mid-run, timed out) (R-10.1).

    Nothing of the change was applied. Retry later: `serve` keeps running and recovers by itself
    when the database returns. `details.database` names it without its password.
    """

    code = "STORAGE_UNAVAILABLE"
    http_status = 503
    exit_code = 10


class StorageSchemaTooNew(StorageError):
    """The database was migrated by a newer mcp-center than this one (R-10.1).

    Refused before anything is read or written. `details`: `database_version`, `code_version`.
    """

    code = "STORAGE_SCHEMA_TOO_NEW"
    exit_code = 11


class SecretStoreError(CenterError):
    code = "SECRET_STORE_ERROR"


class SandboxUnavailable(CenterError):
    """A sandboxed stdio server cannot start because this host lacks what the sandbox needs (R-11.1).

    `details.missing` names it: `bubblewrap` (not installed), `util-linux` (no prlimit/setpriv),
    `user_namespaces` (the kernel or a security module refuses them), `linux`, or
    `bubblewrap_failed` (a trial sandbox failed for another reason, quoted in the message).
    """

    code = "MCP_SANDBOX_UNAVAILABLE"
    http_status = 503
    exit_code = 12


class SandboxWarmUpUnsupported(InvalidInput):
    """A warm-up was asked for a server that has no sandbox policy, or whose command is neither
    `npx` nor `uvx` (the package managers whose caches a warm-up fills, R-11.1)."""

    code = "MCP_SANDBOX_WARM_UP_UNSUPPORTED"


class SecretKeyMismatch(SecretStoreError):
    """This instance's secret key is not the one the shared database's ciphertexts were sealed with
    (R-10.1): every instance on one database needs the same key (`MCP_CENTER_SECRET_KEY` or a copy
    of the key file). Refused at start, before anything is written."""

    code = "SECRET_KEY_MISMATCH"
