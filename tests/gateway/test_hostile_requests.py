"""Hostile JSON-RPC at the gateway `/mcp` (R-8.1, R-7.3): malformed ids and cancellations get a
JSON-RPC answer, never a 500 or silence, and the session stays usable afterwards.

Findings of an adversarial review, each pinned here. A real host (the composed app on loopback)
with no servers: the messages under test need none; the wire itself is the point, so raw HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from mcp_center.models import is_object
from tests.support.composed import composed_host
from tests.support.gateway import SESSION_INITIALIZE

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-hostile-admin-token-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = SESSION_INITIALIZE
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
# Not a JSON-RPC id in MCP: "a string or integer", never null (MCP 2025-11-25 basic/index).
BAD_IDS: list[Any] = [None, 1.5, True, [1], {"a": 1}]
BAD_CANCEL_IDS: list[Any] = [{"x": 1}, [1], None, 2.5, True]


@dataclass
class Host:
    http: httpx2.AsyncClient
    token: str

    def headers(self, session_id: str | None = None, version: str = "2025-11-25") -> dict[str, str]:
        headers = {**ACCEPT, "Authorization": f"Bearer {self.token}", "Mcp-Protocol-Version": version}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        return headers

    async def post(self, message: Any, headers: dict[str, str]) -> httpx2.Response:
        return await self.http.post(
            "/mcp", content=orjson.dumps(message), headers={**headers, "Content-Type": "application/json"}
        )

    async def session(self) -> str:
        opened = await self.http.post(
            "/mcp", json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {self.token}"}
        )
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        initialized = await self.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers(session_id)
        )
        assert initialized.status_code == 202, initialized.text
        return session_id


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with composed_host(tmp_path / "data", ADMIN_TOKEN, token_name="hostile") as composed:
        yield Host(composed.http, composed.token)


def _rpc_body(response: httpx2.Response) -> dict[str, Any]:
    """The one JSON-RPC message of a response, JSON or a single SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        data = [line for line in data if line]
        assert len(data) == 1, response.text
        return orjson.loads(data[0])
    return orjson.loads(response.content)


async def _still_serves(host: Host, session_id: str) -> None:
    listed = await host.post({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, host.headers(session_id))
    assert listed.status_code == 200, listed.text
    assert _rpc_body(listed) == {"jsonrpc": "2.0", "id": 99, "result": {"tools": []}}


@pytest.mark.parametrize("request_id", BAD_CANCEL_IDS, ids=repr)
async def test_a_cancellation_naming_a_request_id_of_no_valid_type_is_not_a_server_error(
    host: Host, request_id: Any
) -> None:
    session_id = await host.session()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    response = await host.post(cancel, host.headers(session_id))
    assert response.status_code in (202, 400), response.text
    if response.status_code == 400:
        assert _rpc_body(response)["error"]["code"] in (-32600, -32602)
    await _still_serves(host, session_id)


async def test_a_cancellation_of_unknown_and_finished_requests_is_accepted_and_harmless(host: Host) -> None:
    session_id = await host.session()
    await _still_serves(host, session_id)  # request 99 is finished now
    for request_id in (99, "99", 12345, "never-sent"):
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
        response = await host.post(cancel, host.headers(session_id))
        assert response.status_code == 202, response.text
    await _still_serves(host, session_id)


@pytest.mark.parametrize("request_id", BAD_IDS, ids=repr)
async def test_a_request_whose_id_is_not_a_string_or_integer_is_answered_invalid_request_in_a_session(
    host: Host, request_id: Any
) -> None:
    session_id = await host.session()
    response = await host.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}, host.headers(session_id))
    assert response.status_code == 400, response.text
    body = _rpc_body(response)
    assert body["id"] is None
    assert body["error"]["code"] == -32600
    assert "id" in body["error"]["message"]
    await _still_serves(host, session_id)


