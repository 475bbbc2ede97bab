"""`mcp-center gateway --stdio` when its input ends or its output closes (R-8.1, R-7.3; bridge39).

A client that pipes its requests and closes stdin (`printf ... | mcp-center gateway --stdio`) gets
every answer owed before the bridge exits 0, in both protocol eras: a 2025-11-25 session
(`initialize` first) and 2026-07-28 sessionless requests (`_meta` envelope). What cannot be answered
gets a JSON-RPC error line, never silence; a closed stdout (EPIPE) ends the bridge with one line on
stderr and no traceback. A real host (the composed app on loopback) fronts a real SDK server.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.gateway import bridge as bridge_module
from mcp_center.gateway.bridge import bridge_stdio
from mcp_center.runtime.attribution import leaves
from tests.servers.rich_upstream import make_rich_server
from tests.support.cli import CLI, run_cli_process
from tests.support.composed import composed_host
from tests.support.gateway import SESSION_INITIALIZE
from tests.support.loopback import serve_loopback
from tests.support.readiness import add_ready

pytestmark = pytest.mark.anyio

ADMIN_TOKEN = "gateway-bridge-admin-token-0123456789"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass
class Host:
    base: str
    token: str
    env: dict[str, str]
    """The bridge process's environment: this one's, with the gateway token."""


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    """A host with `rich` (its `add` allowed without approval) and `strict` (every call waits for one)."""
    async with (
        serve_loopback(make_rich_server().streamable_http_app()) as upstream,
        composed_host(tmp_path / "data", ADMIN_TOKEN) as composed,
    ):
        for server_id, policies in (("rich", {"add": "allow"}), ("strict", {})):
            body = {"id": server_id, "name": server_id, "transport": "streamable_http", "url": f"{upstream}/mcp"}
            added = await add_ready(composed.admin, {**body, "tool_policies": policies})
            assert added["status"]["state"] == "ready", added
        env = {**os.environ, "MCP_CENTER_GATEWAY_TOKEN": composed.token}
        yield Host(composed.base, composed.token, env)


def _lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def _add_call(request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "mcp__rich__add", "arguments": {"a": 20, "b": 22}}
    return _request(request_id, "tools/call", {**params, "_meta": meta} if meta else params)


async def _bridge_process(host: Host, lines: bytes) -> tuple[int, list[dict[str, Any]], str]:
    """Run the bridge as its own process, its stdin a pipe holding `lines` and then closed.

    Returns:
        (exit code, the JSON lines it wrote on stdout, its stderr).
    """
    bridge = ("gateway", "--stdio", "--url", f"{host.base}/mcp")
    done = await anyio.to_thread.run_sync(lambda: run_cli_process(*bridge, env=host.env, input=lines, timeout_s=60))
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


async def test_a_piped_session_closed_after_its_last_line_gets_every_answer(host: Host) -> None:
    """trial38: initialize, initialized and tools/list piped and stdin closed got only initialize answered."""
    lines = _lines(SESSION_INITIALIZE, INITIALIZED, _request(2, "tools/list"), _add_call(3))
    code, answers, stderr = await _bridge_process(host, lines)
    assert code == 0, stderr
    # initialize is answered before the next line is sent; the two after it may finish in either order.
    answers[1:] = sorted(answers[1:], key=lambda a: a["id"])
    assert [a["id"] for a in answers] == [1, 2, 3], answers
    assert "mcp__rich__add" in {tool["name"] for tool in answers[1]["result"]["tools"]}
    assert answers[2]["result"]["content"][0]["text"] == "42"


async def test_piped_sessionless_requests_closed_after_the_last_line_get_every_answer(host: Host) -> None:
    """2026-07-28: no session; the bridge sends each request's `_meta` version, method and name as headers."""
    lines = _lines(
        _request(1, "server/discover", {"_meta": ENVELOPE}),
        _request(2, "tools/list", {"_meta": ENVELOPE}),
        _add_call(3, ENVELOPE),
    )
    code, answers, stderr = await _bridge_process(host, lines)
    assert code == 0, stderr
    # Sessionless requests are sent one after another without waiting: their answers come back in
    # the order the host finishes them (JSON-RPC matches them by id), not in the order sent.
    answers.sort(key=lambda a: a["id"])
    assert [(a["id"], "error" in a) for a in answers] == [(1, False), (2, False), (3, False)], answers
    assert "mcp__rich__add" in {tool["name"] for tool in answers[1]["result"]["tools"]}
    assert answers[2]["result"]["content"][0]["text"] == "42"


