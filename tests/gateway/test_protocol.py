"""Protocol fidelity of the gateway (R-8.1, R-8.4, R-8.5, R-7.3): per-server endpoints, batches,
upstream JSON-RPC errors, `deny` tools, resource templates with optional parts, sampling and roots,
both protocol eras.

A real host (the composed app on loopback) fronts `tests/servers/protocol_upstream.py`, a real SDK
server; the agent side is the SDK's `Client` or raw HTTP where the wire itself is the point.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_center.api.security import MAX_BODY_BYTES
from mcp_center.gateway.endpoint import GatewayEndpoint
from mcp_center.gateway.server import INSTRUCTIONS, server_instructions
from tests.servers.protocol_upstream import FAIL_CODE, HOLD, Hold, make_protocol_server
from tests.support.composed import composed_host
from tests.support.gateway import SESSION_INITIALIZE, gateway_client
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-protocol-admin-token-0123456789"
SERVERS = "/api/mcp/servers"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {**SESSION_INITIALIZE, "id": 0}


@dataclass
class Host:
    base: str
    admin: httpx2.AsyncClient
    token: str
    upstream: str
    endpoint: GatewayEndpoint


async def _ready(admin: httpx2.AsyncClient, body: dict[str, Any]) -> None:
    assert (await add_ready(admin, body))["status"]["state"] == "ready"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with (
        serve_loopback(make_protocol_server().streamable_http_app()) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        policies = {"add": "allow", "fail": "allow", "sample": "allow", "roots": "deny", "hold": "allow"}
        body = {"id": "proto", "name": "Proto", "transport": "streamable_http", "url": f"{upstream}/mcp"}
        await _ready(composed.admin, {**body, "tool_policies": policies})
        endpoint = composed.app.state.gateway_endpoint
        yield Host(composed.base, composed.admin, composed.token, f"{upstream}/mcp", endpoint)


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_a_server_endpoint_offers_its_tools_and_templates_under_their_own_names(host: Host) -> None:
    """R-8.4: `/mcp/{id}` is one server as itself, behind the same token and policy."""
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {host.token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{host.base}/mcp/proto", http_client=http), mode="legacy", cache=None) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("add", {"a": 40, "b": 2})
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert names == {"add", "fail", "sample", "hold", "region"}  # `roots` is denied: not listed
    assert text(result) == "42"
    assert templates == {"events://list{?topic,limit}", "users://{id}/profile{#section}"}


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_each_endpoint_describes_itself_in_its_instructions(host: Host, mode: str, version: str) -> None:
    """`initialize` (2025-11-25) and `server/discover` (2026-07-28): `/mcp` explains the aggregate
    names, `/mcp/{id}` names the server and no alias scheme (its tools keep their own names, R-8.4)."""
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {host.token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{host.base}/mcp/proto", http_client=http), mode=mode, cache=None) as scoped,
        Client(streamable_http_client(f"{host.base}/mcp", http_client=http), mode=mode, cache=None) as whole,
    ):
        said = {
            "scoped": (scoped.protocol_version, scoped.instructions),
            "whole": (whole.protocol_version, whole.instructions),
        }
    assert said == {"scoped": (version, server_instructions("proto")), "whole": (version, INSTRUCTIONS)}
    assert "proto" in server_instructions("proto") and "mcp__" not in server_instructions("proto")


async def test_a_server_endpoint_needs_a_gateway_token_and_an_existing_server(host: Host) -> None:
    initialize: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        anonymous = await http.post("/mcp/proto", json=initialize, headers=ACCEPT)
        unknown = await http.post(
            "/mcp/nope", json=initialize, headers={**ACCEPT, "Authorization": f"Bearer {host.token}"}
        )
        typo = await http.post(
            "/mcp/prot", json=initialize, headers={**ACCEPT, "Authorization": f"Bearer {host.token}"}
        )
    assert anonymous.status_code == 401
    assert unknown.status_code == 404
    assert unknown.json()["error"]["data"] == {"code": "MCP_SERVER_NOT_FOUND"}
    # A typo'd id is offered the closest registered one (issue 16): every token may open each /mcp/{id}.
    assert typo.status_code == 404
    assert typo.json()["error"]["data"] == {"code": "MCP_SERVER_NOT_FOUND", "did_you_mean": ["proto"]}
    assert typo.json()["error"]["message"].endswith("(its endpoint is /mcp/<server id>); did you mean /mcp/proto?")


async def test_a_denied_tool_is_not_listed_and_its_call_is_still_refused(host: Host) -> None:
    async with gateway_client(host.base, host.token) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("mcp__proto__roots", {})
    assert "mcp__proto__add" in names
    assert "mcp__proto__roots" not in names
    assert refused.is_error is True
    assert text(refused).startswith("MCP_TOOL_DENIED")


async def test_an_upstream_json_rpc_error_reaches_the_agent_as_that_error(host: Host) -> None:
    async with gateway_client(host.base, host.token) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("mcp__proto__fail", {})
    assert caught.value.error.code == FAIL_CODE
    assert caught.value.error.message == "the planted failure"
    assert caught.value.error.data == {"why": "planted"}


async def test_a_batch_is_answered_with_invalid_request_not_a_validation_dump(host: Host) -> None:
    """JSON-RPC batches: -32600 with a clear message, for every protocol version (README)."""
    headers = {**ACCEPT, "Authorization": f"Bearer {host.token}"}
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        for version in ("2025-03-26", "2025-11-25"):
            answered = await http.post("/mcp", json=batch, headers={**headers, "Mcp-Protocol-Version": version})
            assert answered.status_code == 400
            error = answered.json()["error"]
            assert error["code"] == types.INVALID_REQUEST
            assert "batches are not supported" in error["message"]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_an_oversized_body_is_refused_with_a_json_rpc_error(host: Host, path: str) -> None:
    """R-7.3: a body over the limit is refused 413 before it is parsed, on every path (a session's
    request, a 2026-07-28 one; declared or streamed): with a JSON-RPC error an MCP client reads
    (-32600, the stable code in the message and `data`), not the REST API's envelope."""
    auth = {**ACCEPT, "Authorization": f"Bearer {host.token}", "Content-Type": "application/json"}
    pad = b"x" * MAX_BODY_BYTES
    body = b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"pad":"' + pad + b'"}}'

    async def streamed() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 256 * 1024):
            yield body[start : start + 256 * 1024]

    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        opened = await http.post(path, json=INITIALIZE, headers=auth)
        session = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        modern = {**auth, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
        answers = [
            await http.post(path, content=body, headers=session),
            await http.post(path, content=streamed(), headers=session),
            await http.post(path, content=body, headers=modern),
            await http.post(path, content=streamed(), headers=modern),
        ]
    expected = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"REQUEST_TOO_LARGE: the request body is over the limit of {MAX_BODY_BYTES} bytes",
            "data": {"code": "REQUEST_TOO_LARGE", "limit_bytes": MAX_BODY_BYTES},
        },
    }
    assert [(answer.status_code, answer.json()) for answer in answers] == [(413, expected)] * 4
    assert "content-length" not in answers[1].request.headers  # the streamed ones were counted


