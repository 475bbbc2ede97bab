"""Every params shape of every lean method gets the SDK stack's answer (issue 12, R-8.1).

The lean and direct paths forward the hot methods without building the SDK's request models, so
they must not take a request the SDK's models refuse, nor refuse one they take. A table drives
it: for each method in `fastpath.LEAN_METHODS`, a good request and, one change at a time, each
of its params fields (`name`, `arguments`, `uri`, `cursor`, `ref`, `argument`, `level`, `task`,
`requestState`, `inputResponses`, `_meta.progressToken`, an unknown field) set to each odd value
(`ODD`: a string, integers small and beyond 64 bits, a fraction, booleans, null, a list, an
object, NaN-like text, unicode) or left out, and the params themselves not an object, null or
missing. Each request goes to one host twice (`tests/support/parity.py`: lean paths on, then
off) in both protocol eras: a 2025-11-25 session and 2026-07-28 sessionless requests, on `/mcp`
(the direct route) and `/mcp/proto` (the lean branch). The answers must be identical: HTTP status,
JSON-RPC body (code, message, data, id), and the session id header.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, cast

import pytest
from mcp_types.methods import CLIENT_REQUESTS, parse_client_request
from pydantic import ValidationError

from mcp_center.gateway.fastpath import LEAN_METHODS, direct_lean_read, is_lean, meta_problem
from tests.support.parity import ACCEPT, ENVELOPE, MODERN, Answer, Headers, Host, open_session, parity_host

pytestmark = pytest.mark.anyio

ABSENT = object()
"""A field left out."""
ODD: list[Any] = ["x", 5, 0, -1, 1.5, True, False, None, [], [1], {}, {"a": 1}, 2**70, -(2**70), "NaN", "ü☃𝄞", ABSENT]
"""The values each field takes in turn (`json.dumps` writes the integers beyond 64 bits exactly)."""
LISTING = ["cursor", "requestState", "inputResponses"]
FIELDS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "tools/call": ({"name": "{region}", "arguments": {"region": "eu"}}, ["name", "arguments", "task", *LISTING[1:]]),
    "tools/list": ({}, LISTING),
    "prompts/list": ({}, LISTING),
    "resources/list": ({}, LISTING),
    "resources/templates/list": ({}, LISTING),
    "ping": ({}, []),
    "prompts/get": ({"name": "{greet}", "arguments": {"name": "ada"}}, ["name", "arguments", *LISTING[1:]]),
    "resources/read": ({"uri": "notes://readme"}, ["uri", *LISTING[1:]]),
    "completion/complete": (
        {"ref": {"type": "ref/prompt", "name": "{greet}"}, "argument": {"name": "name", "value": "a"}},
        ["ref", "argument", "context"],
    ),
    "logging/setLevel": ({"level": "info"}, ["level"]),
}
"""Per lean method: a good request's params (`{region}`, `{greet}`: the endpoint's names) and the
fields each `ODD` value is put in."""
NESTED: dict[str, list[tuple[str, str]]] = {
    "tools/call": [("task", "ttl"), ("inputResponses", "k"), ("arguments", "region")],
    "prompts/get": [("arguments", "name"), ("inputResponses", "k")],
    "resources/read": [("inputResponses", "k")],
    "completion/complete": [("ref", "type"), ("ref", "name"), ("argument", "value"), ("context", "arguments")],
}
"""Fields given as an object whose one member takes each `ODD` value."""
NOT_OBJECTS: list[Any] = [None, [], [1], "x", 5, 1.5, True, ABSENT]
"""`params` values that are no object (or no params at all)."""


def _variations(method: str) -> dict[str, list[tuple[str, Any]]]:
    """(what, params) of `method` by the field they change: "good" (the good params), then one change
    at a time (ABSENT as params: none at all)."""
    good, fields = FIELDS[method]
    groups: dict[str, list[tuple[str, Any]]] = {"good": [("good", good)]}
    for field in [*fields, "zzUnknown"]:
        for value in ODD:
            changed = {k: v for k, v in good.items() if k != field}
            if value is not ABSENT:
                changed[field] = value
            groups.setdefault(field, []).append((f"{field}={value!r}", changed))
    for field, member in [*NESTED.get(method, []), ("_meta", "progressToken")]:
        for value in ODD:
            outer = dict(good.get(field) or {})
            outer.pop(member, None)
            if value is not ABSENT:
                outer[member] = value
            groups.setdefault(f"{field}.{member}", []).append((f"{field}.{member}={value!r}", {**good, field: outer}))
    groups["params"] = [(f"params={value!r}", value) for value in NOT_OBJECTS]
    return groups


def _table(seed: int | None) -> list[tuple[str, str, Any]]:
    """(method, what, params) of every lean method: each good request, and of each field's variations
    all (`seed` None) or `PER_FIELD` drawn by a generator seeded with `seed` (the same on every run)."""
    draw = random.Random(seed)  # noqa: S311 - a seeded test table, not cryptography
    table: list[tuple[str, str, Any]] = []
    for method in sorted(LEAN_METHODS):
        for variations in _variations(method).values():
            chosen = variations if seed is None else draw.sample(variations, min(PER_FIELD, len(variations)))
            table += [(method, what, params) for what, params in chosen]
    return table


PER_FIELD = 1
"""Variations per field sent over HTTP in each era and endpoint (each draws its own: four draws);
the whole table (about 1,100 per era) runs through the lean paths' own checks in a few milliseconds."""


NAME_FIELDS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The params field a 2026-07-28 request's `Mcp-Name` header repeats."""


