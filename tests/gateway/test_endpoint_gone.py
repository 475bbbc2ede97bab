"""A server deleted under its endpoint `/mcp/{id}` (R-8.4, R-8.1, issue 12), found by a breaker: a
2025-11-25 session opened there ended only when its client left (its GET stream open, its id still
served), and a `subscriptions/listen` let in just before the deletion was noticed stayed open. Now
the session ends — its GET stream closes, its id answers 404 as the SDK answers an unknown session,
so a client that re-initializes learns the endpoint is gone — whether the server was deleted through
this host or by another process (the CLI); `/mcp` sessions stay. A listen that registers after the
deletion was noticed is refused as a listen arriving after it is (404 MCP_SERVER_NOT_FOUND).

A real host (the composed app on loopback) fronts `tests/servers/growing_upstream.py`, a real SDK
server; the agents speak raw HTTP, to see the GET stream and each status.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from mcp_center.gateway import GatewayEndpoint
from tests.support.cli import run_cli_process
from tests.support.gateway import SESSION_INITIALIZE
from tests.support.listening import GrowingHost as Host
from tests.support.listening import growing_host
from tests.support.readiness import make_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-endpoint-gone-admin-token-01"
SERVERS = "/api/mcp/servers"
ACCEPT = "application/json, text/event-stream"
INITIALIZE = SESSION_INITIALIZE
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LISTEN: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 9,
    "method": "subscriptions/listen",
    "params": {
        "notifications": {"toolsListChanged": True},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with growing_host(tmp_path / "data", ADMIN_TOKEN) as running:
        yield running


def session_headers(host: Host, session_id: str | None = None) -> dict[str, str]:
    headers = {"Accept": ACCEPT, "Authorization": f"Bearer {host.token}"}
    if session_id is not None:
        headers |= {"Mcp-Session-Id": session_id, "Mcp-Protocol-Version": "2025-11-25"}
    return headers


async def open_session(host: Host, path: str) -> str:
    """A 2025-11-25 session on `path` (initialize, then initialized); its id."""
    opened = await host.http.post(path, json=INITIALIZE, headers=session_headers(host))
    assert opened.status_code == 200, opened.text
    session_id = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await host.http.post(path, json=initialized, headers=session_headers(host, session_id))
    assert done.status_code == 202, done.text
    return session_id


async def delete_through_the_api(host: Host, _data_dir: Path) -> None:
    server = (await host.admin.get(f"{SERVERS}/grow")).json()
    deleted = await host.admin.delete(f"{SERVERS}/grow", params={"version": server["version"]})
    assert deleted.status_code == 204, deleted.text


async def delete_with_the_cli(_host: Host, data_dir: Path) -> None:
    """`mcp-center delete` runs the library in-process on the data directory: another process, which
    this host hears of only through the store."""
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(data_dir), "MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
    done = await anyio.to_thread.run_sync(lambda: run_cli_process("delete", "grow", "--yes", env=env))
    assert done.returncode == 0, done.stderr


class DeletedAfterFirstLook:
    """Makes a deletion land in the window a race test aims at: `Center.server_exists` answers the
    endpoint's first look truthfully, then the server is deleted through the API and the gateway
    has noticed (`Gateway.when_endpoint_gone`) before the request goes on. `looks` counts the looks;
    a test asserts a second one happened (the re-check the fix added)."""

    def __init__(self, host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
        self.looks = 0
        self._host = host
        self._noticed = anyio.Event()
        gateway = host.app.state.gateway_endpoint.gateway
        gateway.when_endpoint_gone(self._notice)
        self._real_exists = gateway.center.server_exists
        monkeypatch.setattr(gateway.center, "server_exists", self._exists)

    def _notice(self, _server_id: str) -> None:
        self._noticed.set()

    async def _exists(self, server_id: str) -> bool:
        self.looks += 1
        found = await self._real_exists(server_id)
        if self.looks == 1:  # the endpoint's look lets the request in; now the deletion is noticed
            await delete_through_the_api(self._host, Path())
            with anyio.fail_after(10):
                await self._noticed.wait()
        return found


@pytest.mark.parametrize("delete", [delete_through_the_api, delete_with_the_cli], ids=["api", "cli"])
async def test_a_session_on_a_deleted_servers_endpoint_ends_and_its_id_answers_404(
    host: Host, tmp_path: Path, delete: Any
) -> None:
    scoped = await open_session(host, "/mcp/grow")
    aggregate = await open_session(host, "/mcp")
    get_headers = {**session_headers(host, scoped), "Accept": "text/event-stream"}
    async with host.http.stream("GET", "/mcp/grow", headers=get_headers) as stream:
        assert stream.status_code == 200
        await delete(host, tmp_path / "data")
        with anyio.fail_after(10):  # the session's GET stream closes (it stayed open before)
            async for _chunk in stream.aiter_bytes():
                pass
    listing = await host.http.post("/mcp/grow", json=LIST_TOOLS, headers=session_headers(host, scoped))
    assert listing.status_code == 404, listing.text  # the SDK's answer for a session it does not know
    again = await host.http.post("/mcp/grow", json=INITIALIZE, headers=session_headers(host))
    assert again.status_code == 404, again.text
    assert again.json()["error"]["data"] == {"code": "MCP_SERVER_NOT_FOUND"}
    # `/mcp` is another endpoint: its session is still served (the server's tools are gone from it).
    kept = await host.http.post("/mcp", json=LIST_TOOLS, headers=session_headers(host, aggregate))
    assert kept.status_code == 200, kept.text
    assert b"mcp__grow__" not in kept.content
    endpoint: GatewayEndpoint = host.app.state.gateway_endpoint
    assert endpoint.open_sessions(host.token_id) == 1


async def test_a_listen_let_in_just_before_its_server_is_deleted_is_refused_as_one_after_it(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window: the endpoint looks the server up when the listen arrives, then hands the request
    to the SDK, which calls the gateway's listen handler a few awaits later. The deletion is made to
    land exactly there: committed and noticed (`Gateway.when_endpoint_gone`) after the endpoint's
    look. The listen is refused at once, with the answer of a listen arriving after the deletion."""
    race = DeletedAfterFirstLook(host, monkeypatch)
    headers = host.modern_headers("subscriptions/listen")
    with anyio.fail_after(10):  # before the fix it was acknowledged and stayed open
        raced = await host.http.post("/mcp/grow", content=orjson.dumps(LISTEN), headers=headers)
    assert race.looks >= 2
    after = await host.http.post("/mcp/grow", content=orjson.dumps(LISTEN), headers=headers)
    assert after.status_code == 404, after.text
    assert raced.status_code == after.status_code, raced.text
    assert raced.headers["content-type"] == "application/json"
    assert raced.json()["error"] == after.json()["error"]
    assert raced.json()["id"] == LISTEN["id"]


