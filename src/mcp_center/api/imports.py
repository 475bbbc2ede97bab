"""REST routes for import (R-1.8), export (R-1.9) and templates (R-1.10).

`POST /api/mcp/import/preview` and `POST /api/mcp/import/apply` read their JSON body themselves,
with a size limit checked while streaming (and against Content-Length first), so a 5 MB paste is
refused with `413 IMPORT_TOO_LARGE` before it is parsed. The limit on the body is
`MAX_BODY_BYTES` (8 MiB: room for a 1 MiB file JSON-escaped); the file inside is then held to
`MAX_IMPORT_BYTES` (1 MiB).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from mcp_center.api.bodies import ImportApply, ImportPreview
from mcp_center.api.openapi import API_ERRORS, errors
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.errors import FieldError, ImportJsonInvalid, ImportTooLarge, RequestInvalid
from mcp_center.interchange import EXPORT_FORMATS, MAX_IMPORT_BYTES
from mcp_center.service import Importer, ImportPreviews, parse_apply_request, parse_preview_request, templates

__all__ = ["MAX_BODY_BYTES", "router"]

router = APIRouter(prefix="/api/mcp", tags=["import and export"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)

MAX_BODY_BYTES = 8 * MAX_IMPORT_BYTES
"""Largest request body of the import routes, in bytes."""


def _body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its JSON itself: `model`'s schema.

    These two routes parse with `service.parse_preview_request`/`parse_apply_request` (the library's
    own rules, which keep a lone surrogate in a token a string, R-1.8); tests/api/test_openapi_live.py
    checks that the model and the parser accept and refuse the same bodies."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _importer(request: Request) -> Importer:
    previews: ImportPreviews = request.app.state.import_previews
    return Importer(request.app.state.center, previews)


def _too_large() -> ImportTooLarge:
    return ImportTooLarge(
        f"the request body is over {MAX_BODY_BYTES} bytes; "
        f"an import file may be at most {MAX_IMPORT_BYTES} bytes (1 MiB)",
        details={"limit_bytes": MAX_IMPORT_BYTES},
    )


async def _json_body(request: Request) -> object:
    """The request's JSON body, read with the size limit.

    Raises:
        ImportTooLarge: more than `MAX_BODY_BYTES` (declared or streamed).
        ImportJsonInvalid: the bytes are not UTF-8 (`details.reason` "encoding", `details.byte`: 1-based).
        RequestInvalid: empty or not JSON (`body` JSON_INVALID).
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except UnicodeDecodeError as exc:  # raw bytes of a Latin-1 file, say: named like the CLI names them
        raise ImportJsonInvalid(
            f"the request body is not valid UTF-8 text (byte {exc.start + 1}): send the file's text as UTF-8",
            details={"reason": "encoding", "byte": exc.start + 1},
        ) from None
    except json.JSONDecodeError as exc:
        said = f"is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        error = FieldError("body", "JSON_INVALID", said)
        details = {"errors": [error.to_dict()], "line": exc.lineno, "column": exc.colno}
        raise RequestInvalid(f"body: {said}", details=details) from None
    except (ValueError, RecursionError):
        error = FieldError("body", "JSON_INVALID", "is not valid JSON")
        raise RequestInvalid("body: is not valid JSON", details={"errors": [error.to_dict()]}) from None


@router.post(
    "/import/preview",
    summary="Preview an import of a client configuration",
    openapi_extra=_body(ImportPreview),
)
async def preview_import(request: Request) -> dict[str, Any]:
    """Body `{"content": "<file text>", "format": "auto", "on_conflict": "refuse"}`. Nothing is changed.

    Returns what would be created (proposed ids and clashes, transports, which fields become
    secrets, variables to supply, rejected entries and why), the entries existing servers already
    have (`existing`: unchanged, skipped, or a conflict that apply refuses), with a `token` and
    `digest` to apply it before `expires_at`. Secret values never appear.
    """
    content, format, on_conflict = parse_preview_request(await _json_body(request))
    return (await _importer(request).preview(content, format, on_conflict)).to_dict()


@router.post(
    "/import/apply",
    status_code=201,
    summary="Apply a previewed import (all or nothing)",
    openapi_extra=_body(ImportApply),
    responses=errors(409),
)
async def apply_import(request: Request) -> dict[str, Any]:
    """Body `{"token", "digest", "content", "format", "values": {name: value}, "use_defaults": [name], "on_conflict"}`.

    Creates every server of the preview in one transaction, untrusted and disabled (R-2); a
    changed input, a stale or expired preview, or an entry that differs from the existing server
    of its name under `on_conflict: refuse` (IMPORT_CONFLICT) answers 409 and changes nothing.
    """
    apply_request = parse_apply_request(await _json_body(request))
    return {"servers": [view.to_dict() for view in await _importer(request).apply(apply_request)]}


@router.get("/export", summary="Export servers as a client configuration")
async def export(
    request: Request,
    format: Annotated[str, Query(description=" | ".join(EXPORT_FORMATS))],
) -> dict[str, Any]:
    """The servers in the client's format with placeholders instead of secret values, plus a
    snippet that points the client at this host's gateway (`<base URL>/mcp`)."""
    return (await _importer(request).export(format)).to_dict()


@router.get("/templates", summary="Server templates")
async def list_templates() -> dict[str, Any]:
    """stdio via `uvx --isolated --from <package>==<version> <command>`, remote Streamable HTTP,
    and legacy HTTP+SSE (for old servers only), each with a ready-to-POST example (R-1.10)."""
    return {"templates": templates()}
