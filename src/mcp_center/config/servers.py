"""Server configuration: one pydantic model per transport, and the rules of R-1.

Threats this module stops: a pasted configuration that sends credentials in a URL, to a plain-http
remote host, or to another site through a URL fragment trick (R-1.6); a header that overrides
what the protocol owns (`Host`, `Mcp-Session-Id`, `Authorization` under managed auth, R-1.7);
a stdio "command" that only works through a shell (R-2.6: we never run a shell, so
`npx foo | sh` must be refused, not half-interpreted).

Every rule violation is a `FieldError` with a stable code and the dotted field path; the service
raises them together as one `ConfigInvalid` (HTTP 422). No rule reads the network; one rule
(`COMMAND_NOT_A_PROGRAM`) checks whether a path with spaces exists on disk.
"""

from __future__ import annotations

import ipaddress
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mcp_center.config.fieldnames import FieldErrorList, field_names_at
from mcp_center.config.sandbox import SandboxPolicy, check_sandbox
from mcp_center.errors import ConfigInvalid, FieldError, not_one_of
from mcp_center.models import TransportKind

__all__ = [
    "OAUTH_CLIENT_SECRET_KEYS",
    "RESERVED_HEADERS",
    "AuthBearer",
    "AuthConfig",
    "AuthNone",
    "AuthOAuth",
    "JwtSigningAlgorithm",
    "OAuthBinding",
    "OAuthGrant",
    "RemoteServerConfig",
    "ServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "StreamableHttpServerConfig",
    "TokenEndpointAuthMethod",
    "ToolPolicy",
    "check_header_name",
    "check_url",
    "is_loopback_host",
    "parse_server_config",
    "slugify",
]

ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME_PATTERN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A display name is shown on the trust page: no C0/C1 controls, no line/paragraph separators, no
# bidi embedding/override/isolate characters (they can make one name render as another).
_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHELL_SYNTAX = re.compile(r"[\s|;&<>$`()]")
# Bidirectional controls make text render in another order than it runs ("\u202eexe.txt"): refused
# in everything the trust summary shows (command, args, cwd, env, URL, headers).
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# plus the 2026 `Mcp-Method`/`Mcp-Name` headers the SDK sets (docs/sdk-notes.md#streamable-http).
RESERVED_HEADERS: frozenset[str] = frozenset(
    h.lower()
    for h in (
        "Host",
        "Content-Type",
        "Content-Length",
        "Accept",
        "Mcp-Session-Id",
        "Mcp-Protocol-Version",
        "Last-Event-ID",
        "Connection",
        "Transfer-Encoding",
        "Mcp-Method",
        "Mcp-Name",
        # hop-by-hop and framing headers belong to the HTTP client, not to configuration
        "Keep-Alive",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Upgrade",
        "Expect",
    )
)

MAX_ARGS = 256
MAX_ENV_ENTRIES = 256
MAX_HEADER_ENTRIES = 64
MAX_TOOL_ENTRIES = 4096
MAX_ARG_CHARS = 8192
MAX_ENV_VALUE_CHARS = 32 * 1024
MAX_HEADER_VALUE_CHARS = 8 * 1024
MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 100

ToolPolicy = Literal["ask", "allow", "deny"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuthNone(_Model):
    """No authorization: requests carry only the configured headers."""

    kind: Literal["none"] = "none"


class AuthBearer(_Model):
    """A static bearer token, stored as a secret (kind `bearer`, key `token`, R-1.5)."""

    kind: Literal["bearer"] = "bearer"


class OAuthBinding(_Model):
    """Where OAuth credentials may be used: the canonical resource and the issuer (R-4.6)."""

    resource: str
    issuer: str


OAuthGrant = Literal["authorization_code", "client_credentials", "cross_app_access"]
"""How the broker obtains tokens (R-4): a user authorizes in the browser (`authorization_code`), the
host authenticates as itself (`client_credentials`, SEP-1046), or an identity-provider ID token is
exchanged for an ID-JAG and presented with the jwt-bearer grant (`cross_app_access`, SEP-990)."""

TokenEndpointAuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]
"""How the host authenticates at the token endpoint (RFC 7591 §2, RFC 7523 §2.2)."""

