"""The OpenAPI description of the REST API, as the API really answers (R-7.3, issue 16).

`/openapi.json` is FastAPI's description of the routes, corrected where FastAPI cannot know:

- Errors: every route lists each status it answers with the one envelope the API sends,
  `{"error": {"code", "message", "details"}}` (`ErrorEnvelope`, built by `api.errors`), never
  FastAPI's default `422 {"detail": [...]}`, which this API does not send. `API_ERRORS` are the
  statuses every `/api` route can answer (the admin token, the Host/Origin/CSRF checks, the body
  size limit, a malformed parameter or body, a failure of the host); each route adds its own
  (`errors(404, 409, ...)`).
- Security: `/api` accepts the admin token as a bearer token, or the settings page's session
  cookie with the `X-CSRF-Token` header for unsafe methods (R-7.1, R-7.2; `api.security`). Both are
  declared as security schemes, and each `/api` operation requires one of them.
- Server bodies: create/replace/change a server take the server configuration, whose schema is the
  one of the `config.servers` models the service validates with (R-1.1), plus the body-only `version`
  (R-1.3) and write-only `secret_values` (R-1.5).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mcp_center.config import ServerConfig

__all__ = [
    "API_ERRORS",
    "ERROR_ENVELOPE_REF",
    "SERVER_BODY_REF",
    "SERVER_PATCH_REF",
    "ErrorEnvelope",
    "ErrorObject",
    "envelope",
    "errors",
    "install_openapi",
]


class ErrorObject(BaseModel):
    """The error of an envelope: a stable `code` (errors.py), a message for humans (never a secret),
    and machine-readable `details` (field errors under `details.errors`, `did_you_mean`, ...)."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Stable error code, e.g. MCP_SERVER_NOT_FOUND (never renamed).")
    message: str = Field(description="What went wrong, for humans; names the field when there is one.")
    details: dict[str, Any] = Field(
        description="Context: `errors` [{field, code, message}] for invalid input, `did_you_mean`, ids, limits."
    )


