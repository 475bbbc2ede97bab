"""The templates (R-1.10): uvx and npx stdio, Streamable HTTP, legacy SSE; their examples are valid servers."""

from __future__ import annotations

import pytest

from mcp_center.config import parse_server_config
from mcp_center.errors import RequestInvalid
from mcp_center.interchange import list_templates, render_template


def test_there_are_exactly_the_four_templates_and_only_sse_is_legacy() -> None:
    templates = list_templates()
    assert [(t["id"], t["transport"], t["legacy"]) for t in templates] == [
        ("stdio-uvx", "stdio", False),
        ("stdio-npx", "stdio", False),
        ("streamable-http", "streamable_http", False),
        ("legacy-sse", "sse", True),
    ]
    assert "old servers only" in templates[3]["title"]


def test_the_stdio_template_runs_an_exact_version_with_uvx_isolated() -> None:
    stdio = list_templates()[0]
    assert stdio["body"]["command"] == "uvx"
    assert stdio["body"]["args"] == ["--isolated", "--from", "<package>==<version>", "<command>"]
    assert stdio["example"]["args"] == ["--isolated", "--from", "mcp-server-time==2026.10.19", "mcp-server-time"]


def test_the_npx_template_pins_an_exact_npm_version() -> None:
    npx = list_templates()[1]
    assert npx["body"]["command"] == "npx"
    assert npx["body"]["args"] == ["-y", "<npm_package>@<version>"]
    assert npx["example"]["args"] == ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]
    body = render_template("stdio-npx", {"name": "Memory", "npm_package": "@scope/server-x", "version": "1.2.3"})
    assert body["args"] == ["-y", "@scope/server-x@1.2.3"]
    with pytest.raises(RequestInvalid) as caught:
        render_template("stdio-npx", {"name": "M", "npm_package": "x && y", "version": "latest@x"})
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("parameters.npm_package", "FIELD_INVALID"),
        ("parameters.version", "FIELD_INVALID"),
    ]


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_every_example_passes_the_r1_rules(index: int) -> None:
    template = list_templates()[index]
    config = parse_server_config({"id": "example", **template["example"]})
    assert config.transport == template["transport"]


def test_render_fills_the_markers_after_checking_each_value() -> None:
    body = render_template(
        "stdio-uvx",
        {"name": "Fetch", "package": "mcp-server-fetch", "version": "2025.4.7", "command": "mcp-server-fetch"},
    )
    assert body == {
        "name": "Fetch",
        "transport": "stdio",
        "command": "uvx",
        "args": ["--isolated", "--from", "mcp-server-fetch==2025.4.7", "mcp-server-fetch"],
        "env": {},
    }


def test_render_refuses_unpinned_or_shell_like_values_and_unknown_parameters() -> None:
    with pytest.raises(RequestInvalid) as caught:
        render_template(
            "stdio-uvx", {"name": "X", "package": "pkg; rm -rf /", "version": ">=1", "command": "x", "extra": "1"}
        )
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("parameters.package", "FIELD_INVALID"),
        ("parameters.version", "FIELD_INVALID"),
        ("parameters.extra", "FIELD_UNKNOWN"),
    ]
    with pytest.raises(RequestInvalid) as unknown:
        render_template("nope", {})
    assert unknown.value.code == "REQUEST_INVALID"


def test_listing_returns_copies_that_callers_cannot_corrupt() -> None:
    first = list_templates()
    first[0]["body"]["args"].append("--evil")
    assert "--evil" not in list_templates()[0]["body"]["args"]