JwtSigningAlgorithm = Literal["ES256", "ES384", "RS256", "PS256"]
"""Algorithms for a `private_key_jwt` client assertion (RFC 7523)."""

OAUTH_CLIENT_SECRET_KEYS: tuple[str, ...] = ("client_secret", "private_key", "idp_id_token")
"""Write-only OAuth client credentials a user may configure (secret kind `oauth`, R-1.5): the client
secret, the PEM private key for `private_key_jwt`, and the identity provider's ID token for
`cross_app_access`."""


class AuthOAuth(_Model):
    """OAuth 2.1 for a remote server (R-4). Every field is optional; the defaults are the common case.

    Attributes:
        grant: See `OAuthGrant`. `client_credentials` and `cross_app_access` need `client_id`.
        client_id: A pre-registered client id (at most 255 characters); without it the broker uses a
            client ID metadata document (`client_metadata_url`) or dynamic client registration.
        token_endpoint_auth_method: None means: what the registration says, else
            `client_secret_basic` when a client secret is configured, else `none`.
        jwt_signing_algorithm: For `private_key_jwt`; None means ES256 for an EC key, RS256 for RSA.
        scopes: Used only when neither the server's challenge nor its protected resource metadata
            names scopes (R-4.5).
        client_metadata_url: An https URL (non-root path) serving this host's client ID metadata
            document, used as the client id when the authorization server supports CIMD. Used only
            when configured (R-4.10).
        legacy_endpoint_fallback: Allow the 2025-03-26 discovery of servers without protected
            resource metadata: the MCP origin is the authorization server and, without its metadata,
            `/authorize`, `/token` and `/register` on the MCP origin are used (PKCE S256 support
            cannot be verified there). Off by default (R-4.2 forbids guessing endpoints); turn it on
            only for a legacy server you trust.
        idp_token_endpoint: `cross_app_access`: the identity provider's token endpoint (RFC 8693).
        idp_client_id: `cross_app_access`: this host's client id at the identity provider.
        binding: The (canonical resource, issuer) the credentials belong to (R-4.6). Recorded by the
            broker when a user authorizes; a user may also pin it. A binding for another resource
            than the current URL is ignored.
    """

    kind: Literal["oauth"] = "oauth"
    grant: OAuthGrant = "authorization_code"
    client_id: str | None = Field(default=None, max_length=255)
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    jwt_signing_algorithm: JwtSigningAlgorithm | None = None
    scopes: list[str] | None = None
    client_metadata_url: str | None = None
    legacy_endpoint_fallback: bool = False
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = Field(default=None, max_length=255)
    binding: OAuthBinding | None = None


AuthConfig = Annotated[AuthNone | AuthBearer | AuthOAuth, Field(discriminator="kind")]


class _ServerBase(_Model):
    id: str
    name: str
    disabled_tools: list[str] = Field(default_factory=list)
    tool_policies: dict[str, ToolPolicy] = Field(default_factory=dict)
    connect_on_startup: bool = True
    call_timeout_s: float = Field(default=60.0, ge=1, le=3600)
    """Per-call timeout in seconds (R-3.8)."""
    startup_timeout_s: float | None = Field(default=None, ge=1, le=600)
    """Handshake timeout in seconds; None means 60 s for stdio (cold npx/uvx) and 30 s for remote."""
    max_result_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    """Tool results above this many bytes of JSON are truncated and marked (R-3.9)."""

    @property
    def effective_startup_timeout_s(self) -> float:
        """The handshake deadline in seconds, defaults applied."""
        if self.startup_timeout_s is not None:
            return self.startup_timeout_s
        return 60.0 if isinstance(self, StdioServerConfig) else 30.0


class StdioServerConfig(_ServerBase):
    """A local server process spoken to over stdin/stdout (R-1.1, R-2.6)."""

    transport: Literal["stdio"] = "stdio"
    command: str
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    secret_env: list[str] = Field(default_factory=list)
    """Names of env vars whose values are secrets (set through the secrets API)."""
    sandbox: SandboxPolicy | None = None
    """How the process is confined (R-11.1); None runs it unconfined (refused by `production`, R-11.2)."""