async def test_a_foreign_host_or_origin_is_refused_with_a_json_rpc_error(host: Host) -> None:
    """R-7.2 on the gateway: DNS-rebinding and cross-origin refusals (403) carry a JSON-RPC error an MCP
    client reads (-32600, the stable code in the message and `data`); the REST API keeps its envelope."""
    auth = {**ACCEPT, "Authorization": f"Bearer {host.token}"}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        refused = {
            (path, code): await http.post(path, json=INITIALIZE, headers={**auth, **headers})
            for path in ("/mcp", "/mcp/proto")
            for code, headers in (
                ("HOST_NOT_ALLOWED", {"Host": "evil.example"}),
                ("ORIGIN_NOT_ALLOWED", {"Origin": "https://evil.example"}),
            )
        }
        rest = await http.get("/api/mcp/servers", headers={"Host": "evil.example"})
    for (path, code), answer in refused.items():
        assert answer.status_code == 403, (path, answer.text)
        body = answer.json()
        assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32600), (path, body)
        assert body["error"]["data"] == {"code": code} and body["error"]["message"].startswith(f"{code}: ")
    assert rest.status_code == 403 and rest.json()["error"]["code"] == "HOST_NOT_ALLOWED"


async def test_a_uri_matching_a_template_with_optional_parts_is_routed(host: Host) -> None:
    """RFC 6570 levels 3-4: `{?topic,limit}` and `{#section}` may expand to nothing."""
    async with gateway_client(host.base, host.token) as client:
        for uri in ("events://list", "events://list?topic=a&limit=2", "users://42/profile", "users://42/profile#bio"):
            read = await client.read_resource(uri)
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            assert content.text == f"read {uri}"


