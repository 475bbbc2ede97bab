"""Open the right transport for a `ConnectionSpec`, with a probe the runtime reads to attribute errors."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx2
from mcp.client import Transport

from mcp_center.errors import CenterError
from mcp_center.models import TransportKind
from mcp_center.secrets import default_redactor, mask_credential_shapes
from mcp_center.transports.clip import LIST_LIMITS, ReadLimits, read_limits
from mcp_center.transports.environment import child_environment
from mcp_center.transports.handshake import HandshakeNotes
from mcp_center.transports.http import HttpDiagnostics, build_http_client
from mcp_center.transports.sandbox import sandbox_environment
from mcp_center.transports.spec import ConnectionSpec
from mcp_center.transports.sse import SseTransport
from mcp_center.transports.stdio import StdioTransport
from mcp_center.transports.streamable import streamable_http_transport
from mcp_center.transports.wording import display_url

__all__ = [
    "MAX_MESSAGE_BYTES",
    "NOISE_KEPT",
    "STDERR_TAIL_LINES",
    "TransportProbe",
    "open_transport",
    "stdio_environment",
]

STDERR_TAIL_LINES = 20
NOISE_KEPT = 64
"""Non-JSON-RPC stdout lines a probe keeps with their time (`TransportProbe.recent_noise`)."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The SDK's own per-event bound, a backstop behind our read caps (`clip.read_limits`, `clip.LIST_LIMITS`),
which keep far less of any one message (issue 14, item 2; R-3.9)."""


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
    output_tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    """The last lines a stdio server printed, stderr and non-protocol stdout (`[stdout] ...`) in
    order, redacted by the transport before they were cut to size."""
    fatal: CenterError | None = None
    """An error that ended the session on our side (a message over the size limit), for attribution."""
    target: str | None = None
    """Where the connection goes, for messages: the URL with its path, credential-looking query values
    redacted, never userinfo (`wording.display_url`)."""
    http_client: httpx2.AsyncClient | None = None
    """A Streamable HTTP connection's client (its auth, pool, response hook and read caps), for the
    runtime's lean forwarding of gateway requests (R-8.3); None for other transports."""
    read_limits: ReadLimits | None = None
    """The read cap of the connection's answers (`clip.read_limits`), for readers outside the
    transport (the lean forwarder's own HTTP/1.1 client); None for stdio."""
    stderr_count: int = 0
    """How many stderr lines the process wrote in all (`stderr_tail` keeps the last ones)."""
    noise_count: int = 0
    """stdout lines of a stdio server that were not JSON-RPC."""
    first_noise: str | None = None
    recent_noise: deque[tuple[float, str]] = field(default_factory=lambda: deque(maxlen=NOISE_KEPT))
    """The last `NOISE_KEPT` such lines (cut to 200 characters) with when they came (`time.monotonic`,
    seconds): a timeout names the lines written while its request waited (`attribution.add_output_hints`)."""
    handshake: HandshakeNotes = field(default_factory=HandshakeNotes)
    """The protocol versions of the `initialize` handshake (offered, answered, refused)."""

    def collect_refusal(self) -> HandshakeNotes:
        """The handshake notes, with the body of an HTTP error answer to `initialize` added."""
        if self.http is not None and self.http.initialize_refusal is not None:
            self.handshake.note_refusal(self.http.initialize_refusal, status=self.http.last_status)
            self.http.initialize_refusal = None
        return self.handshake

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
            redacted before it was cut to size, then masked of credential shapes (R-1.5).
        on_noise: Called per non-protocol stdout line of a stdio server, redacted likewise.
    """

    def stderr_line(line: str) -> None:
        line = mask_credential_shapes(line)  # also what the vault never held (a URL's password, a ghp_ token)
        probe.stderr_count += 1
        probe.stderr_tail.append(line)
        probe.output_tail.append(line)
        if on_stderr is not None:
            on_stderr(line)

    def noise_line(line: str) -> None:
        line = mask_credential_shapes(line)
        probe.noise_count += 1
        probe.output_tail.append(f"[stdout] {line}")
        if probe.first_noise is None:
            probe.first_noise = line[:200]
        probe.recent_noise.append((time.monotonic(), line[:200]))
        if on_noise is not None:
            on_noise(line)

    limits = read_limits(spec.max_result_bytes)
    if spec.transport is TransportKind.STDIO:
        transport = StdioTransport(
            spec.argv,
            env=stdio_environment(spec),
            cwd=spec.cwd,
            sandbox=spec.sandbox,
            on_stderr=stderr_line,
            on_noise=noise_line,
            max_message_bytes=limits.max_message_bytes,
            redactor=default_redactor,
            read_limits=limits,
            list_limits=LIST_LIMITS,
            grace_s=spec.stop_grace_s,
            kill_timeout_s=spec.stop_grace_s,
        )
        probe.stdio = transport
        yield transport
        return
    assert spec.url is not None, "remote specs carry a URL"
    probe.http = HttpDiagnostics()
    probe.target = display_url(spec.url)
    probe.auth = spec.auth
    probe.read_limits = limits
    async with build_http_client(
        spec.headers, probe.http, auth=spec.auth, read_limits=limits, list_limits=LIST_LIMITS
    ) as http_client:
        if spec.transport is TransportKind.STREAMABLE_HTTP:
            probe.http_client = http_client
            yield streamable_http_transport(spec.url, http_client=http_client, max_sse_event_size=MAX_MESSAGE_BYTES)
        else:
            yield SseTransport(
                spec.url,
                http_client=http_client,
                endpoint_timeout_s=spec.startup_timeout_s,
                max_event_bytes=MAX_MESSAGE_BYTES,
            )
