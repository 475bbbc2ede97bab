"""Open the right transport for a `ConnectionSpec`, with a probe the runtime reads to attribute errors."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client

from mcp_center.errors import CenterError
from mcp_center.models import TransportKind
from mcp_center.secrets import default_redactor
from mcp_center.transports.http import HttpDiagnostics, build_http_client
from mcp_center.transports.sandbox import sandbox_environment
from mcp_center.transports.spec import ConnectionSpec
from mcp_center.transports.sse import SseTransport
from mcp_center.transports.stdio import StdioTransport, child_environment

__all__ = ["MAX_MESSAGE_BYTES", "STDERR_TAIL_LINES", "TransportProbe", "open_transport", "stdio_environment"]

STDERR_TAIL_LINES = 20
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Largest single message accepted from a server, in bytes, on every transport (bounded memory, R-3.9)."""


@dataclass
class TransportProbe:
    """Facts about one transport instance that SDK errors do not carry (R-3.1 attribution).

    Attributes:
        stdio: The stdio transport (pid, returncode), or None for remote servers.
        http: Response diagnostics (status, challenge, session expiry), or None for stdio.
        auth: The connection's `httpx2.Auth` (an OAuth auth records why it failed), or None.
        stderr_tail: The last `STDERR_TAIL_LINES` stderr lines of a stdio server, redacted by the
            transport before they were cut to size (redact again before showing: a secret may
            have been registered since).
    """

    stdio: StdioTransport | None = None
    http: HttpDiagnostics | None = None
    auth: httpx2.Auth | None = None
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    fatal: CenterError | None = None
    """An error that ended the session on our side (a message over the size limit), for attribution."""
    target: str | None = None
    """Where the connection goes, for messages: the URL's origin (never its path, query or credentials)."""
    http_client: httpx2.AsyncClient | None = None
    """A Streamable HTTP connection's client (its auth, pool and response hook), for the runtime's
    lean forwarding of gateway requests (R-8.3); None for other transports."""
    noise_count: int = 0
    """stdout lines of a stdio server that were not JSON-RPC."""
    first_noise: str | None = None

    @property
    def returncode(self) -> int | None:
        """Exit code of the stdio process once it exited, else None."""
        return self.stdio.returncode if self.stdio is not None else None


def stdio_environment(spec: ConnectionSpec) -> dict[str, str]:
    """The complete environment of a stdio server: `child_environment` for an unconfined one,
    `sandbox_environment` over it for a sandboxed one (R-2.6, R-11.1)."""
    env = child_environment(spec.env)
    if spec.sandbox is not None:
        env = sandbox_environment(env, spec.env, spec.sandbox.policy)
    return env


@asynccontextmanager
async def open_transport(
    spec: ConnectionSpec,
    probe: TransportProbe,
    *,
    on_stderr: Callable[[str], None] | None = None,
    on_noise: Callable[[str], None] | None = None,
) -> AsyncGenerator[Transport]:
    """Yield an un-entered `mcp.client.Transport` for `spec`; release its HTTP client on exit.

    Args:
        spec: The resolved connection parameters.
        probe: Filled with the transport's diagnostics for error attribution.
        on_stderr: Called per stderr line of a stdio server (after the probe's tail is updated),
            redacted before it was cut to size (R-1.5).
        on_noise: Called per non-protocol stdout line of a stdio server, redacted likewise.
    """

    def stderr_line(line: str) -> None:
        probe.stderr_tail.append(line)
        if on_stderr is not None:
            on_stderr(line)

    def noise_line(line: str) -> None:
        probe.noise_count += 1
        if probe.first_noise is None:
            probe.first_noise = line[:200]
        if on_noise is not None:
            on_noise(line)

    if spec.transport is TransportKind.STDIO:
        transport = StdioTransport(
            spec.argv,
            env=stdio_environment(spec),
            cwd=spec.cwd,
            sandbox=spec.sandbox,
            on_stderr=stderr_line,
            on_noise=noise_line,
            max_message_bytes=MAX_MESSAGE_BYTES,
            redactor=default_redactor,
        )
        probe.stdio = transport
        yield transport
        return
    assert spec.url is not None, "remote specs carry a URL"
    probe.http = HttpDiagnostics()
    probe.target = _origin(spec.url)
    probe.auth = spec.auth
    async with build_http_client(
        spec.headers, probe.http, auth=spec.auth, max_response_bytes=MAX_MESSAGE_BYTES
    ) as http_client:
        if spec.transport is TransportKind.STREAMABLE_HTTP:
            probe.http_client = http_client
            yield streamable_http_client(spec.url, http_client=http_client, max_sse_event_size=MAX_MESSAGE_BYTES)
        else:
            yield SseTransport(
                spec.url,
                http_client=http_client,
                endpoint_timeout_s=spec.startup_timeout_s,
                max_event_bytes=MAX_MESSAGE_BYTES,
            )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"
