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
    │   │   └── SettingInvalid       SETTING_INVALID           a setting from the environment (MCP_CENTER_*) or
    │   │                                                      given to `Settings.load` is malformed (exit 2)
    │   ├── ConfirmationRequired     CONFIRMATION_REQUIRED     a CLI question got no answer (stdin closed);
    │   │                                                      nothing changed, `--yes` confirms (exit 2)
    │   ├── AnswerRequired           ANSWER_REQUIRED           a CLI question for a value got no answer; nothing
    │   │                                                      changed, the message says how to pass it (exit 2)
    │   ├── CommandUnknown           COMMAND_UNKNOWN           the CLI has no such command (`did_you_mean`, exit 2)
    │   ├── OptionUnknown            OPTION_UNKNOWN            a CLI command has no such option (`did_you_mean`, exit 2)
    │   ├── OptionValueInvalid       OPTION_VALUE_INVALID      a CLI option's value is missing, given to a flag or
    │   │                                                      not of its type (`reason`, exit 2)
    │   ├── ArgumentMissing          ARGUMENT_MISSING          a CLI command was run without an argument it needs
    │   │                                                      (`argument`, `usage`, exit 2)
    │   ├── GatewayTokenAmbiguous    GATEWAY_TOKEN_AMBIGUOUS   R-7.1: a token name several live tokens carry (`ids`)
    │   ├── ApprovalAmbiguous        MCP_APPROVAL_AMBIGUOUS    R-5.3: an approval id prefix several approvals start
    │   │                                                      with (`count`, `ids`; exit 2)
    │   ├── SecretKeyInvalid         SECRET_KEY_INVALID        a secret key name is not allowed
    │   ├── RequestTooLarge (413)    REQUEST_TOO_LARGE         a request body over the size limit
    │   ├── ImportFileUnreadable     IMPORT_FILE_UNREADABLE    R-1.8: the import file exists but cannot be read
    │   ├── ImportTooLarge (413)     IMPORT_TOO_LARGE          R-1.8: an import file over the size limit
    │   ├── ImportEmpty              IMPORT_EMPTY              R-1.8: the file or paste holds nothing
    │   ├── ImportJsonInvalid        IMPORT_JSON_INVALID       R-1.8: not JSON even leniently (line, column)
    │   │   └── ImportDuplicateKey   IMPORT_DUPLICATE_KEY      R-1.8: one key twice in an object (`path`)
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
    │   ├── GatewayTokenNotFound     GATEWAY_TOKEN_NOT_FOUND       R-7.1: no gateway token with that id or name
    │   ├── ImportFileNotFound       IMPORT_FILE_NOT_FOUND         R-1.8: the file given to `import` does not exist
    │   ├── CapabilityNotOffered     MCP_CAPABILITY_NOT_OFFERED    the server declared no such capability in
    │   │                                                          initialize (resources, prompts, tools); not asked
    │   └── InteractionNotFound      MCP_INTERACTION_NOT_FOUND     R-6.1
    ├── Conflict (409)
    │   ├── ServerExists             MCP_SERVER_EXISTS
    │   ├── ServerAlreadyRegistered  MCP_SERVER_ALREADY_REGISTERED `add`: same name and configuration as `server_id`
    │   ├── AddressInUse             SERVE_ADDRESS_IN_USE          another process (often another `serve`) listens
    │   │                                                          on --host:--port; found before anything starts
    │   ├── InstanceNameInUse        SERVE_INSTANCE_NAME_IN_USE    R-10.2: a live instance on the database has the name
    │   ├── DataDirInUse             SERVE_DATA_DIR_IN_USE         R-9.2: a live `serve` owns the data directory
    │   │   │                                                      (exit 4; `details`: data_dir, pid, url)
    │   │   └── ServeAlreadyRunning  SERVE_ALREADY_RUNNING         `serve` again on the same directory and port:
    │   │                                                          it runs already; open `details.url`
    │   ├── DatabaseRequired         STORAGE_DATABASE_REQUIRED     R-10.1: the directory's serve keeps its state in a
    │   │                                                          database; the CLI was given none (never opens files)
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
    │   ├── ImportConflict           IMPORT_CONFLICT               R-1.8: an entry differs from the existing server of
    │   │                                                          its name (`details.conflicts`); --on-conflict
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
    │   ├── ToolQuarantined          MCP_TOOL_QUARANTINED          R-3.6: its definition failed validation
    │   ├── ToolDenied               MCP_TOOL_DENIED               R-5.3: the user's policy for this tool is deny
    │   ├── ApprovalDenied           MCP_APPROVAL_DENIED           R-5.3: the user denied this call
    │   ├── HostNotAllowed           HOST_NOT_ALLOWED              R-7.2
    │   ├── OriginNotAllowed         ORIGIN_NOT_ALLOWED            R-7.2
    │   └── CsrfTokenInvalid         CSRF_TOKEN_INVALID            R-7.2 (browser session without its CSRF token)
    ├── Unauthorized (401)
    │   ├── AdminAuthRequired        ADMIN_AUTH_REQUIRED           R-7.1
    │   └── GatewayAuthRequired      GATEWAY_AUTH_REQUIRED         R-7.1, R-8.1: `gateway --stdio` has no gateway
    │                                                              token (MCP_CENTER_GATEWAY_TOKEN unset)
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
    │                                                              a human or ran; nothing delivered after that point
    ├── HostRequestFailed (500)      HOST_REQUEST_FAILED           the running host refused a CLI request (its own
    │                                                              code in `api_code`, exit by its `status`)
    ├── SandboxUnavailable (503)     MCP_SANDBOX_UNAVAILABLE       R-11.1: this host cannot run sandboxed servers
    │                                                              (exit 12; `details.missing`: bubblewrap,
    │                                                              util-linux, user_namespaces, ...)
    ├── StorageError (500)           STORAGE_ERROR                 the data directory cannot be read or written
    │   ├── StorageUnavailable (503) STORAGE_UNAVAILABLE           R-10.1: the database cannot be reached now (exit 10;
    │   │                                                          `details.database`: the URL without its password)
    │   │   └── StorageBusy (503)    STORAGE_BUSY                  R-10.1: another session held the database's write
    │   │                                                          lock past the wait budget; retry (`details`:
    │   │                                                          `waited_s`, `holder_pid`, `holder_application`)
    │   └── StorageSchemaTooNew      STORAGE_SCHEMA_TOO_NEW        R-10.1: the database's schema is newer than this
    │                                                              mcp-center (exit 11; `details`: both versions)
    └── SecretStoreError (500)       SECRET_STORE_ERROR            the key is missing or a ciphertext does not open
        └── SecretKeyMismatch        SECRET_KEY_MISMATCH           R-10.1: this instance's key is not the key the
                                                                   shared database's ciphertexts were sealed with

