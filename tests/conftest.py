"""Shared fixtures: anyio backend, an isolated data directory, an open `McpCenter`, an API client.

Every fixture is hermetic: the data directory is a fresh temp dir, the admin token and secret key
are generated per test, and the host environment's `MCP_CENTER_*` variables are ignored.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from pathlib import Path

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.secrets import install_log_redaction
from mcp_center.service import McpCenter
from tests.support.api import ADMIN_TOKEN
from tests.support.mcp_servers import running_echo_http

install_log_redaction()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def caps_url() -> Iterator[str]:
    """The capability server (`tests/servers/capabilities.py`: prompts, resources, `record`, `ask`...)
    over Streamable HTTP on loopback; yields its /mcp URL and stops it afterwards."""
    with running_echo_http("tests.servers.run_capabilities") as url:
        yield url


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings.load(data_dir=data_dir, environ={})


@pytest.fixture
async def center(settings: Settings) -> AsyncGenerator[McpCenter]:
    async with McpCenter.open(settings) as opened:
        yield opened


@pytest.fixture
async def api(center: McpCenter, settings: Settings) -> AsyncGenerator[httpx2.AsyncClient]:
    """An API client (admin token set) for the app in process, backed by `center`."""
    app = create_api(settings, ADMIN_TOKEN)
    app.state.center = center
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8765", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as client:
        yield client
