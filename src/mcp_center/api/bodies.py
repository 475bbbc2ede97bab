"""Request bodies of the REST API as pydantic models: FastAPI validates each body with its model
before the handler runs, and `/openapi.json` describes the same model (issue 16).

A body that breaks its model answers `422 REQUEST_INVALID` with `details.errors` naming each field
(`FIELD_REQUIRED`, `FIELD_UNKNOWN` for a field a strict body does not know, `FIELD_INVALID`), like
the service's own checks, which still run (the library is a face of its own). Bodies that ignored
unknown fields before still ignore them; the ones that refused them still refuse them.

The server configuration bodies are not here: the service validates them with the
`config.servers` models, and `api.openapi` describes those (R-1.1).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from mcp_center.config import ToolPolicy
from mcp_center.interchange import IMPORT_FORMATS
from mcp_center.service.imports import MAX_TOKEN_CHARS
from mcp_center.service.untrusted import MAX_CONTEXT_BYTES

__all__ = [
    "AgentToolCall",
    "ApprovalDecision",
    "CompletionArgument",
    "CompletionContext",
    "CompletionPromptRef",
    "CompletionRequest",
    "CompletionResourceRef",
    "GatewayTokenRequest",
    "ImportApply",
    "ImportPreview",
    "InteractionAnswer",
    "LogLevelRequest",
    "OAuthCallbackUrl",
    "OAuthStart",
    "PromptGet",
    "ResourceRead",
    "RpcRequest",
    "SecretValue",
    "ToolCall",
    "ToolPolicyChange",
    "TrustRequest",
]

OperationId = Annotated[
    str,
    Field(min_length=1, max_length=200, description="Your id for the call, to cancel it."),
]
# strict: JSON `true` is not the integer 1, nor "3" the integer 3 (the service refuses them too).
Version = Annotated[int, Field(strict=True, ge=1, description="The server version you read.")]
MaxBytes = Annotated[
    int, Field(strict=True, ge=1, le=MAX_CONTEXT_BYTES, description="Largest context block, in bytes.")
]


class _Strict(BaseModel):
    """Unknown fields are refused (FIELD_UNKNOWN)."""

    model_config = ConfigDict(extra="forbid")


class _Lenient(BaseModel):
    """Unknown fields are ignored, as they always were for this body."""

    model_config = ConfigDict(extra="ignore")


class ToolCall(_Strict):
    """`POST /api/mcp/servers/{id}/tools/{tool}/call` (user-initiated, R-3.2)."""

    arguments: dict[str, Any] | None = Field(default=None, description="The tool's arguments.")
    operation_id: OperationId | None = None


class AgentToolCall(ToolCall):
    """`POST /api/tools/{name}/call` (agent-initiated, through the approval policy, R-5.3)."""


class ToolPolicyChange(_Strict):
    """`PUT .../tools/{tool}/policy` (R-5.3, R-1.4)."""

    policy: ToolPolicy
    version: Version


class ApprovalDecision(_Strict):
    """`POST /api/approvals/{id}` (R-5.3)."""

    decision: Literal["approve", "deny"]


class PromptGet(_Strict):
    """`POST /api/prompts/{server:prompt}/get` (R-5.4)."""

    arguments: dict[str, str] | None = Field(default=None, description="The prompt's arguments.")
    max_bytes: MaxBytes | None = None


class ResourceRead(_Strict):
    """`POST /api/resources/read` (R-5.5)."""

    server_id: str = Field(description="The server that offers the resource.")
    uri: str = Field(min_length=1, description="The resource's URI.")
    max_bytes: MaxBytes | None = None


class InteractionAnswer(_Strict):
    """`POST /api/interactions/{id}` (R-6.1, R-6.3)."""

    action: Literal["accept", "decline", "cancel", "retry"]
    content: dict[str, Any] | None = Field(default=None, description="The answer, for `accept`.")


class TrustRequest(_Lenient):
    """`POST /api/mcp/servers/{id}/trust` (R-2.1)."""

    digest: str = Field(description="The digest of the connection summary you reviewed.")


class SecretValue(_Strict):
    """`PUT /api/mcp/servers/{id}/secrets/{key}` (R-1.5): the value is write-only.

    `value` is checked by the service, which answers `CONFIG_INVALID` (`SECRET_VALUE_INVALID`,
    `SECRET_VALUE_HAS_NUL`, `SECRET_VALUE_TOO_SHORT`) for a missing, short or malformed one.
    """

    value: Annotated[
        Any,
        WithJsonSchema({"type": "string", "minLength": 1, "description": "The secret value (never returned)."}),
    ] = None
    version: Version | None = None


class GatewayTokenRequest(_Lenient):
    """`POST /api/gateway/tokens` (R-7.1)."""

    name: str = Field(description="A name to recognise the token by.")


class LogLevelRequest(_Lenient):
    """`PUT /api/mcp/servers/{id}/logging/level` (R-12.1)."""

    level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class RpcRequest(_Lenient):
    """`POST /api/mcp/servers/{id}/rpc`: one JSON-RPC request on the live session (R-12.1)."""

    method: str = Field(description="Any request method but `initialize`, e.g. `tools/list` or `ping`.")
    params: dict[str, Any] | None = None
    operation_id: Annotated[
        Any, WithJsonSchema({"type": "string", "description": "Your id for the request, to cancel it."})
    ] = None
    """Not a string: ignored, as it always was (the request simply cannot be cancelled by id)."""


class CompletionPromptRef(_Lenient):
    """A prompt whose argument is completed."""

    type: Literal["ref/prompt"]
    name: str


class CompletionResourceRef(_Lenient):
    """A resource template whose variable is completed."""

    type: Literal["ref/resource"]
    uri: str


class CompletionArgument(_Lenient):
    """The argument being completed and what was typed so far."""

    name: str
    value: str


class CompletionContext(_Lenient):
    """Arguments already chosen."""

    arguments: dict[str, str] | None = None


class CompletionRequest(_Lenient):
    """`POST /api/mcp/servers/{id}/complete`: `completion/complete` (R-12.1)."""

    ref: Annotated[CompletionPromptRef | CompletionResourceRef, Field(discriminator="type")]
    argument: CompletionArgument
    context: CompletionContext | None = None


class OAuthStart(_Strict):
    """`POST /api/mcp/servers/{id}/oauth/start` (R-4.9); the body may be left out."""

    issuer: str | None = Field(default=None, description="Choose among several authorization servers.")


class OAuthCallbackUrl(_Strict):
    """`POST /api/mcp/servers/{id}/oauth/complete` (R-4.9)."""

    callback_url: str = Field(description="The URL the browser was redirected to.")


def _import_format(value: str) -> str:
    if value not in IMPORT_FORMATS:
        raise ValueError("must be one of: " + ", ".join(IMPORT_FORMATS))
    return value


ImportFormat = Annotated[str, Field(json_schema_extra={"enum": list(IMPORT_FORMATS)})]
OnConflict = Annotated[
    Literal["refuse", "skip", "rename"],
    Field(
        description="An entry whose name an existing server has, with another definition: refuse the import "
        "(IMPORT_CONFLICT), skip it, or create it under a -2 id. An identical one is skipped as unchanged "
        "(except with rename). The preview's mode must be sent again with apply."
    ),
]


class ImportPreview(_Strict):
    """`POST /api/mcp/import/preview` (R-1.8): the description of the body, which the route reads
    itself (size-limited) and the service parses with the same rules."""

    content: str = Field(description="The client file's text.")
    format: ImportFormat = "auto"
    on_conflict: OnConflict = "refuse"

    _format = field_validator("format")(_import_format)


class ImportApply(_Strict):
    """`POST /api/mcp/import/apply` (R-1.8): the previewed input again, with the preview's token and digest."""

    token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS, description="The preview's token.")
    digest: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS, description="The preview's digest.")
    content: str = Field(description="The same text that was previewed.")
    format: ImportFormat = "auto"
    values: dict[str, str] | None = Field(default=None, description="Values of the variables the preview asked for.")
    use_defaults: list[str] | None = Field(default=None, description="Variables to leave at their defaults.")
    on_conflict: OnConflict = "refuse"

    _format = field_validator("format")(_import_format)