A name that is not found (a server id, a tool) carries `details.did_you_mean`: the closest
existing names (`did_you_mean()`), so the CLI and the page can offer them.

Spec: R-7.3, docs/requirements.md#R-7.3 ("every bad input gets a clear error with a stable code, HTTP status and
message; nothing is half-applied or lost").

The tree lives in the package's modules by family (`_base`: the roots and the families; `_input`,
`_not_found`, `_conflict`, `_refused`, `_upstream`, `_storage`), and this package is its one public
path: import every name from `mcp_center.errors`. Each class says `mcp_center.errors` as its
`__module__` (tracebacks, pickling and the tree test name the public path, not a private module).
"""

from __future__ import annotations

from mcp_center.errors._base import (
    DID_YOU_MEAN,
    MAX_ECHOED_CHARS,
    MAX_ECHOED_NAME,
    MAX_FIELD_ERRORS,
    MAX_SUGGESTED,
    CenterError,
    Conflict,
    FieldError,
    Forbidden,
    InvalidInput,
    NotFound,
    Unauthorized,
    UpstreamError,
    capped_errors,
    clip_echo,
    did_you_mean,
    listed_summary,
    most_telling_first,
    not_one_of,
    unknown_field,
)
from mcp_center.errors._conflict import (
    AddressInUse,
    ApprovalClosed,
    ApprovalExpired,
    ApprovalStale,
    CallCancelled,
    CapabilityNotDeclared,
    DatabaseRequired,
    DataDirInUse,
    ImportConflict,
    ImportInputChanged,
    ImportPreviewExpired,
    ImportPreviewStale,
    ImportPreviewUnknown,
    InstanceNameInUse,
    InteractionClosed,
    InteractionNotDelivered,
    OAuthAuthorizationRequired,
    OAuthIssuerChoiceRequired,
    OAuthNotConfigured,
    OAuthStepUpLimitReached,
    OAuthStepUpRequired,
    OperationInUse,
    ServeAlreadyRunning,
    ServerAlreadyRegistered,
    ServerDisabled,
    ServerExists,
    ServerNotTested,
    ServerNotTrusted,
    ServerVersionConflict,
    TrustDigestMismatch,
)
from mcp_center.errors._input import (
    AddressUnavailable,
    AnswerRequired,
    ApprovalAmbiguous,
    ArgumentMissing,
    CommandUnknown,
    ConfigInvalid,
    ConfirmationRequired,
    ElicitationAnswerInvalid,
    GatewayTokenAmbiguous,
    ImportDuplicateKey,
    ImportEmpty,
    ImportFileUnreadable,
    ImportFormatMismatch,
    ImportFormatUnknown,
    ImportJsonInvalid,
    ImportNothingToApply,
    ImportTooLarge,
    ImportValuesInvalid,
    OAuthCallbackInvalid,
    OptionUnknown,
    OptionValueInvalid,
    RequestInvalid,
    RequestTooLarge,
    SandboxWarmUpUnsupported,
    SecretKeyInvalid,
    SettingInvalid,
)
from mcp_center.errors._not_found import (
    ApprovalNotFound,
    CapabilityNotOffered,
    GatewayTokenNotFound,
    ImportFileNotFound,
    InteractionNotFound,
    PromptNotFound,
    ResourceNotFound,
    SecretNotFound,
    ServerNotFound,
    ToolNotFound,
)
from mcp_center.errors._refused import (
    AdminAuthRequired,
    ApprovalDenied,
    CsrfTokenInvalid,
    GatewayAuthRequired,
    HostNotAllowed,
    OriginNotAllowed,
    SandboxRequired,
    ToolDenied,
    ToolDisabled,
    ToolQuarantined,
)
from mcp_center.errors._storage import (
    SecretKeyMismatch,
    SecretStoreError,
    StorageBusy,
    StorageError,
    StorageSchemaTooNew,
    StorageUnavailable,
)
from mcp_center.errors._upstream import (
    AgentRequestFailed,
    CallInterrupted,
    ConnectionLost,
    HostRequestFailed,
    OAuthDiscoveryFailed,
    OAuthRegistrationFailed,
    OAuthTokenFailed,
    SandboxUnavailable,
    ServerProtocolError,
    ServerRequestFailed,
    ServerTimeout,
    ServerUnreachable,
)

__all__ = [
    "DID_YOU_MEAN",
    "MAX_ECHOED_CHARS",
    "MAX_ECHOED_NAME",
    "MAX_FIELD_ERRORS",
    "MAX_SUGGESTED",
    "AddressInUse",
    "AddressUnavailable",
    "AdminAuthRequired",
    "AgentRequestFailed",
    "AnswerRequired",
    "ApprovalAmbiguous",
    "ApprovalClosed",
    "ApprovalDenied",
    "ApprovalExpired",
    "ApprovalNotFound",
    "ApprovalStale",
    "ArgumentMissing",
    "CallCancelled",
    "CallInterrupted",
    "CapabilityNotDeclared",
    "CapabilityNotOffered",
    "CenterError",
    "CommandUnknown",
    "ConfigInvalid",
    "ConfirmationRequired",
    "Conflict",
    "ConnectionLost",
    "CsrfTokenInvalid",
    "DataDirInUse",
    "DatabaseRequired",
    "ElicitationAnswerInvalid",
    "FieldError",
    "Forbidden",
    "GatewayAuthRequired",
    "GatewayTokenAmbiguous",
    "GatewayTokenNotFound",
    "HostNotAllowed",
    "HostRequestFailed",
    "ImportConflict",
    "ImportDuplicateKey",
    "ImportEmpty",
    "ImportFileNotFound",
    "ImportFileUnreadable",
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
    "InstanceNameInUse",
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
    "OptionUnknown",
    "OptionValueInvalid",
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
    "ServeAlreadyRunning",
    "ServerAlreadyRegistered",
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
    "SettingInvalid",
    "StorageBusy",
    "StorageError",
    "StorageSchemaTooNew",
    "StorageUnavailable",
    "ToolDenied",
    "ToolDisabled",
    "ToolNotFound",
    "ToolQuarantined",
    "TrustDigestMismatch",
    "Unauthorized",
    "UpstreamError",
    "capped_errors",
    "clip_echo",
    "did_you_mean",
    "listed_summary",
    "most_telling_first",
    "not_one_of",
    "unknown_field",
]


def _claim_public_path() -> None:
    """Name `mcp_center.errors` as the module of every class it exports (see the module docstring)."""
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type):
            value.__module__ = __name__


_claim_public_path()
