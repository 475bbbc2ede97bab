"""A call's arguments JSON cannot carry get one answer at the gateway, as on REST, the CLI and the
page (fixb36, R-7.3, R-8.1): NaN, a number such as 1e400, a lone surrogate (`"\\ud800"`, which the
SDK's session-era parser refused with 400 -32700 "unexpected end of hex escape") and nesting past
64 levels are each a `CallToolResult` with `isError` whose `_meta["mcp-center/error"]` is
REQUEST_INVALID at the value's position, in both eras, on `/mcp` and `/mcp/{id}`. Nesting too deep
for any parser (3,000 and 100,000 levels) is the SDK's JSON-RPC parse error (HTTP 400, -32700),
never a 500.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from tests.support.parity import ACCEPT, ENVELOPE, MODERN, Headers, Host, answer_body, open_session, parity_host

pytestmark = pytest.mark.anyio

SESSION_ERA = "2025-11-25"
NAN = "is NaN or infinite (or a number too large, such as 1e400), which JSON cannot carry"
CASES = [
    ('{"a": 1, "b": NaN}', "arguments.b", NAN),
    ('{"a": 1, "b": 1e400}', "arguments.b", NAN),
    ('{"a": 1, "b": 2, "value": "\\ud800"}', "arguments.value", "contains an unpaired surrogate (not valid Unicode)"),
    ('{"a": 1, "b": 2, "x": ' + "[" * 70 + "]" * 70 + "}", "arguments.x" + ".0" * 64, "nests deeper than 64 levels"),
]


@pytest.fixture
async def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    async with parity_host(tmp_path / "data", monkeypatch) as parity:
        yield parity


def _call(arguments: str, path: str, *, modern: bool) -> bytes:
    """A tools/call of the `proto` server's `add` with `arguments` (JSON text, sent as written)."""
    name = "add" if path != "/mcp" else "mcp__proto__add"
    meta = f'"_meta":{json.dumps(ENVELOPE)},' if modern else ""
    return (
        f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{meta}"name":"{name}","arguments":{arguments}}}}}'
    ).encode()


async def _headers(host: Host, path: str, *, modern: bool) -> Headers:
    base: Headers = [
        ("Accept", ACCEPT),
        ("Content-Type", "application/json"),
        ("Authorization", f"Bearer {host.token}"),
    ]
    if not modern:
        return [*base, ("Mcp-Session-Id", await open_session(host, path)), ("Mcp-Protocol-Version", SESSION_ERA)]
    name = "add" if path != "/mcp" else "mcp__proto__add"
    return [*base, ("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", name)]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
@pytest.mark.parametrize("era", [SESSION_ERA, MODERN])
async def test_arguments_json_cannot_carry_are_one_request_invalid_result_naming_the_position(
    host: Host, era: str, path: str
) -> None:
    headers = await _headers(host, path, modern=era == MODERN)
    for arguments, where, problem in CASES:
        response = await host.http.post(path, content=_call(arguments, path, modern=era == MODERN), headers=headers)
        assert response.status_code == 200, (arguments[:40], response.text[:300])
        message: Any = answer_body(response)
        assert message["id"] == 1, message
        result = message["result"]
        assert result["isError"] is True, result
        error = result["_meta"]["mcp-center/error"]
        assert error["code"] == "REQUEST_INVALID", error
        assert [e["code"] for e in error["details"]["errors"]] == ["FIELD_INVALID"], error
        assert error["details"]["errors"][0]["message"] == problem, error
        assert result["content"] == [{"type": "text", "text": f"REQUEST_INVALID: {where}: {problem}"}], result


@pytest.mark.parametrize("depth", [3_000, 100_000])
@pytest.mark.parametrize("era", [SESSION_ERA, MODERN])
async def test_arguments_nested_too_deep_to_parse_are_a_parse_error_never_a_crash(
    host: Host, era: str, depth: int
) -> None:
    headers = await _headers(host, "/mcp", modern=era == MODERN)
    arguments = '{"a": 1, "b": 2, "x": ' + "[" * depth + "]" * depth + "}"
    response = await host.http.post("/mcp", content=_call(arguments, "/mcp", modern=era == MODERN), headers=headers)
    assert response.status_code == 400, response.text[:300]
    assert answer_body(response)["error"]["code"] == -32700
    still = await host.http.post(
        "/mcp", content=_call('{"a": 1, "b": 2}', "/mcp", modern=era == MODERN), headers=headers
    )
    assert answer_body(still)["result"]["content"][0]["text"] == "3"  # the session (or host) still serves
