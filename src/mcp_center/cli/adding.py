"""`mcp-center add` the way `claude mcp add` users type it: `-e KEY=value`, `-H "Name: value"`.

    mcp-center add github -e GITHUB_TOKEN=ghp_... -- npx -y @modelcontextprotocol/server-github@2025.4.8
    mcp-center add docs https://mcp.example.com/mcp -H "Authorization: Bearer abc" --transport http

Threat: a token typed on the command line landing in plain `servers.json`, a summary or an export.
A value whose name or shape looks like a credential (`*_TOKEN`, `*_KEY`, `X-Api-Key`,
`Authorization`, `Bearer ...`, a URL with a password: `interchange/credentials.py`, the same rules as
import, R-1.8) becomes a write-only secret, and the command says which ones it made secret (never
their values). `Authorization: Bearer <token>` becomes `auth: bearer` with the token as its secret,
as in import; `--plain-env` / `--plain-header` keep a value that only looks like a credential in
plain text. The shell's history still holds what was typed: `mcp-center secret set` reads a value
from a hidden prompt instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_center.errors import FieldError, RequestInvalid
from mcp_center.interchange.credentials import (
    bearer_token_of,
    is_credential_name,
    is_credential_value,
    missing_credential,
)

__all__ = ["TRANSPORT_ALIASES", "AddPlan", "plan_add"]

TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamableHttp": "streamable_http",
    "sse": "sse",
}
"""`--transport` values, in Claude Code's spelling (`http`) and ours (`streamable_http`)."""


@dataclass
class AddPlan:
    """The create body of `mcp-center add` and what to tell the user about it.

    Attributes:
        body: The `create_server` body (secret values under `secret_values`).
        secrets: `"env GITHUB_TOKEN"`, `"header X-Api-Key"`, `"bearer token"`: what became write-only.
    """

    body: dict[str, Any]
    secrets: list[str] = field(default_factory=list[str])


def _invalid(where: str, message: str) -> RequestInvalid:
    return RequestInvalid(
        f"{where}: {message}", details={"errors": [FieldError(where, "FIELD_INVALID", message).to_dict()]}
    )


def _env_pairs(items: list[str]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _invalid("--env", f"expected KEY=value, got {key or item!r}")
        pairs.append((key, value))
    return pairs


def _header_pairs(items: list[str]) -> list[tuple[str, str]]:
    """`Name: value` (curl's and Claude Code's form), or `Name=value` (the older form of this CLI)."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        colon, equals = item.find(":"), item.find("=")
        cut = colon if colon != -1 and (equals == -1 or colon < equals) else equals
        if cut <= 0:
            raise _invalid("--header", f"expected 'Name: value', got {item.split(':')[0].split('=')[0]!r}")
        pairs.append((item[:cut].strip(), item[cut + 1 :].strip()))
    return pairs


CREDENTIAL_EMPTY = "CREDENTIAL_EMPTY"
"""The field code of an `-e`/`-H` credential with no value (an unset shell variable; R-1.5)."""


def _refuse_missing_credentials(option: str, pairs: list[tuple[str, str]], plain: set[str]) -> None:
    """Refuse `-H "Authorization: Bearer $UNSET"` and `-e GITHUB_TOKEN=` before anything is stored.

    Raises:
        RequestInvalid: details.errors[0] has code CREDENTIAL_EMPTY and names the header/variable.
    """
    for name, value in pairs:
        why = None if name in plain else missing_credential(name, value)
        if why is not None:
            what = f"header {name}" if option == "--header" else f"variable {name}"
            message = (
                f"the value of {what} {why}: the shell variable meant to hold it was probably unset "
                "(set it, or check its name, and run the command again)"
            )
            raise RequestInvalid(
                f"{option} {name}: {message}",
                details={"errors": [FieldError(f"{option} {name}", CREDENTIAL_EMPTY, message).to_dict()]},
            )


def _secret(name: str, value: str, plain: set[str]) -> bool:
    return name not in plain and (is_credential_name(name) or is_credential_value(value))


def plan_add(
    name: str,
    target: list[str],
    *,
    url: str | None = None,
    transport: str | None = None,
    server_id: str | None = None,
    env: list[str] | None = None,
    headers: list[str] | None = None,
    plain: list[str] | None = None,
) -> AddPlan:
    """The create body for `mcp-center add NAME [URL | -- COMMAND ARGS...]`.

    Args:
        target: The words after the name: a URL (remote), or the command and its arguments.
        url: `--url` (wins over a URL in `target`).
        transport: `--transport`: stdio, http (= streamable_http), sse.
        env / headers: `-e KEY=value` (stdio) / `-H "Name: value"` (remote).
        plain: Names whose values stay plain text even if they look like credentials.
    Raises:
        RequestInvalid: a malformed `-e`/`-H`, a credential with no value (field code
            CREDENTIAL_EMPTY: `-H "Authorization: Bearer "`, `-e GITHUB_TOKEN=`), an unknown
            transport, env on a remote server or headers on a stdio one, or neither a URL nor a command.
    """
    kept_plain = set(plain or [])
    env_pairs = _env_pairs(env or [])
    header_pairs = _header_pairs(headers or [])
    _refuse_missing_credentials("--header", header_pairs, kept_plain)
    _refuse_missing_credentials("--env", env_pairs, kept_plain)
    kind = TRANSPORT_ALIASES.get(transport) if transport is not None else None
    if transport is not None and kind is None:
        raise _invalid("--transport", "must be stdio, http (Streamable HTTP) or sse")
    if url is None and len(target) == 1 and target[0].startswith(("http://", "https://")) and kind != "stdio":
        url = target[0]
        target = []
    body: dict[str, Any] = {"name": name}
    if server_id:
        body["id"] = server_id
    plan = AddPlan(body)
    if url is not None:
        if env:
            raise _invalid("--env", "environment variables are for local (stdio) servers; use -H for headers")
        if target:
            raise _invalid("command", "give either a URL or a command, not both")
        body.update(transport=kind if kind not in (None, "stdio") else "streamable_http", url=url)
        plain_headers: dict[str, str] = {}
        secret_headers: dict[str, str] = {}
        for header, value in header_pairs:
            token = bearer_token_of(value) if header.lower() == "authorization" else None
            if token is not None and header not in kept_plain:
                body["auth"] = {"kind": "bearer"}
                body.setdefault("secret_values", {})["bearer_token"] = token
                plan.secrets.append("bearer token (auth: bearer)")
            elif _secret(header, value, kept_plain):
                secret_headers[header] = value
                plan.secrets.append(f"header {header}")
            else:
                plain_headers[header] = value
        body["headers"] = plain_headers
        if secret_headers:
            body.setdefault("secret_values", {})["headers"] = secret_headers
        return plan
    if not target:
        raise _invalid("command", "give the server's URL, or its command after '--'")
    if headers:
        raise _invalid("--header", "headers are for remote servers; use -e for a local server's environment")
    if kind not in (None, "stdio"):
        raise _invalid("--transport", f"{transport} needs a URL")
    plain_env: dict[str, str] = {}
    secret_env: dict[str, str] = {}
    for key, value in env_pairs:
        if _secret(key, value, kept_plain):
            secret_env[key] = value
            plan.secrets.append(f"env {key}")
        else:
            plain_env[key] = value
    body.update(transport="stdio", command=target[0], args=target[1:], env=plain_env)
    if secret_env:
        body["secret_values"] = {"env": secret_env}
    return plan
