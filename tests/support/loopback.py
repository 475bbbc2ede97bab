"""Run an ASGI app on 127.0.0.1 with uvicorn (or a plain `http.server` handler in a thread) for the
duration of a test.

Every network test binds loopback only and stops its server itself (AGENTS guide). The server runs
as a task in the caller's task group; leaving the context asks uvicorn to exit and waits for it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import uvicorn
from starlette.types import ASGIApp

NO_TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
"""`verify=` for a test's own httpx2 client of a loopback `http://` server. Such a client never
does TLS, yet by default each one loads the CA bundle into a context of its own (~40 ms of CPU; a
third of the gateway and hostile tests' CPU went there, issue 16). This context trusts no
certificate and still requires one, so a TLS connection through it would fail, never go unverified.
The host's own clients are not the tests' to change: they keep their contexts."""


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


@contextmanager
def serve_threaded(handler: type[BaseHTTPRequestHandler]) -> Generator[str]:
    """Serve `handler` (the standard library's `http.server`) on `http://127.0.0.1:<free port>` in a
    thread, for a synchronous test; yields that base URL (no trailing slash) and stops the server on
    exit (the thread is joined for at most 5 s)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
