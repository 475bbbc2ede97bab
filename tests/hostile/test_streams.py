"""Issue 14, "streams and sessions" and network wording: bounded resumption, a backed-off GET stream,
and errors that name the request (R-3.1, R-3.10). Items 8, 9 and 14, through the REST API and the
gateway of a real host, against loopback fakes of our own."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.responses import Response

import mcp_center.transports.streamable as streamable
from mcp_center.transports.backoff import Backoff
from tests.hostile._support import SERVERS, Host, quirky_body, remote_body, running_host, text_of
from tests.servers.sse_fakes import FakeSseServer
from tests.support.fakes.streamable_http import FakeStreamableServer, serve_fake, sse_event, sse_response
from tests.support.loopback import serve_loopback
from tests.support.ports import closed_port_url

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


async def _primed_then_closed(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
    """Answer a request with an event stream that gives an event id, asks `retry: 50`, and ends."""
    del fake, message
    return sse_response([sse_event("", event_id="event-1", retry_ms=50)])


async def test_resumption_that_brings_nothing_gives_up_after_a_few_attempts_with_a_clear_error(
    host: Host, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 8: not one GET a second until the call timeout; a few, spaced, then MCP_CONNECTION_LOST."""
    monkeypatch.setattr(streamable, "RESUME_BACKOFF", Backoff(floor_s=0.1, cap_s=0.4))
    caplog.set_level(logging.DEBUG, logger="mcp_center.transports.streamable")
    fake = FakeStreamableServer(empty_resumptions=True, handlers={"tools/call": _primed_then_closed})
    async with serve_fake(fake) as url:
        await host.ready(remote_body("resumer", url, call_timeout_s=60, tool_policies={"echo": "allow"}))
        started = anyio.current_time()
        with anyio.fail_after(30):
            called = await host.call("resumer", "echo", {"text": "x"})
        elapsed = anyio.current_time() - started
        resumptions = [get for get in fake.gets if get.headers.get("last-event-id") == "event-1"]
        assert called.status_code == 502, called.text
        error = called.json()["error"]
        assert error["code"] == "MCP_CONNECTION_LOST"
        assert "closed without the result" in error["message"]
        assert error["details"]["resumptions"] == streamable.RESUME_ATTEMPTS
        assert len(resumptions) == streamable.RESUME_ATTEMPTS
        assert elapsed < 20  # far from the 60 s call timeout it used to reach
        gaps = [b.at - a.at for a, b in pairwise(resumptions)]
        assert all(gap >= 0.05 for gap in gaps)  # `retry: 50` is a minimum, the backoff floor wins
        lines = [
            r for r in caplog.records if r.name == "mcp_center.transports.streamable" and r.levelno >= logging.INFO
        ]
        assert len(lines) <= 2
        async with host.agent() as agent:
            with anyio.fail_after(30):
                result = await agent.call_tool("mcp__resumer__echo", {"text": "y"})
        assert result.is_error is True
        assert "closed without the result" in text_of(result)


