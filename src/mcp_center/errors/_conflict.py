"""Conflicts (409): the request is well formed but the state does not allow it now (R-7.3).

Readiness (trust, test, enable: R-2.1-R-2.4), versions (R-1.3), cancels and operation ids (R-3.8),
imports (R-1.8), approvals and cards (R-5.3, R-6.1, R-6.3), OAuth states a user must resolve (R-4).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from mcp_center.errors._base import Conflict

__all__ = [
    "AddressInUse",
    "ApprovalClosed",
    "ApprovalExpired",
    "ApprovalStale",
    "CallCancelled",
    "CapabilityNotDeclared",
    "DataDirInUse",
    "DatabaseRequired",
    "ImportConflict",
    "ImportInputChanged",
    "ImportPreviewExpired",
    "ImportPreviewStale",
    "ImportPreviewUnknown",
    "InstanceNameInUse",
    "InteractionClosed",
    "InteractionNotDelivered",
    "OAuthAuthorizationRequired",
    "OAuthIssuerChoiceRequired",
    "OAuthNotConfigured",
    "OAuthStepUpLimitReached",
    "OAuthStepUpRequired",
    "OperationInUse",
    "ServeAlreadyRunning",
    "ServerAlreadyRegistered",
    "ServerDisabled",
    "ServerExists",
    "ServerNotTested",
    "ServerNotTrusted",
    "ServerVersionConflict",
    "TrustDigestMismatch",
]


class ServerExists(Conflict):
    """A server with this id is already registered."""

    code = "MCP_SERVER_EXISTS"


class ServerAlreadyRegistered(Conflict):
    """`add` of a server whose name and whole configuration (command, arguments, env, URL, headers,
    auth: everything but the id; secret values are not compared) an existing server has: nothing was
    created; `details.server_id` is the existing one (the oldest when several are), `details.same_config`
    all of them. A new id (`--id`, `id` in a REST body) registers it anyway (R-1.1, issue 16). The REST
    create (and so the page) refuses it alike: HTTP 409, so a retried POST makes no copy."""

    code = "MCP_SERVER_ALREADY_REGISTERED"


class AddressInUse(Conflict):
    """Another process listens on the host and port `serve` was asked to use (R-7.3): found before
    the runtime starts, so a running instance's data is left alone. `details`: `host`, `port`."""

    code = "SERVE_ADDRESS_IN_USE"


class InstanceNameInUse(Conflict):
    """Another live `serve` on the shared database already runs under this `--instance-name` (R-10.2):
    names tell the instances apart (the `X-MCP-Center-Instance` header, the instances list, the
    balancer's logs), so the later of two is refused at start, before it serves; and a serve that
    finds, on reconnecting to the database, that another live instance took its name while it was
    away stops (the name is a lease). Exit code 4.
    `details`: `name`, and the other's `hostname`, `pid`, `url`."""

    code = "SERVE_INSTANCE_NAME_IN_USE"


class DataDirInUse(Conflict):
    """Another live `mcp-center serve` owns the data directory (R-9.2): one serve per data directory.

    Found before the second serve touches anything (no key, token, serve.json or server). Exit
    code 4, like every conflict. `details`: `data_dir`, and the owner's `pid` and `url` (None
    while it is still starting, or when its record cannot be read).
    """

    code = "SERVE_DATA_DIR_IN_USE"


class ServeAlreadyRunning(DataDirInUse):
    """`serve` was started again on a data directory whose live serve already listens on the same
    port (R-9.2): the user's host is up, only its address is news. Told apart from another program
    on the port (`AddressInUse`). `details`: `data_dir`, `pid`, `url` (where to open it)."""

    code = "SERVE_ALREADY_RUNNING"


class DatabaseRequired(Conflict):
    """A CLI command or a file-backed serve would open the data directory's files, but the directory's
    state is in a shared database (R-10.1): its live serve keeps it there, or a database-backed serve
    that ran there left `database.json`; no `MCP_CENTER_DATABASE_URL` was given (R-9.2). Refused before
    anything is read or written in the directory. `details`: `data_dir`, `pid` (null when no serve
    runs), `database` (without its password)."""

    code = "STORAGE_DATABASE_REQUIRED"


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
    """The server is not enabled, so it has no long-lived session to use (R-2.4); `details.needs`
    lists the steps still missing in order (`service.readiness.Readiness.needs`: trust, test, enable)."""

    code = "MCP_SERVER_DISABLED"


class CapabilityNotDeclared(Conflict):
    """The server's `initialize` did not declare the capability this request needs
    (`details.capability`: `completions`, `logging`, ...), so it is not sent (R-12.1)."""

    code = "MCP_CAPABILITY_NOT_DECLARED"


class CallCancelled(Conflict):
    """The call was cancelled by its operation id before or while it ran (R-3.8)."""

    code = "MCP_CALL_CANCELLED"


class ImportPreviewUnknown(Conflict):
    """The import preview token is unknown: not sealed under this host's key (forged, damaged, or from a host
    with another key), or already applied on this instance (R-1.8)."""

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


class ImportConflict(Conflict):
    """An import entry has the name of an existing server with another definition, and
    `on_conflict` is `refuse` (the default): nothing was applied (R-1.8).

    `details.conflicts`: `[{"name", "server_id", "fields"}]`, every such entry.
    """

    code = "IMPORT_CONFLICT"


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