class ErrorEnvelope(BaseModel):
    """Every error the API answers: `{"error": {"code", "message", "details"}}` (R-7.3)."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorObject


_MEANINGS: dict[int, str] = {
    400: "The OAuth callback failed (OAUTH_CALLBACK_INVALID and others, as a page or JSON).",
    401: "No admin token, or a wrong one, and no live browser session (ADMIN_AUTH_REQUIRED).",
    403: "Refused: the Host or Origin is not this host's (HOST_NOT_ALLOWED, ORIGIN_NOT_ALLOWED), a browser "
    "session without its CSRF token (CSRF_TOKEN_INVALID), or a policy (MCP_TOOL_DENIED, MCP_SANDBOX_REQUIRED, ...).",
    404: "Not found (MCP_SERVER_NOT_FOUND, MCP_TOOL_NOT_FOUND, ...; `details.did_you_mean`).",
    409: "Conflicts with the current state: a stale `version`, not trusted/tested/enabled, OAuth needed, "
    "already decided, ... (MCP_SERVER_VERSION_CONFLICT, MCP_SERVER_NOT_TRUSTED, OAUTH_AUTHORIZATION_REQUIRED, ...).",
    413: "The request body is over the size limit (REQUEST_TOO_LARGE, IMPORT_TOO_LARGE).",
    422: "A malformed parameter or body (REQUEST_INVALID, CONFIG_INVALID, ...; `details.errors`).",
    500: "A failure of the host itself (STORAGE_ERROR, SECRET_STORE_ERROR, INTERNAL_ERROR); no exception text.",
    502: "The MCP server (or its authorization server) failed or broke the protocol (MCP_SERVER_UNREACHABLE, ...).",
    503: "Unavailable now: the shared database cannot be reached (STORAGE_UNAVAILABLE) or its write lock is held "
    "elsewhere past the wait (STORAGE_BUSY, retry), this host cannot run "
    "sandboxed servers (MCP_SANDBOX_UNAVAILABLE), or the host stopped while the call waited for a human "
    "(MCP_CALL_INTERRUPTED).",
    504: "The MCP server did not answer in time (MCP_SERVER_TIMEOUT).",
}


ERROR_ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"


def envelope(description: str) -> dict[str, Any]:
    """A FastAPI `responses` entry: `description` and the error envelope's schema, by reference.

    By reference rather than `{"model": ErrorEnvelope}`: for each `model` FastAPI builds a pydantic
    field (a `TypeAdapter`) per route, per status and per app, about 400 of them when an app's
    routes are first matched (~55 ms of CPU in each app's first request) and as many again for
    `/openapi.json`, all for the same two schemas; `install_openapi` adds those once (issue 16).
    """
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ERROR_ENVELOPE_REF}}}}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """FastAPI `responses` for `statuses`, each the error envelope with what the status means here."""
    return {status: envelope(_MEANINGS[status]) for status in statuses}


API_ERRORS = errors(401, 403, 413, 422, 500, 503)
"""What every `/api` route can answer, whatever it does (see the module docstring)."""

UPSTREAM = (409, 502, 504)
"""What a route that talks to an MCP server can answer besides its own errors."""

SERVER_BODY_REF = "#/components/schemas/ServerBody"
SERVER_PATCH_REF = "#/components/schemas/ServerPatch"

_BEARER = "adminToken"
_COOKIE = "settingsSession"
_CSRF = "csrfToken"
_SAFE_METHODS = frozenset({"get", "head", "options"})


def _error_schemas() -> dict[str, Any]:
    """Component schemas of `ErrorEnvelope` and `ErrorObject`, which `envelope` refers to."""
    generated = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    components: dict[str, Any] = dict(generated.pop("$defs", {}))
    components[ErrorEnvelope.__name__] = generated
    return components


def _server_schemas() -> dict[str, Any]:
    """Component schemas of the server bodies, from the `config.servers` models (R-1.1) plus the
    body-only fields. `ServerPatch` is the same with nothing required (a PATCH merges fields)."""
    generated = TypeAdapter(ServerConfig).json_schema(ref_template="#/components/schemas/{model}")
    components: dict[str, Any] = dict(generated.pop("$defs", {}))
    body_only = {
        "version": {
            "type": "integer",
            "minimum": 1,
            "description": "The version you read (required to replace or change a server).",
        },
        "secret_values": {
            "type": "object",
            "additionalProperties": False,
            "description": "Write-only secret values, never returned: "
            "{env: {NAME: value}, headers: {Name: value}, bearer_token, oauth: {client_secret, ...}}.",
            "properties": {
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "bearer_token": {"type": "string"},
                "oauth": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
    }
    variants = [ref["$ref"].rsplit("/", 1)[1] for ref in generated["oneOf"]]
    for name in variants:
        components[name]["properties"].update(copy.deepcopy(body_only))
    components["ServerBody"] = {
        "description": "A server configuration, chosen by `transport`, plus `version` and `secret_values`.",
        "oneOf": [{"$ref": f"#/components/schemas/{name}"} for name in variants],
        "discriminator": {
            "propertyName": "transport",
            "mapping": {
                key: value.replace("#/$defs/", "#/components/schemas/")
                for key, value in generated["discriminator"]["mapping"].items()
            },
        },
    }
    patch_variants: list[dict[str, Any]] = []
    for name in variants:
        partial = copy.deepcopy(components[name])
        partial.pop("required", None)
        partial["required"] = ["version"]
        components[f"{name}Patch"] = partial
        patch_variants.append({"$ref": f"#/components/schemas/{name}Patch"})
    components["ServerPatch"] = {
        "description": "Fields to change (merged into the configuration) and the `version` you read.",
        "anyOf": patch_variants,
    }
    return components


def install_openapi(app: FastAPI, *, session_cookie: str | None = None, csrf_header: str | None = None) -> None:
    """Make `app.openapi()` the description above (built once, on the first request for it).

    Args:
        app: The REST API app, its routes included.
        session_cookie: The settings page's session cookie name, when `/api` accepts it (R-7.1).
        csrf_header: The header that carries that session's CSRF token on unsafe methods (R-7.2).
    """

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            _secure(schema, session_cookie, csrf_header)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(_error_schemas())
            components.update(_server_schemas())
            app.openapi_schema = schema
        return app.openapi_schema

    openapi: Callable[[], dict[str, Any]] = build
    app.openapi = openapi  # type: ignore[method-assign]


def _secure(schema: dict[str, Any], session_cookie: str | None, csrf_header: str | None) -> None:
    schemes: dict[str, Any] = {
        _BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "The admin token: printed by `mcp-center serve` on first start, stored in "
            "<data dir>/admin-token.",
        }
    }
    if session_cookie:
        schemes[_COOKIE] = {
            "type": "apiKey",
            "in": "cookie",
            "name": session_cookie,
            "description": "The settings page's browser session (same origin only).",
        }
    if session_cookie and csrf_header:
        schemes[_CSRF] = {
            "type": "apiKey",
            "in": "header",
            "name": csrf_header,
            "description": "The browser session's CSRF token, required with the cookie on unsafe methods.",
        }
    schema.setdefault("components", {})["securitySchemes"] = schemes
    for path, operations in schema.get("paths", {}).items():
        if not (path == "/api" or path.startswith("/api/")):
            continue
        for method, operation in operations.items():
            requirements: list[dict[str, list[str]]] = [{_BEARER: []}]
            if session_cookie:
                if method in _SAFE_METHODS or not csrf_header:
                    requirements.append({_COOKIE: []})
                else:
                    requirements.append({_COOKIE: [], _CSRF: []})
            operation["security"] = requirements