def _named(text: str, path: str) -> str:
    """`text` with `{add}` and `{greet}` replaced by the names the endpoint at `path` shows."""
    scoped = path != "/mcp"
    return text.replace("{region}", "region" if scoped else "mcp__proto__region").replace(
        "{greet}", "greet" if scoped else "proto:greet"
    )


def _message(method: str, params: Any, *, modern: bool) -> dict[str, Any]:
    """The JSON-RPC request (id 7); in 2026-07-28 the envelope is merged into an object's `_meta`."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if isinstance(params, dict) and modern:
        given: dict[str, Any] = params  # pyright: ignore[reportUnknownVariableType] - the table's JSON
        meta = given.get("_meta")
        message["params"] = {**given, "_meta": {**ENVELOPE, **meta} if isinstance(meta, dict) else ENVELOPE}
    elif params is not ABSENT:
        message["params"] = params
    return message


def _request(method: str, params: Any, path: str, *, modern: bool) -> tuple[bytes, Headers]:
    """The request's JSON body (names as the endpoint at `path` shows them) and its 2026-07-28
    routing headers (`Mcp-Name`: the name field when a string, else the good one's; a tool call's
    `Mcp-Param-Region`: its `region` argument when a string)."""
    message = _message(method, params, modern=modern)
    body = _named(json.dumps(message, ensure_ascii=False), path).encode()
    if not modern:
        return body, []
    headers = [("Mcp-Protocol-Version", MODERN), ("Mcp-Method", method)]
    given = cast("dict[str, Any]", params) if isinstance(params, dict) else {}
    if (field := NAME_FIELDS.get(method)) is not None:
        name = given.get(field)
        headers.append(("Mcp-Name", _header(_named(name if isinstance(name, str) else FIELDS[method][0][field], path))))
    arguments = given.get("arguments")
    region = cast("dict[str, Any]", arguments).get("region") if isinstance(arguments, dict) else None
    if method == "tools/call" and isinstance(region, str):
        headers.append(("Mcp-Param-Region", _header(region)))
    return body, headers


def _header(value: str) -> str:
    """A header value; one that is not ASCII as 2026-07-28 sends it (`=?base64?...?=`)."""
    return value if value.isascii() else "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


@pytest.fixture
async def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    async with parity_host(tmp_path / "data", monkeypatch) as parity:
        yield parity


ERAS = {"2025-11-25": 0, MODERN: 1}
PATHS = {"/mcp": 0, "/mcp/proto": 2}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("era", list(ERAS))
async def test_every_params_shape_gets_the_sdks_answer(host: Host, path: str, era: str) -> None:
    """A seeded draw of the table (`PER_FIELD` per field; its own seed per era and endpoint), in one
    era on one endpoint: no answer differs between the lean paths and the SDK's stack."""
    modern = era == MODERN
    base: Headers = [("Accept", ACCEPT), ("Content-Type", "application/json")]
    if not modern:
        base += [("Mcp-Session-Id", await open_session(host, path)), ("Mcp-Protocol-Version", era)]
    different: list[str] = []
    statuses: set[int] = set()
    for method, what, params in _table(seed=30 + ERAS[era] + PATHS[path]):
        body, headers = _request(method, params, path, modern=modern)
        lean, sdk = await host.both(path, body, [*base, *headers])
        statuses.add(sdk[0])
        if lean != sdk:
            different.append(f"{method} {what}: lean {_short(lean)} != sdk {_short(sdk)}")
    assert not different, f"{len(different)} differ:\n" + "\n".join(different)
    assert 200 in statuses  # the draw holds requests the SDK serves...
    if modern:
        assert {400, 404} <= statuses, statuses  # ...and ones it refuses (-32602; -32601 for ping)


def _short(answer: Answer) -> str:
    return str(answer)[:300]


@pytest.mark.parametrize("era", list(ERAS))
def test_the_lean_paths_take_exactly_the_params_the_sdks_models_take(era: str) -> None:
    """The whole table through the lean paths' checks: a request is taken (`is_lean`; in 2026-07-28
    also the direct route's `direct_lean_read`) exactly when the SDK's own validation of the era
    (`mcp_types.methods.parse_client_request`, which its `ServerRunner` runs) takes its params: never
    one the SDK answers -32602, and the common shapes without a detour. Bodies the endpoint answers
    before either path (`meta_problem`: a boolean `progressToken`...) or that the SDK's ladder refuses
    before its models (2026-07-28: `ping`, no params) are left out."""
    modern = era == MODERN
    version = MODERN if modern else era
    wrong: list[str] = []
    checked = taken = 0
    for method, what, params in _table(seed=None):
        message = _message(method, params, modern=modern)
        if not isinstance(message.get("params", {}), dict) or meta_problem(message.get("params")) is not None:
            continue
        if modern and ((method, version) not in CLIENT_REQUESTS or "params" not in message):
            continue  # the SDK's ladder refuses it first (`refusals.sdk_refuses`, tests/gateway/test_lean_parity.py)
        given: dict[str, Any] = message.get("params", {})
        try:
            parse_client_request(method, version, given)
            sdk_takes = True
        except (ValidationError, KeyError):
            sdk_takes = False
        lean = is_lean(message, modern=modern)
        checked += 1
        taken += lean
        if lean != sdk_takes:
            wrong.append(f"{method} {what}: lean takes {lean}, the SDK's models {sdk_takes}")
        if modern and (direct_lean_read(message) is not None) != lean:
            wrong.append(f"{method} {what}: the direct route disagrees with is_lean")
    assert not wrong, f"{len(wrong)} wrong:\n" + "\n".join(wrong)
    assert checked > 800 and 100 < taken < checked, (checked, taken)
