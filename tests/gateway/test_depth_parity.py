"""Deeply nested JSON gets the SDK stack's answer on the lean paths too (issue 12, R-8.1).

The gateway parses a body with `orjson` (nesting up to 1,024 levels); the SDK parses a session-era
body with `pydantic_core.from_json`, which refuses containers nested beyond 200 levels (400, -32700
"Parse error: recursion limit exceeded ..."), and a 2026-07-28 body with `json.loads`, which fails
where the interpreter's recursion limit runs out (near 1,000 levels, less the stack below it). A
tools/call whose `arguments` or an extra top-level member nests around each limit (limit - 1, the
limit, limit + 1) goes to one host twice (`tests/support/parity.py`: lean paths on, then off), in
both eras, on `/mcp` (the direct route) and `/mcp/proto` (the lean branch): the answers must be
identical.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest

from mcp_center.gateway.fastpath import SDK_DEPTH_LIMIT
from tests.support.parity import ACCEPT, ENVELOPE, MODERN, Answer, Headers, Host, open_session, parity_host

pytestmark = pytest.mark.anyio

SESSION_ERA = "2025-11-25"
PATHS = ["/mcp", "/mcp/proto"]


@pytest.fixture
async def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    async with parity_host(tmp_path / "data", monkeypatch) as parity:
        yield parity


def _body(depth: int, where: str, path: str, *, modern: bool) -> bytes:
    """A tools/call of `add` (1 + 2) whose deepest container (a non-empty array) is `depth` levels
    down, counting the message itself as one: in `arguments` (message, params, arguments, then the
    arrays) or in an extra top-level member (message, then the arrays)."""
    name = "add" if path != "/mcp" else "mcp__proto__add"
    meta = f'"_meta":{json.dumps(ENVELOPE)},' if modern else ""
    arrays = depth - (3 if where == "arguments" else 1)
    deep = "[" * arrays + "1" + "]" * arrays
    extra, argument = (f',"x":{deep}', "") if where == "top" else ("", f',"x":{deep}')
    return (
        f'{{"jsonrpc":"2.0","id":1{extra},"method":"tools/call",'
        f'"params":{{{meta}"name":"{name}","arguments":{{"a":1,"b":2{argument}}}}}}}'
    ).encode()


async def _headers(host: Host, path: str, *, modern: bool) -> Headers:
    base: Headers = [("Accept", ACCEPT), ("Content-Type", "application/json")]
    if not modern:
        return [*base, ("Mcp-Session-Id", await open_session(host, path)), ("Mcp-Protocol-Version", SESSION_ERA)]
    name = "add" if path != "/mcp" else "mcp__proto__add"
    return [*base, ("Mcp-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", name)]


def _refused(answer: Answer) -> bool:
    """Whether the answer is the SDK's parse error (400, -32700)."""
    status, message, _ = answer
    error = cast("dict[str, object]", message).get("error") if isinstance(message, dict) else None
    return status == 400 and isinstance(error, dict) and cast("dict[str, object]", error).get("code") == -32700


async def _sdk_limit(host: Host, path: str, headers: Headers, where: str, *, modern: bool) -> int:
    """The deepest nesting the SDK's stack (lean paths off) parses: found by bisection (its parser
    refuses every depth beyond it; `test_...` sends limit + 1 again)."""
    good, bad = 5, 1_024
    while bad - good > 1:
        middle = (good + bad) // 2
        answer = await host.sdk(path, _body(middle, where, path, modern=modern), headers)
        good, bad = (good, middle) if _refused(answer) else (middle, bad)
    return good


@pytest.mark.parametrize("where", ["arguments", "top"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("era", [SESSION_ERA, MODERN])
async def test_nesting_around_the_sdks_parser_limit_gets_the_sdks_answer(
    host: Host, era: str, path: str, where: str
) -> None:
    """At the SDK parser's limit of the era, one level below and one beyond, and around the lean
    paths' own threshold (`SDK_DEPTH_LIMIT`): the lean paths answer as the SDK's stack does."""
    modern = era == MODERN
    headers = await _headers(host, path, modern=modern)
    limit = await _sdk_limit(host, path, headers, where, modern=modern)
    if not modern:
        assert limit == SDK_DEPTH_LIMIT  # `pydantic_core.from_json`'s own limit (jiter's, 200)
    else:
        assert 800 < limit < 1_000, limit  # `json.loads`: the recursion limit (1,000) less the stack below it
    depths = sorted({limit - 1, limit, limit + 1, SDK_DEPTH_LIMIT - 1, SDK_DEPTH_LIMIT, SDK_DEPTH_LIMIT + 1})
    different: list[str] = []
    served = refused = 0
    for depth in depths:
        lean, sdk = await host.both(path, _body(depth, where, path, modern=modern), headers)
        served += sdk[0] == 200
        refused += _refused(sdk)
        if lean != sdk:
            different.append(f"depth {depth}: lean {str(lean)[:200]} != sdk {str(sdk)[:200]}")
    assert not different, "\n".join(different)
    assert served and refused, (served, refused)  # both sides of the limit were reached
