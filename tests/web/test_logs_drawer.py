"""The logs drawer in a real browser (R-3.11): the last requests/responses of a server after a
playground call, a filter, a JSON export equal to what the API holds, the redacted stderr of a
stdio server, and the keyboard (open, Escape, focus back on the opener).
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import call_in_playground, open_server, raw_stdio_body, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

PLANTED = "PLANTED-stderr-" + uuid.uuid4().hex


def test_the_drawer_lists_filters_and_exports_the_requests_of_a_playground_call(
    page: Page, host: Host, echo_url: str, tmp_path: Path
) -> None:
    add_ready_on_host(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    sign_in(page)
    open_server(page, "Echo", "Tools")
    call_in_playground(page, "add", {"a": "2", "b": "40"})
    expect(page.locator('li.tool[data-tool="add"] .result')).to_contain_text("42")

    opener = page.get_by_role("button", name="Logs")
    opener.focus()
    page.keyboard.press("Enter")
    drawer = page.get_by_role("dialog", name="Logs · Echo")
    expect(drawer).to_be_visible()
    filter_box = drawer.get_by_label("Filter")
    expect(filter_box).to_be_focused()
    rows = drawer.locator("table.logs tbody tr")
    for method in ("initialize", "tools/list", "tools/call"):
        # Its whole text (a method may wrap at a <wbr> after each "/", which `:text-is` does not see through).
        exact = re.compile(f"^{re.escape(method)}$")
        expect(rows.locator('[data-label="Method"] code', has_text=exact).first).to_be_visible()
    call = drawer.locator('tr[data-method="tools/call"]')
    expect(call).to_have_count(1)
    expect(call.locator('[data-label="Status"]')).to_have_text("ok")
    expect(call.locator('[data-label="Direction"]')).to_have_text("to server")
    expect(call.locator('[data-label="Duration"]')).to_have_text(re.compile(r"^\d+(\.\d+)? ms$"))

    api_logs = host.client.get("/api/mcp/servers/echo/logs").json()
    total = len(api_logs["requests"])
    expect(drawer.get_by_test_id("logs-count")).to_have_text(f"{total} of {total} requests")
    expect(rows).to_have_count(total)
    # Newest first: the call is the last entry the API lists, and the first row.
    assert api_logs["requests"][-1]["method"] == "tools/call"
    expect(rows.first).to_have_attribute("data-method", "tools/call")

    filter_box.fill("tools/call")
    expect(rows).to_have_count(1)
    expect(drawer.get_by_test_id("logs-count")).to_have_text(f"1 of {total} requests (filtered)")
    filter_box.fill("initialize ok")
    expect(rows).to_have_count(2)  # the test connection's and the session's
    filter_box.fill("error")
    expect(rows).to_have_count(0)
    expect(drawer.get_by_text("No request matches the filter.")).to_be_visible()
    filter_box.fill("")
    expect(rows).to_have_count(total)

    with page.expect_download() as download_info:
        drawer.get_by_role("link", name="Export JSON").click()
    download = download_info.value
    assert download.suggested_filename == "mcp-center-echo-logs.json"
    target = tmp_path / "logs.json"
    download.save_as(target)
    exported = json.loads(target.read_text(encoding="utf-8"))
    assert exported == host.client.get("/api/mcp/servers/echo/logs").json()
    assert exported["requests"] == api_logs["requests"]

    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(opener).to_be_focused()
    expect(page.locator("dialog.drawer")).to_have_count(0)


def test_stderr_lines_of_a_stdio_server_appear_redacted_and_a_crash_shows_its_last_call(page: Page, host: Host) -> None:
    add_ready_on_host(host, raw_stdio_body(token=PLANTED))
    sign_in(page)
    open_server(page, "Raw")
    page.get_by_role("button", name="Logs").click()
    drawer = page.get_by_role("dialog", name="Logs · Raw")
    stderr = drawer.get_by_role("list", name="stderr of Raw, oldest first")
    expect(stderr).to_contain_text("raw-stdio starting; RAW_TOKEN=[redacted]")

    # The process exits while the drawer is open: the status event refreshes it with the failed call.
    host.client.post("/api/mcp/servers/raw/tools/exit/call", json={"arguments": {"code": 7}})
    call = drawer.locator('tr[data-method="tools/call"]')
    expect(call.locator('[data-label="Status"]')).to_have_text("error")
    expect(call.locator('[data-label="Error"]')).to_have_text("no answer: the connection closed")
    expect(stderr).to_contain_text("exiting on request with code 7")
    drawer.get_by_label("Filter").fill("exiting")
    expect(stderr.locator("li")).to_have_count(1)
    expect(drawer.get_by_test_id("logs-count")).to_contain_text("1 of 3 stderr lines")

    assert PLANTED not in page.content()
    assert PLANTED not in page.evaluate("() => document.body.innerText")
    drawer.get_by_role("button", name="Close").click()
    expect(drawer).to_be_hidden()


def test_a_logs_link_opens_the_drawer_over_the_overview(page: Page, host: Host, echo_url: str) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Echo", "transport": "streamable_http", "url": echo_url}
    )
    assert created.status_code == 201, created.text
    sign_in(page)
    page.goto("/#/servers/echo/logs")
    drawer = page.get_by_role("dialog", name="Logs · Echo")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_text("No requests yet.")).to_be_visible()
    expect(drawer.get_by_role("list", name="stderr of Echo, oldest first")).to_have_count(0)  # remote: no stderr
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(page).to_have_url(re.compile(r"#/servers/echo$"))
    expect(page.get_by_role("heading", name="Status")).to_be_visible()


LINE_BREAKS = """(code) => {
  // The character before each line break of `code`'s text, read from where each character is drawn.
  const before = [];
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  let top = null;
  let previous = "";
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const at = range.getBoundingClientRect().top;
      if (top !== null && at > top + 2) before.push(previous);
      top = at;
      previous = node.data[i];
    }
  }
  return before;
}"""
"""A page script: for one element, the character before each of its line breaks ([] on one line)."""


@pytest.mark.parametrize("width", [760, 900])
def test_a_method_name_in_a_squeezed_drawer_wraps_only_after_a_slash(
    page: Page, host: Host, echo_url: str, width: int
) -> None:
    """A new user's trial (docs36): with the Method column squeezed, "resources/list" was drawn as
    "resources/lis t". A method may wrap after a "/" or not at all, never inside a word (R-3.11)."""
    add_ready_on_host(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    sign_in(page)
    page.set_viewport_size({"width": width, "height": 800})
    open_server(page, "Echo")
    page.get_by_role("button", name="Logs").click()
    drawer = page.get_by_role("dialog", name="Logs · Echo")
    methods = drawer.locator('table.logs td[data-label="Method"] code')
    expect(methods.filter(has_text="resources/templates/list")).to_have_count(1)
    breaks = {code.text_content(): code.evaluate(LINE_BREAKS) for code in methods.all()}
    assert {method for method, before in breaks.items() if set(before) - {"/"}} == set(), breaks
    assert drawer.evaluate("(el) => el.scrollWidth <= el.clientWidth")  # and nothing widened the drawer
