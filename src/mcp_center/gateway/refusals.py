"""What the SDK's transports refuse before they serve a request, as one check the lean paths share (issue 12).

The gateway answers its hot methods on a lean path (`fastpath`) and, for sessionless 2026-07-28
requests to `/mcp`, on a direct path (`wire`) that bypasses uvicorn's ASGI cycle. Neither may
accept what the SDK's own stack (mcp 2.3.0, `StreamableHTTPSessionManager`) refuses. Rather than
copying the SDK's refusals (their status, JSON-RPC code and words), the lean paths ask
`sdk_refuses` first and, when the SDK would refuse, hand the request to the SDK, which then answers
it with its own refusal: the answers are identical by construction, and a request that passes is
one the SDK would have served.

The rules, in the SDK's order (`mcp.server._streamable_http_modern.handle_modern_request`,
`mcp.server.streamable_http.StreamableHTTPServerTransport._handle_post_request`):

- 2026-07-28: `Content-Type` starting with `application/json` (else 400); `Accept` naming JSON
  and SSE, or a wildcard (else 406); no routing header (`MCP-Protocol-Version`, `Mcp-Method`,
  `Mcp-Name`) given twice; the SDK's own validation ladder (`mcp.shared.inbound.
  classify_inbound_request`: the `params._meta` envelope carries the protocol version and the
  client capabilities, `MCP-Protocol-Version` equals the envelope's, `Mcp-Method` equals the
  method, `Mcp-Name` equals `params.name` / `params.uri`; -32602 or -32020 with HTTP 400); a
  method that version has (`mcp_types.methods.CLIENT_REQUESTS`: no `ping`, `logging/setLevel`,
  `resources/subscribe` or `resources/unsubscribe` in 2026-07-28; else -32601 with HTTP 404).
  Then the SDK validates the params against its models (`validate_client_request`: -32602
  "Invalid request parameters", HTTP 400); of these, the lean paths run the envelope's own model
  (`envelope_refused`: `RequestMetaObject`) and check the rest in `fastpath.is_lean` (a method's
  common shape by type checks, anything else with the SDK's models, `sdk_params_refused`).
- 2025-11-25 and earlier, in a session: `Accept` naming JSON and SSE (else 406); `Content-Type`
  `application/json` (else 415).

The SDK's `Mcp-Param-*` check of a 2026-07-28 `tools/call` against the tool's `x-mcp-header`
annotations needs the tool's schema, so the lean path runs it itself, with the SDK's own function
(`param_rejection`, `validate_mcp_param_headers`), answering its -32020 as the SDK does.

Cost: a few string operations and dictionary look-ups per request; the `Accept` and
`Content-Type` verdicts are cached per header value (clients send the same ones every time). A
2026-07-28 request's whole verdict is cached by what the rules above read of it (`sdk_refuses_read`:
the headers they look at, the method, the envelope's protocol version as a string, its
`clientCapabilities`, `clientInfo` and `logLevel` as one JSON text, and the `name`/`uri` the
`Mcp-Name` rule compares): an agent's calls differ
in their id and arguments, which no rule reads, so the ladder runs once per tool and header set
(issue 12). A request whose verdict inputs are anything else (no `_meta` object, a non-string
version, name or method) is decided afresh every time.
"""

from __future__ import annotations

import functools
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import orjson
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    InboundLadderRejection,
    classify_inbound_request,
    validate_mcp_param_headers,
)
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types._v2026_07_28 import RequestMetaObject  # the model the SDK validates the envelope with
from mcp_types.methods import CLIENT_REQUESTS
from pydantic import ValidationError

__all__ = [
    "DUPLICATED",
    "READ_HEADERS",
    "HeadersRead",
    "envelope_refused",
    "param_headers",
    "param_rejection",
    "read_headers",
    "refuses_afresh",
    "sdk_refuses",
    "sdk_refuses_read",
]

_ROUTING = frozenset({b"mcp-protocol-version", b"mcp-method", b"mcp-name"})
READ_HEADERS = frozenset({b"authorization", b"mcp-session-id", b"accept", b"content-type", *_ROUTING})
"""The (lower-case) request headers the gateway endpoint reads."""
DUPLICATED = b":duplicated"
"""Key `read_headers` sets (to the header's name) when a routing header appears more than once."""


