"""What the store keeps per server (configuration, trust, test and enable state) and per gateway token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp_center.config import ServerConfig

__all__ = ["GatewayTokenRecord", "QuarantinedTool", "ServerRecord", "TestError", "TestResult"]


class TestError(BaseModel):
    """Why a test failed: stable `code`, attributed `reason` (R-3.1), human `message` (never a secret)."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest class

    code: str
    reason: str | None = None
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class QuarantinedTool(BaseModel):
    """A tool the server listed whose definition failed validation (R-3.6): not offered to agents, and a
    call to it is refused with MCP_TOOL_QUARANTINED. `name` is None for a tool without a usable name."""

    model_config = ConfigDict(frozen=True)

    name: str | None
    reason: str
    """What is wrong, e.g. `inputSchema: Field required` (at most 300 characters)."""


class TestResult(BaseModel):
    """The outcome of `POST .../test` (R-2.2): a temporary initialize + tools/list + close."""

    model_config = ConfigDict(frozen=True)
    __test__ = False  # not a pytest class

    ok: bool
    digest: str
    """The connection-summary digest the test ran with; enable needs it to equal the current one."""
    tested_at: datetime
    elapsed_ms: int
    tool_count: int | None = None
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    quarantined: tuple[QuarantinedTool, ...] = ()
    """Tools listed but quarantined (not counted in `tool_count`), with why (R-3.6)."""
    error: TestError | None = None


class ServerRecord(BaseModel):
    """One registered server as stored in servers.json (R-1.1, R-1.2)."""

    model_config = ConfigDict(frozen=True)

    config: ServerConfig
    version: int = Field(ge=1)
    """Bumped on every configuration change; updates must carry the version they read (R-1.3)."""
    created_at: datetime
    updated_at: datetime
    enabled: bool = False
    trusted_digest: str | None = None
    """The connection-summary digest the user confirmed (R-2.1)."""
    last_test: TestResult | None = None
    known_tools: tuple[str, ...] | None = None
    """The tool names the server listed at its last successful test, None before one (issue 16).
    Kept through a change of the tool policies or switches only (the same server), cleared by any
    other change of the configuration; a policy or switch naming another tool is refused
    (`service.tool_names`)."""
    warmed_up_at: datetime | None = None
    """When a sandbox warm-up of this server last succeeded, on any instance or CLI run (R-11.1):
    every instance warms its own home of the server once it sees a later one (`service.warm_ups`,
    R-10.2). Not part of the configuration (the version stays)."""

    @property
    def id(self) -> str:
        """The server id (same as `config.id`)."""
        return self.config.id


class GatewayTokenRecord(BaseModel):
    """A gateway token as stored in `gateway-tokens.json` (R-7.1): never the token itself, only its SHA-256."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    """12 hex digits."""
    name: str
    sha256: str
    created_at: str
    """ISO 8601, aware UTC."""
    revoked_at: str | None = None
    """ISO 8601, aware UTC, once revoked: the record stays (without its hash: `sha256` becomes
    `revoked-<id>`, which no token hashes to, also for a reader that ignores this field) so that
    revoking it again says "already revoked" rather than "not found" (issue 16)."""

    def view(self) -> dict[str, Any]:
        """JSON shape for the API (no hash, no token)."""
        return {"id": self.id, "name": self.name, "created_at": self.created_at}
