"""The one-line summary of a stdio server that fails to start quotes the stderr lines that say why
(trial35 MED 4, R-3.1, R-7.3), from outputs recorded from real runs (`tests/servers/recorded_failure.py`).

trial35: a typo'd transport argument quoted the usage listing printed after the error ('[stdout] -
stdio' | '[stdout] - sse') and missed `Unknown transport: stdoi`; a typo'd npm package quoted
"npm error 404 Note that you can also install..." instead of "E404 Not Found".
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mcp_center.service import McpCenter

pytestmark = pytest.mark.anyio

RECORDED = str(Path(__file__).parents[1] / "servers" / "recorded_failure.py")


async def _failure(center: McpCenter, recording: str) -> str:
    view = await center.create_server(
        {"name": recording, "transport": "stdio", "command": sys.executable, "args": [RECORDED, recording]}
    )
    await center.trust(view.id, view.digest)
    with anyio.fail_after(30):
        result = await center.test(view.id)
    assert not result.ok and result.error is not None
    return result.error.message


async def test_a_typod_npm_package_is_summarised_by_its_404(center: McpCenter) -> None:
    message = await _failure(center, "npm-404")
    assert message.startswith("the server process exited with code 1 during initialize; its error output: ")
    _, _, quoted = message.partition("its error output: ")
    assert quoted.split(" | ")[:2] == [
        "'npm error code E404'",
        "'npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-everythin'",
    ]
    assert "Note that you can also install" not in message
    assert "npm notice" not in message


async def test_an_unknown_transport_is_summarised_by_its_stderr_not_the_usage_listing(center: McpCenter) -> None:
    message = await _failure(center, "unknown-transport")
    assert message.endswith("; its error output: 'Unknown transport: stdoi'"), message