@pytest.mark.parametrize("request_id", BAD_IDS, ids=repr)
async def test_an_initialize_whose_id_is_not_a_string_or_integer_opens_no_session(host: Host, request_id: Any) -> None:
    response = await host.post({**INITIALIZE, "id": request_id}, host.headers(version="2025-11-25"))
    assert response.status_code == 400, response.text
    assert "mcp-session-id" not in response.headers
    assert _rpc_body(response)["error"]["code"] == -32600


@pytest.mark.parametrize("request_id", BAD_IDS, ids=repr)
async def test_a_sessionless_request_whose_id_is_not_a_string_or_integer_is_answered_invalid_request(
    host: Host, request_id: Any
) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {"_meta": MODERN_META}}
    headers = {**host.headers(version="2026-07-28"), "Mcp-Method": "tools/list"}
    response = await host.post(message, headers)
    assert response.status_code == 400, response.text
    body = _rpc_body(response)
    assert body["id"] is None
    assert body["error"]["code"] == -32600


@pytest.mark.parametrize("raw_id", [b"1e400", b"-1e400", b"NaN", b"-Infinity"])
async def test_an_id_orjson_cannot_read_is_answered_invalid_request_in_both_eras(host: Host, raw_id: bytes) -> None:
    """`orjson` refuses a body holding a number beyond a double's range (or NaN, Infinity: not JSON),
    so the id check never saw an id of 1e400 and the SDK served it: HTTP 202 and no answer in a
    2025-11-25 session (the agent waited for ever), a vague -32600 sessionless (sec39). Now the same
    refusal as any id of no valid type, in a session, sessionless, and for an `initialize` (which
    opens no session)."""
    session_id = await host.session()
    meta = orjson.dumps(MODERN_META)
    sent = [
        (b'{"jsonrpc":"2.0","id":%s,"method":"tools/list"}' % raw_id, host.headers(session_id)),
        (
            b'{"jsonrpc":"2.0","id":%s,"method":"tools/list","params":{"_meta":%s}}' % (raw_id, meta),
            {**host.headers(version="2026-07-28"), "Mcp-Method": "tools/list"},
        ),
        (orjson.dumps(INITIALIZE).replace(b'"id":1', b'"id":' + raw_id, 1), host.headers(version="2025-11-25")),
    ]
    for body, headers in sent:
        assert b"%s," % raw_id in body
        response = await host.http.post("/mcp", content=body, headers={**headers, "Content-Type": "application/json"})
        assert response.status_code == 400, response.text
        assert "mcp-session-id" not in response.headers
        answer = _rpc_body(response)
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
        assert "id must be a string or an integer" in answer["error"]["message"]
    await _still_serves(host, session_id)


# Params the SDK's models refuse; the lean path forwarded them as they came (or failed inside).
BAD_PARAMS: list[tuple[str, dict[str, Any]]] = [
    ("completion/complete", {"ref": "x", "argument": {"name": "a", "value": "b"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "a:b"}}),
    ("prompts/get", {"name": 5}),
    ("prompts/get", {"name": "a:b", "arguments": [1]}),
    ("resources/read", {"uri": 5}),
    ("resources/read", {}),
    ("resources/subscribe", {"uri": [1]}),
    ("resources/unsubscribe", {}),
    ("logging/setLevel", {"level": "nope"}),
    ("logging/setLevel", {}),
]


@pytest.mark.parametrize(("method", "params"), BAD_PARAMS, ids=lambda value: repr(value))
async def test_params_the_protocol_forbids_are_answered_invalid_params_in_a_session(
    host: Host, method: str, params: dict[str, Any]
) -> None:
    session_id = await host.session()
    response = await host.post(
        {"jsonrpc": "2.0", "id": 5, "method": method, "params": params}, host.headers(session_id)
    )
    assert response.status_code in (200, 400), response.text
    body = _rpc_body(response)
    assert body["id"] == 5
    assert body["error"]["code"] == -32602, body
    # The SDK's words, whichever path served it (lean, or the SDK's for (un)subscribe): no pydantic text.
    assert (body["error"]["message"], body["error"]["data"]) == ("Invalid request parameters", ""), body
    await _still_serves(host, session_id)


