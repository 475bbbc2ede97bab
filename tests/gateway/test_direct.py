"""The gateway's direct requests (issue 12, `gateway.wire`, `app._DirectGateway`): a sessionless
2026-07-28 lean request to `/mcp` is answered without uvicorn's ASGI cycle, behind the same Host
check, body-size limit, token check and instance header as every other gateway request; anything
else is left to the guarded endpoint, which answers it as before.

A real host (the composed app, served as `serve` serves it) fronts `tests/servers/protocol_upstream.py`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastapi import FastAPI

from mcp_center import app as app_module
from mcp_center.api.security import MAX_BODY_BYTES
from mcp_center.config.jsonsafe import MAX_DEPTH
from mcp_center.runtime import Connection
from tests.servers.protocol_upstream import make_protocol_server
from tests.support.cli import run_cli_process
from tests.support.composed import composed_host
from tests.support.gateway import spy_direct_takes
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-direct-admin-token-0123456789"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
}


@dataclass
class Host:
    base: str
    token: str
    taken: list[bool]
    """Per request the direct route was offered: whether it took it."""
    data: Path
    token_id: str
    app: FastAPI


@pytest.fixture
async def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[Host]:
    async with (
        serve_loopback(make_protocol_server().streamable_http_app()) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        body = {"id": "proto", "name": "Proto", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        ready = await add_ready(composed.admin, {**body, "tool_policies": {"add": "allow"}})
        assert ready["status"]["state"] == "ready"
        taken = spy_direct_takes(composed.app.state.direct_gateway, monkeypatch)
        yield Host(composed.base, composed.token, taken, tmp_path / "data", composed.token_id, composed.app)


def _call(request_id: int = 1) -> dict[str, Any]:
    params = {"name": "mcp__proto__add", "arguments": {"a": 1, "b": 2}, "_meta": ENVELOPE}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _headers(token: str, **extra: str) -> dict[str, str]:
    return {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "mcp__proto__add",
        **extra,
    }


async def test_a_sessionless_call_is_answered_directly_with_the_instance_header(host: Host) -> None:
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        answers = [await http.post("/mcp", json=_call(n), headers=_headers(host.token)) for n in (1, 2)]
    for n, answered in enumerate(answers, start=1):
        assert answered.status_code == 200, answered.text
        assert answered.headers["content-type"] == "application/json"
        assert answered.headers["x-mcp-center-instance"]
        assert answered.json()["id"] == n
        assert answered.json()["result"]["content"][0]["text"] == "3"
        assert answered.json()["result"]["resultType"] == "complete"
    assert host.taken == [True, True]


async def test_the_answer_is_written_before_the_calls_bookkeeping_which_failing_loses_it_not(
    host: Host, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 12, R-8.3: the agent's answer leaves in the step the server's answer is read, before the
    call's bookkeeping unwinds (in-flight count, deadline, admission, tracking): a failure there
    (here the in-flight count's wake-up, once) still answers the result, is logged, and leaves no
    operation, in-flight request, tracked call or agent link behind; the next call is answered."""
    failures: list[str] = []
    real = Connection.note_inflight_changed

    def failing_once(conn: Connection) -> None:
        real(conn)
        if not failures:
            failures.append(conn.spec.server_id)
            raise RuntimeError("bookkeeping failed after the answer")

    monkeypatch.setattr(Connection, "note_inflight_changed", failing_once)
    endpoint = host.app.state.gateway_endpoint
    center = endpoint.gateway.center
    manager = center._manager  # pyright: ignore[reportPrivateUsage]
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        first = await http.post("/mcp", json=_call(1), headers=_headers(host.token))
        conn = manager.current("proto")
        assert conn is not None
        left = (
            dict(manager.operations._ops),  # pyright: ignore[reportPrivateUsage]
            conn.inflight,
            dict(center._interactions._calls),  # pyright: ignore[reportPrivateUsage]
            dict(endpoint._sessionless),  # pyright: ignore[reportPrivateUsage]
        )
        second = await http.post("/mcp", json=_call(2), headers=_headers(host.token))
    assert failures == ["proto"]
    assert first.status_code == 200 and first.json()["id"] == 1, first.text
    assert first.json()["result"]["content"][0]["text"] == "3"
    assert "gateway.lean_call_failed" in caplog.messages
    assert left == ({}, 0, {}, {})
    assert second.json()["result"]["content"][0]["text"] == "3"
    assert host.taken == [True, True]