HeadersRead = tuple[dict[bytes, str], int | None, bytes | None, bytes | None]
"""`read_headers`' answer: the headers in `READ_HEADERS` (and `DUPLICATED`), the declared length,
the first Host and Origin values."""


def read_headers(headers: Iterable[tuple[bytes, bytes]]) -> HeadersRead:
    """What the gateway endpoint reads of a request's ASGI `headers` (lower-case names), in one pass
    (the direct route's framing check included, issue 12: one pass over the headers per request).

    Returns:
        `(found, declared, host, origin)`. `found`: the headers in `READ_HEADERS` (first value of
        each, as the SDK reads them), plus `DUPLICATED` naming a routing header given twice.
        `declared`: the `Content-Length` in bytes; None when there is none, more than one, one not
        all digits, or a `Transfer-Encoding` too (a body the direct route never reads whole).
        `host`, `origin`: the first `Host` and `Origin` values as sent, None when absent.
    """
    found: dict[bytes, str] = {}
    declared: int | None = None
    framed = True
    host: bytes | None = None
    origin: bytes | None = None
    for name, value in headers:
        if name in READ_HEADERS:
            if name not in found:
                found[name] = value.decode("latin-1")
            elif name in _ROUTING and DUPLICATED not in found:
                found[DUPLICATED] = name.decode("latin-1")
        elif name == b"content-length":
            if declared is not None or not value.isdigit():
                framed = False
            else:
                declared = int(value)
        elif name == b"host":
            host = value if host is None else host
        elif name == b"origin":
            origin = value if origin is None else origin
        elif name == b"transfer-encoding":
            framed = False
    return found, declared if framed else None, host, origin


@functools.lru_cache(maxsize=64)
def _accepts_json_and_sse(accept: str) -> bool:
    """The SDK's `check_accept_headers` (RFC 7231 wildcards), both types required (SSE responses)."""
    types = [media.strip().split(";")[0].strip().lower() for media in accept.split(",")]
    if "*/*" in types:
        return True
    has_json = any(t in ("application/json", "application/*") for t in types)
    return has_json and any(t in ("text/event-stream", "text/*") for t in types)


@functools.lru_cache(maxsize=64)
def _modern_content_type(content_type: str) -> bool:
    """`TransportSecurityMiddleware._validate_content_type`: the 2026-07-28 entry's rule."""
    return content_type.lower().startswith("application/json")


@functools.lru_cache(maxsize=64)
def _legacy_content_type(content_type: str) -> bool:
    """`StreamableHTTPServerTransport._check_content_type`: the session transport's rule."""
    return any(part.strip() == "application/json" for part in content_type.split(";")[0].split(","))


def sdk_refuses(headers: Mapping[bytes, str], message: Mapping[str, Any], *, modern: bool) -> bool:
    """Whether the SDK's transport would refuse this POST before serving it (see the module docstring).

    Args:
        headers: What `read_headers` read of the request.
        message: The request's decoded JSON-RPC object (already checked to be a lean request).
        modern: A sessionless 2026-07-28 request (else a request in a 2025-11-25-era session).
    Returns:
        True: hand the request to the SDK, which answers its own refusal (R-8.1, issue 12). For a
        2026-07-28 request, the verdict of an earlier request that gave its rules the same inputs
        (`sdk_refuses_read`), computed by `refuses_afresh` the first time.
    """
    if not modern:
        if not _accepts_json_and_sse(headers.get(b"accept", "")):
            return True
        return not _legacy_content_type(headers.get(b"content-type") or "")
    method: str | None = message.get("method")  # declared types, checked exactly (`type(...) is`)
    params: dict[str, Any] | None = message.get("params")
    if type(method) is not str or type(params) is not dict:
        return refuses_afresh(headers, message, modern=True)
    meta: dict[str, Any] | None = params.get("_meta")
    if type(meta) is not dict:
        return refuses_afresh(headers, message, modern=True)
    token = meta.get("progressToken")
    if token is not None and type(token) is not str and type(token) is not int:
        return refuses_afresh(headers, message, modern=True)  # the key assumes a token the model takes
    return sdk_refuses_read(headers, message, method, params, meta)