@pytest.mark.parametrize(("method", "params"), BAD_PARAMS, ids=lambda value: repr(value))
async def test_params_the_protocol_forbids_are_answered_invalid_params_sessionless(
    host: Host, method: str, params: dict[str, Any]
) -> None:
    message = {"jsonrpc": "2.0", "id": 6, "method": method, "params": {**params, "_meta": MODERN_META}}
    headers = {**host.headers(version="2026-07-28"), "Mcp-Method": method}
    response = await host.post(message, headers)
    body = _rpc_body(response)
    assert body["id"] == 6
    if method in GONE_IN_2026:  # the SDK's answer, on the lean path too (issue 12)
        assert (response.status_code, body["error"]["code"]) == (404, -32601), body
    else:
        assert body["error"]["code"] in (-32602, -32020), body  # -32020: a header the SDK checks first


GONE_IN_2026 = {"resources/subscribe", "resources/unsubscribe", "logging/setLevel"}
"""Methods 2026-07-28 removed: the SDK answers -32601 (HTTP 404) for them."""

BAD_META: list[Any] = [
    "str",
    [1],
    {"progressToken": {"a": 1}},
    {"progressToken": 1.5},
    {"progressToken": True},  # the SDK's model took it as 1 and sent 1 upstream
    {"progressToken": False},
]


@pytest.mark.parametrize("meta", BAD_META, ids=repr)
async def test_a_call_whose_meta_or_progress_token_has_no_valid_type_is_answered_invalid_params(
    host: Host, meta: Any
) -> None:
    """MCP: a progress token is a string or an integer, never a boolean; the answer names the field."""
    session_id = await host.session()
    call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "any", "arguments": {}, "_meta": meta},
    }
    response = await host.post(call, host.headers(session_id))
    body = _rpc_body(response)
    assert body["id"] == 7
    assert body["error"]["code"] == -32602, body
    assert "MCP_TOOL_NOT_FOUND" not in body["error"]["message"], body  # refused for its params, not routed
    assert ("progressToken" if is_object(meta) else "_meta") in body["error"]["message"], body
    await _still_serves(host, session_id)


@pytest.mark.parametrize("token", [True, 2.5, [1]], ids=repr)
async def test_a_sessionless_call_whose_progress_token_has_no_valid_type_is_answered_invalid_params(
    host: Host, token: Any
) -> None:
    """The same -32602 naming the field for a 2026-07-28 request (no session), before any routing."""
    meta = {**MODERN_META, "progressToken": token}
    message = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "any", "_meta": meta}}
    response = await host.post(message, {**host.headers(version="2026-07-28"), "Mcp-Method": "tools/call"})
    body = _rpc_body(response)
    assert (body["id"], body["error"]["code"]) == (8, -32602), body
    assert body["error"]["message"].startswith("Invalid params: _meta.progressToken must be"), body


@pytest.mark.parametrize("jsonrpc", ["1.0", 2.0, None, "2.0 "], ids=repr)
@pytest.mark.parametrize("method", ["tools/list", "tools/call", "initialize"])
async def test_a_message_whose_jsonrpc_is_not_2_0_is_answered_invalid_request_not_a_validation_dump(
    host: Host, jsonrpc: Any, method: str
) -> None:
    """JSON-RPC 2.0 §4: `jsonrpc` MUST be exactly "2.0"; anything else is -32600 naming the member, before
    any session is opened or any tool is called (R-8.1, R-7.3)."""
    session_id = await host.session()
    params: object = {"name": "mcp__none__tool"} if method == "tools/call" else {}
    if method == "initialize":
        params = INITIALIZE["params"]
    message = {"jsonrpc": jsonrpc, "id": 3, "method": method, "params": params}
    headers = host.headers(None if method == "initialize" else session_id)
    response = await host.post(message, headers)
    assert response.status_code == 400, response.text
    body = _rpc_body(response)
    assert body["error"]["code"] == -32600
    assert "jsonrpc" in body["error"]["message"] and '"2.0"' in body["error"]["message"]
    assert "mcp-session-id" not in response.headers
    await _still_serves(host, session_id)
