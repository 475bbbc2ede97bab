"""A password or token inside a `--url` is never echoed by the CLI (break36, R-1.5).

`mcp-center approvals --url http://admin:S3CRETPW@127.0.0.1:PORT list` printed "no admin token for
the host at http://admin:S3CRETPW@..."; every message (and suggested command) that names the URL
shows it without userinfo and with credential query values redacted.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mcp_center.config import Settings
from tests.support.cli import run_cli
from tests.support.ports import closed_port_url

PASSWORD = "S3CRETPW"
TOKEN = "T0KENV4LUE"

COMMANDS = [
    ("approvals", "list"),
    ("approvals", "approve", "abc123"),
    ("approvals", "deny", "abc123"),
    ("logs", "srv"),
    ("list",),
    ("auth", "srv", "--no-wait"),
    ("gateway", "--stdio"),
]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
"""What an MCP client sends first: the stdio bridge connects to the gateway only once asked."""


@pytest.fixture
def secret_url() -> Generator[str]:
    """A loopback host URL nothing answers on, with a password and a `?token=` in it."""
    with closed_port_url() as url:
        port = urlsplit(url).port
        yield f"http://admin:{PASSWORD}@127.0.0.1:{port}/?token={TOKEN}"


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("admin_token", [None, "an-admin-token"], ids=["no-admin-token", "unreachable"])
def test_no_message_of_a_url_command_holds_the_urls_secrets(
    tmp_path: Path, secret_url: str, words: tuple[str, ...], admin_token: str | None
) -> None:
    data = tmp_path / "data"
    added = run_cli(data, "add", "srv", "--", "echo", "hi")  # `list` asks the host only about servers
    assert added.returncode == 0, added.stderr
    env = {"MCP_CENTER_GATEWAY_TOKEN": "mcg_gateway-token"}
    if admin_token is not None:
        env["MCP_CENTER_ADMIN_TOKEN"] = admin_token
    line = json.dumps(INITIALIZE) + "\n"
    result = run_cli(data, *words, "--url", secret_url, env=env, input=line, columns=400)
    output = result.stdout + result.stderr
    assert "127.0.0.1" in output, output  # nothing answers there: the output names the host...
    assert PASSWORD not in output, output  # ...without its password
    assert TOKEN not in output, output  # ...or its token


def test_the_gateway_refusing_a_url_that_is_not_http_does_not_echo_its_secrets(secret_url: str) -> None:
    """`gateway --stdio --url ftp://...` quotes the URL it refuses: without the password or token."""
    not_http = secret_url.replace("http://", "ftp://")
    result = run_cli(None, "gateway", "--stdio", "--url", not_http, env={"MCP_CENTER_GATEWAY_TOKEN": "mcg_x"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        "error [OPTION_VALUE_INVALID]: option '--url' (or MCP_CENTER_URL) must be an http:// or https:// URL"
    )
    assert "ftp://127.0.0.1:" in result.stderr
    assert PASSWORD not in result.stderr
    assert TOKEN not in result.stderr


@pytest.mark.parametrize(
    "words", [("approvals", "list"), ("approvals", "approve", "abcd"), ("logs", "srv"), ("auth", "srv"), ("list",)]
)
def test_a_url_that_names_no_host_is_an_option_value_error_naming_the_option(
    tmp_path: Path, words: tuple[str, ...]
) -> None:
    """fix37: `--url notaurl` answered ADMIN_AUTH_REQUIRED (exit 6), as if the host had refused the token."""
    for given, shown in (("notaurl", "notaurl"), (f"ftp://u:{PASSWORD}@127.0.0.1/?token={TOKEN}", "ftp://127.0.0.1/")):
        result = run_cli(tmp_path / "data", *words, "--url", given)
        assert result.returncode == 2, result.stderr
        option = "'--url'" if words == ("list",) else "'--url' (or MCP_CENTER_URL)"  # list's reads no env var
        assert result.stderr.startswith(
            f"error [OPTION_VALUE_INVALID]: option {option} must be an http:// or https:// URL "
            f"with a host, e.g. http://127.0.0.1:8765 (got '{shown}"
        ), result.stderr
        assert PASSWORD not in result.stderr and TOKEN not in result.stderr


@pytest.mark.parametrize(
    ("given", "bridged"),
    [
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765/mcp"),
        ("http://127.0.0.1:8765/", "http://127.0.0.1:8765/mcp"),
        ("http://127.0.0.1:8765/?token=x", "http://127.0.0.1:8765/mcp?token=x"),
        ("http://127.0.0.1:8765?token=x&a=b", "http://127.0.0.1:8765/mcp?token=x&a=b"),
        ("https://h.example/?t=1#frag", "https://h.example/mcp?t=1#frag"),
        ("http://127.0.0.1:8765/mcp/srv-1?token=x", "http://127.0.0.1:8765/mcp/srv-1?token=x"),
    ],
)
def test_the_bridge_adds_mcp_to_a_host_urls_path_and_keeps_its_query(tmp_path: Path, given: str, bridged: str) -> None:
    """`gateway --stdio --url http://h/?token=x` went to `http://h/?token=x/mcp`: `/mcp` joined the
    query instead of the path (sec37, R-8.1)."""
    from mcp_center.cli.gateway import bridge_url

    assert bridge_url(Settings.load(data_dir=tmp_path, environ={}), given) == bridged