_MAX_VERDICTS = 1024
_MAX_ENVELOPE_KEY = 4096
"""Longest envelope text (bytes) a verdict is kept by; a longer one is decided afresh (bounded memory)."""
_MAX_KEY_CHARS = 8192
"""Longest verdict key (its parts' lengths summed: headers, method, version, envelope, name) that is
kept; a longer one is decided afresh each time, so the cache holds at most about 8 MiB of keys
(issue 12: a megabyte-long `name` in each of 1,024 calls once kept about a gigabyte)."""
_ENVELOPE_PARTS = (CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY)
"""The envelope members the SDK's `RequestMetaObject` checks besides the version (a string in every
key) and `progressToken` (a string or an integer there, which the model always takes); other members
are free (`extra="allow"`). Absent and null give the same verdict for each of them."""
_VERDICT_HEADERS = (b"accept", b"content-type", DUPLICATED, *sorted(_ROUTING))
"""What `read_headers` keeps that the 2026-07-28 rules read (not `authorization`: no secret in a key)."""
_MODERN_VERDICTS: dict[tuple[str | bytes | None, ...], bool] = {}
"""`sdk_refuses`'s 2026-07-28 verdicts by everything their rules read (bounded: cleared when full)."""


def sdk_refuses_read(
    headers: Mapping[bytes, str],
    message: Mapping[str, Any],
    method: str,
    params: dict[str, Any],
    meta: dict[str, Any] | None,
) -> bool:
    """`sdk_refuses(headers, message, modern=True)` for a body whose `method`, `params` and
    `params._meta` (None when absent or not an object) the caller has already read, with their types
    checked exactly (the direct route's `fastpath.direct_lean_read`): not read again (issue 12).

    The verdict is kept by everything the rules read (see `refuses_afresh` and the SDK's
    `classify_inbound_request`): the headers in `_VERDICT_HEADERS`, the method, the envelope's
    protocol version, its capabilities, client info and log level (`_ENVELOPE_PARTS`, one JSON
    text, at most `_MAX_ENVELOPE_KEY` bytes) and the `name`/`uri` the `Mcp-Name` rule compares. The
    caller has checked that a `progressToken` is null, a string or an integer (which the envelope's
    model, `RequestMetaObject`, always takes; the params models' refusal of a null token is
    `fastpath.is_lean`'s, decided before this), so the per-call token is not in the key. A request
    where the version, name or method is not a plain string (or no `_meta` object, or an envelope
    that is not JSON or is longer) shares no verdict: it is decided afresh. A verdict whose key is
    longer than `_MAX_KEY_CHARS` is given but not kept.
    """
    if meta is None:
        return refuses_afresh(headers, message, modern=True)
    version = meta.get(PROTOCOL_VERSION_META_KEY)
    name_key = NAME_BEARING_METHODS.get(method)
    name = params.get(name_key) if name_key is not None else None
    if type(version) is not str or (name is not None and type(name) is not str):
        return refuses_afresh(headers, message, modern=True)
    try:  # the envelope's parts the SDK's model checks, as one JSON text (not the per-call progressToken)
        envelope = orjson.dumps(tuple(map(meta.get, _ENVELOPE_PARTS)))
    except TypeError:  # not JSON (a caller's own object): no key
        return refuses_afresh(headers, message, modern=True)
    if len(envelope) > _MAX_ENVELOPE_KEY:
        return refuses_afresh(headers, message, modern=True)
    # The headers in one C-level pass over `_VERDICT_HEADERS` (no look-up call per header, issue 12).
    key = (*map(headers.get, _VERDICT_HEADERS), method, version, envelope, name)
    verdict = _MODERN_VERDICTS.get(key)
    if verdict is None:
        verdict = refuses_afresh(headers, message, modern=True)
        # Kept only when its key is small: a name, version or header value is the agent's to make
        # as long as a body or header allows, and 1,024 keys of a megabyte each would stay in memory.
        if sum(len(part) for part in key if part is not None) <= _MAX_KEY_CHARS:
            if len(_MODERN_VERDICTS) >= _MAX_VERDICTS:
                _MODERN_VERDICTS.clear()  # many tools or header sets: start over (recomputing is cheap)
            _MODERN_VERDICTS[key] = verdict
    return verdict