async def test_what_the_direct_route_does_not_take_is_refused_as_before(host: Host) -> None:
    """R-7.1, R-7.2, R-7.3: a wrong token, a foreign Host or Origin, a body over the limit and a malformed
    request get the guarded endpoint's answers; a session's request is never offered."""
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        wrong_token = await http.post("/mcp", json=_call(), headers=_headers("mcpg_not_a_token"))
        foreign_host = await http.post("/mcp", json=_call(), headers=_headers(host.token, Host="evil.example"))
        foreign_origin = await http.post(
            "/mcp", json=_call(), headers=_headers(host.token, Origin="http://evil.example")
        )
        null_origin = await http.post("/mcp", json=_call(), headers=_headers(host.token, Origin="null"))
        too_large = await http.post(
            "/mcp",
            content=b" " * (MAX_BODY_BYTES + 1),
            headers=_headers(host.token, **{"Content-Type": "application/json"}),
        )
        bad_meta = _call()
        bad_meta["params"]["_meta"] = {**ENVELOPE, "progressToken": True}
        refused_meta = await http.post("/mcp", json=bad_meta, headers=_headers(host.token))
        other_method = await http.post(
            "/mcp", json=_call(), headers=_headers(host.token, **{"Mcp-Method": "tools/list"})
        )
        in_session = await http.post("/mcp", json=_call(), headers=_headers(host.token, **{"Mcp-Session-Id": "nope"}))
    assert wrong_token.status_code == 401 and "not recognised" in wrong_token.json()["error"]["message"]
    assert foreign_host.status_code == 403 and foreign_host.json()["error"]["data"]["code"] == "HOST_NOT_ALLOWED"
    for refused in (foreign_origin, null_origin):  # the Origin read in the same pass as the Host (issue 12)
        assert refused.status_code == 403 and refused.json()["error"]["data"]["code"] == "ORIGIN_NOT_ALLOWED"
    assert too_large.status_code == 413
    assert refused_meta.json()["error"]["code"] == -32602
    assert other_method.status_code == 400  # the SDK's answer to a header that contradicts the body
    # A 2026-07-28 request naming a session goes through the endpoint as before (its lean branch).
    assert in_session.status_code == 200 and in_session.json()["result"]["content"][0]["text"] == "3"
    # Offered and declined: the wrong token, the malformed _meta, the contradicting header.
    assert host.taken == [False, False, False]


async def test_a_token_revoked_by_another_process_is_refused_at_the_next_direct_call(host: Host) -> None:
    """R-7.1, R-8.3: `mcp-center gateway token revoke` (the CLI, another process) revokes the token;
    the very next call sent after it returned is refused (401), although the direct route's token
    check shares the store's `stat` calls with the other looks of its event-loop step
    (`store/freshness.py`)."""
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(host.data)}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        before = await http.post("/mcp", json=_call(1), headers=_headers(host.token))
        revoke = ("gateway", "token", "revoke", host.token_id)
        done = await anyio.to_thread.run_sync(lambda: run_cli_process(*revoke, env=env))
        assert done.returncode == 0, done.stderr
        after = await http.post("/mcp", json=_call(2), headers=_headers(host.token))
    assert before.status_code == 200 and before.json()["result"]["content"][0]["text"] == "3"
    assert after.status_code == 401, after.text
    assert "not recognised" in after.json()["error"]["message"]
    assert host.taken == [True, False]  # declined by the direct route, refused by the endpoint


