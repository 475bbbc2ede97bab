"""End-to-end fixtures: a real `mcp-center serve` process and real MCP servers from npm and PyPI.

The helpers behind them (starting serve, the npm servers, ports, processes) live in `tests/support/`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_servers import node_server
from tests.support.serve import Host, running_host


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """`mcp-center serve` on a free loopback port with a known admin token."""
    with running_host(tmp_path) as running:
        yield running


@pytest.fixture
def everything_http() -> Iterator[str]:
    """server-everything in Streamable HTTP mode; yields its base URL (endpoint at /mcp)."""
    with node_server("streamableHttp") as url:
        yield url


@pytest.fixture
def everything_sse() -> Iterator[str]:
    """server-everything in legacy SSE mode; yields its base URL (endpoint at /sse)."""
    with node_server("sse") as url:
        yield url
