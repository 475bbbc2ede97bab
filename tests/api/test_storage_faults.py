"""A full disk or a disk error through the REST API (R-9.1, R-7.3): `500 STORAGE_ERROR` naming the file,
the failure in the log with the file, and nothing of the change applied — then the same request works."""

from __future__ import annotations

import errno
import logging
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from mcp_center.store import JsonStore
from mcp_center.store.journal import JOURNAL_FILE
from tests.support.api import ADMIN_TOKEN, api_client, assert_error, stdio_body
from tests.support.faulty_disk import FaultyDisk

pytestmark = pytest.mark.anyio

SERVER = "/api/mcp/servers/files"


@pytest.fixture
async def faulty(settings: Settings) -> AsyncGenerator[tuple[httpx2.AsyncClient, FaultyDisk]]:
    disk = FaultyDisk()
    store = JsonStore(settings.mcp_dir, disk=disk)
    async with McpCenter.open(settings, store=store) as center:
        app = create_api(settings, ADMIN_TOKEN)
        app.state.center = center
        async with api_client(app) as client:
            yield client, disk


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")}


@pytest.mark.parametrize("fault", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize(
    ("call", "file"),
    [(2, "servers.json"), (5, "secrets.json"), (8, JOURNAL_FILE)],  # the write of each temp, then of the journal
    ids=["servers-temp", "secrets-temp", "journal"],
)
async def test_a_secret_and_its_config_fail_together_with_500_storage_error_naming_the_file(
    faulty: tuple[httpx2.AsyncClient, FaultyDisk],
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    fault: int,
    call: int,
    file: str,
) -> None:
    api, disk = faulty
    body = stdio_body("files", "npx", secret_env=["TOKEN"], secret_values={"env": {"TOKEN": "first-value"}})
    assert (await api.post("/api/mcp/servers", json=body)).status_code == 201
    before = (await api.get(SERVER)).json()
    on_disk = _files(settings.mcp_dir)
    caplog.set_level(logging.ERROR)
    disk.arm(call, fault)
    failed = await api.put(f"{SERVER}/secrets/TOKEN?kind=environment", json={"value": "second-value"})
    error = assert_error(failed, 500, "STORAGE_ERROR")
    named = Path(error["details"]["file"])
    assert named == settings.mcp_dir / file
    assert disk.failed is not None
    assert disk.failed.kind == "write"
    assert error["details"]["errno"] == fault
    assert "second-value" not in failed.text
    logged: list[Any] = [r for r in caplog.records if r.msg == "api.request_failed"]
    assert [getattr(r, "file", None) for r in logged] == [str(named)]
    assert any(r.msg == "store.io_failed" and getattr(r, "file", None) == str(named) for r in caplog.records)
    after = (await api.get(SERVER)).json()
    assert (after["version"], after["digest"]) == (before["version"], before["digest"])
    assert after["summary"]["secret_env"] == before["summary"]["secret_env"]  # the old secret's fingerprint
    assert _files(settings.mcp_dir) == on_disk
    disk.arm(None, 0)
    retried = await api.put(f"{SERVER}/secrets/TOKEN?kind=environment", json={"value": "second-value"})
    assert retried.status_code == 200, retried.text
    assert retried.json()["version"] == before["version"] + 1
    assert retried.json()["digest"] != before["digest"]
