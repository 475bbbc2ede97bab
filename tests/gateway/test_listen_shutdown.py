"""Stopping a real `mcp-center serve` while 2026-07-28 agents hold `subscriptions/listen` streams
(R-8.1, issue 12): the gateway ends every stream itself, with the spec's graceful close (the listen
request's result as the stream's last frame), before uvicorn waits for open responses, so serve
stops without waiting out its graceful-shutdown timeout and without one cancelled-task traceback
per stream.

The agents are the SDK's own `Client` (its default 2026-07-28 mode) and its `listen()`: a graceful
close ends the subscription's iteration, a dropped stream raises `SubscriptionLost`.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription, SubscriptionLost

from tests.support.loopback import NO_TLS
from tests.support.serve import Host, running_host

pytestmark = pytest.mark.anyio

LISTENERS = 6
"""Streams open when serve is told to stop (the breaker's 15 showed one traceback each)."""


@asynccontextmanager
async def listening(host: Host, token: str, path: str) -> AsyncGenerator[Subscription]:
    """A 2026-07-28 agent of `host` at `path` with its tools-changed listen stream open (acknowledged)."""
    async with (
        httpx2.AsyncClient(verify=NO_TLS, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{host.url}{path}", http_client=http), cache=None) as client,
        client.listen(tools_list_changed=True) as sub,
    ):
        assert client.protocol_version == "2026-07-28"
        assert sub.honored.tools_list_changed is True
        yield sub


async def test_stopping_serve_ends_every_listen_stream_gracefully_first(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        created = host.client.post("/api/gateway/tokens", json={"name": "listeners"})
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        ended: list[int] = []
        lost: list[int] = []
        async with AsyncExitStack() as stack:
            subs = [await stack.enter_async_context(listening(host, token, "/mcp")) for _ in range(LISTENERS)]

            async def drain(index: int, sub: Subscription) -> None:
                try:
                    async for _event in sub:
                        pass
                except SubscriptionLost:  # the stream was dropped, not closed
                    lost.append(index)
                else:
                    ended.append(index)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for index, sub in enumerate(subs):
                        tg.start_soon(drain, index, sub)
                    host.proc.send_signal(signal.SIGTERM)
            # Every stream closed gracefully while serve stops; now serve itself exits.
            await anyio.to_thread.run_sync(lambda: host.proc.wait(60))
    assert (sorted(ended), lost) == (list(range(LISTENERS)), [])
    log = host.log()
    assert "Traceback" not in log, log[-4000:]
    assert "graceful shutdown exceeded" not in log, log[-4000:]
    # uvicorn had no open response to wait for: the streams had ended before it looked.
    assert "Waiting for connections to close" not in log, log[-4000:]