def refuses_afresh(headers: Mapping[bytes, str], message: Mapping[str, Any], *, modern: bool) -> bool:
    """`sdk_refuses` without its cache: every rule run on this request (the reference its cached
    verdicts are tested against, and the way for requests `sdk_refuses_read` does not key)."""
    if not _accepts_json_and_sse(headers.get(b"accept", "")):
        return True
    content_type = headers.get(b"content-type")
    if not modern:
        return not _legacy_content_type(content_type or "")
    if content_type is None or not _modern_content_type(content_type) or DUPLICATED in headers:
        return True
    version = headers.get(b"mcp-protocol-version", "")
    if (message.get("method"), version) not in CLIENT_REQUESTS:  # e.g. `ping`, gone in 2026-07-28: -32601
        return True
    routing = {MCP_PROTOCOL_VERSION_HEADER: version}
    if (method := headers.get(b"mcp-method")) is not None:
        routing[MCP_METHOD_HEADER] = method
    if (name := headers.get(b"mcp-name")) is not None:
        routing[MCP_NAME_HEADER] = name
    if isinstance(classify_inbound_request(message, headers=routing), InboundLadderRejection):
        return True
    params: dict[str, Any] | None = message.get("params")
    meta: dict[str, Any] | None = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and envelope_refused(meta)


def envelope_refused(meta: Mapping[str, Any]) -> bool:
    """Whether the SDK refuses a 2026-07-28 request's `params._meta` envelope when it validates the
    request's params (`mcp_types.methods.validate_client_request`, -32602 "Invalid request
    parameters" with HTTP 400): its own model, `RequestMetaObject`, run on it (R-8.1, issue 12).

    E.g. `clientCapabilities` null, a list or `{"elicitation": 5}`; `clientInfo` a string or without
    `name`/`version`; an unknown `logLevel`. Costs a pydantic validation: `sdk_refuses_read` keeps the
    verdict by the envelope's text, so it runs once per distinct envelope, not per call.
    """
    try:
        RequestMetaObject.model_validate(meta, by_name=False)
    except ValidationError:
        return True
    return False


_PARAM_PREFIX = b"mcp-param-"


class _Pairs(Mapping[str, str]):
    """Header pairs as the mapping `validate_mcp_param_headers` reads: its `items()` keeps a header
    given twice (the SDK refuses that), as Starlette's `Headers` does."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs
        self._first = dict(reversed(pairs))

    def __getitem__(self, key: str) -> str:
        return self._first[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)

    def items(self) -> ItemsView[str, str]:  # pyright: ignore[reportIncompatibleMethodOverride] - duplicates kept
        return cast("ItemsView[str, str]", self._pairs)


def param_headers(headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """The request's `Mcp-Param-*` headers (lower-case names), as `validate_mcp_param_headers` reads them."""
    return [
        (name.decode("latin-1"), value.decode("latin-1")) for name, value in headers if name.startswith(_PARAM_PREFIX)
    ]


def param_rejection(
    schema: dict[str, Any] | None,
    arguments: dict[str, Any],
    found: list[tuple[str, str]] | None,
    headers: Sequence[tuple[bytes, bytes]],
) -> dict[str, Any] | None:
    """The SDK's refusal of a 2026-07-28 `tools/call` whose `Mcp-Param-*` headers (`found`, read
    from `headers` when None) disagree with the tool's `x-mcp-header` annotations in `schema` (the
    one `tools/list` showed this agent; None: the tool declares none, or is not listed), as a
    JSON-RPC error (`mcp.shared.inbound.validate_mcp_param_headers`, the SDK's own check); None
    when they agree. A tool without annotations (most) needs no look at the headers (issue 12)."""
    if schema is None:
        return None
    if found is None:
        found = param_headers(headers)
    rejection = validate_mcp_param_headers(schema, arguments, _Pairs(found))
    return None if rejection is None else {"code": rejection.code, "message": rejection.message}
