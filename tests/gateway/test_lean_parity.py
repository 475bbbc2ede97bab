"""The lean and direct paths refuse what the SDK's stack refuses, in the same words (issue 12, R-8.1).

Each bad request is sent twice to one real host (the composed app as `serve` serves it, in front of
`tests/servers/protocol_upstream.py`): once with the endpoint's lean paths on (a sessionless
2026-07-28 request to `/mcp` is offered to the direct path, one to `/mcp/{id}` and a session's
request go to the lean path), once with `GatewayEndpoint.lean` off, so the SDK's stack serves it.
The two answers must be the same: HTTP status, JSON-RPC body (code, message, data, id), and whether
an `mcp-session-id` header came with it.
"""

from __future__ import annotations

import base64
import json
import logging
import random
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import httpx2
import orjson
import pytest

from mcp_center.api.security import MAX_BODY_BYTES
from mcp_center.gateway import refusals, wire
from mcp_center.gateway._answers import bad_meta_refusal, bad_request_id, bad_version
from mcp_center.gateway.fastpath import direct_lean_read, is_direct_lean, is_lean
from mcp_center.gateway.refusals import DUPLICATED, refuses_afresh, sdk_refuses, sdk_refuses_read
from tests.support.parity import ACCEPT, ENVELOPE, MODERN, Headers, Host, answer_body, open_session, parity_host

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    async with parity_host(tmp_path / "data", monkeypatch) as parity:
        yield parity


def _request(method: str, params: dict[str, Any], *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {**params, "_meta": ENVELOPE if meta is None else meta},
    }


def _modern(method: str, **extra: str) -> Headers:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", "Mcp-Protocol-Version": MODERN}
    headers["Mcp-Method"] = method
    headers.update({key.replace("_", "-"): value for key, value in extra.items()})
    return [(k, v) for k, v in headers.items() if v != "-"]


ADD = {"name": "mcp__proto__add", "arguments": {"a": 1, "b": 2}}
REGION = {"name": "mcp__proto__region", "arguments": {"region": "eu"}}
READ = {"uri": "events://list"}
PROMPT = {"name": "mcp__proto__greet"}
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
INFO_KEY = "io.modelcontextprotocol/clientInfo"
ENVELOPE_REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("clientCapabilities null", {CAPS_KEY: None}),
    ("clientCapabilities a list", {CAPS_KEY: []}),
    ("clientCapabilities elicitation a number", {CAPS_KEY: {"elicitation": 5}}),
    ("clientInfo a string", {INFO_KEY: "bad"}),
    ("clientInfo without name and version", {INFO_KEY: {}}),
    ("logLevel unknown", {"io.modelcontextprotocol/logLevel": "loud"}),
]
"""Envelope changes the SDK's model refuses (after its ladder, -32602 with HTTP 400)."""
ENVELOPE_SERVED: list[tuple[str, dict[str, Any]]] = [
    ("clientInfo null", {INFO_KEY: None}),
    ("another progressToken", {"progressToken": "p-2"}),
]
"""Envelope changes the SDK's model takes."""
NO_CAPS = {k: v for k, v in ENVELOPE.items() if not k.endswith("clientCapabilities")}
NO_VERSION = {k: v for k, v in ENVELOPE.items() if not k.endswith("protocolVersion")}