@pytest.mark.parametrize("delete", [delete_through_the_api, delete_with_the_cli], ids=["api", "cli"])
async def test_a_call_waiting_on_a_deleted_servers_endpoint_is_answered_why(
    host: Host, tmp_path: Path, delete: Any
) -> None:
    """A `tools/call` of a `/mcp/{id}` session that waits (here for an approval) when its server is
    deleted is answered with a JSON-RPC error naming MCP_SERVER_NOT_FOUND; it got an empty 202, which
    an SDK client reports as 'server answered a request with 202 Accepted' (a breaker found it; R-8.4)."""
    server = (await host.admin.get(f"{SERVERS}/grow")).json()
    asked = await host.admin.put(
        f"{SERVERS}/grow/tools/grow/policy", json={"policy": "ask", "version": server["version"]}
    )
    assert asked.status_code == 200, asked.text
    await make_ready(host.admin, "grow")
    session_id = await open_session(host, "/mcp/grow")
    call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "grow", "arguments": {}},
    }
    answers: list[Any] = []

    async def agent() -> None:
        answers.append(await host.http.post("/mcp/grow", json=call, headers=session_headers(host, session_id)))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent)
            while not (await host.admin.get("/api/approvals")).json()["approvals"]:  # noqa: ASYNC110
                await anyio.sleep(0.05)  # a poll of the host's state, not a wait for time to pass
            await delete(host, tmp_path / "data")
    (answer,) = answers
    assert answer.status_code == 200, answer.text
    text = answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        text = next(line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: "))
    message = orjson.loads(text)
    if "result" in message:
        # Deleted by another process, the host may hear of it first as the approval's end (the
        # store's change): then the call's own refusal, which says it was never sent.
        assert delete is delete_with_the_cli, message
        assert message["result"]["isError"] is True
        assert message["result"]["_meta"]["mcp-center/error"]["code"] == "MCP_CALL_CANCELLED"
        return
    error = message["error"]
    assert error["data"] == {"code": "MCP_SERVER_NOT_FOUND"}, error
    assert "'grow' was deleted" in error["message"]


async def test_an_initialize_let_in_just_before_its_server_is_deleted_opens_no_session(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window: the endpoint looks the server up when the `initialize` arrives, then hands it to
    the SDK, which makes the session and answers a few awaits later. The deletion is made to land
    exactly there (committed and noticed after the endpoint's look): the session was registered
    after the deletion's hook ran and lived until the periodic check. Now it is refused as an
    `initialize` arriving after the deletion, and the token holds no session at once (R-8.4)."""
    endpoint: GatewayEndpoint = host.app.state.gateway_endpoint
    race = DeletedAfterFirstLook(host, monkeypatch)
    raced = await host.http.post("/mcp/grow", json=INITIALIZE, headers=session_headers(host))
    assert endpoint.open_sessions(host.token_id) == 0  # before the fix: 1, until the check a second later
    assert race.looks >= 2
    after = await host.http.post("/mcp/grow", json=INITIALIZE, headers=session_headers(host))
    assert after.status_code == 404, after.text
    assert (raced.status_code, "mcp-session-id" in raced.headers) == (404, False), raced.text
    assert raced.json()["error"] == after.json()["error"]
    assert raced.json()["error"]["data"] == {"code": "MCP_SERVER_NOT_FOUND"}
    # `/mcp` opens sessions as before (its server is no endpoint of its own)
    await open_session(host, "/mcp")
    assert endpoint.open_sessions(host.token_id) == 1
