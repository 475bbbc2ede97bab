"""Errors at the HTTP edge: one JSON envelope `{"error": {"code", "message", "details"}}` (R-7.3).

Every `CenterError` answers with its own status and code. Framework errors get stable codes too
(`REQUEST_INVALID` for a malformed body or parameter, each field in `details.errors` as
`FIELD_REQUIRED`, `FIELD_UNKNOWN` or `FIELD_INVALID`, the unknown fields and invalid values first
with the closest known field or literal in the message; `NOT_FOUND`, `METHOD_NOT_ALLOWED`), and anything
unexpected is `500 INTERNAL_ERROR` with no exception text (it could hold anything).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mcp_center.api.argument_hints import unwrapped_arguments_hint
from mcp_center.api.nearby import closest_routes
from mcp_center.config.fieldnames import FieldErrorList, field_names_at
from mcp_center.config.jsonsafe import MAX_DEPTH, scrub_text
from mcp_center.errors import CenterError, FieldError, capped_errors
from mcp_center.models import is_array, is_object
from mcp_center.secrets import default_redactor

__all__ = ["error_response", "install_error_handlers"]

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "ADMIN_AUTH_REQUIRED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "REQUEST_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def _scrub(value: Any) -> Any:
    """Make an error body encodable even when it quotes invalid input (a lone surrogate)."""
    if isinstance(value, str):
        return scrub_text(value)
    if is_object(value):
        return {scrub_text(str(k)): _scrub(v) for k, v in value.items()}
    if is_array(value):
        return [_scrub(v) for v in value]
    return value


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """Build the envelope response; message and details pass through the redactor.

    `headers` are kept (a 405 must say `Allow`, RFC 9110 §15.5.6); a 401 always says
    `WWW-Authenticate: Bearer`.
    """
    body = _scrub(
        {
            "error": {
                "code": code,
                "message": default_redactor.redact(message),
                "details": default_redactor.redact_obj(details or {}),
            }
        }
    )
    merged = dict(headers or {})
    if status == 401:
        merged["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status, headers=merged or None)


async def _center_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CenterError)
    if exc.http_status == 500:
        # A failure of the host itself (the data directory, a key) belongs in the serve log too;
        # the details are the response's (no secret), `file` names the file of a storage error.
        logger.error(
            "api.request_failed",
            extra={
                "code": exc.code,
                "status": exc.http_status,
                "method": request.method,
                "path": request.url.path,
                "file": exc.details.get("file"),
                "fault": exc.details.get("fault"),
            },
        )
    return error_response(exc.http_status, exc.code, exc.message, exc.details)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors: list[dict[str, str]] = []
    content_type = request.headers.get("content-type", "")
    if request.method in {"POST", "PUT", "PATCH"} and content_type and "json" not in content_type.lower():
        # `curl -d '{...}'` sends form encoding: say what is wrong instead of "not a valid dictionary".
        message = f"must be JSON: send it with 'Content-Type: application/json' (got '{content_type[:60]}')"
        errors.append({"field": "body", "code": "CONTENT_TYPE_INVALID", "message": message})
        return error_response(422, "REQUEST_INVALID", f"body: {message}", {"errors": errors})
    found = FieldErrorList(lambda loc: _body_field_names(request, loc))
    position: dict[str, int] = {}
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            # loc is ("body", <character offset>): the offset is not a field; said as line and column.
            offset = err.get("loc", ())[-1]
            position = json_position(await request.body(), offset) if isinstance(offset, int) else {}
            why = str(err.get("ctx", {}).get("error") or "").strip()
            where = f" at line {position['line']}, column {position['column']}" if position else ""
            found.errors.append(
                FieldError("body", "JSON_INVALID", f"is not valid JSON{where}{': ' + why if why else ''}")
            )
            continue
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        field = ".".join(loc) or "body"
        if err.get("type") == "missing" and not loc:  # no body at all: not a field of it
            found.errors.append(FieldError(field, "FIELD_INVALID", str(err.get("msg", "invalid"))))
        else:
            found.add(err, field)
    ranked = found.ranked()
    errors = [e.to_dict() for e in ranked]
    first = errors[0] if errors else {"field": "body", "message": "invalid"}
    message = f"{first['field']}: {first['message']}"
    # Unknown top-level fields of a tool call: its arguments sent without their "arguments" wrapper
    # (issue 16). Said instead of a did-you-mean when the tool's schema lists them all, else after
    # the message unless that offers a body field already (a typo of "arguments" itself).
    unknown = [e["field"] for e in errors if e["code"] == "FIELD_UNKNOWN" and "." not in e["field"]]
    hinted = unwrapped_arguments_hint(request, unknown) if len(unknown) == len(errors) else None
    if hinted is not None and hinted[1]:
        message = f"{first['field']}: is not a known field; {hinted[0]}"
    elif hinted is not None and "did you mean" not in message:
        message = f"{message}; {hinted[0]}"
    return error_response(422, "REQUEST_INVALID", message, {**capped_errors(ranked), **position})


def json_position(body: bytes, offset: int) -> dict[str, int]:
    """`{"line", "column"}` (both from 1) of the character at `offset` of a JSON body, for the error of a
    body that is not JSON (R-7.3: a 2 KB body said "is not valid JSON" and nothing about where)."""
    text = body.decode("utf-8", errors="replace")[:offset]
    return {"line": text.count("\n") + 1, "column": offset - (text.rfind("\n") + 1) + 1}


def _body_field_names(request: Request, loc: Sequence[str | int]) -> list[str]:
    """The fields the route's body model knows beside the unknown one at `loc` (for did-you-mean)."""
    body_field = getattr(request.scope.get("route"), "body_field", None)
    if body_field is None or not loc or loc[0] != "body":
        return []
    return field_names_at(body_field.field_info.annotation, loc[1:])


