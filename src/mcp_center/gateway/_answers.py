"""What the gateway endpoint answers itself, before or instead of the SDK (R-8.1, R-7.3): JSON-RPC
refusals of malformed requests with their HTTP status, the unknown endpoint's 404, the revoked
token's answer, and the 202 of a message the lean path took. Split from `endpoint.py` (module size)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence

import mcp_types as types
import orjson
from starlette.responses import JSONResponse
from starlette.types import Message, Send

from mcp_center.errors import ServerNotFound
from mcp_center.gateway.fastpath import meta_problem, revoked_error
from mcp_center.gateway.refusals import sdk_refuses
from mcp_center.gateway.server import listen_params_problem, unknown_server_message
from mcp_center.models import is_object, is_request_id

__all__ = [
    "accepted",
    "bad_id_refusal",
    "bad_id_unparsed",
    "bad_listen_refusal",
    "bad_meta_refusal",
    "bad_request_id",
    "bad_version",
    "bad_version_refusal",
    "batch_refusal",
    "invalid_request",
    "listen_gone_as_404",
    "only_wide_integers",
    "revoked_answer",
    "session_elsewhere",
    "unknown_server",
]


def batch_refusal() -> JSONResponse:
    """JSON-RPC batches: MCP 2025-06-18 removed them, and the gateway serves none in any version."""
    message = (
        "Invalid Request: JSON-RPC batches are not supported by this gateway "
        "(MCP 2025-06-18 and later forbid them); send one JSON-RPC message per POST"
    )
    return invalid_request(message)


def invalid_request(
    message: str, request_id: object = None, *, status: int = 400, data: Mapping[str, object] | None = None
) -> JSONResponse:
    """An HTTP `status` answer carrying a JSON-RPC -32600 error (its id when `request_id` is a valid one)."""
    error: dict[str, object] = {"code": types.INVALID_REQUEST, "message": message}
    if data is not None:
        error["data"] = dict(data)
    answered_id = request_id if is_request_id(request_id) else None
    return JSONResponse({"jsonrpc": "2.0", "id": answered_id, "error": error}, status_code=status)


def bad_request_id(message: object) -> bool:
    """A request (it has a `method`) carrying an `id` that is not a string or an integer: MCP forbids
    null and JSON-RPC any other type. The SDK would take it for a notification and never answer, or
    open a session for an `initialize` it then refuses."""
    if not is_object(message) or "method" not in message or "id" not in message:
        return False
    return not is_request_id(message["id"])


def bad_version(message: object) -> bool:
    """A JSON-RPC message whose `jsonrpc` member is not exactly "2.0" (JSON-RPC 2.0 §4): the SDK would
    answer its pydantic validation dump instead of -32600."""
    return is_object(message) and message.get("jsonrpc") != "2.0"


def bad_version_refusal(message: object) -> JSONResponse:
    request_id = message.get("id") if is_object(message) else None
    text = 'Invalid Request: "jsonrpc" must be "2.0" (JSON-RPC 2.0 is the only version MCP speaks)'
    return invalid_request(text, request_id)


def bad_id_refusal() -> JSONResponse:
    message = (
        "Invalid Request: a request's id must be a string or an integer "
        "(not null, a number with a fraction, a boolean, an array or an object)"
    )
    return invalid_request(message)


def bad_id_unparsed(body: bytes) -> bool:
    """Whether a body `orjson` refused is a request whose id is not a string or an integer as the
    standard library's parser reads it: an id of `1e400` or `-1e400` (a number beyond a double's
    range, which `orjson` refuses in a whole body) is infinity there, and `NaN` or `Infinity` (not
    JSON, which the SDK's parser reads all the same) a float. The SDK took such a request for a
    notification (HTTP 202 and no answer, 2025-11-25) or answered a vague -32600 (2026-07-28); the
    endpoint refuses it as any other id of no valid type (sec39, R-8.1). Runs only on a body
    `orjson` refused, never on a served call."""
    try:
        exact: object = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return bad_request_id(exact)


def parsed_with_lone_surrogates(body: bytes, refusal: str) -> object:
    """The message of a body `orjson` refused only for a lone surrogate (`"\\ud800"`, `refusal` its
    error's text), as the standard library's parser reads it; None for a body refused for anything
    else (the SDK answers -32700 then, as before). The SDK's session-era parser refused it too
    (400 -32700 "unexpected end of hex escape"), where REST, the CLI and the page answer a call
    holding one REQUEST_INVALID at its position: with the message parsed, the call goes the lean
    way to `check_arguments_safe`, which says so (fixb36, R-7.3, R-8.1). Runs only on a body
    `orjson` refused, never on a served call."""
    if "surrogate" not in refusal:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def bad_meta_refusal(message: object, *, modern: bool) -> JSONResponse | None:
    """A request whose `params._meta` breaks MCP (`fastpath.meta_problem`, e.g. a boolean
    progressToken): -32602 for its id, before any session opens or anything goes upstream; with
    HTTP 400 for a 2026-07-28 request (`modern`), as the SDK's entry answers -32602 there, else 200."""
    if not is_object(message) or "method" not in message or not is_request_id(message.get("id")):
        return None
    problem = meta_problem(message.get("params"))
    if problem is None:
        return None
    error = {"code": types.INVALID_PARAMS, "message": problem}
    return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error}, status_code=400 if modern else 200)


