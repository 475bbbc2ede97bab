"""The trust → test → enable rule in its one home (R-2.1 to R-2.5), and summaries computed once per change."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from mcp_center.config import ServerConfig, parse_server_config
from mcp_center.config.settings import Profile
from mcp_center.errors import SandboxRequired, ServerDisabled, ServerNotTested, ServerNotTrusted
from mcp_center.secrets import SecretCipher
from mcp_center.service import McpCenter, summary
from mcp_center.service.readiness import Readiness
from mcp_center.store import ServerRecord, TestResult

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def _record(
    *, transport: str = "stdio", trusted: str | None, tested: str | None, ok: bool = True, enabled: bool
) -> ServerRecord:
    data: dict[str, Any] = {"id": "s", "name": "S", "transport": transport}
    data.update({"command": "srv"} if transport == "stdio" else {"url": "https://example.com/mcp"})
    config: ServerConfig = parse_server_config(data)
    test = None if tested is None else TestResult(ok=ok, digest=tested, tested_at=NOW, elapsed_ms=1)
    return ServerRecord(
        config=config,
        version=1,
        created_at=NOW,
        updated_at=NOW,
        enabled=enabled,
        trusted_digest=trusted,
        last_test=test,
    )


@pytest.mark.parametrize(
    ("trusted", "tested", "ok", "enabled", "needs"),
    [
        (None, None, True, False, ["trust", "test", "enable"]),
        (DIGEST, None, True, False, ["test", "enable"]),
        (DIGEST, DIGEST, False, False, ["test", "enable"]),
        (DIGEST, OTHER, True, True, ["test"]),
        (OTHER, DIGEST, True, True, ["trust"]),
        (DIGEST, DIGEST, True, False, ["enable"]),
        (DIGEST, DIGEST, True, True, []),
    ],
)
def test_needs_lists_the_missing_steps_for_the_current_digest(
    trusted: str | None, tested: str | None, ok: bool, enabled: bool, needs: list[str]
) -> None:
    readiness = Readiness(_record(trusted=trusted, tested=tested, ok=ok, enabled=enabled), DIGEST, Profile.LOCAL)
    assert readiness.needs == needs
    assert readiness.runnable is (needs == [])


def test_production_needs_a_sandbox_for_stdio_but_not_for_remote_servers() -> None:
    stdio = Readiness(_record(trusted=DIGEST, tested=DIGEST, enabled=True), DIGEST, Profile.PRODUCTION)
    assert stdio.needs == ["sandbox"]
    with pytest.raises(SandboxRequired):
        stdio.require_trusted("testing")
    remote = _record(transport="streamable_http", trusted=DIGEST, tested=DIGEST, enabled=True)
    Readiness(remote, DIGEST, Profile.PRODUCTION).require_runnable()


def test_each_requirement_raises_the_error_of_the_first_missing_step() -> None:
    with pytest.raises(ServerNotTrusted) as untrusted:
        Readiness(_record(trusted=OTHER, tested=None, enabled=False), DIGEST, Profile.LOCAL).require_tested("enabling")
    assert untrusted.value.details["current_digest"] == DIGEST
    assert "POST" not in untrusted.value.message  # neutral: library users read it too
    with pytest.raises(ServerNotTested):
        Readiness(_record(trusted=DIGEST, tested=OTHER, enabled=False), DIGEST, Profile.LOCAL).require_tested(
            "enabling"
        )
    with pytest.raises(ServerDisabled):
        Readiness(_record(trusted=DIGEST, tested=DIGEST, enabled=False), DIGEST, Profile.LOCAL).require_runnable()
    with pytest.raises(ServerNotTested) as untested:
        Readiness(_record(trusted=DIGEST, tested=None, enabled=True), DIGEST, Profile.LOCAL).require_runnable()
    assert untested.value.details["needs"] == ["test"]


async def test_an_update_computes_the_old_and_the_new_summary_once_each(
    center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16: update_server used to rebuild the summary four or five times, opening every secret each time."""
    created = (
        await center.create_server(
            {
                "name": "Counted",
                "transport": "stdio",
                "command": sys.executable,
                "secret_values": {"env": {"API_TOKEN": "counted-secret-value-1"}},
            }
        )
    ).to_dict()
    real = summary.connection_summary
    built: list[str] = []

    def counting(config: ServerConfig, ciphertexts: Mapping[str, str], cipher: SecretCipher) -> dict[str, Any]:
        built.append(config.name)
        return real(config, ciphertexts, cipher)

    monkeypatch.setattr(summary, "connection_summary", counting)
    updated = (
        await center.update_server("counted", {"version": created["version"], "name": "Renamed"}, partial=True)
    ).to_dict()
    assert updated["name"] == "Renamed"
    assert built == ["Counted", "Renamed"]  # old digest, new digest; reconcile and the view reuse the new one
    built.clear()
    trusted = (await center.trust("counted", updated["digest"])).to_dict()
    assert trusted["trusted"] and built == ["Renamed"]
