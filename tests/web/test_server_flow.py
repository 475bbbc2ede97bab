"""The main job in a real browser (issue 7): add a server from a template, review its summary and
the host's warnings, confirm, test (a failure shows its telling stderr line), enable, call a tool
from the playground, switch a tool off (a high-risk change that asks again), and delete it —
against a real `mcp-center serve` and real MCP servers on loopback.
"""

from __future__ import annotations

import re
import sys

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import (
    add_echo_server,
    add_from_template,
    call_in_playground,
    confirm_test_enable,
    go_to,
    open_server,
    save_new,
    sign_in,
)
from tests.support.mcp_servers import EVERYTHING
from tests.support.serve import Host

pytestmark = pytest.mark.browser


def test_a_remote_server_from_the_template_is_confirmed_tested_enabled_and_called(
    page: Page, host: Host, echo_url: str
) -> None:
    sign_in(page)
    add_echo_server(page, echo_url)
    summary = page.locator("dl.summary")
    expect(summary).to_contain_text(echo_url)
    digest = host.client.get("/api/mcp/servers/echo").json()["digest"]
    expect(page.get_by_test_id("digest")).to_have_text(digest)
    expect(page.get_by_role("button", name="Run test")).to_be_disabled()

    confirm_test_enable(page)
    assert host.client.get("/api/mcp/servers/echo").json()["needs"] == []

    open_server(page, "Echo")
    go_to(page, "Servers")
    row = page.locator('tr[data-server="echo"]')
    expect(row.get_by_role("switch", name="Enabled: Echo")).to_have_attribute("aria-checked", "true")
    expect(row).to_contain_text("ready")
    expect(row).to_contain_text("Streamable HTTP")
    expect(row.locator('td[data-label="Tools"]')).to_have_text("4")
    expect(row).to_contain_text("OK · 4 tools")

    open_server(page, "Echo", "Tools")
    add = page.locator('li.tool[data-tool="add"]')
    add.get_by_text("Input schema").click()
    expect(add.locator("pre").first).to_contain_text('"integer"')
    call_in_playground(page, "add", {"a": "2", "b": "40"})
    expect(add.locator(".result")).to_contain_text("42")
    expect(add.get_by_role("button", name="Cancel call")).to_be_hidden()
    call_in_playground(page, "echo", {"text": "hello from the browser"})
    expect(page.locator('li.tool[data-tool="echo"] .result')).to_contain_text("hello from the browser")


