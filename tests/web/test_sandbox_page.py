"""The sandbox on the settings page, in a real browser (R-11.1): the editor turns it on, the summary
confirmation shows the whole policy and how this host runs it, and the logs drawer marks what the
sandbox refused in the request log and in stderr.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import add_from_template, confirm_test_enable, open_server, save_new, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.sandbox import escape_command, require_sandbox
from tests.support.serve import Host

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


def test_the_editor_sandboxes_a_server_and_the_summary_shows_the_policy(page: Page, host: Host, tmp_path: Path) -> None:
    argv, paths = escape_command()
    shared = tmp_path / "shared"
    shared.mkdir()
    sign_in(page)
    add_from_template(page, "Local program (uvx)", "Escape")
    page.get_by_label("Command").fill(argv[0])
    page.get_by_label("Arguments").fill("\n".join(argv[1:]))
    page.get_by_label(re.compile("^Run in a sandbox")).check()
    page.get_by_label("Network").select_option("egress")
    page.get_by_label("Processes at most").fill("64")
    lines = [p.path for p in paths] + [f"rw {shared}"]
    page.get_by_label("Host paths it may see (optional)").fill("\n".join(lines))
    save_new(page)

    view = host.client.get("/api/mcp/servers/escape").json()
    assert view["sandbox"]["network"] == "egress" and view["sandbox"]["max_processes"] == 64
    assert {"path": str(shared), "writable": True} in view["sandbox"]["paths"]
    policy = page.get_by_test_id("sandbox-policy").first
    expect(policy).to_contain_text("egress — the host's network")
    expect(policy).to_contain_text("64 processes")
    expect(policy).to_contain_text(str(shared))
    expect(policy).to_contain_text("writable")
    expect(policy).to_contain_text(re.compile(r"runs as uid \d+"))
    confirm_test_enable(page)
    expect(page.locator(".subtitle")).to_contain_text("sandboxed, network egress")


def test_an_unconfined_stdio_server_says_so_on_its_summary(page: Page, host: Host) -> None:
    argv, _ = escape_command()
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Plain", "transport": "stdio", "command": argv[0], "args": argv[1:]}
    )
    assert created.status_code == 201, created.text
    sign_in(page)
    open_server(page, "Plain")
    expect(page.get_by_test_id("sandbox-off").first).to_contain_text("off — runs unconfined")


def test_the_logs_drawer_marks_what_the_sandbox_refused(page: Page, host: Host) -> None:
    argv, paths = escape_command()
    body = {
        "name": "Escape",
        "transport": "stdio",
        "command": argv[0],
        "args": argv[1:],
        "sandbox": {"paths": [p.model_dump() for p in paths]},
    }
    add_ready_on_host(host, body)
    refused = host.client.post(
        "/api/mcp/servers/escape/tools/write_file/call", json={"arguments": {"path": "/usr/escape"}}
    ).json()
    assert refused["isError"] is True
    said = host.client.post(
        "/api/mcp/servers/escape/tools/say/call",
        json={"arguments": {"text": "OSError: [Errno 101] Network is unreachable"}},
    )
    assert said.status_code == 200, said.text
    sign_in(page)
    open_server(page, "Escape")
    page.get_by_role("button", name="Logs").click()
    drawer = page.get_by_role("dialog", name="Logs · Escape")
    call = drawer.locator('tr[data-method="tools/call"]').last  # newest first: the first call is last
    expect(call.locator(".violation-badge")).to_have_text("sandbox: filesystem (EROFS)")
    stderr = drawer.get_by_role("list", name="stderr of Escape, oldest first")
    expect(stderr.locator("li.violation .violation-badge")).to_have_text("sandbox: network (ENETUNREACH)")
    drawer.get_by_label("Filter").fill("sandbox violation")
    expect(drawer.locator("table.logs tbody tr")).to_have_count(1)
