"""Invalid input (422, 413): the caller sent something we refuse and nothing was changed (R-7.3, R-1.8).

Private to `mcp_center.errors`: import every name from there.
"""

from __future__ import annotations

from mcp_center.errors._base import FieldError, InvalidInput, capped_errors, listed_summary

__all__ = [
    "AddressUnavailable",
    "AnswerRequired",
    "ApprovalAmbiguous",
    "ArgumentMissing",
    "CommandUnknown",
    "ConfigInvalid",
    "ConfirmationRequired",
    "ElicitationAnswerInvalid",
    "GatewayTokenAmbiguous",
    "ImportDuplicateKey",
    "ImportEmpty",
    "ImportFileUnreadable",
    "ImportFormatMismatch",
    "ImportFormatUnknown",
    "ImportJsonInvalid",
    "ImportNothingToApply",
    "ImportTooLarge",
    "ImportValuesInvalid",
    "OAuthCallbackInvalid",
    "OptionUnknown",
    "OptionValueInvalid",
    "RequestInvalid",
    "RequestTooLarge",
    "SandboxWarmUpUnsupported",
    "SecretKeyInvalid",
]


class ConfigInvalid(InvalidInput):
    """A server configuration breaks an R-1 rule. `details.errors` lists its `FieldError`s (at most
    `MAX_FIELD_ERRORS`, then `errors_omitted`; `self.errors` keeps them all)."""

    code = "CONFIG_INVALID"

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(listed_summary(errors), details=capped_errors(errors))
        self.errors = errors


class ConfirmationRequired(InvalidInput):
    """A CLI command asks for a yes/no confirmation and no answer can come (standard input closed
    or not readable, or interrupted): nothing changed; `--yes` confirms without asking (R-7.3)."""

    code = "CONFIRMATION_REQUIRED"


class AnswerRequired(InvalidInput):
    """A CLI command asks for a value (an import variable, a pasted URL, a secret) and no answer can
    come (standard input closed, at its end or interrupted): nothing changed; the message says how
    to give the value without being asked (R-7.3)."""

    code = "ANSWER_REQUIRED"


class CommandUnknown(InvalidInput):
    """The CLI was given a command it does not have (`mcp-center status`): nothing ran; exit 2, as
    every usage error. `details`: `command` (clipped), `did_you_mean` (the closest known commands)
    (R-7.3, issue 16)."""

    code = "COMMAND_UNKNOWN"


class OptionUnknown(InvalidInput):
    """A CLI command was given an option it does not have (`--dat-dir`): nothing ran; exit 2, as
    every usage error. `details`: `option` (clipped), `command` (its path), `did_you_mean` (the
    closest of the command's options) (R-7.3, issue 16)."""

    code = "OPTION_UNKNOWN"


class OptionValueInvalid(InvalidInput):
    """A CLI option's value is missing (`--data-dir` last), given to a flag (`--json=1`) or not of the
    option's type (`--port abc`): nothing ran; exit 2, as every usage error. `details`: `option`
    (clipped), `command` (its path), `reason` (`missing`, `flag`, `type`); the value given is never
    repeated (it may be a secret typed in the wrong place) (R-7.3, issue 16)."""

    code = "OPTION_VALUE_INVALID"


class ArgumentMissing(InvalidInput):
    """A CLI command was run without an argument it needs (`mcp-center enable` with no server id):
    nothing ran; exit 2, as every usage error. `details`: `argument` (its name, e.g. `SERVER_ID`),
    `command` (its path), `usage` (the command's arguments, e.g. `mcp-center add [OPTIONS] NAME
    [TARGET]...`) (R-7.3, issue 16)."""

    code = "ARGUMENT_MISSING"


class ApprovalAmbiguous(InvalidInput):
    """R-5.3: `mcp-center approvals approve|deny PREFIX` names several approvals by the start of
    their ids, whatever their states: nothing was decided; `details`: `prefix`, `count` (how many
    match), `pending` (how many of them are pending), `ids` (the first ten of them; give more
    characters) (issue 16)."""

    code = "MCP_APPROVAL_AMBIGUOUS"


class GatewayTokenAmbiguous(InvalidInput):
    """R-7.1: a gateway token named by its name, and several live tokens carry it: nothing was
    revoked; `details`: `name`, `ids` (name one of them by id) (issue 16)."""

    code = "GATEWAY_TOKEN_AMBIGUOUS"


class RequestInvalid(InvalidInput):
    """A request body or query parameter is malformed (wrong JSON shape, unknown enum value)."""

    code = "REQUEST_INVALID"


