"""A remote server that goes away is noticed without waiting for the next request (R-3.11)."""

from __future__ import annotations

import anyio
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_center.runtime import connection as manager_module
from mcp_center.service import McpCenter
from tests.servers.http_echo import streamable_app
from tests.support.loopback import serve_loopback
from tests.support.readiness import ready_in_center

pytestmark = pytest.mark.anyio


async def ready_echo(center: McpCenter, base: str) -> None:
    """Add the echo server at `base` as "echo", then confirm, test and enable it and wait until it is ready."""
    await ready_in_center(center, {"name": "Echo", "transport": "streamable_http", "url": f"{base}/mcp"})
    await center.wait_for_state("echo", "ready", timeout_s=10)


async def test_a_remote_server_that_went_away_leaves_ready_by_itself(
    center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "HEALTH_INTERVAL_S", 0.2)
    monkeypatch.setattr(manager_module, "HEALTH_TIMEOUT_S", 2.0)
    async with serve_loopback(streamable_app()) as base:
        await ready_echo(center, base)
        await anyio.sleep(0.5)  # a few pings answered while the server is up
        assert center.status("echo").state.value == "ready"
    status = await center.wait_for_state("echo", "error", timeout_s=15)
    assert status.error is not None
    assert status.error["details"]["reason"] in {"refused", "closed", "network", "timeout"}


async def test_a_streamable_http_server_that_dies_is_seen_when_its_get_stream_ends_not_at_the_next_interval(
    center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-3.11: the interval is an hour here, so only the ended GET stream can wake the ping."""
    monkeypatch.setattr(manager_module, "HEALTH_INTERVAL_S", 3600.0)
    monkeypatch.setattr(manager_module, "HEALTH_TIMEOUT_S", 5.0)
    async with serve_loopback(streamable_app()) as base:
        await ready_echo(center, base)
        assert (await center.call_tool("echo", "add", {"a": 1, "b": 2})).structured_content == {"result": 3}
    status = await center.wait_for_state("echo", "error", timeout_s=30)
    assert status.error is not None
    assert status.error["details"]["reason"] in {"refused", "closed", "network"}


def ending_get_streams(app: ASGIApp, gets: list[float], third: anyio.Event, after_s: float = 0.3) -> ASGIApp:
    """`app`, except that each standalone GET stream is cut after `after_s` seconds (counted in
    `gets`; `third` is set when the third one starts)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await app(scope, receive, send)
            return
        gets.append(anyio.current_time())
        if len(gets) >= 3:
            third.set()
        with anyio.move_on_after(after_s):
            await app(scope, receive, send)

    return wrapped


async def test_a_get_stream_that_keeps_ending_on_a_live_server_costs_pings_not_the_connection(
    center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live server that cuts its GET stream again and again stays ready: each early ping is answered."""
    monkeypatch.setattr(manager_module, "HEALTH_INTERVAL_S", 3600.0)
    monkeypatch.setattr(manager_module, "EARLY_PING_MIN_INTERVAL_S", 0.2)
    gets: list[float] = []
    third = anyio.Event()
    async with serve_loopback(ending_get_streams(streamable_app(), gets, third)) as base:
        await ready_echo(center, base)
        connection_id = center.status("echo").connection_id
        with anyio.fail_after(20):
            await third.wait()  # the stream was cut and reopened twice: early pings were made
        assert center.status("echo").state.value == "ready"
        assert center.status("echo").connection_id == connection_id
        assert (await center.call_tool("echo", "add", {"a": 1, "b": 2})).structured_content == {"result": 3}