async def test_a_request_still_unanswered_when_the_drain_ends_gets_an_error_line(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call waiting for an approval outlives the drain after stdin ended: -32001 for its id, not silence."""
    monkeypatch.setattr(bridge_module, "DRAIN_S", 1.0)
    waiting = _request(3, "tools/call", {"name": "mcp__strict__add", "arguments": {"a": 1, "b": 2}})
    stdin = io.StringIO(_lines(SESSION_INITIALIZE, INITIALIZED, _request(2, "tools/list"), waiting).decode())
    stdout = io.StringIO()
    with anyio.fail_after(30):
        delivered = await bridge_stdio(f"{host.base}/mcp", host.token, stdin=stdin, stdout=stdout)
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert delivered is True
    assert [a["id"] for a in answers] == [1, 2, 3], answers
    assert answers[2]["error"]["code"] == -32001


async def test_requests_owed_when_the_host_cannot_be_reached_get_an_error_line_before_the_error() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stdin = io.StringIO(_lines(SESSION_INITIALIZE, _request(2, "tools/list")).decode())
    stdout = io.StringIO()
    with anyio.fail_after(30), pytest.raises(Exception) as caught:
        await bridge_stdio(f"http://127.0.0.1:{port}/mcp", "no-host", stdin=stdin, stdout=stdout)
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32000)]
    assert isinstance(next(leaves(caught.value)), httpx2.ConnectError)


def _bridge_into_a_closed_pipe(argv: list[str], env: dict[str, str], lines: bytes) -> tuple[int, str]:
    """Run the bridge with stdout a pipe whose reader is already gone (every write: EPIPE)."""
    stdout_read, stdout_write = os.pipe()
    os.close(stdout_read)
    try:
        done = subprocess.run(
            argv, input=lines, stdout=stdout_write, stderr=subprocess.PIPE, env=env, timeout=60, check=False
        )
    finally:
        os.close(stdout_write)
    return done.returncode, done.stderr.decode(errors="replace")


async def test_a_closed_stdout_ends_the_bridge_with_one_line_and_no_traceback(host: Host) -> None:
    argv = [CLI, "gateway", "--stdio", "--url", f"{host.base}/mcp"]
    lines = _lines(SESSION_INITIALIZE, INITIALIZED, _request(2, "tools/list"))
    code, stderr = await anyio.to_thread.run_sync(lambda: _bridge_into_a_closed_pipe(argv, host.env, lines))
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert "BrokenPipeError" not in stderr
    assert "MCP_SERVER_UNREACHABLE" not in stderr
    assert "closed the bridge's stdout" in stderr


async def test_a_host_that_never_answers_initialize_gets_the_drain_error_not_silence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """break39: the bridge waited for the initialize answer without bound, so with a hung host it never
    saw stdin end and wrote nothing (for ever). The wait is bounded by DRAIN_S, then -32001 per id."""
    monkeypatch.setattr(bridge_module, "DRAIN_S", 1.0)
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog) and never answers
    port = listener.getsockname()[1]
    stdin = io.StringIO(_lines(SESSION_INITIALIZE, _request(2, "tools/list")).decode())
    stdout = io.StringIO()
    try:
        with anyio.fail_after(30):
            delivered = await bridge_stdio(f"http://127.0.0.1:{port}/mcp", "hung-host", stdin=stdin, stdout=stdout)
    finally:
        listener.close()
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert delivered is True
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32001), (2, -32001)], answers