async def test_a_policy_changed_by_another_process_counts_from_the_next_direct_call(host: Host) -> None:
    """R-5.2, R-8.3: the header check and the policy of a direct `tools/call` resolve against one look
    at the registry and the servers section, taken in the call's own event-loop step (`CatalogNow`,
    issue 12), never one kept from an earlier call. `mcp-center policy proto add deny` (the CLI,
    another process) also disables the server until it is confirmed again (R-1.4): the very next call
    sent after it returned finds no such tool, and so does every call after it. (Fails when a call
    reuses the look of an earlier one: it is then sent to the disabled server.)"""
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(host.data)}

    def policy(value: str) -> None:
        done = run_cli_process("policy", "proto", "add", value, env=env)
        assert done.returncode == 0, done.stderr

    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        before = [await http.post("/mcp", json=_call(n), headers=_headers(host.token)) for n in (1, 2, 3)]
        await anyio.to_thread.run_sync(policy, "deny")
        denied = await http.post("/mcp", json=_call(4), headers=_headers(host.token))
        again = await http.post("/mcp", json=_call(5), headers=_headers(host.token))
    for served in before:  # the second and third resolved against their own step's look (`CatalogNow`)
        assert served.status_code == 200 and served.json()["result"]["content"][0]["text"] == "3"
    for refused in (denied, again):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["data"]["code"] == "MCP_TOOL_NOT_FOUND"
    assert host.taken == [True] * 5


async def test_arguments_nested_too_deep_are_refused_although_shallow_bodies_skip_the_walk(host: Host) -> None:
    """R-7.3, R-8.3: a direct call's arguments are not walked again when its body is too shallow to
    nest beyond `jsonsafe.MAX_DEPTH` (`fastpath.shallow`: orjson already refused every other unsafe
    value); a body nested deeper is still refused, never sent on: `REQUEST_INVALID` with the bad
    value's position (a call's arguments are no configuration: it was `CONFIG_INVALID`, cli36)."""
    deep: object = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    call = _call(1)
    call["params"]["arguments"] = {"a": 1, "b": deep}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        refused = await http.post("/mcp", json=call, headers=_headers(host.token))
        served = await http.post("/mcp", json=_call(2), headers=_headers(host.token))
    assert refused.status_code == 200, refused.text
    result = refused.json()["result"]
    assert result["isError"] is True
    error = result["_meta"]["mcp-center/error"]
    assert error["code"] == "REQUEST_INVALID", result
    assert error["details"]["errors"][0]["code"] == "FIELD_INVALID", error
    assert error["details"]["errors"][0]["field"].startswith("arguments."), error
    assert served.json()["result"]["content"][0]["text"] == "3"
    assert host.taken == [True, True]


def test_a_host_that_passed_passes_again_but_the_origin_and_other_hosts_are_still_checked() -> None:
    route = app_module._DirectGateway(frozenset({"127.0.0.1"}), (b"x-instance", b"i"))  # pyright: ignore[reportPrivateUsage]

    def wants(*headers: tuple[bytes, bytes]) -> Mapping[bytes, str] | None:
        return route.wants(b"/mcp", [(b"content-length", b"2"), *headers])

    good = (b"host", b"127.0.0.1:8000")
    for _ in range(2):  # checked, then remembered as passing
        assert wants(good, (b"authorization", b"Bearer t")) == {b"authorization": "Bearer t"}
    assert wants(good, (b"origin", b"http://evil.example")) is None  # an Origin is always checked
    assert wants((b"host", b"evil.example")) is None
    assert wants() is None  # no Host at all
    for port in range(200):  # any port passes, only a bounded number is remembered
        assert wants((b"host", b"127.0.0.1:%d" % port)) == {}
    assert wants((b"host", b"evil.example:8000")) is None
