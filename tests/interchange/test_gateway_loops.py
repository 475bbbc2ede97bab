"""An import entry that is mcp-center's own gateway is rejected as a loop (issue 16, R-1.8).

A file exported for Claude Code (`export --gateway`) or a Claude Desktop file with the stdio
bridge, imported back, made a server whose tools were the gateway's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_center.interchange import ImportPlan, plan_document, read_document
from mcp_center.interchange.loops import origin_of

OWN = frozenset({"http://127.0.0.1:8765", "https://mcp.example.org"})
TOKEN = {"Authorization": "Bearer ${MCP_CENTER_GATEWAY_TOKEN}"}
BRIDGE = "/opt/mcp-center/.venv/bin/mcp-center"


def plan(entry: dict[str, Any]) -> ImportPlan:
    return plan_document(read_document({"mcpServers": {"gw": entry}}, "auto"), own_origins=OWN)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "http", "url": "http://127.0.0.1:8765/mcp", "headers": TOKEN}, "url"),
        ({"url": "http://localhost:8765/mcp/time"}, "url"),
        ({"url": "http://[::1]:8765/mcp/"}, "url"),
        # Other spellings of a loopback host, and a URL with userinfo (breaker 31b, F6).
        *(
            ({"url": f"http://{host}:8765/mcp"}, "url")
            for host in (
                "[0:0:0:0:0:0:0:1]",
                "127.0.0.2",
                "127.1",
                "2130706433",
                "0x7f.0.0.1",
                "0.0.0.0",
                "[::ffff:127.0.0.1]",
                "localhost.",
                "user:pw@127.0.0.1",
            )
        ),
        ({"url": "https://MCP.example.org/mcp", "headers": TOKEN}, "url"),
        ({"command": BRIDGE, "args": ["gateway", "--stdio"], "env": {"MCP_CENTER_GATEWAY_TOKEN": "x"}}, "command"),
        ({"command": "mcp-center", "args": ["gateway", "--stdio", "--url", "http://127.0.0.1:8765/mcp"]}, "command"),
        ({"command": "mcp-center.exe", "args": ["gateway", "--stdio", "--url=http://localhost:8765/mcp"]}, "command"),
    ],
)
def test_this_hosts_own_gateway_is_rejected_as_a_loop(entry: dict[str, Any], field: str) -> None:
    planned = plan(entry)
    assert planned.servers == ()
    (rejected,) = planned.rejected
    assert [(e.field, e.code) for e in rejected.errors] == [(field, "GATEWAY_LOOP")]
    assert "its tools would call themselves" in rejected.errors[0].message


@pytest.mark.parametrize(
    "entry",
    [
        {"url": "https://gateway.example.net/mcp", "headers": {"Authorization": "Bearer mcpg_abc"}},
        {"command": "mcp-center", "args": ["gateway", "--stdio", "--url", "http://10.0.0.7:8765/mcp"]},
        {"url": "https://128.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer mcpg_abc"}},
        {"url": "https://mcp.localhost.example.net/mcp", "headers": {"Authorization": "Bearer mcpg_abc"}},
        {"command": "mcp-center", "args": ["gateway", "--stdio", "--data-dir", "/srv/other"]},
    ],
)
def test_a_gateway_elsewhere_is_imported_with_a_warning(entry: dict[str, Any]) -> None:
    (server,) = plan(entry).servers
    assert [w.code for w in server.warnings][:1] == ["GATEWAY_OF_MCP_CENTER"]


@pytest.mark.parametrize(
    "entry",
    [
        {"url": "http://127.0.0.1:9000/mcp"},  # another local server's /mcp, no gateway token
        {"url": "http://127.0.0.1:8765/other/mcp"},
        {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abc123abc123abc123"}},
        {"command": "mcp-center", "args": ["version"]},
    ],
)
def test_other_servers_are_not_taken_for_a_gateway(entry: dict[str, Any]) -> None:
    planned = plan(entry)
    assert planned.rejected == ()
    assert not [w for s in planned.servers for w in s.warnings if "GATEWAY" in w.code]


def test_origins_are_compared_with_the_port_written_and_loopback_as_one_host() -> None:
    assert origin_of("http://LOCALHOST:8765/mcp") == origin_of("http://127.0.0.1:8765") == "http://127.0.0.1:8765"
    assert origin_of("https://mcp.example.org:443/mcp") == "https://mcp.example.org"
    assert origin_of("ftp://x/mcp") is None and origin_of("http://[bad") is None
