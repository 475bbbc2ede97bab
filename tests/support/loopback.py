"""Run an ASGI app on 127.0.0.1 with uvicorn for the duration of a test.

Every network test binds loopback only and stops its server itself (AGENTS guide). The server runs
as a task in the caller's task group; leaving the context asks uvicorn to exit and waits for it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import uvicorn
from starlette.types import ASGIApp


@asynccontextmanager
async def serve_loopback(
    app: ASGIApp, *, port: int = 0, startup_timeout_s: float = 10.0, http: type[asyncio.Protocol] | None = None
) -> AsyncGenerator[str]:
    """Serve `app` on `http://127.0.0.1:<port>` and yield that base URL (no trailing slash).

    Args:
        port: 0 picks a free port; a fixed port serves a "restarted" server where an earlier
            one ran (the socket reuses the address, so a just-stopped server's port is free).
        http: uvicorn's HTTP protocol class (None: its default), e.g. the host's own (`gateway.wire`).
    Raises:
        TimeoutError: uvicorn did not start within `startup_timeout_s` seconds.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1, http=http or "auto")
    server = uvicorn.Server(config)
    stopped = anyio.Event()

    async def run() -> None:
        try:
            await server.serve([sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(startup_timeout_s):
            while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            with anyio.move_on_after(5, shield=True):
                await stopped.wait()
            tg.cancel_scope.cancel()
    sock.close()
