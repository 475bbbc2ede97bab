"""The gateway's lean path: the hot MCP methods served without the SDK's server stack (R-8.1, R-8.3).

`endpoint.py` reads each POST body once and parses it once (orjson). A well-formed request for one
of `LEAN_METHODS`, in a session this endpoint opened (2025-11-25 and earlier) or as a 2026-07-28
sessionless request, is answered here: the policy and routing come from `McpCenter.mcp_forward_call`
and its siblings (the same code the SDK path uses), the request goes to the server over the live session
(`ConnectionManager.forward`: one POST on a Streamable HTTP session, the session's dispatcher
otherwise; no typed model on either side), and the answer is written as one
JSON body — or, as soon as something must be said before it (progress, a log line for the call, a
question for the agent), as an SSE stream on the same POST response.

What each guarantee relies on:
- gateway token and session ownership: checked by the endpoint before anything here runs;
- disabled and `deny` tools, `ask` approvals, revoked tokens: `McpCenter.mcp_forward_call`;
- progress: the server's progress for our request id is re-sent under the agent's `progressToken`;
- cancellation: an agent's `notifications/cancelled` for a lean request, or its closing the
  response stream, cancels the call; the SDK dispatcher then sends `notifications/cancelled` on;
- elicitation, sampling, roots (R-8.5): asked on this POST's stream as a request with our own id
  (`mcp-center-N`); the endpoint routes the agent's answer back by that id. Only legacy sessions
  whose agent declared the capability; otherwise elicitation becomes a card and the others are
  refused at once;
- redaction and result bounds: the runtime's tap and `bound_raw_result`;
- errors: a JSON-RPC error from the server reaches the agent as that error (redacted); a refusal
  of ours is an `isError` result naming the stable code; an unknown name is -32602.

Everything else (initialize, GET streams, DELETE, notifications, malformed requests) goes to the
SDK's session manager unchanged; so do params the SDK's request models refuse (`is_lean`: the
common shape of each method is checked here, anything beyond it by the SDK's own validation,
`sdk_params_refused`), bodies with an integer beyond 64 bits (`WIDE_INTEGER`) and bodies nested
beyond the SDK parser's limit (`SDK_DEPTH_LIMIT`), so that the SDK answers them in its own words
(docs/decisions.md, "What the lean path checks").
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
import mcp_types as types
import orjson
import pydantic
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp_types.methods import parse_client_request
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from starlette.types import Receive, Send

from mcp_center.config.jsonsafe import MAX_DEPTH
from mcp_center.errors import (
    AgentRequestFailed,
    CallCancelled,
    CenterError,
    GatewayAuthRequired,
    NotFound,
    ServerRequestFailed,
)
from mcp_center.gateway._disconnects import watch_disconnect
from mcp_center.gateway._reply import Reply
from mcp_center.gateway.refusals import param_headers, param_rejection
from mcp_center.gateway.server import Gateway, error_result_json, to_mcp_error
from mcp_center.models import is_object, is_request_id
from mcp_center.runtime import Category, new_operation_id
from mcp_center.service import CatalogNow, Elicitor, RootsLister, Sampler

__all__ = [
    "LEAN_METHODS",
    "REVOKED_MESSAGE",
    "SDK_DEPTH_LIMIT",
    "WIDE_INTEGER",
    "AgentLink",
    "LeanPath",
    "LeanRequest",
    "body_shape",
    "has_wide_integer",
    "meta_problem",
    "nested_beyond",
    "parsed_unlike_sdk",
    "revoked_error",
    "sdk_params_refused",
    "shallow",
]

logger = logging.getLogger(__name__)

LEAN_METHODS = frozenset(
    {
        "tools/list",
        "tools/call",
        "ping",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
        "logging/setLevel",
    }
)
"""Request methods the lean path answers; anything else goes to the SDK (`resources/subscribe` and
`unsubscribe` too: the gateway notes who subscribed to what there, to relay the server's updates)."""

_LISTS: dict[str, tuple[Category, str]] = {
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resource_templates", "resourceTemplates"),
}
_PAGINATED = frozenset({"tools/list", *_LISTS})
"""The listings: their params are the SDK's `PaginatedRequestParams` (`cursor`: a string or null)."""
_PLAIN: dict[str, frozenset[str] | None] = {
    "tools/call": frozenset({"name", "arguments", "_meta"}),
    **dict.fromkeys(_PAGINATED, frozenset({"cursor", "_meta"})),
    "ping": frozenset({"_meta"}),
    **dict.fromkeys(("prompts/get", "resources/read", "completion/complete", "logging/setLevel")),
}
"""Per lean method, the params members of its common request, whose types `is_lean` checks itself
(`name`, `arguments`, `cursor`; `_meta` and its `progressToken` checked by the endpoint and
`refusals`): params with only these are taken without the SDK's models. Any other member (`task`,
`requestState`, `inputResponses`, an unknown one), a null `progressToken`, or a method whose params
are not checked here (None: the rarer methods, whose `ref`, `level`, `uri` the SDK's models read)
costs one run of the SDK's own validation (`sdk_params_refused`) before the request is taken."""
_ERA_VERSION = {True: MODERN_PROTOCOL_VERSIONS[0], False: LATEST_HANDSHAKE_VERSION}
"""The version whose request models the SDK validates a lean request with: 2026-07-28 sessionless,
else the session era's (every version before 2026-07-28 has the same models, `mcp_types.methods`)."""

WIDE_INTEGER = b"9" * 19
"""Nineteen digits in a row in a request's body (searched for with every digit turned into a nine,
`has_wide_integer`): maybe an integer beyond 64 bits, which `orjson` reads as a float (2**70 becomes
1.1805916207174113e+21) where the SDK's parser keeps it exact. Such a body is left to the SDK; a
false alarm (a long digit run in a string) only costs that request the SDK's path."""
_FOLDED = bytes.maketrans(b"012345678{", b"999999999[")
"""`body_shape`'s one translate: every digit a nine (`WIDE_INTEGER`), every `{` a `[` (both opening
brackets then counted at once)."""


def has_wide_integer(body: bytes) -> bool:
    """Whether `body` holds nineteen or more ASCII digits in a row (`WIDE_INTEGER`; R-8.1).

    Two linear passes in C (`bytes.translate`, then a substring search) instead of the regex
    `[0-9]{19}`, which starts a bounded repeat at every digit: a 2026-07-28 request's `_meta` is full
    of short digit runs (versions, dates), and that search was 7.7 % of the gateway's instructions
    per forwarded call (callgrind, issue 12). Costs one copy of the body."""
    return WIDE_INTEGER in body.translate(_FOLDED)


def body_shape(body: bytes) -> tuple[bool, int]:
    """`(has_wide_integer(body), the opening brackets in body)`: what `parsed_unlike_sdk` and
    `shallow` read of a request's body, from one translate and one count (the direct route read
    the body four times for them: one `bytes.count` per bracket and check, about 6,000 instructions
    per forwarded call, issue 12)."""
    folded = body.translate(_FOLDED)
    return WIDE_INTEGER in folded, folded.count(b"[")


SDK_DEPTH_LIMIT = 200
"""The deepest nesting of JSON containers (the message itself one level) the SDK parses in every
era: `pydantic_core.from_json` (the session era's parser; jiter's recursion limit) refuses a
non-empty container deeper than this with -32700, `json.loads` (2026-07-28) only near the
interpreter's recursion limit (1,000 less the stack below it), `orjson` (ours) beyond 1,024. A body
nested deeper is left to the SDK (`nested_beyond`), which answers it in its own words."""


def parsed_unlike_sdk(body: bytes, message: object, shape: tuple[bool, int] | None = None) -> bool:
    """Whether the SDK's parser may read the request `body` (parsed by us as `message`) otherwise
    than `orjson` did: an integer beyond 64 bits (`has_wide_integer`), or containers nested beyond
    `SDK_DEPTH_LIMIT` (`nested_beyond`, run only when the body has more opening brackets than
    that). Such a request is left to the SDK's stack, which answers it in its own words (R-8.1).
    `shape`: `body_shape(body)`, when the caller has it (else read here: a translate and a count)."""
    wide, brackets = body_shape(body) if shape is None else shape
    return wide or (brackets > SDK_DEPTH_LIMIT and nested_beyond(message))


def nested_beyond(message: object, limit: int = SDK_DEPTH_LIMIT) -> bool:
    """Whether the parsed JSON `message` holds containers nested more than `limit` levels deep (the
    message itself one level; R-8.1). Walks every container, so the endpoint calls it only when a
    body has more than `limit` opening brackets (fewer cannot nest that deep): a common call pays
    two `bytes.count`s and no call of this."""
    pending: list[tuple[object, int]] = [(message, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            return True
        if type(value) is dict:
            pending += [
                (item, depth + 1)
                for item in cast("dict[str, object]", value).values()
                if isinstance(item, (dict, list))
            ]
        elif type(value) is list:
            pending += [(item, depth + 1) for item in cast("list[object]", value) if isinstance(item, (dict, list))]
    return False


_CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})
"""2026-07-28 results that must carry `ttlMs` and `cacheScope` (ours: 0 and private, as the SDK's defaults)."""
_IDS = itertools.count(1)


class Cancellable(Protocol):
    """What `AgentLink.calls` holds per request: an `anyio.CancelScope` or an `AgentCancel`."""

    def cancel(self) -> None:
        """Cancel the request (nothing once it ended)."""
        ...


class AgentCancel:
    """A lean `tools/call` as its agent cancels it: `notifications/cancelled`, closing its request,
    its session or token ending (`AgentLink.end`).

    A cancel by the call's own operation id (`McpCenter.mcp_cancel_call`), which the call's admission
    in the runtime catches, so that a forwarded call runs inside one cancel scope rather than one of
    ours around the runtime's (issue 12, R-8.3). `cancelled` tells this cancel apart from every
    other end: a cancel by the same id from the admin API (the agent gets the CallCancelled error
    result), a deadline (its timeout error), the endpoint's own cancellation (propagates).

    Args:
        cancel: Cancels by operation id (`McpCenter.mcp_cancel_call`).
        operation_id: The call's operation id, given to `mcp_forward_call`.
    """

    __slots__ = ("_cancel", "cancelled", "ended", "operation_id")

    def __init__(self, cancel: Callable[[str], None], operation_id: str) -> None:
        self._cancel = cancel
        self.operation_id = operation_id
        self.cancelled = False
        self.ended = False
        """The call returned: a cancel now does nothing (nor is it remembered by the runtime)."""

    def cancel(self) -> None:
        """Cancel the call once (before it was admitted, the runtime refuses it when it gets there)."""
        if not self.cancelled and not self.ended:
            self.cancelled = True
            self._cancel(self.operation_id)

    def agent_went(self) -> None:
        """The agent closed its request (a dropped POST, 2026-07-28 cancellation): `cancel`."""
        logger.debug("gateway.agent_disconnected")
        self.cancel()


_no_calls = cast("Callable[[], dict[object, Cancellable]]", dict)
"""A new link's `calls`: `dict` itself, typed (C: no Python frame per link). Not
`dict[object, Cancellable]` as the factory: a parametrized `dict` called builds its dict through
`types.GenericAlias`, which then tries to set `__orig_class__` on it and swallows the AttributeError
(about 2,000 instructions each, and every 2026-07-28 request makes a link; issue 12)."""
_nothing_waiting = cast("Callable[[], dict[str, _Answer]]", dict)
"""A new link's `waiting` (`dict` itself, typed, as `_no_calls`)."""


@dataclass(eq=False)
class AgentLink:
    """What the lean path knows about one agent session (kept by the endpoint per session id).

    Attributes:
        server_id: The server this session is scoped to (`/mcp/{server_id}`), or None for all.
        capabilities: The `capabilities` the agent's client declared in `initialize`.
        calls: What cancels each lean request in flight, by its id (for `notifications/cancelled`).
        waiting: Our requests to the agent (`mcp-center-N`) → where its answer goes.
        client: The `clientInfo` the agent's client declared (`{"name", "version"}`), or None;
            shown on approval cards as it names itself (R-5.3).
        gone: The JSON-RPC error that answers the calls `end` cancelled when the session ended for a
            reason of ours the agent must be told (its server was deleted), else None.
    """

    server_id: str | None
    capabilities: Mapping[str, Any]
    client: Mapping[str, Any] | None = None
    """Third, so that a link per 2026-07-28 request is made with positional arguments only (a class
    called with keywords costs a dictionary of them and its unpacking, issue 12)."""
    calls: dict[object, Cancellable] = field(default_factory=_no_calls)
    waiting: dict[str, _Answer] = field(default_factory=_nothing_waiting)
    gone: Mapping[str, Any] | None = None

    def answer(self, message: Mapping[str, Any]) -> bool:
        """Route an agent's JSON-RPC response to the request of ours it answers; False if none waits."""
        answer = self.waiting.pop(cast(str, message.get("id")), None) if isinstance(message.get("id"), str) else None
        if answer is None:
            return False
        answer.message = message
        answer.done.set()
        return True

    def end(self, gone: Mapping[str, Any] | None = None) -> None:
        """The session ended (DELETE, revoked token, idle, its server deleted): cancel its lean
        requests, as the SDK cancels its own, so nothing a revoked client asked for is sent
        afterwards. `gone`, a JSON-RPC error, answers each cancelled `tools/call` (see `gone`)."""
        self.gone = gone
        for scope in list(self.calls.values()):
            scope.cancel()
        for answer in list(self.waiting.values()):
            answer.done.set()

    def cancel(self, message: Mapping[str, Any]) -> bool:
        """Apply an agent's `notifications/cancelled` to a lean request; False if it names none."""
        params = message.get("params")
        request_id = cast(Mapping[str, Any], params).get("requestId") if isinstance(params, Mapping) else None
        if not is_request_id(request_id):
            return False  # names no request of ours (a dict or list is not even hashable): the SDK answers it
        scope = self.calls.get(_key(request_id))
        if scope is None:
            return False
        scope.cancel()
        return True


@dataclass(eq=False)
class _Answer:
    done: anyio.Event = field(default_factory=anyio.Event)
    message: Mapping[str, Any] | None = None


@dataclass
class LeanRequest:
    """One parsed JSON-RPC request the endpoint hands to `LeanPath.serve`."""

    message: dict[str, Any]
    link: AgentLink
    modern: bool
    """A 2026-07-28 sessionless request: results carry `resultType` and `serverInfo`; no back-channel."""
    caller_allowed: Callable[[], bool] | None = None
    caller: Mapping[str, Any] | None = None
    """Who asks (the gateway token and the client), for an approval card (`server.CallerCard`: built
    only when a card reads it, R-5.3)."""
    headers: Sequence[tuple[bytes, bytes]] = ()
    """The request's headers as ASGI gives them (lower-case names): a 2026-07-28 `tools/call`'s
    `Mcp-Param-*` headers are checked against the tool's schema (`refusals.param_rejection`)."""
    response_headers: Sequence[tuple[bytes, bytes]] = ()
    """Headers every answer to it carries after our own: in a session, its `mcp-session-id`, as
    each of the SDK's answers in a session does (built once per session by the endpoint)."""
    safe_json: bool = False
    """Its body was parsed by `orjson` and is `shallow`: every value in it is JSON the host can store
    and send on (`config.jsonsafe`), so a `tools/call`'s arguments need no second walk."""


def shallow(brackets: int) -> bool:
    """Whether a JSON body of `brackets` opening brackets (`body_shape`) is too shallow to nest
    deeper than `jsonsafe.MAX_DEPTH`. With `orjson`'s parse (which refuses lone surrogates, invalid
    UTF-8, NaN and infinities, as `check_json_safe` would) that makes the whole message safe JSON
    (`LeanRequest.safe_json`): a count instead of a walk of every argument per call (issue 12,
    R-7.3, R-8.3)."""
    return brackets <= MAX_DEPTH


def _key(request_id: object) -> object:
    """Request ids as the agent may echo them: `7` and `"7"` are one request."""
    return str(request_id) if isinstance(request_id, int | str) and not isinstance(request_id, bool) else request_id


def sdk_params_refused(method: str, params: Mapping[str, Any], *, modern: bool) -> bool:
    """Whether the SDK refuses `params` of `method` when it validates a request: its surface model of
    the era and its handler's model (`mcp_types.methods.parse_client_request`, what the SDK's
    `ServerRunner` runs before a handler), e.g. `requestState: 5`, `task: "x"`, an `inputResponses`
    that is no map of results, a null `progressToken`, a `ref` without its `type` (R-8.1, issue 12).

    Args:
        method: A method of `LEAN_METHODS`.
        params: The request's params object.
        modern: A 2026-07-28 sessionless request (else one in a 2025-11-25-era session).
    Returns:
        True: the lean path must not take it; the SDK answers it (-32602 "Invalid request
        parameters", HTTP 400 in 2026-07-28, 200 in a session): the same answer by construction.
    """
    try:
        parse_client_request(method, _ERA_VERSION[modern], params)
    except (pydantic.ValidationError, KeyError):  # KeyError: a method that era lacks (the SDK: -32601)
        return True
    return False


def meta_problem(params: object) -> str | None:
    """Why a request's `params._meta` breaks MCP ("Invalid params: <field> ..."), or None (R-8.1).

    `_meta`, when present and not null, is an object; its `progressToken`, when present and not
    null, a string or an integer ("ProgressToken = string | number", never a boolean). The SDK's
    model took `true` as 1 and sent 1 upstream; the endpoint answers -32602 with this text instead,
    on every path (lean, SDK, sessionless). Names the field, never the value.
    """
    if not is_object(params) or params.get("_meta") is None:
        return None
    meta = params["_meta"]
    if not is_object(meta):
        return "Invalid params: _meta must be an object"
    token = meta.get("progressToken")
    if token is None or is_request_id(token):
        return None
    return (
        "Invalid params: _meta.progressToken must be a string or an integer "
        "(not a boolean, a number with a fraction, an array or an object)"
    )


def is_lean(message: Mapping[str, Any], *, modern: bool) -> bool:
    """A well-formed request the lean path serves (anything doubtful is left to the SDK).

    Called only on a POST body the endpoint has already checked: a `jsonrpc` other than "2.0", a
    malformed id and a malformed `params._meta` (`meta_problem`) were answered there, so they are not
    checked again on this per-call path; a notification (no id) is not lean. A listing's `cursor`,
    when given, is a string (the SDK's `PaginatedRequestParams`; else its -32602 answers it). Params
    beyond a method's common shape (`_PLAIN`) are taken only when the SDK's models take them
    (`sdk_params_refused`, `modern`: the request's era), so the SDK answers every params it refuses."""
    method = message.get("method")
    params = message.get("params", {})
    if type(method) is not str or method not in LEAN_METHODS:  # a list or an object is no method (nor hashable)
        return False
    if not is_object(params) or not is_request_id(message.get("id")):
        return False
    if method == "tools/call":
        taken = isinstance(params.get("name"), str) and isinstance(params.get("arguments", {}), dict | None)
    elif method in _PAGINATED:
        taken = isinstance(params.get("cursor", ""), str | None)
    else:
        taken = True
    if not taken:
        return False
    plain = _PLAIN[method]
    meta: dict[str, Any] | None = params.get("_meta")  # parsed JSON: an exact dict when an object
    # A null progressToken: `meta_problem` lets it by, the SDK's models refuse it.
    if (
        plain is not None
        and params.keys() <= plain
        and (type(meta) is not dict or meta.get("progressToken", 0) is not None)
    ):
        return True
    return not sdk_params_refused(method, params, modern=modern)


def is_direct_lean(message: dict[str, Any]) -> bool:
    """A parsed POST body (`orjson`: exact `dict`, `str`, `int`, never a subclass) that the endpoint's
    checks let through and `is_lean` takes, decided in one pass (`direct_lean_read`, which the direct
    route calls itself to keep what it read); `tests/gateway/test_lean_parity.py` holds it to the
    chain of checks it replaces."""
    return direct_lean_read(message) is not None


def direct_lean_read(message: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
    """`is_direct_lean` returning what it read: `(method, params, params._meta)` (`params` `{}` when
    absent, `_meta` None when absent), or None for a body it does not take.

    Its rules: `jsonrpc` "2.0" (`bad_version`), an id that is a string or an integer
    (`bad_request_id`), `params._meta` null or an object whose `progressToken` is null, a string or
    an integer (`meta_problem`), and `is_lean`'s rules (params beyond the common shape, or a null
    token, taken only when the SDK's models take them). Exact type checks instead of a guard
    function per value, and the values handed on so that the refusal check and the request's
    capabilities do not read them again: the direct route runs it on every call (issue 12)."""
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or type(method) is not str or method not in LEAN_METHODS:
        return None
    request_id = message.get("id")
    if type(request_id) is not str and type(request_id) is not int:
        return None
    params: dict[str, Any] | None = message.get("params", {})
    if type(params) is not dict:
        return None
    meta: dict[str, Any] | None = params.get("_meta")
    plain = _PLAIN[method]
    if meta is not None:
        if type(meta) is not dict:
            return None
        token = meta.get("progressToken", 0)  # absent: as a good token
        if type(token) is not str and type(token) is not int:
            if token is not None:
                return None
            plain = None  # a null token: the SDK's models decide (`is_lean`)
    if method == "tools/call":
        arguments = params.get("arguments", {})
        taken = type(params.get("name")) is str and (arguments is None or type(arguments) is dict)
    elif method in _PAGINATED:
        cursor = params.get("cursor")
        taken = cursor is None or type(cursor) is str
    else:
        taken = True
    if not taken:
        return None
    # Beyond the common shape (`_PLAIN`): the SDK's models decide.
    if (plain is None or not params.keys() <= plain) and sdk_params_refused(method, params, modern=True):
        return None
    return method, params, meta


def _response(request_id: object, result: Mapping[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def _error(request_id: object, error: Mapping[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


REVOKED_MESSAGE = (
    f"{GatewayAuthRequired.code}: this gateway token was revoked while the request ran; the call was "
    "cancelled (create a new token with 'mcp-center gateway token create NAME')"
)
"""The answer to a call cancelled because its gateway token was revoked (code -32001, as the
endpoint's refusal of a revoked token)."""


def revoked_error(request_id: object) -> bytes:
    """The JSON-RPC error (-32001, `REVOKED_MESSAGE`) that ends a request whose gateway token was
    revoked while it ran, on the lean path (`_revoked`) and the SDK's (the endpoint's hand-over)."""
    return _error(request_id, {"code": -32001, "message": REVOKED_MESSAGE})


def _revoked(request: LeanRequest) -> tuple[bytes | None, int]:
    """The answer to a `tools/call` that ended without one (it was cancelled): the revoked token's
    refusal (-32001, HTTP 401 when it is the only message) when its token is no longer current (the
    endpoint's revocation check cancelled it, R-8.1), else none (the agent cancelled it itself)."""
    allowed = request.caller_allowed
    if allowed is None or allowed():
        return None, 200
    return revoked_error(request.message["id"]), 401


def _failed(request_id: object, error: Mapping[str, Any], modern: bool) -> tuple[bytes, int]:
    """A JSON-RPC error answer and its HTTP status: for a 2026-07-28 request the status the SDK's
    table gives its code (`ERROR_CODE_HTTP_STATUS`: -32602 → 400, -32601 → 404, else 200), as the
    SDK's modern entry answers a handler's error; 200 in a session (R-8.1, issue 12). Sent only
    when it is the answer's one message (an SSE answer has already sent 200)."""
    code = error.get("code")
    status = ERROR_CODE_HTTP_STATUS.get(code, 200) if modern and type(code) is int else 200
    return _error(request_id, error), status


class LeanPath:
    """Serves `LEAN_METHODS` for the endpoint (see the module docstring).

    Args:
        gateway: The gateway (its host's `McpCenter`, and its SDK server's identity for 2026-07-28).
    """

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._center = gateway.center
        self._server_info: dict[str, Any] = gateway.server.server_info_stamp

    async def serve(self, request: LeanRequest, receive: Receive, send: Send) -> None:
        """Answer one request; the HTTP response is complete when this returns."""
        message = request.message
        request_id = message["id"]
        method: str = message["method"]
        params: dict[str, Any] = message.get("params") or {}
        reply = Reply(send, request.response_headers)
        link = request.link
        modern = request.modern
        status = 200
        try:
            if method == "tools/call":
                # One look at the registry and the servers section for the whole call: the header
                # check and the policy both resolve against it, in this step (issue 12, R-8.3).
                now = self._center.mcp_catalog_now()
                if modern:
                    arguments: dict[str, Any] = params.get("arguments") or {}
                    found = None if arguments else param_headers(request.headers)
                    if arguments or found:  # else nothing to check, as the SDK skips it
                        if now is not None:
                            schema = self._center.mcp_headed_schema(now, params["name"], link.server_id)
                        else:  # may wait: `_call` then looks again itself
                            schema = await self._center.mcp_tool_input_schema(params["name"], link.server_id)
                        rejected = param_rejection(schema, arguments, found, request.headers)
                        if rejected is not None:
                            status = ERROR_CODE_HTTP_STATUS[rejected["code"]]
                            await reply.finish(_error(request_id, rejected), status=status)
                            return
                called = await self._call(request, params, reply, receive, now)
                if called is not None:
                    body, status = called
                elif reply.done:  # answered from inside the call (`Reply.early`)
                    body = None
                elif link.gone is not None:  # its server was deleted while it ran
                    body = _error(request_id, link.gone)
                else:
                    body, status = _revoked(request)
            elif method == "tools/list":
                tools = await self._center.mcp_tools_json(link.server_id)
                if request.modern:
                    body = _response(request_id, self._stamp({"tools": orjson.Fragment(tools)}, method))
                else:
                    body = b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":{"tools":' + tools + b"}}"
            elif method == "ping":
                body = _response(request_id, self._stamp({}, method) if request.modern else {})
            elif method in _LISTS:
                category, key = _LISTS[method]
                items = await self._center.mcp_listing(category, link.server_id)
                body = _response(request_id, self._finish({key: items}, request.modern, method))
            else:
                result = await self._center.mcp_forward_request(method, params, server_id=link.server_id)
                body = _response(request_id, self._finish(result, request.modern, method))
        except ServerRequestFailed as exc:
            error = exc.rpc_error or to_mcp_error(exc).error.model_dump(exclude_none=True)
            body, status = _failed(request_id, error, modern)
        except CenterError as exc:
            body, status = _failed(request_id, to_mcp_error(exc).error.model_dump(exclude_none=True), modern)
        except Exception:  # a bug of ours: answered as the SDK answers a failing handler, never as a 500
            logger.exception("gateway.lean_request_failed", extra={"method": method})
            body = _error(request_id, {"code": types.INTERNAL_ERROR, "message": "Internal error"})
        if reply.failure is not None:  # as if `finish` had raised it here
            raise reply.failure
        await reply.finish(body, status=status)

    def _stamp(self, result: dict[str, Any], method: str) -> dict[str, Any]:
        """A 2026-07-28 result: `resultType`, the cache fields of a cacheable result, and the
        `serverInfo` `_meta` stamp, as the SDK would add them."""
        result.setdefault("resultType", "complete")
        if method in _CACHEABLE:
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
        meta = dict(result.get("_meta") or {})
        meta.setdefault(types.SERVER_INFO_META_KEY, self._server_info)
        result["_meta"] = meta
        return result

    def _finish(self, result: dict[str, Any], modern: bool, method: str) -> dict[str, Any]:
        return self._stamp(dict(result), method) if modern else result

    async def _call(
        self, request: LeanRequest, params: dict[str, Any], reply: Reply, receive: Receive, now: CatalogNow | None
    ) -> tuple[bytes, int] | None:
        """`tools/call` through the policy (resolved against `now`, `mcp_catalog_now()` of this step,
        when not None); returns the final message and its HTTP status (`_failed`), or None when the
        agent cancelled it or its result was answered already (`reply.done`: `answer` below)."""
        request_id = request.message["id"]
        modern = request.modern
        link = request.link
        given: dict[str, Any] | None = params.get("_meta")  # parsed JSON: checked exactly, no cast call
        meta = given if type(given) is dict else {}
        token = meta.get("progressToken")
        progress: ProgressFnT | None = None
        if token is not None:

            async def report(progress: float, total: float | None, message: str | None) -> None:
                note: dict[str, Any] = {"progressToken": token, "progress": progress}
                if total is not None:
                    note["total"] = total
                if message is not None:
                    note["message"] = message
                await reply.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})

            progress = report
        elicitor: Elicitor | None = None
        sampler: Sampler | None = None
        roots: RootsLister | None = None
        caps = link.capabilities
        if not request.modern:  # 2026-07-28 has no back-channel: cards and refusals instead
            ask = self._asker(link, reply)

            async def ask_form(question: types.ElicitRequestFormParams) -> types.ElicitResult:
                asked = question.model_dump(mode="json", by_alias=True, exclude_none=True)
                return types.ElicitResult.model_validate(await ask("elicitation/create", asked), by_name=False)

            async def ask_sampling(question: dict[str, Any]) -> dict[str, Any]:
                return await ask("sampling/createMessage", question)

            async def ask_roots() -> dict[str, Any]:
                return await ask("roots/list", {})

            elicitor = ask_form if isinstance(caps.get("elicitation"), dict) else None
            sampler = ask_sampling if isinstance(caps.get("sampling"), dict) else None
            roots = ask_roots if isinstance(caps.get("roots"), dict) else None
        outcome: tuple[bytes, int] | None = None
        key = _key(request_id)
        # No cancel scope of ours: the agent's cancel is one by the call's operation id, which the
        # runtime's admission catches (`AgentCancel`); its disconnect, see `watch_disconnect`.
        call = link.calls[key] = AgentCancel(self._center.mcp_cancel_call, new_operation_id())
        stop_watching = watch_disconnect(receive, call.agent_went)

        async def answer(result: dict[str, Any]) -> None:
            # Written in the step the server's answer was read, before the call's bookkeeping unwinds
            # (admission, deadline, tracking, this call's entries: after it, in that step; issue 12).
            try:
                body = _response(request_id, self._stamp(dict(result), "tools/call") if modern else result)
            except Exception:  # noqa: BLE001 - not answered here: built again below, which raises it as before
                return
            await reply.early(body)

        try:
            result = await self._center.mcp_forward_call(
                params["name"],
                params.get("arguments") or {},
                server_id=link.server_id,
                meta=meta,
                operation_id=call.operation_id,
                progress=progress,
                elicitor=elicitor,
                sampler=sampler,
                roots=roots,
                caller_allowed=request.caller_allowed,
                caller=request.caller,
                now=now,
                arguments_safe=request.safe_json,
                answer=answer,
            )
            if not reply.done:
                outcome = (_response(request_id, self._finish(result, modern, "tools/call")), 200)
        except ServerRequestFailed as exc:
            if exc.rpc_error is not None:
                outcome = _failed(request_id, exc.rpc_error, modern)
            else:
                outcome = (_response(request_id, self._finish(error_result_json(exc), modern, "tools/call")), 200)
        except NotFound as exc:
            outcome = _failed(request_id, to_mcp_error(exc).error.model_dump(exclude_none=True), modern)
        except CenterError as exc:
            if not (call.cancelled and isinstance(exc, CallCancelled)):  # else the agent's own cancel: no answer
                outcome = (_response(request_id, self._finish(error_result_json(exc), modern, "tools/call")), 200)
        except Exception:  # a bug of ours: answered as the SDK answers a failing handler, never as a 500
            logger.exception("gateway.lean_call_failed")
            outcome = (_error(request_id, {"code": types.INTERNAL_ERROR, "message": "Internal error"}), 200)
        finally:
            call.ended = True
            # Only this call's entry: a client that reused the id (MCP forbids it) has a later call
            # under the same key, which must stay cancellable after this one ends.
            if link.calls.get(key) is call:
                del link.calls[key]
            stop_watching()
        return outcome

    def _asker(self, link: AgentLink, reply: Reply) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
        """Ask the agent a question on this POST's stream and wait for its answer (R-8.5)."""

        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            our_id = f"mcp-center-{next(_IDS)}"
            answer = _Answer()
            link.waiting[our_id] = answer
            try:
                await reply.event({"jsonrpc": "2.0", "id": our_id, "method": method, "params": params})
                await answer.done.wait()
            finally:
                link.waiting.pop(our_id, None)
            message = answer.message or {}
            if "result" in message and isinstance(message["result"], dict):
                return cast(dict[str, Any], message["result"])
            error = message.get("error")
            error = cast(dict[str, Any], error) if isinstance(error, dict) else {}
            said = str(error.get("message"))[:200]
            raise AgentRequestFailed(
                f"the agent's client answered {method} with error {error.get('code')}: {said}",
                details={"rpc_code": error.get("code"), "method": method},
            )

        return ask


def is_modern(version: str | None) -> bool:
    """A 2026-07-28 (sessionless) protocol version."""
    return version in MODERN_PROTOCOL_VERSIONS