async def test_sampling_during_a_call_goes_to_the_agent_that_declared_it(host: Host) -> None:
    asked: list[str] = []

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        del context
        first = params.messages[0].content
        asked.append(first.text if isinstance(first, types.TextContent) else "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="blue"), model="test-model"
        )

    async with gateway_client(host.base, host.token, sampling_callback=sample) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("mcp__proto__sample", {"prompt": "favourite colour?"})
    assert asked == ["favourite colour?"]
    assert text(result) == "model said: blue"


async def test_sampling_is_refused_at_once_when_the_agent_did_not_declare_it(host: Host) -> None:
    async with gateway_client(host.base, host.token) as client:
        with anyio.fail_after(20), pytest.raises(MCPError) as caught:
            await client.call_tool("mcp__proto__sample", {"prompt": "anyone?"})
    # The server's sampling request got our refusal; its tool passed that error on, and so does the gateway.
    assert "sampling is not available" in caught.value.error.message


async def test_roots_during_a_call_go_to_the_agent_that_declared_them(host: Host) -> None:
    # A second registration of the same server allows `roots` (the first one denies it).
    body = {"id": "rooted", "name": "Rooted", "transport": "streamable_http", "url": host.upstream}
    await _ready(host.admin, {**body, "tool_policies": {"roots": "allow"}})

    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        del context
        return types.ListRootsResult.model_validate({"roots": [{"uri": "file:///work/project"}]})

    async with gateway_client(host.base, host.token, list_roots_callback=list_roots) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("mcp__rooted__roots", {})
    assert text(result) == "roots: file:///work/project"