_ROUTING_NOT_FOUND = "Not Found"
"""Starlette's detail for a path that matches no route (ours always name what was not found)."""


def _no_route(request: Request) -> tuple[str, dict[str, Any]]:
    """The message and details of the 404 for a path that matches no route: a trailing '/', an id
    holding an encoded '/' (%2F), or the closest routes (`details.did_you_mean`, issue 16)."""
    path = request.url.path
    shown = path if len(path) <= 200 else path[:200] + "..."
    hint = ""
    close: list[str] = []
    raw: object = request.scope.get("raw_path")
    if path.endswith("/") and path != "/":
        hint = ": paths end without '/'"
    elif isinstance(raw, bytes) and b"%2f" in raw.lower():
        hint = ": an id or name in a path never holds '/', not even encoded as %2F"
    elif path.startswith("/api/"):
        close = closest_routes(request)
        listed = " or ".join(close)
        hint = f": did you mean {listed}?" if close else ": check the path (every route is listed in /openapi.json)"
    return f"no route for {request.method} {shown}{hint}", ({"did_you_mean": close} if close else {})


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404 and exc.detail == _ROUTING_NOT_FOUND:
        message, details = _no_route(request)
        return error_response(404, "NOT_FOUND", message, details)
    if exc.status_code == 400:
        # FastAPI's "There was an error parsing the body": JSON nested too deep for the parser (its
        # RecursionError, some thousand levels) is said as the call check says 65 levels (fixb36).
        if isinstance(exc.__cause__, RecursionError):
            problem, field_code = f"nests deeper than {MAX_DEPTH} levels", "FIELD_INVALID"
        else:
            problem, field_code = "cannot be parsed as JSON", "JSON_INVALID"
        error = {"field": "body", "code": field_code, "message": problem}
        return error_response(422, "REQUEST_INVALID", f"body: {problem}", {"errors": [error]})
    code = _HTTP_CODES.get(exc.status_code, "HTTP_ERROR")
    message = str(exc.detail) if exc.detail else code.replace("_", " ").lower()
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    logger.error("api.unexpected_error", exc_info=exc)
    return error_response(500, "INTERNAL_ERROR", "an internal error occurred; see the server log")


def install_error_handlers(app: FastAPI) -> None:
    """Register the envelope handlers on `app`."""
    app.add_exception_handler(CenterError, _center_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