class RemoteServerConfig(_ServerBase):
    """Fields shared by the two HTTP transports."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    secret_headers: list[str] = Field(default_factory=list)
    """Names of headers whose values are secrets (set through the secrets API)."""
    auth: AuthConfig = Field(default_factory=AuthNone)


class StreamableHttpServerConfig(RemoteServerConfig):
    """A remote server over Streamable HTTP (MCP 2025-11-25)."""

    transport: Literal["streamable_http"] = "streamable_http"


class SseServerConfig(RemoteServerConfig):
    """A remote server over the legacy HTTP+SSE transport (2024-11-05), for old servers only."""

    transport: Literal["sse"] = "sse"


ServerConfig = Annotated[
    StdioServerConfig | StreamableHttpServerConfig | SseServerConfig, Field(discriminator="transport")
]
_SERVER_CONFIG: TypeAdapter[StdioServerConfig | StreamableHttpServerConfig | SseServerConfig] = TypeAdapter(
    ServerConfig
)


def parse_server_config(data: Mapping[str, Any]) -> StdioServerConfig | StreamableHttpServerConfig | SseServerConfig:
    """Validate a server configuration dict against R-1.1, R-1.6, R-1.7 and R-2.6.

    Args:
        data: The editable fields of a server (JSON shape of the API, without read-only fields).
    Returns:
        The frozen per-transport model.
    Raises:
        ConfigInvalid: one or more rules broken; `errors` lists each with field path and code.
    """
    try:
        config = _SERVER_CONFIG.validate_python(dict(data))
    except ValidationError as exc:
        raise ConfigInvalid(_from_pydantic(exc)) from None
    errors = list(_check(config))
    if errors:
        raise ConfigInvalid(errors)
    return config


def _from_pydantic(exc: ValidationError) -> list[FieldError]:
    """Each pydantic error as a FieldError, the most telling first (an unknown field, with the
    closest known ones, before the "is required" its typo causes; issue 16)."""
    found = FieldErrorList(lambda loc: field_names_at(ServerConfig, loc))
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        # Drop the discriminator tag pydantic puts first ("stdio", "streamable_http", ...).
        if loc and loc[0] in {k.value for k in TransportKind}:
            loc = loc[1:]
        # ... and the auth kind tag after "auth" ("auth.oauth.scopes" -> "auth.scopes").
        if len(loc) >= 2 and loc[0] == "auth" and loc[1] in {"none", "bearer", "oauth"}:
            loc = [loc[0], *loc[2:]]
        field = ".".join(loc) or "transport"
        kind = err["type"]
        if kind == "union_tag_invalid" and field in {"transport", "auth"}:
            allowed = _TRANSPORTS if field == "transport" else ("none", "bearer", "oauth")
            tag = err.get("ctx", {}).get("tag")
            found.errors.append(not_one_of(field + ("" if field == "transport" else ".kind"), tag, allowed))
        elif kind == "union_tag_not_found" and field in {"transport", "auth"}:
            allowed = ", ".join(_TRANSPORTS if field == "transport" else ("none", "bearer", "oauth"))
            found.errors.append(
                FieldError(
                    field + ("" if field == "transport" else ".kind"), "FIELD_INVALID", f"must be one of: {allowed}"
                )
            )
        else:
            found.add(err, field)
    return found.ranked()


_TRANSPORTS = ("stdio", "streamable_http", "sse")


def _check(config: StdioServerConfig | StreamableHttpServerConfig | SseServerConfig) -> Iterable[FieldError]:
    if not ID_PATTERN.fullmatch(config.id):
        yield FieldError(
            "id", "ID_INVALID", "must be 1-32 characters of a-z, 0-9 and '-', not starting or ending with '-'"
        )
    name = config.name.strip()
    if not name or len(name) > MAX_NAME_CHARS or _NAME_FORBIDDEN.search(config.name):
        yield FieldError("name", "NAME_INVALID", f"must be 1-{MAX_NAME_CHARS} printable characters")
    if len(config.disabled_tools) > MAX_TOOL_ENTRIES or len(config.tool_policies) > MAX_TOOL_ENTRIES:
        yield FieldError("disabled_tools", "FIELD_INVALID", f"at most {MAX_TOOL_ENTRIES} tools may be listed")
    for i, tool in enumerate(config.disabled_tools):
        if not tool or len(tool) > 256 or _NAME_FORBIDDEN.search(tool):
            yield FieldError(
                f"disabled_tools.{i}", "FIELD_INVALID", "must be a tool name of 1-256 printable characters"
            )
    for tool in config.tool_policies:
        if not tool or len(tool) > 256 or _NAME_FORBIDDEN.search(tool):
            yield FieldError("tool_policies", "FIELD_INVALID", "keys must be tool names of 1-256 printable characters")
    if isinstance(config, StdioServerConfig):
        yield from _check_stdio(config)
    else:
        yield from _check_remote(config)


def _check_stdio(config: StdioServerConfig) -> Iterable[FieldError]:
    command = config.command
    if not command.strip():
        yield FieldError("command", "COMMAND_EMPTY", "must name the program to run")
    elif "\x00" in command or "\n" in command or "\r" in command:
        yield FieldError("command", "COMMAND_INVALID", "must not contain NUL or line breaks")
    elif _SHELL_SYNTAX.search(command) and not os.path.isfile(command):
        yield FieldError(
            "command",
            "COMMAND_NOT_A_PROGRAM",
            "is not a single program: stdio servers never run through a shell, so put the program in "
            "'command' and each argument in 'args' (for example command 'npx', args ['-y', 'package'])",
        )
    if len(config.args) > MAX_ARGS:
        yield FieldError("args", "ARGS_INVALID", f"must have at most {MAX_ARGS} items")
    for i, arg in enumerate(config.args):
        if "\x00" in arg or len(arg) > MAX_ARG_CHARS:
            yield FieldError(
                f"args.{i}", "ARGS_INVALID", f"must not contain NUL and be at most {MAX_ARG_CHARS} characters"
            )
    if config.cwd is not None and (not os.path.isabs(config.cwd) or "\x00" in config.cwd):
        yield FieldError("cwd", "CWD_INVALID", "must be an absolute path")
    shown = [("command", command), ("cwd", config.cwd or "")]
    shown += [(f"args.{i}", arg) for i, arg in enumerate(config.args)]
    shown += [(f"env.{key}", value) for key, value in config.env.items()]
    for path, text in shown:
        if _BIDI.search(text):
            yield FieldError(path, "TEXT_INVALID", "must not contain bidirectional control characters")
    if len(config.env) + len(config.secret_env) > MAX_ENV_ENTRIES:
        yield FieldError("env", "ENV_INVALID", f"at most {MAX_ENV_ENTRIES} env vars (plain and secret) may be set")
    for key, value in config.env.items():
        if not ENV_NAME_PATTERN.fullmatch(key):
            yield FieldError(f"env.{key}", "ENV_NAME_INVALID", "must match [A-Za-z_][A-Za-z0-9_]*")
        if "\x00" in value or len(value) > MAX_ENV_VALUE_CHARS:
            yield FieldError(f"env.{key}", "ENV_VALUE_INVALID", "must not contain NUL and be at most 32 KiB")
    seen: set[str] = set()
    for key in config.secret_env:
        if not ENV_NAME_PATTERN.fullmatch(key):
            yield FieldError(f"secret_env.{key}", "ENV_NAME_INVALID", "must match [A-Za-z_][A-Za-z0-9_]*")
        if key in config.env:
            yield FieldError(
                f"secret_env.{key}", "ENV_DUPLICATE", "is also a plain env var; a name is either plain or secret"
            )
        if key in seen:
            yield FieldError(f"secret_env.{key}", "ENV_DUPLICATE", "is listed twice")
        seen.add(key)
    if config.sandbox is not None:
        yield from check_sandbox(config.sandbox)
        for i, entry in enumerate(config.sandbox.paths):
            if _BIDI.search(entry.path):
                yield FieldError(
                    f"sandbox.paths.{i}.path", "TEXT_INVALID", "must not contain bidirectional control characters"
                )


def _check_remote(config: StreamableHttpServerConfig | SseServerConfig) -> Iterable[FieldError]:
    yield from check_url("url", config.url)
    managed_auth = config.auth.kind in {"bearer", "oauth"}
    seen: dict[str, str] = {}
    for origin, names in (("headers", list(config.headers)), ("secret_headers", config.secret_headers)):
        for name in names:
            path = f"{origin}.{name}"
            error = check_header_name(path, name, managed_auth=managed_auth)
            if error is not None:
                yield error
            lowered = name.lower()
            if lowered in seen:
                yield FieldError(
                    path, "HEADER_DUPLICATE", f"duplicates {seen[lowered]} (header names are case-insensitive)"
                )
            seen[lowered] = path
    if len(config.headers) + len(config.secret_headers) > MAX_HEADER_ENTRIES:
        yield FieldError("headers", "HEADER_INVALID", f"at most {MAX_HEADER_ENTRIES} headers may be set")
    for name, value in config.headers.items():
        if _CONTROL.search(value.replace("\t", "")) or len(value) > MAX_HEADER_VALUE_CHARS or not value.isascii():
            yield FieldError(
                f"headers.{name}",
                "HEADER_VALUE_INVALID",
                "must be at most 8 KiB of ASCII without control characters",
            )
    if _BIDI.search(config.url):
        yield FieldError("url", "TEXT_INVALID", "must not contain bidirectional control characters")
    if isinstance(config.auth, AuthOAuth):
        yield from _check_oauth(config.auth)


def _check_oauth(auth: AuthOAuth) -> Iterable[FieldError]:
    """R-4 configuration rules: well-formed scopes and ids, https URLs, and coherent grant settings."""
    for i, scope in enumerate(auth.scopes or []):
        if not scope or any(c.isspace() for c in scope) or _CONTROL.search(scope):
            yield FieldError(f"auth.scopes.{i}", "SCOPE_INVALID", "must be a non-empty scope token without spaces")
    for name in ("client_id", "idp_client_id"):
        value: str | None = getattr(auth, name)
        if value is not None and (not value or _CONTROL.search(value) or value != value.strip()):
            yield FieldError(f"auth.{name}", "FIELD_INVALID", "must be a non-empty printable string")
    if auth.grant != "authorization_code" and auth.client_id is None:
        yield FieldError("auth.client_id", "FIELD_REQUIRED", f"is required for the {auth.grant} grant")
    uses_jwt = auth.token_endpoint_auth_method == "private_key_jwt"  # noqa: S105 - a method name, not a secret
    if uses_jwt and auth.grant != "client_credentials":
        yield FieldError(
            "auth.token_endpoint_auth_method", "FIELD_INVALID", "private_key_jwt is supported for client_credentials"
        )
    if auth.jwt_signing_algorithm is not None and not uses_jwt:
        yield FieldError(
            "auth.jwt_signing_algorithm", "FIELD_INVALID", "needs token_endpoint_auth_method private_key_jwt"
        )
    if auth.client_metadata_url is not None:
        if auth.client_id is not None:
            yield FieldError(
                "auth.client_metadata_url", "FIELD_INVALID", "set either client_id or client_metadata_url, not both"
            )
        yield from _check_cimd_url(auth.client_metadata_url)
    if auth.legacy_endpoint_fallback and auth.grant != "authorization_code":
        yield FieldError("auth.legacy_endpoint_fallback", "FIELD_INVALID", "is only for the authorization_code grant")
    if auth.grant == "cross_app_access":
        if auth.idp_token_endpoint is None:
            yield FieldError("auth.idp_token_endpoint", "FIELD_REQUIRED", "is required for the cross_app_access grant")
    elif auth.idp_token_endpoint is not None or auth.idp_client_id is not None:
        field = "auth.idp_token_endpoint" if auth.idp_token_endpoint is not None else "auth.idp_client_id"
        yield FieldError(field, "FIELD_INVALID", "is only for the cross_app_access grant")
    if auth.idp_token_endpoint is not None:
        yield from check_url("auth.idp_token_endpoint", auth.idp_token_endpoint)
    if auth.binding is not None:
        yield from check_url("auth.binding.resource", auth.binding.resource)
        yield from check_url("auth.binding.issuer", auth.binding.issuer)


def _check_cimd_url(url: str) -> Iterable[FieldError]:
    """R-4.10: a client ID metadata document URL is https with a path, no query, fragment or credentials."""
    errors = list(check_url("auth.client_metadata_url", url))
    yield from errors
    if errors:
        return
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.path in {"", "/"} or parts.query:
        yield FieldError(
            "auth.client_metadata_url",
            "CIMD_URL_INVALID",
            "must be an https URL with a path and no query: the document must be served publicly over https",
        )


def check_header_name(path: str, name: str, *, managed_auth: bool) -> FieldError | None:
    """Return the `FieldError` for a header name that is malformed or reserved (R-1.7), else None."""
    if not HEADER_NAME_PATTERN.fullmatch(name):
        return FieldError(path, "HEADER_NAME_INVALID", "must be an HTTP header token (letters, digits, '-')")
    lowered = name.lower()
    if lowered in RESERVED_HEADERS:
        return FieldError(path, "HEADER_RESERVED", f"'{name}' is set by the MCP transport and cannot be configured")
    if lowered == "authorization" and managed_auth:
        return FieldError(
            path,
            "HEADER_RESERVED",
            "'Authorization' is set by the configured auth and cannot be configured; "
            "a bearer token is the secret 'token' of kind 'bearer'",
        )
    return None


def is_loopback_host(host: str) -> bool:
    """True for `localhost`, 127.0.0.0/8 and ::1 — the only hosts where plain http is allowed (R-1.6)."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(path: str, url: str) -> Iterable[FieldError]:
    """Yield the R-1.6 violations of `url`: http(s) only, no credentials, no fragment, https unless loopback."""
    if len(url) > MAX_URL_CHARS:
        yield FieldError(path, "URL_INVALID", f"must be at most {MAX_URL_CHARS} characters")
        return
    if _CONTROL.search(url) or " " in url:
        yield FieldError(path, "URL_INVALID", "must not contain spaces or control characters")
        return
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        yield FieldError(path, "URL_INVALID", "is not a valid URL")
        return
    if parts.scheme not in {"http", "https"}:
        yield FieldError(path, "URL_SCHEME_NOT_ALLOWED", "must use http or https")
        return
    if not parts.hostname:
        yield FieldError(path, "URL_INVALID", "must include a host")
        return
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        yield FieldError(path, "URL_HAS_CREDENTIALS", "must not embed credentials; use a secret header or auth instead")
    if "#" in url:
        yield FieldError(path, "URL_HAS_FRAGMENT", "must not contain a fragment (#...)")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        yield FieldError(
            path, "URL_HTTPS_REQUIRED", "must use https (plain http is allowed only for localhost, 127.0.0.0/8 and ::1)"
        )
    if port == 0:
        yield FieldError(path, "URL_INVALID", "must not use port 0")


_FOLDED = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "đ": "d",
        "ð": "d",
        "ł": "l",
        "þ": "th",
        "ı": "i",
        "ħ": "h",
        "ŧ": "t",
        "ŋ": "n",
        "µ": "u",
    }
)
"""Latin letters that Unicode does not decompose into a base letter and a mark (NFKD keeps them)."""


def slugify(name: str) -> str:
    """Derive a server id from a display name: lowercase a-z0-9 and '-', at most 32 characters.

    Accented Latin letters keep their base letter ("Café" → "cafe", "Straße" → "strasse", NFKD then
    ASCII); they used to be dropped ("caf"). Letters with no ASCII form (其他, Ωmega's Ω) are
    dropped; a name with none left gives "server". It lowercases again after NFKD, whose
    compatibility forms may be capitals (bold "GitHub" → "github", double-struck "R Stats" → "r-stats"; they were
    dropped). Ids already stored never change: only a new server's id is derived (R-1.1). The caller
    makes the id unique ("-2", ...).
    """
    folded = unicodedata.normalize("NFKD", name.lower().translate(_FOLDED)).lower()
    ascii_only = folded.encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_only).strip("-")
    slug = slug[:32].strip("-")
    return slug or "server"
