"""End-to-end fixtures: a real `mcp-center serve` process and real MCP servers from npm and PyPI.

`host` is the worker's shared serve (`shared_serve` in tests/conftest.py: it looks just started at
each turn), or one of the test's own for a test marked `own_serve` (it reads the serve's data
directory, or leaves a card or an approval: closed ones stay as history, so the shared serve would be
replaced after it). Tests that stop, kill or restart serve start theirs with `running_host` or
`spawn_serve`.

The helpers behind them (starting serve, the npm servers, ports, processes) live in `tests/support/`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.mcp_servers import node_server
from tests.support.serve import Host


@pytest.fixture
def host(shared_serve: Host) -> Host:
    """`mcp-center serve` on a loopback port with a known admin token: the worker's shared one, lent
    to this test, or one of its own when the test is marked `own_serve`."""
    return shared_serve


@pytest.fixture(scope="session")
def everything_sse() -> Iterator[str]:
    """server-everything in legacy SSE mode, one per worker (as `everything_http` in tests/conftest.py);
    yields its base URL (endpoint at /sse)."""
    with node_server("sse") as url:
        yield url