# (what, body, headers): each is refused by the SDK's stack; the lean/direct path must answer the same.
MODERN_CASES: list[tuple[str, Any, Headers]] = [
    ("Mcp-Name differs from tools/call name", _request("tools/call", ADD), _modern("tools/call", Mcp_Name="other")),
    ("Mcp-Name missing on tools/call", _request("tools/call", ADD), _modern("tools/call")),
    (
        "Mcp-Name differs from resources/read uri",
        _request("resources/read", READ),
        _modern("resources/read", Mcp_Name="x://y"),
    ),
    (
        "Mcp-Name differs from prompts/get name",
        _request("prompts/get", PROMPT),
        _modern("prompts/get", Mcp_Name="nope"),
    ),
    ("Mcp-Method missing", _request("tools/list", {}), _modern("-")),
    ("Mcp-Method differs", _request("tools/list", {}), _modern("prompts/list")),
    ("_meta missing", {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}, _modern("tools/list")),
    ("params missing", {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, _modern("tools/list")),
    ("_meta without capabilities", _request("tools/list", {}, meta=NO_CAPS), _modern("tools/list")),
    ("_meta without version", _request("tools/list", {}, meta=NO_VERSION), _modern("tools/list")),
    (
        "_meta version differs",
        _request("tools/list", {}, meta={**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
        _modern("tools/list"),
    ),
    ("Accept missing", _request("tools/list", {}), _modern("tools/list", Accept="")),
    ("Accept without SSE", _request("tools/list", {}), _modern("tools/list", Accept="application/json")),
    ("Content-Type text", _request("tools/list", {}), _modern("tools/list", Content_Type="text/plain")),
    ("Content-Type missing", _request("tools/list", {}), _modern("tools/list", Content_Type="-")),
    ("Mcp-Method twice", _request("tools/list", {}), [*_modern("tools/list"), ("Mcp-Method", "ping")]),
    ("params not an object", {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1]}, _modern("tools/list")),
    ("unknown method", _request("tools/frobnicate", {}), _modern("tools/frobnicate")),
    ("method a list", {**_request("tools/list", {}), "method": ["tools/list"]}, _modern("tools/list")),
    ("id a fraction", {**_request("tools/list", {}), "id": 1.5}, _modern("tools/list")),
    ("id null", {**_request("tools/list", {}), "id": None}, _modern("tools/list")),
    ("id a boolean", {**_request("tools/list", {}), "id": True}, _modern("tools/list")),
    (
        "notification",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": ENVELOPE}},
        _modern("notifications/cancelled"),
    ),
    ("batch", [_request("tools/list", {})], _modern("tools/list")),
    ("jsonrpc 1.0", {**_request("tools/list", {}), "jsonrpc": "1.0"}, _modern("tools/list")),
    (
        "tools/call arguments a list",
        _request("tools/call", {"name": "mcp__proto__add", "arguments": [1]}),
        _modern("tools/call", Mcp_Name="mcp__proto__add"),
    ),
    ("oversized body", _request("tools/list", {"pad": "x" * MAX_BODY_BYTES}), _modern("tools/list")),
    (
        "Mcp-Param-Region differs from the argument",
        _request("tools/call", REGION),
        _modern("tools/call", Mcp_Name="mcp__proto__region", Mcp_Param_Region="us"),
    ),
    (
        "Mcp-Param-Region missing",
        _request("tools/call", REGION),
        _modern("tools/call", Mcp_Name="mcp__proto__region"),
    ),
    (
        "Mcp-Param-Region twice",
        _request("tools/call", REGION),
        [*_modern("tools/call", Mcp_Name="mcp__proto__region", Mcp_Param_Region="eu"), ("Mcp-Param-Region", "eu")],
    ),
    (
        "Mcp-Param-Region without the argument",
        _request("tools/call", {"name": "mcp__proto__region", "arguments": {}}),
        _modern("tools/call", Mcp_Name="mcp__proto__region", Mcp_Param_Region="eu"),
    ),
    (
        "progressToken a boolean",
        _request("tools/list", {}, meta={**ENVELOPE, "progressToken": True}),
        _modern("tools/list"),
    ),
    ("ping, gone in 2026-07-28", _request("ping", {}), _modern("ping")),
    ("tools/list cursor a number", _request("tools/list", {"cursor": 5}), _modern("tools/list")),
    ("prompts/list cursor an object", _request("prompts/list", {"cursor": {}}), _modern("prompts/list")),
    (
        "logging/setLevel, gone in 2026-07-28",
        _request("logging/setLevel", {"level": "info"}),
        _modern("logging/setLevel"),
    ),
    ("resources/subscribe, gone in 2026-07-28", _request("resources/subscribe", READ), _modern("resources/subscribe")),
    # The SDK validates the envelope with its own model after the ladder (`refusals.envelope_refused`).
    *(
        (f"{method} {what}", _request(method, params, meta={**ENVELOPE, **change}), _modern(method, **extra))
        for method, params, extra in (
            ("tools/list", {}, {}),
            ("tools/call", ADD, {"Mcp_Name": "mcp__proto__add"}),
        )
        for what, change in ENVELOPE_REFUSED
    ),
]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_sessionless_refusals_are_the_sdks(host: Host, path: str) -> None:
    """Items 1, 2 and 6 of the review: every bad 2026-07-28 request gets the SDK stack's answer."""
    different: list[str] = []
    for what, message, headers in MODERN_CASES:
        body = orjson.dumps(message)
        if path != "/mcp":  # the per-server endpoint names its tools without the prefix
            body = body.replace(b"mcp__proto__", b"")
            headers = [(k, v.replace("mcp__proto__", "")) for k, v in headers]
        lean, sdk = await host.both(path, body, headers)
        assert sdk[0] >= 400 or (what == "notification" and sdk[0] == 202), (what, sdk)  # a refusal
        if lean != sdk:
            different.append(f"{what}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)


ABSENT = object()
"""A generated envelope member left out."""
ENVELOPE_SHAPES: dict[str, list[Any]] = {
    CAPS_KEY: [
        ABSENT,
        None,
        {},
        [],
        5,
        "x",
        True,
        {"elicitation": 5},
        {"elicitation": {}},
        {"elicitation": {"form": {}}},
        {"sampling": []},
        {"sampling": {}},
        {"roots": {"listChanged": True}},
        {"roots": 1},
        {"experimental": {"x": {"y": 1.5}}},
        {"experimental": {"x": 1}},
        {"extensions": {"e": {}}},
        {"other": 1},
    ],
    INFO_KEY: [
        ABSENT,
        None,
        "bad",
        {},
        [],
        {"name": "t"},
        {"name": "t", "version": "0"},
        {"name": 1, "version": "0"},
        {"name": "t", "version": "0", "icons": [{"src": "s"}]},
        {"name": "t", "version": "0", "icons": [{}]},
        {"name": "t", "version": "0", "websiteUrl": 5},
    ],
    "io.modelcontextprotocol/logLevel": [ABSENT, None, "info", "debug", "loud", 3],
    "progressToken": [ABSENT, None, 1, "tok", 2**63 - 1],
    "x.example/extra": [ABSENT, None, [1, {}], {"a": 1.5}],
}


def _generated_envelopes(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` envelopes (protocol version kept) with each checked member drawn from `ENVELOPE_SHAPES`
    by a seeded generator: the same list on every run, covering mixes no hand-written row does."""
    draw = random.Random(seed)  # noqa: S311 - a seeded test list, not cryptography
    envelopes: list[dict[str, Any]] = []
    for _ in range(count):
        meta: dict[str, Any] = {VERSION_KEY: MODERN}
        for key, shapes in ENVELOPE_SHAPES.items():
            if (value := draw.choice(shapes)) is not ABSENT:
                meta[key] = value
        envelopes.append(meta)
    return envelopes


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_generated_envelopes_get_the_sdks_answer(host: Host, path: str) -> None:
    """Seeded mutations of `params._meta` on `tools/list` and `tools/call`: served or refused, the
    lean/direct answer (HTTP status, JSON-RPC body) is the SDK stack's, including when an envelope
    repeats (its verdict then comes from `refusals`' cache)."""
    envelopes = _generated_envelopes(60, seed=29)
    envelopes += envelopes[:10]  # repeats: the cached verdicts
    name = "mcp__proto__add" if path == "/mcp" else "add"
    different: list[str] = []
    outcomes: set[int] = set()
    for number, meta in enumerate(envelopes):
        method, params, extra = (
            ("tools/list", {}, {}) if number % 2 else ("tools/call", {**ADD, "name": name}, {"Mcp_Name": name})
        )
        lean, sdk = await host.both(path, orjson.dumps(_request(method, params, meta=meta)), _modern(method, **extra))
        outcomes.add(sdk[0])
        if lean != sdk:
            different.append(f"{method} {meta}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)
    assert outcomes >= {200, 400}, outcomes  # the set holds envelopes the SDK serves and ones it refuses


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_integers_beyond_64_bits_get_the_sdks_answer(host: Host, path: str) -> None:
    """An id or progressToken of 2**70 (`orjson` reads it as a float): served as the SDK serves it,
    not refused as a fraction; a real fraction is still refused on both."""
    wide = 2**70
    listing = _request("tools/list", {})
    bodies = {
        "id 2**70": {**listing, "id": wide},
        "id -(2**70)": {**listing, "id": -wide},
        "progressToken 2**70": _request("tools/list", {}, meta={**ENVELOPE, "progressToken": wide}),
        "id 2**70 and a fraction": {**listing, "id": float(wide) + 0.5},
    }
    different: list[str] = []
    for what, message in bodies.items():
        lean, sdk = await host.both(path, json.dumps(message).encode(), _modern("tools/list"))
        if lean != sdk:
            different.append(f"{what}: lean {lean} != sdk {sdk}")
        if what.startswith("id 2**70") and "fraction" not in what:
            assert sdk[0] == 200 and sdk[1]["id"] == wide, sdk  # served, the id kept exactly
    assert not different, "\n".join(different)


async def test_a_good_sessionless_call_is_taken_directly_and_agrees_with_the_sdk(host: Host) -> None:
    """The control: the comparison above really puts the lean/direct path against the SDK stack."""
    body = orjson.dumps(_request("tools/call", ADD))
    lean, sdk = await host.both("/mcp", body, _modern("tools/call", Mcp_Name="mcp__proto__add"))
    assert lean[0] == sdk[0] == 200
    assert lean[1]["result"]["content"] == sdk[1]["result"]["content"] == [{"type": "text", "text": "3"}]
    assert host.taken == [True, False]  # lean: taken by the direct route; lean off: left to uvicorn
    # A call whose Mcp-Param-* header agrees with its argument is served on both.
    headers = _modern("tools/call", Mcp_Name="mcp__proto__region", Mcp_Param_Region="eu")
    lean, sdk = await host.both("/mcp", orjson.dumps(_request("tools/call", REGION)), headers)
    assert lean[0] == sdk[0] == 200
    assert lean[1]["result"]["content"] == sdk[1]["result"]["content"] == [{"type": "text", "text": "region eu"}]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_session_refusals_are_the_sdks(host: Host, path: str) -> None:
    """A 2025-11-25 session's lean requests: the SDK's transport checks Accept and Content-Type."""
    session_id = await open_session(host, path)
    base = [("Mcp-Session-Id", session_id), ("Mcp-Protocol-Version", "2025-11-25")]
    good = [*base, ("Accept", ACCEPT), ("Content-Type", "application/json")]
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    cases: list[tuple[str, Any, Headers]] = [
        ("Accept empty", ping, [*base, ("Accept", ""), ("Content-Type", "application/json")]),
        ("Accept without SSE", ping, [*base, ("Accept", "application/json"), ("Content-Type", "application/json")]),
        ("Content-Type text", ping, [*base, ("Accept", ACCEPT), ("Content-Type", "text/plain")]),
        ("Content-Type missing", ping, [*base, ("Accept", ACCEPT)]),
        ("params not an object", {**ping, "params": [1]}, good),
        ("tools/list cursor a number", {**ping, "method": "tools/list", "params": {"cursor": 5}}, good),
        ("unknown method", {**ping, "method": "tools/frobnicate"}, good),
        ("id a fraction", {**ping, "id": 1.5}, good),
        ("id a boolean", {**ping, "id": True}, good),
        ("batch", [ping], good),
        ("jsonrpc 1.0", {**ping, "jsonrpc": "1.0"}, good),
        (
            "tools/call arguments a list",
            {**ping, "method": "tools/call", "params": {"name": "x", "arguments": [1]}},
            good,
        ),
        ("oversized body", {**ping, "params": {"pad": "x" * MAX_BODY_BYTES}}, good),
        ("prompts/get name a number", {**ping, "method": "prompts/get", "params": {"name": 5}}, good),
        ("resources/read without uri", {**ping, "method": "resources/read", "params": {}}, good),
        ("logging/setLevel unknown level", {**ping, "method": "logging/setLevel", "params": {"level": "nope"}}, good),
        (
            "cancel of no request",
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
            good,
        ),
    ]
    different: list[str] = []
    for what, message, headers in cases:
        lean, sdk = await host.both(path, orjson.dumps(message), headers)
        refused = sdk[0] >= 400 or (isinstance(sdk[1], dict) and "error" in sdk[1])
        assert refused or (what.startswith("cancel") and sdk[0] == 202), (what, sdk)
        if lean != sdk:
            different.append(f"{what}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)


async def test_a_refused_opening_request_carries_no_session_id(host: Host) -> None:
    """Item 4: a 2025-11-25 POST other than `initialize` without a session id is refused (400) by the
    SDK, which discards the session it made for it: no `mcp-session-id` is sent for it."""
    refused = await host.http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": ACCEPT, "Authorization": f"Bearer {host.token}", "Mcp-Protocol-Version": "2025-11-25"},
    )
    assert refused.status_code == 400, refused.text
    assert "mcp-session-id" not in refused.headers
    named = host.endpoint.gateway.center.gateway_tokens.identify_named(host.token)
    assert named is not None and host.endpoint.open_sessions(named[0]) == 0


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.clients: list[object] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        self.clients.append(args[0] if isinstance(args, tuple) and args else None)


async def test_the_direct_access_line_names_the_client_uvicorns_would(host: Host) -> None:
    """Item 5: behind a trusted proxy (uvicorn's `forwarded_allow_ips`, 127.0.0.1 by default) the
    access line of a direct request names the `X-Forwarded-For` client, as uvicorn's cycle logs the
    same request; an untrusted peer's header is ignored on both (`_proxy_layer`'s trusted set)."""
    access = logging.getLogger("uvicorn.access")
    lines = _Lines()
    access.addHandler(lines)
    level = access.level
    access.setLevel(logging.INFO)
    # tools/list: answered from the host's catalog, so the upstream's own access lines stay out.
    body = orjson.dumps(_request("tools/list", {}))
    headers = [*_modern("tools/list"), ("X-Forwarded-For", "203.0.113.9")]
    try:
        async with httpx2.AsyncClient(base_url=str(host.http.base_url), timeout=30) as fresh:  # a new connection
            host.http = fresh  # the access log is enabled per connection
            lean, sdk = await host.both("/mcp", body, headers)
    finally:
        access.removeHandler(lines)
        access.setLevel(level)
    assert lean[0] == sdk[0] == 200
    assert host.taken == [True, False]  # the first went the direct way, the second through uvicorn's cycle
    assert lines.clients == ["203.0.113.9:0", "203.0.113.9:0"]


async def test_an_untrusted_peer_is_logged_as_itself() -> None:
    """The other side of item 5: a peer not in `forwarded_allow_ips` is logged as the peer, whatever
    `X-Forwarded-For` it sends (uvicorn's rule, the same layer)."""
    scope: dict[str, Any] = {
        "type": "http",
        "client": ("198.51.100.4", 5000),
        "headers": [(b"x-forwarded-for", b"203.0.113.9")],
        "scheme": "http",
    }
    layer = wire._proxy_layer(("127.0.0.1",))  # pyright: ignore[reportPrivateUsage] - the layer the protocol uses
    await layer(cast("Any", scope), wire._nothing, wire._nothing)  # pyright: ignore[reportPrivateUsage]
    assert scope["client"] == ("198.51.100.4", 5000)


# (what, path, body, headers): a request the SDK's transport accepts, whose handler answers an error.
HANDLER_ERRORS: list[tuple[str, str, Any, Headers]] = [
    (
        "unknown tool (-32602)",
        "/mcp",
        _request("tools/call", {"name": "mcp__proto__nope", "arguments": {}}),
        _modern("tools/call", Mcp_Name="mcp__proto__nope"),
    ),
    (
        "unknown tool, per-server endpoint (-32602)",
        "/mcp/proto",
        _request("tools/call", {"name": "nope", "arguments": {}}),
        _modern("tools/call", Mcp_Name="nope"),
    ),
    (
        "unknown prompt (-32602)",
        "/mcp",
        _request("prompts/get", {"name": "mcp__proto__nope"}),
        _modern("prompts/get", Mcp_Name="mcp__proto__nope"),
    ),
    (
        "unknown resource (-32602)",
        "/mcp",
        _request("resources/read", {"uri": "nope://x"}),
        _modern("resources/read", Mcp_Name="nope://x"),
    ),
    (
        "completion the server lacks, per-server endpoint (-32601)",
        "/mcp/proto",
        _request(
            "completion/complete", {"ref": {"type": "ref/prompt", "name": "g"}, "argument": {"name": "x", "value": ""}}
        ),
        _modern("completion/complete"),
    ),
]


async def test_a_handlers_error_carries_the_sdks_http_status(host: Host) -> None:
    """A 2026-07-28 request the SDK's transport accepts but whose handler fails is answered with the
    HTTP status the SDK's table gives its JSON-RPC code (`ERROR_CODE_HTTP_STATUS`: -32602 → 400,
    -32601 → 404), on the lean and direct paths as on the SDK's (issue 12, R-8.1)."""
    different: list[str] = []
    for what, path, message, headers in HANDLER_ERRORS:
        lean, sdk = await host.both(path, orjson.dumps(message), headers)
        assert isinstance(sdk[1], dict) and "error" in sdk[1] and sdk[0] >= 400, (what, sdk)  # a handler's error
        if lean != sdk:
            different.append(f"{what}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)


def _good_requests(path: str) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(method, params, extra 2026-07-28 headers) of good requests for `path`: the per-server endpoint
    names the server's tools and prompts as the server does, `/mcp` under the aggregate names."""
    scoped = path != "/mcp"
    add = "add" if scoped else "mcp__proto__add"
    region = "region" if scoped else "mcp__proto__region"
    greet = "greet" if scoped else "proto:greet"
    return [
        ("tools/list", {}, {}),
        ("tools/call", {"name": add, "arguments": {"a": 1, "b": 2}}, {"Mcp_Name": add}),
        ("tools/call", {"name": region, "arguments": {"region": "eu"}}, {"Mcp_Name": region, "Mcp_Param_Region": "eu"}),
        ("prompts/list", {}, {}),
        ("prompts/get", {"name": greet, "arguments": {"name": "ada"}}, {"Mcp_Name": greet}),
        ("resources/list", {}, {}),
        ("resources/templates/list", {}, {}),
        ("resources/read", {"uri": "notes://readme"}, {"Mcp_Name": "notes://readme"}),
        ("resources/read", {"uri": "events://list?topic=a"}, {"Mcp_Name": "events://list?topic=a"}),
    ]


def _check_scoped(path: str, answers: dict[str, Any]) -> None:
    """The answers are `path`'s view: on `/mcp/proto` the server's own names, on `/mcp` the aggregate ones."""
    scoped = path != "/mcp"
    tools = {tool["name"] for tool in answers["tools/list"]["result"]["tools"]}
    assert ("add" in tools) is scoped and ("mcp__proto__add" in tools) is not scoped, tools
    prompts = [prompt["name"] for prompt in answers["prompts/list"]["result"]["prompts"]]
    assert prompts == ["greet" if scoped else "proto:greet"], prompts
    assert answers["tools/call"]["result"]["content"] == [{"type": "text", "text": "3"}]
    assert answers["prompts/get"]["result"]["messages"][0]["content"]["text"] == "hello ada"
    assert [r["uri"] for r in answers["resources/list"]["result"]["resources"]] == ["notes://readme"]
    templates = answers["resources/templates/list"]["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["events://list{?topic,limit}", "users://{id}/profile{#section}"]
    assert answers["resources/read"]["result"]["contents"][0]["text"] == "read notes://readme"


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_good_sessionless_requests_get_the_same_answer_from_the_sdk(host: Host, path: str) -> None:
    """Issue 12: the SDK's handlers (`gateway/server.py`) serve the endpoint the request came to, as
    the lean and direct paths do: `/mcp/{id}` lists, calls, reads and gets under the server's own
    names with `GatewayEndpoint.lean` off too (R-8.4), and every answer is the lean path's."""
    different: list[str] = []
    answers: dict[str, Any] = {}
    for method, params, extra in _good_requests(path):
        body = orjson.dumps(_request(method, params))
        lean, sdk = await host.both(path, body, _modern(method, **extra))
        assert lean[0] == 200 and "result" in lean[1], (method, lean)
        answers.setdefault(method, lean[1])
        if lean != sdk:
            different.append(f"{method} {params}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)
    _check_scoped(path, answers)


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_good_session_requests_get_the_same_answer_from_the_sdk(host: Host, path: str) -> None:
    """The same in a 2025-11-25 session opened on `path`: its requests reach the SDK's handlers with
    the lean path off, and they serve that session's endpoint (R-8.4)."""
    session_id = await open_session(host, path)
    headers = [
        ("Mcp-Session-Id", session_id),
        ("Mcp-Protocol-Version", "2025-11-25"),
        ("Accept", ACCEPT),
        ("Content-Type", "application/json"),
    ]
    different: list[str] = []
    answers: dict[str, Any] = {}
    for method, params, _extra in _good_requests(path):
        body = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        lean, sdk = await host.both(path, body, headers)
        assert lean[0] == 200 and "result" in lean[1], (method, lean)
        answers.setdefault(method, lean[1])
        if lean != sdk:  # status, body, and the session id header the SDK sends with each answer
            different.append(f"{method} {params}: lean {lean} != sdk {sdk}")
    assert not different, "\n".join(different)
    _check_scoped(path, answers)


async def test_a_listing_the_lean_path_hands_over_is_scoped_too(host: Host) -> None:
    """A session's `tools/list` with `"params": null` is not one the lean path takes (`is_lean`: its
    params are not an object), yet the SDK serves it: with the lean path on, in normal operation, it
    reaches the SDK's handler, which lists the session's endpoint (`/mcp/proto`: the server's own
    names, R-8.4), not the aggregate."""
    session_id = await open_session(host, "/mcp/proto")
    headers = {
        "Accept": ACCEPT,
        "Authorization": f"Bearer {host.token}",
        "Mcp-Session-Id": session_id,
        "Mcp-Protocol-Version": "2025-11-25",
    }
    message = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": None}
    answer = await host.http.post("/mcp/proto", json=message, headers=headers)
    assert answer.status_code == 200, answer.text
    names = {tool["name"] for tool in answer_body(answer)["result"]["tools"]}
    assert {"add", "hold", "region"} <= names and not any(n.startswith("mcp__") for n in names), names


def _verdict_table() -> list[tuple[str, dict[bytes, str], dict[str, Any]]]:
    """A good 2026-07-28 tools/call (headers as `read_headers` reads them, body) and variations, each
    changing one thing a rule reads (or nothing a rule reads: id, arguments, progressToken), among
    them the envelope members the SDK's model checks (`refusals.envelope_refused`)."""
    head = {
        b"accept": ACCEPT,
        b"content-type": "application/json",
        b"mcp-protocol-version": MODERN,
        b"mcp-method": "tools/call",
        b"mcp-name": "mcp__proto__add",
    }
    good = _request("tools/call", ADD)
    params = good["params"]
    meta = params["_meta"]
    encoded = "=?base64?" + base64.b64encode(b"mcp__proto__add").decode() + "?="
    return [
        ("good", head, good),
        ("another id and arguments", head, {**good, "id": 99, "params": {**params, "arguments": {"a": 5}}}),
        ("no clientInfo", head, {**good, "params": {**params, "_meta": NO_CLIENT}}),
        ("Accept JSON only", {**head, b"accept": "application/json"}, good),
        ("Accept missing", {k: v for k, v in head.items() if k != b"accept"}, good),
        ("Content-Type text", {**head, b"content-type": "text/plain"}, good),
        ("Content-Type missing", {k: v for k, v in head.items() if k != b"content-type"}, good),
        ("Mcp-Method twice", {**head, DUPLICATED: "mcp-method"}, good),
        ("version header 2025-11-25", {**head, b"mcp-protocol-version": "2025-11-25"}, good),
        ("version header missing", {k: v for k, v in head.items() if k != b"mcp-protocol-version"}, good),
        ("Mcp-Method differs", {**head, b"mcp-method": "tools/list"}, good),
        ("Mcp-Method missing", {k: v for k, v in head.items() if k != b"mcp-method"}, good),
        ("Mcp-Name differs", {**head, b"mcp-name": "other"}, good),
        ("Mcp-Name missing", {k: v for k, v in head.items() if k != b"mcp-name"}, good),
        ("Mcp-Name base64 of the name", {**head, b"mcp-name": encoded}, good),
        ("method prompts/get", {**head, b"mcp-method": "prompts/get"}, {**good, "method": "prompts/get"}),
        ("method ping", {**head, b"mcp-method": "ping"}, {**good, "method": "ping"}),
        ("body name differs", head, {**good, "params": {**params, "name": "other"}}),
        ("body name missing", head, {**good, "params": {"arguments": {}, "_meta": meta}}),
        (
            "envelope version differs",
            head,
            {**good, "params": {**params, "_meta": {**meta, VERSION_KEY: "2025-11-25"}}},
        ),
        ("envelope version unknown", {**head, b"mcp-protocol-version": "2099-01-01"}, _versioned(good, "2099-01-01")),
        ("envelope without capabilities", head, {**good, "params": {**params, "_meta": NO_CAPS}}),
        ("envelope without version", head, {**good, "params": {**params, "_meta": NO_VERSION}}),
        ("envelope version a number", head, {**good, "params": {**params, "_meta": {**meta, VERSION_KEY: 2026}}}),
        ("_meta a list", head, {**good, "params": {**params, "_meta": [1]}}),
        ("_meta missing", head, {**good, "params": {**ADD}}),
        ("params a list", head, {**good, "params": [1]}),
        ("body name a number", head, {**good, "params": {**params, "name": 7}}),
        *(
            (f"envelope {what}", head, {**good, "params": {**params, "_meta": {**meta, **change}}})
            for what, change in ENVELOPE_SERVED + ENVELOPE_REFUSED
        ),
    ]


VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
NO_CLIENT = {k: v for k, v in ENVELOPE.items() if not k.endswith("clientInfo")}


def _versioned(message: dict[str, Any], version: str) -> dict[str, Any]:
    params = message["params"]
    return {**message, "params": {**params, "_meta": {**params["_meta"], VERSION_KEY: version}}}


async def test_cached_sdk_verdicts_are_the_ladders_own() -> None:
    """`sdk_refuses` keeps a 2026-07-28 request's verdict by what its rules read; each variation, asked
    right after the good request and right before it, gets the verdict of the SDK's rules run afresh
    (`refuses_afresh`: `classify_inbound_request` and the transport's header rules). Two inputs that
    shared a key but not a verdict would fail one of the two orders."""
    table = _verdict_table()
    _, good_headers, good = table[0]
    expected = {what: refuses_afresh(headers, message, modern=True) for what, headers, message in table}
    served = {"good", "another id and arguments", "no clientInfo", "Mcp-Name base64 of the name"}
    served |= {"method prompts/get", "body name missing"}  # the name matches / no name to compare
    served |= {"envelope clientInfo null", "envelope another progressToken"}  # the SDK's model takes them
    assert {what for what, refused in expected.items() if not refused} == served  # the others are refused
    wrong: list[str] = []
    read_by_the_direct_route = 0
    for what, headers, message in table:
        row, first = (what, headers, message), ("good", good_headers, good)
        for order in ((first, row), (row, first)):
            for name, asked_headers, asked in order:
                when = f"{'after' if order[0] is first else 'before'} {what}"
                if sdk_refuses(asked_headers, asked, modern=True) != expected[name]:
                    wrong.append(f"{name} ({when})")
                # The direct route's way in: the same cache, keyed by what `direct_lean_read` read.
                if (read := direct_lean_read(asked)) is not None:
                    read_by_the_direct_route += 1
                    if sdk_refuses_read(asked_headers, asked, *read) != expected[name]:
                        wrong.append(f"{name} read by the direct route ({when})")
    assert not wrong, wrong
    assert read_by_the_direct_route >= 2 * len(table)  # most variations are bodies the direct route takes


def test_a_verdict_with_a_long_key_is_given_but_not_kept() -> None:
    """A 2026-07-28 call whose name (and `Mcp-Name`) is 100,000 characters gets the rules' verdict
    each time, but the cache keeps no key that long (`refusals._MAX_KEY_CHARS`): an agent cannot
    make the host hold 1,024 keys of a megabyte each. A short key is still kept."""
    verdicts = refusals._MODERN_VERDICTS  # pyright: ignore[reportPrivateUsage] - the cache under test
    _, headers, good = _verdict_table()[0]
    long_name = "x" * 100_000
    long_call = {**good, "params": {**good["params"], "name": long_name}}
    long_headers = {**headers, b"mcp-name": long_name}
    verdicts.clear()
    for _ in range(2):
        for asked_headers, asked in ((long_headers, long_call), (headers, long_call)):
            assert sdk_refuses(asked_headers, asked, modern=True) == refuses_afresh(asked_headers, asked, modern=True)
    assert len(verdicts) == 0
    assert sdk_refuses(headers, good, modern=True) is False
    assert len(verdicts) == 1


def _direct_table() -> list[dict[str, Any]]:
    """Bodies around the endpoint's checks: good ones of each kind and one change at a time."""
    call = _request("tools/call", ADD)
    listing = _request("tools/list", {})
    params = call["params"]
    odd: list[Any] = [None, True, False, 1, 1.5, -3, "7", "", [], [1], {}, {"a": 1}]
    table: list[dict[str, Any]] = [call, listing, _request("ping", {}), _request("prompts/get", PROMPT)]
    table += [{k: v for k, v in call.items() if k != key} for key in call]  # each member missing
    for value in odd:
        table += [{**call, "jsonrpc": value}, {**call, "id": value}, {**call, "method": value}]
        table += [{**call, "params": value}, {**listing, "params": {"cursor": value, "_meta": ENVELOPE}}]
        table += [{**call, "params": {**params, "_meta": value}}, {**call, "params": {**params, "name": value}}]
        table += [{**call, "params": {**params, "arguments": value}}]
        table += [{**call, "params": {**params, "_meta": {**ENVELOPE, "progressToken": value}}}]
    table += [{**call, "params": {"name": "mcp__proto__add"}}, {**listing, "params": {}}, {**listing, "params": None}]
    return table


async def test_the_direct_routes_one_pass_is_the_endpoints_chain_of_checks() -> None:
    """`is_direct_lean` (the direct route's one pass) takes exactly the bodies that `__call__`'s checks
    (`bad_version`, `bad_request_id`, `bad_meta_refusal`) let through and `is_lean` takes."""
    table = _direct_table()
    different: list[str] = []
    for message in table:
        chain = (
            not bad_version(message)
            and not bad_request_id(message)
            and bad_meta_refusal(message, modern=True) is None
            and is_lean(message, modern=True)
        )
        if is_direct_lean(message) != chain:
            different.append(f"{message}: one pass {not chain}, chain {chain}")
        elif (read := direct_lean_read(message)) is not None:
            params = message.get("params", {})
            if read != (message["method"], params, params.get("_meta")) or (
                "params" in message and read[1] is not params
            ):
                different.append(f"{message}: read as {read}")
    assert not different, "\n".join(different)
    assert sum(map(is_direct_lean, table)) >= 10  # the good ones and the harmless changes are taken
