"""Shared fixtures: anyio backend, an isolated data directory, an open `McpCenter`, an API client.

Every fixture is hermetic: the data directory is a fresh temp dir, the admin token and secret key
are generated per test, and the host environment's `MCP_CENTER_*` variables are ignored.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.secrets import install_log_redaction
from mcp_center.service import McpCenter

ADMIN_TOKEN = "test-admin-token-0123456789abcdef"

install_log_redaction()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests (marker `browser`) after every other test, keeping each group's order.

    Playwright's sync API keeps its event loop marked as running for the whole session once the
    first browser test has started it (the `playwright` fixture in tests/web/conftest.py), and an
    anyio test after that cannot start its own loop. `trylast` so this holds after any reordering
    plugin (pytest-randomly) has shuffled the items.
    """
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