class SettingInvalid(RequestInvalid):
    """A setting is malformed: an `MCP_CENTER_*` environment variable (or the value given to
    `Settings.load`) that is not of its type, out of its bounds or of the wrong shape. Nothing ran;
    exit 2. The message names the variable (and the option that sets it too, if any); the value is
    never repeated (it may be a secret). `details.errors`: one field error, code `SETTING_INVALID`
    (R-7.2, R-7.3). A `RequestInvalid` too, so callers of the library that caught that still do."""

    code = "SETTING_INVALID"


class RequestTooLarge(InvalidInput):
    """A request body is larger than the limit (`details.limit_bytes`); refused before it is parsed."""

    code = "REQUEST_TOO_LARGE"
    http_status = 413


class SecretKeyInvalid(InvalidInput):
    """A secret key (env name or header name) is not acceptable for its kind."""

    code = "SECRET_KEY_INVALID"


class ImportFileUnreadable(InvalidInput):
    """The file given to `mcp-center import` exists but cannot be read (permission, a directory, an I/O
    error): its message names the file and why (R-1.8, R-7.3). `details`: `file` (as given), `path`
    (absolute), `errno`."""

    code = "IMPORT_FILE_UNREADABLE"


class ImportTooLarge(InvalidInput):
    """An import file is bigger than the limit; refused before parsing (R-1.8).

    `details`: `limit_bytes`, and `size_bytes` when known.
    """

    code = "IMPORT_TOO_LARGE"
    http_status = 413


class ImportEmpty(InvalidInput):
    """An import holds nothing (an empty file or paste, only white space or a byte-order mark) (R-1.8).

    The message fits the surface: the CLI names the file (or standard input) and how to give one;
    REST and the page say to send or paste a client's configuration. `details.reason`: `empty`.
    """

    code = "IMPORT_EMPTY"


class ImportJsonInvalid(InvalidInput):
    """An import file is not JSON, even allowing comments, trailing commas and a BOM (R-1.8).

    `details`: `line` and `column` (1-based, characters; absent when unknown) and `reason`.
    """

    code = "IMPORT_JSON_INVALID"


class ImportDuplicateKey(ImportJsonInvalid):
    """An import file names one key twice in one object (R-1.8): `{"a": {...}, "a": {...}}`.

    JSON parsers keep the last one, so a server (or a field) would vanish without a word; the file
    is refused instead and nothing is applied. `details`: `path` (the dotted JSON path of the
    repeated key, e.g. `mcpServers.a` or `mcpServers.a.command`; array items by index; a key that
    is empty, all digits or holds `.`, `[`, `]` or `"` as `["<JSON string>"]`) and `key`. Below
    `env`, `headers`, `args` or a credential-named key at any depth, and for a key longer than 24
    characters or that looks like a credential anywhere, no key's text is given (R-1.5): such keys
    are written `[key #<n>]` (1-based position in their object), and the repeat itself has no `key`
    but `position`.
    """

    code = "IMPORT_DUPLICATE_KEY"


class ImportFormatUnknown(InvalidInput):
    """An import file has no `mcpServers`, `servers` or bare map of servers (R-1.8)."""

    code = "IMPORT_FORMAT_UNKNOWN"


class ImportFormatMismatch(InvalidInput):
    """An import file is not in the format the caller named (`details.format`, `details.expected`)."""

    code = "IMPORT_FORMAT_MISMATCH"


class ImportValuesInvalid(InvalidInput):
    """The values supplied for an import's variables are missing, unknown or make a server invalid.

    `details.errors` lists `{field, code, message}`: `values.<name>` with VALUE_REQUIRED,
    VALUE_UNKNOWN or VALUE_INVALID, `use_defaults.<name>` with VALUE_UNKNOWN, DEFAULT_MISSING or
    DEFAULT_UNUSABLE (a secret's file default the preview already flagged), or
    `servers.<id>.<field>` with an R-1 code.
    """

    code = "IMPORT_VALUES_INVALID"


class ImportNothingToApply(InvalidInput):
    """The confirmed import preview creates no server (every entry is already registered or was rejected)."""

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


class SandboxWarmUpUnsupported(InvalidInput):
    """A warm-up was asked for a server that has no sandbox policy, or whose command is neither
    `npx` nor `uvx` (the package managers whose caches a warm-up fills, R-11.1)."""

    code = "MCP_SANDBOX_WARM_UP_UNSUPPORTED"