async def test_a_sessionless_2026_request_is_served_with_its_result_type(host: Host) -> None:
    """The 2026-07-28 era: no initialize, no session; the lean path answers as the SDK would."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "mcp__proto__add", "arguments": {"a": 1, "b": 2}, "_meta": envelope},
    }
    headers = {
        **ACCEPT,
        "Authorization": f"Bearer {host.token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "mcp__proto__add",
    }
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        answered = await http.post("/mcp", json=call, headers=headers)
    assert answered.status_code == 200, answered.text
    result = answered.json()["result"]
    assert result["content"][0]["text"] == "3"
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-center"


@pytest.mark.parametrize(("path", "tool"), [("/mcp", "mcp__proto__hold"), ("/mcp/proto", "hold")])
async def test_a_2026_agent_that_closes_its_request_cancels_the_call_upstream(host: Host, path: str, tool: str) -> None:
    """2026-07-28 cancellation is closing the POST: the lean path cancels the call and the server's
    handler is cancelled. `/mcp` is a direct request, whose protocol tells the call at once
    (`DirectExchange.watch`); `/mcp/{id}` goes through uvicorn's cycle, watched by a task once the
    call has run `WATCH_AFTER_S`."""
    hold = Hold()
    HOLD.append(hold)
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 10,
        "method": "tools/call",
        "params": {"name": tool, "_meta": envelope},
    }
    headers = {
        **ACCEPT,
        "Authorization": f"Bearer {host.token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    async with (
        httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http,
        anyio.create_task_group() as tg,
    ):

        async def post() -> None:
            await http.post(path, json=call, headers=headers)

        tg.start_soon(post)
        with anyio.fail_after(10):
            await hold.started.wait()
        tg.cancel_scope.cancel()  # the agent gives up: its connection closes
    with anyio.fail_after(10):
        await hold.cancelled.wait()
    HOLD.remove(hold)


async def test_a_forwarded_call_is_in_the_servers_log_with_secrets_redacted(host: Host) -> None:
    """R-3.11 and R-1.5 on the lean path: the request log records the call; a secret the server
    echoes never reaches the agent or the log."""
    secret = "s3cr3t-value-planted-0123456789"
    put = await host.admin.put(f"{SERVERS}/proto/secrets/X-Planted?kind=header", json={"value": secret})
    assert put.status_code in (200, 204), put.text
    view = (await host.admin.get(f"{SERVERS}/proto")).json()
    assert (await host.admin.post(f"{SERVERS}/proto/trust", json={"digest": view["digest"]})).status_code == 200
    assert (await host.admin.post(f"{SERVERS}/proto/test")).json()["ok"]
    assert (await host.admin.post(f"{SERVERS}/proto/enable")).json()["status"]["state"] == "ready"
    async with gateway_client(host.base, host.token) as client:
        result = await client.read_resource(f"events://list?topic={secret}")
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert secret not in content.text and "[redacted]" in content.text
    logs = (await host.admin.get(f"{SERVERS}/proto/logs")).json()
    entries = [e for e in logs["requests"] if e["method"] == "resources/read"]
    assert entries and entries[-1]["status"] == "ok"
    assert secret not in str(logs)


async def test_a_session_is_only_known_on_the_endpoint_that_opened_it(host: Host) -> None:
    """R-8.4: a session of `/mcp/proto` is not a session of `/mcp` (nor the other way round)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {**ACCEPT, "Authorization": f"Bearer {host.token}"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        opened = await http.post("/mcp/proto", json=initialize, headers=headers)
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        elsewhere = await http.post("/mcp", json=listing, headers=session)
        own = await http.post("/mcp/proto", json=listing, headers=session)
    assert elsewhere.status_code == 404
    assert own.status_code == 200
    assert {tool["name"] for tool in own.json()["result"]["tools"]} == {"add", "fail", "sample", "hold", "region"}


async def test_a_request_id_reused_in_a_session_does_not_leave_the_later_call_uncancellable(host: Host) -> None:
    """MCP forbids reusing a request id in a session, but a client that does must not break the
    gateway's bookkeeping (R-8.1): when the earlier call with that id ends, the later one can still be
    cancelled by `notifications/cancelled` naming the id."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    auth = {**ACCEPT, "Authorization": f"Bearer {host.token}"}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "mcp__proto__hold"}}
    async with httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http:
        opened = await http.post("/mcp", json=init, headers=auth)
        assert opened.status_code == 200, opened.text
        session = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post("/mcp", json=initialized, headers=session)).status_code == 202

        async def post_call() -> None:
            await http.post("/mcp", json=call, headers=session)

        # The hold tool reports on the last `Hold` in HOLD, when it starts and when it is cancelled.
        first, second, first_end, second_end = Hold(), Hold(), Hold(), Hold()
        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as earlier:
                HOLD[:] = [first]
                earlier.start_soon(post_call)
                with anyio.fail_after(10):
                    await first.started.wait()
                HOLD[:] = [second]
                outer.start_soon(post_call)
                with anyio.fail_after(10):
                    await second.started.wait()
                HOLD[:] = [first_end]
                earlier.cancel_scope.cancel()  # the earlier call's agent goes away: that call ends
            with anyio.fail_after(10):
                await first_end.cancelled.wait()
            HOLD[:] = [second_end]
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
            assert (await http.post("/mcp", json=cancel, headers=session)).status_code == 202
            with anyio.fail_after(10):
                await second_end.cancelled.wait()  # the later call was found and cancelled
    HOLD.clear()


@pytest.mark.parametrize("progress", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "sdk"])
@pytest.mark.parametrize("path", ["/mcp", "/mcp/proto"])
async def test_revoking_a_token_cancels_its_sessionless_call_in_flight(
    host: Host, path: str, lean: bool, progress: bool
) -> None:
    """A 2026-07-28 request has no session for the revocation check to end, yet the same rule holds
    (R-8.1, issue 12): when its token is revoked, its running call is cancelled upstream within
    `SESSION_CHECK_S` and answered as the revoked token's refusal, on the direct path (`/mcp`) and
    the lean path (`/mcp/{id}`) alike, and on the SDK's path (`GatewayEndpoint.lean` off); nothing
    a revoked client asked for runs on. With a `progressToken` the answer is already an SSE stream
    when the call is cancelled (the tool reported progress): the refusal is its last event."""
    host.endpoint.lean = lean
    name = "mcp__proto__hold" if path == "/mcp" else "hold"
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    }
    if progress:
        envelope["progressToken"] = "p-1"
    call = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": name, "_meta": envelope}}
    headers = {
        **ACCEPT,
        "Authorization": f"Bearer {host.token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    listed: list[dict[str, Any]] = (await host.admin.get("/api/gateway/tokens")).json()["tokens"]
    token_ids = [str(t["id"]) for t in listed]
    hold = Hold()
    HOLD.append(hold)
    answers: list[tuple[int, str, list[dict[str, Any]]]] = []
    """(HTTP status, content type, the JSON-RPC messages of the body in order)."""
    first_event = anyio.Event()
    try:
        async with (
            httpx2.AsyncClient(verify=NO_TLS, base_url=host.base, timeout=30) as http,
            anyio.create_task_group() as tg,
        ):

            async def post() -> None:
                async with http.stream("POST", path, json=call, headers=headers) as response:
                    kind = response.headers.get("content-type", "")
                    messages: list[dict[str, Any]] = []
                    if kind.startswith("text/event-stream"):
                        async for line in response.aiter_lines():
                            if line.startswith("data:") and line[5:].strip():
                                messages.append(json.loads(line[5:]))
                                first_event.set()
                    else:
                        messages.append(json.loads(await response.aread()))
                    answers.append((response.status_code, kind, messages))

            tg.start_soon(post)
            with anyio.fail_after(10):
                await hold.started.wait()
                if progress:  # the answer is a stream already: its progress event came
                    await first_event.wait()
            for token_id in token_ids:
                assert (await host.admin.delete(f"/api/gateway/tokens/{token_id}")).status_code == 204
            with anyio.fail_after(10):
                await hold.cancelled.wait()  # the call was cancelled upstream
        # the task group waited for the answer (bounded by the client's timeout)
    finally:
        HOLD.remove(hold)
    ((status, kind, messages),) = answers
    if progress:
        assert (status, kind.split(";")[0]) == (200, "text/event-stream"), (status, kind, messages)
        assert messages[0]["method"] == "notifications/progress", messages
        assert messages[0]["params"]["progressToken"] == "p-1", messages
    else:
        assert (status, kind, len(messages)) == (401, "application/json", 1), (status, kind, messages)
    last = messages[-1]
    assert last["id"] == 11 and "result" not in last, messages
    error = last["error"]
    assert error["code"] == -32001 and error["message"].startswith("GATEWAY_AUTH_REQUIRED"), error