def bad_listen_refusal(headers: dict[bytes, str], message: object) -> JSONResponse | None:
    """A 2026-07-28 `subscriptions/listen` whose filter is not strictly typed (`listen_params_problem`):
    -32602 with HTTP 400, as the SDK answers its own -32602 there; None for any other request, and
    for one the SDK refuses first (`sdk_refuses`: it answers with its own words)."""
    if not is_object(message) or message.get("method") != "subscriptions/listen":
        return None
    if not is_request_id(message.get("id")) or sdk_refuses(headers, message, modern=True):
        return None
    problem = listen_params_problem(message.get("params"))
    if problem is None:
        return None
    error = {"code": types.INVALID_PARAMS, "message": problem, "data": ""}
    return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error}, status_code=400)


def unknown_server(server_id: str, close: Sequence[str] = ()) -> JSONResponse:
    """404 with JSON-RPC -32600 for `/mcp/{server_id}` when no server has that id: `data` is
    `{"code": "MCP_SERVER_NOT_FOUND"}`, with `did_you_mean` (the `close` ids) when there are any."""
    data: dict[str, object] = {"code": ServerNotFound.code}
    if close:
        data["did_you_mean"] = list(close)
    return invalid_request(unknown_server_message(server_id, close), status=404, data=data)


def server_deleted_error(server_id: str) -> dict[str, object]:
    """The JSON-RPC error (-32600, `data.code` MCP_SERVER_NOT_FOUND, as `unknown_server`) that answers
    a `tools/call` of a `/mcp/{server_id}` session cancelled because that server was deleted while it
    ran (R-8.4): the agent is told why, not left with an empty answer."""
    message = (
        f"{ServerNotFound.code}: the server '{server_id}' was deleted while the request ran; the call was cancelled"
    )
    return {"code": types.INVALID_REQUEST, "message": message, "data": {"code": ServerNotFound.code}}


def session_elsewhere() -> JSONResponse:
    message = "Session not found: this session was opened on another gateway endpoint (/mcp or /mcp/<server id>)"
    return invalid_request(message, status=404)


def revoked_answer(request_id: object, *, streaming: bool) -> Callable[[Send], Awaitable[None]]:
    """What ends a sessionless request whose token was revoked while the SDK served it: the lean
    path's refusal (`fastpath.revoked_error`, -32001), as the JSON body of an HTTP 401 or, when
    the SDK had already started an SSE answer (`streaming`), as its last event (framed as the SDK
    frames its own, `mcp.server._streamable_http_modern._sse_event`)."""
    answered_id = request_id if is_request_id(request_id) else None
    body = revoked_error(answered_id)

    async def answer(send: Send) -> None:
        if streaming:
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: message\r\ndata: " + body + b"\r\n\r\n",
                    "more_body": False,
                }
            )
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return answer


async def accepted(send: Send, session_headers: Sequence[tuple[bytes, bytes]]) -> None:
    """202 with no body, for an agent's answer or `notifications/cancelled` the lean path took, with
    the headers the SDK's 202 carries in a session (`content-type`, `mcp-session-id`)."""
    headers = [(b"content-type", b"application/json"), (b"content-length", b"0"), *session_headers]
    await send({"type": "http.response.start", "status": 202, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def listen_gone_as_404(send: Send) -> Send:
    """`send` for a `subscriptions/listen` on `/mcp/{id}` handed to the SDK: when the gateway refused
    it because the server was deleted meanwhile (`Gateway.endpoint_exists`), the SDK answers that
    -32600 with HTTP 400 (its table for the code); this sends it with 404, so that the refusal is
    the one the endpoint gives a listen that arrives after the deletion (`unknown_server`). Any
    other answer passes as it is (a 400 start is held until its body shows which it is)."""
    held: Message | None = None

    async def sending(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] == 400:
            held = message
            return
        if held is not None:
            start, held = held, None
            if message["type"] == "http.response.body" and _names_unknown_server(message.get("body", b"")):
                start = {**start, "status": 404}
            await send(start)
        await send(message)

    return sending


def _names_unknown_server(body: bytes) -> bool:
    try:
        parsed: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    error = parsed.get("error") if is_object(parsed) else None
    data = error.get("data") if is_object(error) else None
    return is_object(data) and data.get("code") == ServerNotFound.code


def only_wide_integers(body: bytes, *, modern: bool) -> bool:
    """Whether a body whose id or `progressToken` `bad_request_id` / `bad_meta_refusal` refused is
    refused only because `orjson` reads an integer beyond 64 bits (e.g. an id of 2**70) as a float.

    The SDK parses JSON exactly and serves such a request, so the endpoint hands it to the SDK
    (R-8.1, issue 12) instead of refusing it. Runs the standard library's exact parser on the body,
    only on this path of refused requests, never on a served call.
    """
    try:
        exact: object = json.loads(body)
    except ValueError:
        return False
    return not bad_request_id(exact) and bad_meta_refusal(exact, modern=modern) is None