async def test_a_resumption_that_brings_the_answer_still_completes(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 8, the control: bounded does not mean refused."""
    monkeypatch.setattr(streamable, "RESUME_BACKOFF", Backoff(floor_s=0.05, cap_s=0.2))

    async def resumable(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "resumed"}]}}
        fake.resume_with("event-1", [sse_event(json.dumps(answer), event_id="event-2")])
        return sse_response([sse_event("", event_id="event-1")])

    fake = FakeStreamableServer(handlers={"tools/call": resumable})
    async with serve_fake(fake) as url:
        await host.ready(remote_body("resumes", url))
        called = await host.call("resumes", "echo", {"text": "x"})
    assert called.status_code == 200, called.text
    assert text_of(called.json()) == "resumed"


@pytest.mark.parametrize("body", ["retry: 50\n\n", ": nothing to say\n\n"])
async def test_a_get_stream_that_closes_at_once_is_reopened_with_backoff_not_in_a_spin(
    host: Host, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 9: a GET stream that ends at once (with `retry: 50`, or empty) is reopened after 1 s, 2 s,
    4 s... — a handful of GETs in 4 s, where the SDK made ~80 — with one log line per doubling."""
    caplog.set_level(logging.INFO, logger="mcp_center.transports.streamable")
    fake = FakeStreamableServer(get_body=body)
    async with serve_fake(fake) as url:
        await host.ready(remote_body("closer", url))
        live = fake.posts("tools/list")[-1].session_id  # the test connection had its own session

        def gets() -> list[Any]:
            return [g for g in fake.gets if g.session_id == live]

        with anyio.fail_after(5):
            await fake.wait_until(lambda: len(gets()) >= 1)
        first = gets()[0].at
        with anyio.move_on_after(4.0):
            await fake.wait_until(lambda: len(gets()) > 10)  # never reached when backed off
        window = [g for g in gets() if g.at - first <= 4.0]
        assert 2 <= len(window) <= 4
        gaps = [b.at - a.at for a, b in pairwise(gets())]
        assert all(gap >= 0.8 for gap in gaps)  # the floor (1 s, minus jitter), never `retry: 50`
        reopening = [r for r in caplog.records if r.getMessage() == "http.get_stream_reopening"]
        assert len(reopening) <= 3
        called = await host.call("closer", "echo", {"text": "still fine"})
    assert text_of(called.json()) == "still fine"


async def test_network_errors_name_the_request_with_its_path_and_redact_credential_query_values(
    host: Host,
) -> None:
    """Item 14: `GET http://127.0.0.1:P/sse answered HTTP 404`, with `?api_key=` redacted."""
    fake = FakeSseServer(get_status=404)
    async with serve_loopback(fake.app) as base:
        view = await host.create(remote_body("sse404", f"{base}/sse?api_key=top-secret-value&v=2", transport="sse"))
        tested = await host.test(view["id"])
    assert tested["ok"] is False
    message = tested["error"]["message"]
    assert f"GET {base}/sse?api_key=%5Bredacted%5D&v=2 answered HTTP 404" in message or (
        f"GET {base}/sse?api_key=[redacted]&v=2 answered HTTP 404" in message
    )
    assert "top-secret-value" not in json.dumps(tested)
    assert tested["error"]["reason"] == "http_status"


async def test_a_refused_connection_is_worded_the_same_on_every_transport(host: Host) -> None:
    """Item 14: one wording, the method and the URL with its path, reason `refused`."""
    messages: dict[str, str] = {}
    with closed_port_url() as url:
        base = url.rsplit("/", 1)[0]
        for transport, path in (("streamable_http", "/mcp"), ("sse", "/sse")):
            view = await host.create(
                remote_body(f"refused-{transport.replace('_', '-')}", base + path, transport=transport)
            )
            tested = await host.test(view["id"])
            assert tested["ok"] is False
            assert tested["error"]["reason"] == "refused"
            messages[transport] = tested["error"]["message"]
    assert messages["streamable_http"].startswith(f"POST {base}/mcp: connection refused")
    assert messages["sse"].startswith(f"GET {base}/sse: connection refused")
    assert messages["streamable_http"].split(": ", 1)[1] == messages["sse"].split(": ", 1)[1]


@pytest.mark.parametrize(
    ("challenge", "reason"),
    [(None, "http_status"), ('Bearer error="invalid_token"', "auth_required")],
)
async def test_a_403_is_attributed_by_one_rule_on_sse_and_streamable_http(
    host: Host, challenge: str | None, reason: str
) -> None:
    """Item 14: a plain 403 is `http_status` on both transports; a Bearer challenge makes it `auth_required`."""
    headers = {"WWW-Authenticate": challenge} if challenge else {}
    sse_fake = FakeSseServer(get_status=403, get_headers=headers)

    async def forbidden(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
        del fake, message
        return Response("forbidden", status_code=403, headers=headers)

    http_fake = FakeStreamableServer(handlers={"initialize": forbidden})
    async with serve_loopback(sse_fake.app) as sse_base, serve_fake(http_fake) as http_url:
        sse_view = await host.create(remote_body("forbidden-sse", f"{sse_base}/sse", transport="sse"))
        http_view = await host.create(remote_body("forbidden-http", http_url))
        sse_tested = await host.test(sse_view["id"])
        http_tested = await host.test(http_view["id"])
    assert sse_tested["error"]["reason"] == reason, sse_tested
    assert http_tested["error"]["reason"] == reason, http_tested
    assert sse_tested["error"]["details"]["status"] == http_tested["error"]["details"]["status"] == 403
    views = (await host.admin.get(SERVERS)).json()
    assert views  # the failures changed nothing but the test results


# ----- item 10: protocol versions ----------------------------------------------------------------

OURS = "2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"


@pytest.mark.parametrize(
    ("answered", "shown"), [("1999-01-01", "protocol version '1999-01-01'"), (None, "no protocolVersion")]
)
async def test_an_initialize_answer_with_a_version_we_do_not_speak_names_the_versions(
    host: Host, answered: str | None, shown: str
) -> None:
    """Item 10: the error says what the server answered, what we offered and what we speak."""
    view = await host.create(quirky_body("oldtimer", {"initialize": {"protocolVersion": answered}}))
    tested = await host.test(view["id"])
    assert tested["ok"] is False
    message = tested["error"]["message"]
    assert shown in message
    assert "offered 2025-11-25" in message
    assert OURS in message
    assert tested["error"]["details"]["protocol_version"]["answered"] == answered


def _version_refusing(supported: list[str], *, json_body: bool) -> FakeStreamableServer:
    """A server that answers 400 "Unsupported protocol version" to any other version, as TypeScript SDK
    servers do (a JSON-RPC error with id null) or as a plain text body."""
    fake = FakeStreamableServer()
    text = f"Bad Request: Unsupported protocol version (supported versions: {', '.join(supported)})"

    async def initialize(server: FakeStreamableServer, message: dict[str, Any]) -> Response:
        if message["params"]["protocolVersion"] in supported:
            return await server.accept_initialize(message)
        if json_body:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": text}}
            return Response(json.dumps(body), status_code=400, media_type="application/json")
        return Response(text, status_code=400, media_type="text/plain")

    fake.handlers["initialize"] = initialize
    return fake


@pytest.mark.parametrize("json_body", [True, False])
async def test_a_server_that_lists_versions_we_speak_is_retried_once_with_one_of_them(
    host: Host, json_body: bool
) -> None:
    """Item 10: the 400 is not "connection closed"; the handshake is retried with 2025-06-18."""
    fake = _version_refusing(["2025-06-18", "2025-03-26", "2024-11-05"], json_body=json_body)
    async with serve_fake(fake) as url:
        view = await host.ready(remote_body("versioned", url, tool_policies={"echo": "allow"}))
        assert view["status"]["protocol_version"] == "2025-06-18"
        offers = [p.body["params"]["protocolVersion"] for p in fake.posts("initialize")]
        assert offers[:2] == ["2025-11-25", "2025-06-18"]
        async with host.agent() as agent:
            with anyio.fail_after(15):
                result = await agent.call_tool("mcp__versioned__echo", {"text": "negotiated"})
        assert text_of(result) == "negotiated"


@pytest.mark.parametrize("json_body", [True, False])
async def test_a_server_that_speaks_no_version_of_ours_gets_an_error_naming_both_lists(
    host: Host, json_body: bool
) -> None:
    """Item 10: offered and supported versions are named; nothing is retried in a loop."""
    fake = _version_refusing(["2023-01-01"], json_body=json_body)
    async with serve_fake(fake) as url:
        view = await host.create(remote_body("ancient", url))
        tested = await host.test(view["id"])
        assert len(fake.posts("initialize")) == 1
    assert tested["ok"] is False
    message = tested["error"]["message"]
    assert "refused protocol version 2025-11-25" in message
    assert "it supports 2023-01-01" in message
    assert OURS in message
    assert "closed" not in message
    assert tested["error"]["details"]["protocol_version"]["server_supports"] == ["2023-01-01"]
