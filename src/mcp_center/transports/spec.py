"""`ConnectionSpec`: everything needed to open one connection, secrets already decrypted.

The service builds a spec from a stored record and its secrets right before connecting; the
runtime and transports never read the store. Secret-bearing fields are excluded from `repr` so a
spec in a traceback or log line shows no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import httpx2

from mcp_center.models import TransportKind
from mcp_center.transports.sandbox import SandboxSpec

__all__ = ["ConnectionSpec"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, eq=False)
class ConnectionSpec:
    """One server's resolved connection parameters.

    Attributes:
        server_id: The server's id.
        transport: Which transport to open.
        digest: The connection-summary digest this spec was built from (R-2.1); a connection
            whose spec digest differs from the current one is stale (R-3.3).
        argv: stdio only: the resolved absolute program path followed by the arguments.
        env: stdio only: configured env with secret values, merged over a safe base by the transport.
        cwd: stdio only: working directory, or None.
        sandbox: stdio only: run the process in this sandbox (R-11.1), or None for unconfined.
        url: remote only: the MCP endpoint URL.
        headers: remote only: configured headers with secret values (and the bearer token).
        auth: remote only: an `httpx2.Auth` that attaches OAuth tokens, or None.
        startup_timeout_s: Seconds allowed for spawn/connect + initialize + first catalog.
        call_timeout_s: Default seconds allowed for one tool call (R-3.8).
        max_result_bytes: Tool results above this many bytes of JSON are truncated (R-3.9).
        stop_grace_s: stdio only: at close, seconds the server gets to exit after its stdin closed,
            and again between SIGTERM and SIGKILL to its group (R-2.6; `MCP_CENTER_STOP_GRACE_S`).
    """

    server_id: str
    transport: TransportKind
    digest: str
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)
    cwd: str | None = None
    sandbox: SandboxSpec | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)
    auth: httpx2.Auth | None = field(default=None, repr=False)
    startup_timeout_s: float = 30.0
    call_timeout_s: float = 60.0
    max_result_bytes: int = 1024 * 1024
    stop_grace_s: float = 2.0