def test_save_and_review_gives_the_new_server_its_own_address_in_place_of_the_add_form(
    page: Page, host: Host, echo_url: str
) -> None:
    """page40: after "Save and review" the address is the server's own (`#/servers/<id>`), taking the
    place of `#/new` in the history: a reload shows the server, and Back goes to the page before the
    add form (before: Back showed an empty add form for a server that already existed)."""
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Addressed")
    page.get_by_label("URL").fill(echo_url)
    entries = page.evaluate("history.length")
    save_new(page)
    expect(page.get_by_role("heading", name="Addressed", exact=True)).to_be_visible()
    assert page.url == f"{host.url}/#/servers/addressed"
    assert page.evaluate("history.length") == entries  # the server's address took the place of #/new

    page.reload()
    expect(page.get_by_role("heading", name="Addressed", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Confirm this summary")).to_be_visible()

    page.go_back()
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Add a server")).to_have_count(0)
    assert page.url in (f"{host.url}/", f"{host.url}/#/")
    page.go_forward()
    expect(page.get_by_role("heading", name="Addressed", exact=True)).to_be_visible()


def test_a_stdio_server_from_the_uvx_template_can_be_edited_into_server_everything_and_called(
    page: Page, host: Host
) -> None:
    sign_in(page)
    add_from_template(page, "Local program (uvx)", "Everything")
    expect(page.get_by_label("Command")).to_have_value("uvx")
    expect(page.get_by_label("Arguments")).to_have_value(re.compile(r"--isolated\n--from\n\S+==\S+\n"))
    page.get_by_label("Command").fill("node")
    page.get_by_label("Arguments").fill(f"{EVERYTHING}\nstdio")
    save_new(page)
    expect(page.locator("dl.summary")).to_contain_text(str(EVERYTHING))
    expect(page.locator("dl.summary")).to_contain_text("/node")
    confirm_test_enable(page)

    open_server(page, "Everything", "Tools")
    call_in_playground(page, "get-sum", {"a": "2", "b": "3"})
    expect(page.locator('li.tool[data-tool="get-sum"] .result')).to_contain_text("The sum of 2 and 3 is 5.")


def test_switching_a_tool_off_asks_first_then_needs_a_new_confirmation_test_and_enable(
    page: Page, host: Host, echo_url: str
) -> None:
    sign_in(page)
    add_echo_server(page, echo_url)
    confirm_test_enable(page)
    open_server(page, "Echo", "Tools")
    switch = page.get_by_role("switch", name="Enabled for agents: echo")
    expect(switch).to_have_attribute("aria-checked", "true")

    switch.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("the server is disabled until you confirm the new summary")
    dialog.get_by_role("button", name="Cancel").click()
    assert host.client.get("/api/mcp/servers/echo").json()["disabled_tools"] == []

    switch.click()
    page.get_by_role("dialog").get_by_role("button", name="Disable tool").click()
    expect(page.get_by_text("Tool permissions changed: confirm the new summary")).to_be_visible()
    expect(page.locator("dl.summary")).to_contain_text("Disabled tools")
    expect(page.locator("dl.summary dd code", has_text="echo")).to_be_visible()
    view = host.client.get("/api/mcp/servers/echo").json()
    assert (view["disabled_tools"], view["trusted"], view["enabled"]) == (["echo"], False, False)
    expect(page.get_by_test_id("digest")).to_have_text(view["digest"])

    confirm_test_enable(page)
    open_server(page, "Echo", "Tools")
    expect(page.get_by_role("switch", name="Enabled for agents: echo")).to_have_attribute("aria-checked", "false")
    expect(page.locator('li.tool[data-tool="echo"]')).to_contain_text("Disabled: agents do not see it")
    expect(page.get_by_role("switch", name="Enabled for agents: add")).to_have_attribute("aria-checked", "true")


def test_deleting_a_server_asks_for_confirmation_and_removes_it(page: Page, host: Host, echo_url: str) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Doomed", "transport": "streamable_http", "url": echo_url}
    )
    assert created.status_code == 201, created.text
    sign_in(page)
    open_server(page, "Doomed")
    page.get_by_role("button", name="Delete server").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    assert host.client.get("/api/mcp/servers/doomed").status_code == 200

    page.get_by_role("button", name="Delete server").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    expect(page.locator('tr[data-server="doomed"]')).to_have_count(0)
    assert host.client.get("/api/mcp/servers/doomed").status_code == 404


CRASHING = [
    "-c",
    "import atexit, sys; atexit.register(lambda: print('shutting down', file=sys.stderr)); "
    "print('starting demo server v1.2', file=sys.stderr); import missing_module_7c",
]


def test_states_read_as_the_api_says_them_and_a_failed_test_shows_its_telling_stderr_line(
    page: Page, host: Host
) -> None:
    body = {"name": "Crashing", "transport": "stdio", "command": sys.executable, "args": CRASHING}
    assert host.client.post("/api/mcp/servers", json=body).status_code == 201
    sign_in(page)
    row = page.locator('tr[data-server="crashing"]')
    expect(row.locator(".badge")).to_have_text("disconnected")
    open_server(page, "Crashing")
    expect(page.locator(".head-state .badge")).to_have_text("disconnected")
    page.get_by_role("button", name="Confirm this summary").click()
    page.get_by_role("button", name="Run test").click()
    # The line that explains the failure is shown at once, not the last (or first) line of stderr.
    last = page.get_by_test_id("last-test")
    expect(last).to_contain_text("failed")
    expect(last).to_contain_text("stderr: ModuleNotFoundError: No module named 'missing_module_7c'")
    tail = page.locator("#step-test details")
    expect(tail.locator("pre")).to_be_hidden()
    tail.get_by_text("Server stderr (last lines)").click()
    expect(tail.locator("pre")).to_contain_text("starting demo server v1.2")
    expect(tail.locator("pre")).to_contain_text("shutting down")
    go_to(page, "Servers")
    expect(row.locator('td[data-label="Last test"]')).to_contain_text("stderr: ModuleNotFoundError")
    expect(row.locator(".badge")).to_have_text("disconnected")
    expect(page.locator("table.servers")).not_to_contain_text("off")


def test_the_hosts_warnings_show_on_the_summary_confirmation_and_the_server_page(page: Page, host: Host) -> None:
    sign_in(page)
    add_from_template(page, "Local program (uvx)", "Missing")
    page.get_by_label("Command").fill("no-such-program-7c")
    page.get_by_label("Arguments").fill("--serve")
    page.get_by_role("button", name="Add secret environment variable").click()
    page.get_by_label("Secret environment variable name").fill("DEMO_TOKEN")
    save_new(page)
    warnings = page.get_by_test_id("warnings")
    expect(warnings.locator('li[data-code="COMMAND_NOT_FOUND"]')).to_contain_text("'no-such-program-7c' was not found")
    expect(warnings.locator('li[data-code="SECRET_NOT_SET"]')).to_contain_text("DEMO_TOKEN")
    page.get_by_role("button", name="Confirm this summary").click()
    expect(page.get_by_text("Confirmed. Changing any of these fields will ask again.")).to_be_visible()
    # The confirmed summary folds away; the warnings stay in sight on the server page.
    status = page.get_by_role("region", name="Status")
    expect(status.get_by_test_id("warnings")).to_contain_text("COMMAND_NOT_FOUND")
    expect(status.get_by_test_id("warnings")).to_contain_text("SECRET_NOT_SET")


def test_the_playground_names_a_required_argument_left_empty_instead_of_the_servers_validator_text(
    page: Page, host: Host, echo_url: str
) -> None:
    """R-7.3 (bridge39): the page calls through the REST API, whose service checks the tool's `required`."""
    sign_in(page)
    add_echo_server(page, echo_url)
    confirm_test_enable(page)
    open_server(page, "Echo", "Tools")
    call_in_playground(page, "add", {"a": "2"})
    alert = page.locator('li.tool[data-tool="add"] .call-output [role="alert"]')
    expect(alert).to_have_text("REQUEST_INVALID: missing required argument 'b' of tool 'add'")
