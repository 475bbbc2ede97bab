"""Parse create/update bodies: editable configuration, write-only secret values, the version read.

A body may be what `GET /api/mcp/servers/{id}` returned, edited: read-only fields (`version` is
the exception: it is the optimistic-lock token) are ignored, and the read shape of secrets
(`{"API_KEY": {"configured": true}}`) is accepted as a list of declared names. Secret values
travel only in `secret_values` (or `auth.token` as a string for bearer auth, `auth.client_secret`,
`auth.private_key`, `auth.idp_id_token` as strings for OAuth) and are never echoed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_center.config import OAUTH_CLIENT_SECRET_KEYS, ServerConfig
from mcp_center.config.fieldnames import field_names_at
from mcp_center.config.jsonsafe import first_unsafe_value, scrub_text
from mcp_center.errors import MAX_SUGGESTED, ConfigInvalid, FieldError, unknown_field
from mcp_center.interchange.credentials import missing_credential
from mcp_center.models import is_array, is_mapping, is_object
from mcp_center.secrets.redact import MIN_LENGTH

__all__ = [
    "READ_ONLY_FIELDS",
    "SecretValues",
    "ServerBody",
    "check_json_safe",
    "parse_secret_value",
    "parse_server_body",
]

READ_ONLY_FIELDS = frozenset(
    {
        "created_at",
        "updated_at",
        "enabled",
        "trusted_digest",
        "trusted",
        "last_test",
        "tested",
        "summary",
        "digest",
        "status",
        "needs",
        "warnings",
        "oauth",
        "quarantined",
    }
)
MAX_SECRET_CHARS = 32 * 1024
MIN_SECRET_CHARS = MIN_LENGTH
_HEADER_VALUE_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass
class SecretValues:
    """Write-only secret values from a body: env name → value, header name → value, bearer token."""

    env: dict[str, str] = field(default_factory=dict[str, str])
    headers: dict[str, str] = field(default_factory=dict[str, str])
    bearer_token: str | None = None
    oauth: dict[str, str] = field(default_factory=dict[str, str])
    """OAuth client credentials by key (`OAUTH_CLIENT_SECRET_KEYS`)."""

    def __repr__(self) -> str:
        has_bearer = self.bearer_token is not None
        return (
            f"SecretValues(env={sorted(self.env)}, headers={sorted(self.headers)}, bearer={has_bearer}, "
            f"oauth={sorted(self.oauth)})"
        )

    def is_empty(self) -> bool:
        """True when the body set no secret value."""
        return not self.env and not self.headers and self.bearer_token is None and not self.oauth


@dataclass
class ServerBody:
    """A parsed body: `config` is ready for `parse_server_config`; `version` is what the caller read."""

    config: dict[str, Any]
    secrets: SecretValues
    version: int | None


def check_json_safe(value: object, path: str = "body") -> None:
    """Refuse lone surrogates, NaN/infinity and absurd nesting anywhere in `value` (see config.jsonsafe).

    Raises:
        ConfigInvalid: code TEXT_INVALID with the path of the first bad value.
    """
    found = first_unsafe_value(value, path)
    if found is not None:
        where, problem = found
        raise ConfigInvalid([FieldError(scrub_text(where.removeprefix("body.")), "TEXT_INVALID", problem)])


def parse_secret_value(path: str, value: object, *, header: bool) -> str:
    """Check one secret value: a string of `MIN_SECRET_CHARS` to 32 KiB (no line breaks for headers).

    Shorter values are refused because they cannot be redacted reliably from logs and server
    output (R-1.5); a value that short belongs in plain `env`/`headers` if it is not secret.

    Raises:
        ConfigInvalid: with code SECRET_VALUE_INVALID, SECRET_VALUE_HAS_NUL (a NUL character: no
            process environment or header can carry one) or SECRET_VALUE_TOO_SHORT (the message
            never includes the value).
    """
    if not isinstance(value, str) or not value or len(value) > MAX_SECRET_CHARS:
        raise ConfigInvalid([FieldError(path, "SECRET_VALUE_INVALID", "must be a non-empty string of at most 32 KiB")])
    if "\x00" in value:
        raise ConfigInvalid([FieldError(path, "SECRET_VALUE_HAS_NUL", "must not contain a NUL character (\\x00)")])
    check_json_safe(value, path)
    if header and not value.isascii():
        raise ConfigInvalid([FieldError(path, "SECRET_VALUE_INVALID", "must be ASCII (an HTTP header value)")])
    if len(value) < MIN_SECRET_CHARS:
        raise ConfigInvalid(
            [
                FieldError(
                    path,
                    "SECRET_VALUE_TOO_SHORT",
                    f"must be at least {MIN_SECRET_CHARS} characters: shorter values cannot be redacted reliably "
                    "(use a plain value if it is not secret)",
                )
            ]
        )
    if header and _HEADER_VALUE_BAD.search(value):
        raise ConfigInvalid(
            [FieldError(path, "SECRET_VALUE_INVALID", "must not contain line breaks or control characters")]
        )
    return value


def _names(path: str, value: object) -> list[str]:
    if is_array(value):
        if not all(isinstance(v, str) for v in value):
            raise ConfigInvalid([FieldError(path, "FIELD_INVALID", "must be a list of names")])
        return list(value)  # type: ignore[arg-type]
    if is_object(value):
        return [str(k) for k in value]  # read shape {"NAME": {"configured": true}}
    raise ConfigInvalid([FieldError(path, "FIELD_INVALID", "must be a list of names")])


def parse_server_body(body: object, *, require_version: bool) -> ServerBody:
    """Split a JSON body into configuration, secret values and the version it was based on.

    Raises:
        ConfigInvalid: the body is not an object, a secret value is malformed, or `version` is
            missing/invalid when required (R-1.3).
    """
    if not is_mapping(body):
        raise ConfigInvalid([FieldError("body", "FIELD_INVALID", "must be a JSON object")])
    check_json_safe(body)
    data: dict[str, Any] = {str(k): v for k, v in body.items() if k not in READ_ONLY_FIELDS}
    try:
        version = _version(data.pop("version", None), require_version=require_version)
    except ConfigInvalid as exc:
        # `versoin` is the cause of "version: is required": say so first (issue 16).
        known = [*field_names_at(ServerConfig, ["stdio", ""]), *field_names_at(ServerConfig, ["sse", ""])]
        known += ["version", "secret_values"]
        strays = [key for key in data if key not in known]
        unknown = [unknown_field(key, known if i < MAX_SUGGESTED else ()) for i, key in enumerate(strays)]
        raise ConfigInvalid([*unknown, *exc.errors]) if unknown else exc from None
    secrets = _secret_values(data.pop("secret_values", None))
    _refuse_scheme_only_headers(data.get("headers"))
    for list_field in ("secret_env", "secret_headers"):
        if list_field in data:
            data[list_field] = _names(list_field, data[list_field])
    # Names that received a value are declared secrets even if the caller did not list them.
    if secrets.env:
        declared = list(data.get("secret_env") or [])
        data["secret_env"] = declared + [k for k in secrets.env if k not in declared]
    if secrets.headers:
        declared = list(data.get("secret_headers") or [])
        lowered = {d.lower() for d in declared}
        data["secret_headers"] = declared + [k for k in secrets.headers if k.lower() not in lowered]
    auth = data.get("auth")
    if is_mapping(auth):
        data["auth"] = _auth_without_secrets(auth, secrets)
    return ServerBody(config=data, secrets=secrets, version=version)


def _refuse_scheme_only_headers(headers: object) -> None:
    """A plain `headers` entry that is an auth scheme with no credential (`Authorization: Bearer `:
    an unset variable) is refused, as in `secret_values.headers` (R-1.5)."""
    if not is_mapping(headers):
        return
    for name, value in headers.items():
        if isinstance(value, str) and value.strip() and (why := missing_credential(str(name), value)):
            raise ConfigInvalid(
                [
                    FieldError(
                        f"headers.{name}",
                        "CREDENTIAL_EMPTY",
                        f"{why}: the variable meant to hold it was probably unset",
                    )
                ]
            )


def _version(raw: object, *, require_version: bool) -> int | None:
    """The `version` a body was based on (R-1.3): a positive integer, or None when absent and allowed."""
    if raw is not None:
        if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
            raise ConfigInvalid(
                [FieldError("version", "FIELD_INVALID", "must be the positive integer version you read")]
            )
        return raw
    if require_version:
        raise ConfigInvalid(
            [FieldError("version", "FIELD_REQUIRED", "is required: send the version you read (optimistic locking)")]
        )
    return None


def _secret_values(raw_values: object) -> SecretValues:
    """The write-only `secret_values` of a body (`{"env", "headers", "bearer_token", "oauth"}`), checked."""
    secrets = SecretValues()
    if raw_values is None:
        return secrets
    if not is_mapping(raw_values):
        raise ConfigInvalid([FieldError("secret_values", "FIELD_INVALID", "must be an object")])
    sections = ("env", "headers", "bearer_token", "oauth")
    for key in raw_values:
        if key not in sections:
            raise ConfigInvalid([unknown_field(f"secret_values.{key}", sections)])
    for kind in ("env", "headers"):
        section: object = raw_values.get(kind) or {}
        if not is_mapping(section):
            raise ConfigInvalid([FieldError(f"secret_values.{kind}", "FIELD_INVALID", "must be an object")])
        target = secrets.env if kind == "env" else secrets.headers
        for name, value in section.items():
            path = f"secret_values.{kind}.{name}"
            why = missing_credential(str(name), value) if isinstance(value, str) and value.strip() else None
            if why is not None:
                raise ConfigInvalid(
                    [FieldError(path, "CREDENTIAL_EMPTY", f"{why}: the variable meant to hold it was probably unset")]
                )
            target[str(name)] = parse_secret_value(path, value, header=kind == "headers")
    oauth_values: object = raw_values.get("oauth") or {}
    if not is_mapping(oauth_values):
        raise ConfigInvalid([FieldError("secret_values.oauth", "FIELD_INVALID", "must be an object")])
    for name, value in oauth_values.items():
        if name not in OAUTH_CLIENT_SECRET_KEYS:
            raise ConfigInvalid(
                [FieldError(f"secret_values.oauth.{name}", "FIELD_UNKNOWN", "is not an OAuth secret key")]
            )
        secrets.oauth[str(name)] = parse_secret_value(f"secret_values.oauth.{name}", value, header=False)
    if raw_values.get("bearer_token") is not None:
        secrets.bearer_token = parse_secret_value("secret_values.bearer_token", raw_values["bearer_token"], header=True)
    return secrets


def _auth_without_secrets(auth: Mapping[str, Any], secrets: SecretValues) -> Mapping[str, Any]:
    """`auth` with the secret strings it may carry moved into `secrets` (`auth.token` for bearer
    auth, `auth.client_secret`/`private_key`/`idp_id_token` for OAuth); the read shape
    `{"configured": bool}` of those fields is dropped. Other shapes come back unchanged."""
    if auth.get("kind") == "oauth":
        auth_copy = {str(k): v for k, v in auth.items() if k not in OAUTH_CLIENT_SECRET_KEYS}
        for name in OAUTH_CLIENT_SECRET_KEYS:
            value = auth.get(name)
            if isinstance(value, str):
                secrets.oauth[name] = parse_secret_value(f"auth.{name}", value, header=False)
            elif value is not None and not is_mapping(value):  # the read shape {"configured": bool}
                raise ConfigInvalid([FieldError(f"auth.{name}", "FIELD_INVALID", "must be the secret string")])
        return auth_copy
    if "token" in auth:
        auth_copy = {str(k): v for k, v in auth.items() if k != "token"}
        token = auth["token"]
        if isinstance(token, str):
            secrets.bearer_token = parse_secret_value("auth.token", token, header=True)
        elif not is_mapping(token):  # the read shape {"configured": bool} is ignored
            raise ConfigInvalid([FieldError("auth.token", "FIELD_INVALID", "must be the token string")])
        return auth_copy
    return auth
