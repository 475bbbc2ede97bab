"""Live updates from `GET /api/events` in a real browser (R-3.11): a state badge follows the runtime
without a reload and without polling the list while the stream is healthy; the page falls back to
polling when the stream fails, and goes live again. Catalog facts — quarantined items with their
reasons, a category whose refresh failed — are shown for a server that sent a malformed tool.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, Page, Request, Route, expect

from tests.support.browser import open_server, raw_stdio_body, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

LIST = "/api/mcp/servers"


def _is_list_request(request: Request) -> bool:
    return request.method == "GET" and urlsplit(request.url).path == LIST


def test_a_state_badge_turns_to_error_with_its_reason_from_the_event_stream_without_polling(
    page: Page, host: Host
) -> None:
    add_ready_on_host(host, raw_stdio_body())
    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if urlsplit(r.url).path == "/api/events" else None)
    sign_in(page)
    row = page.locator('tr[data-server="raw"]')
    expect(page.locator('.feed-state[data-feed-mode="live"]')).to_contain_text("Live")
    expect(row.locator(".badge")).to_have_text("ready")
    expect(row.locator('td[data-label="Tools"]')).to_have_text("2")
    assert len(streams) == 1

    list_requests: list[str] = []
    page.on("request", lambda r: list_requests.append(r.url) if _is_list_request(r) else None)
    # The server process exits on this call (through the API, not the page): only the stream can tell the page.
    answer = host.client.post("/api/mcp/servers/raw/tools/exit/call", json={"arguments": {"code": 7}})
    assert answer.json()["error"]["details"]["reason"] == "process_exited"

    expect(row.locator(".badge")).to_have_text("error")
    # The reason, the process's last output, then when the runtime restarts it by itself (issue 14, item 12).
    expect(row.locator(".error-reason")).to_have_text(
        re.compile(r"^the server process exited with code 7 during the session; .* · retrying at ")
    )
    expect(row.locator(".error-reason")).to_have_attribute("data-reason", "process_exited")  # words shown, code kept
    expect(row.locator('td[data-label="Tools"]')).to_have_text("–")
    assert list_requests == []
    assert len(streams) == 1

    # The server page shows the same attributed error and the server's last stderr lines.
    open_server(page, "Raw")
    expect(page.locator(".head-state .badge")).to_have_text("error")
    status = page.locator("dl.status")
    expect(status).to_contain_text("MCP_SERVER_UNREACHABLE · the server process exited with code 7")
    expect(status.locator("pre.stderr-tail")).to_contain_text("exiting on request with code 7")


def test_the_page_polls_while_the_stream_fails_and_goes_live_again(
    context: BrowserContext, page: Page, host: Host
) -> None:
    """The page's clock is Playwright's, paused before the page loads (a fresh profile: the clock is the
    profile's), so its 3 s poll and its 5 s retry of the stream happen exactly when the test moves the
    clock on (issue 16: the test waited for both). Each step waits for the list read it caused to be
    answered before the next, so no earlier read can be counted, or answer, after the deletion."""
    refused: list[str] = []

    def refuse_once(route: Route) -> None:
        if not refused:
            refused.append(route.request.url)
            route.fulfill(status=503, body="")
        else:
            route.continue_()

    page.route("**/api/events", refuse_once)
    page.clock.install()
    page.clock.pause_at(datetime.now(UTC) + timedelta(seconds=1))
    sign_in(page)
    indicator = page.locator(".feed-state")
    expect(indicator).to_have_attribute("data-feed-mode", "polling")
    expect(indicator).to_contain_text("refreshing every 3 s")
    expect(page.get_by_text("No servers yet.")).to_be_visible()  # the fallback's read, answered
    created = host.client.post("/api/mcp/servers", json=raw_stdio_body("Polled"))
    assert created.status_code == 201, created.text
    row = page.locator('tr[data-server="polled"]')
    with page.expect_request(_is_list_request):
        page.clock.run_for(3_000)
    expect(row).to_be_visible()  # found by the poll 3 s after the stream failed: the stream is down

    # The feed tries the stream again 5 s after it failed, stops polling once it is open, and reads the
    # list once (the resync of a new stream); the next poll would be due at 6 s.
    with page.expect_response(lambda response: _is_list_request(response.request)) as resync:
        page.clock.run_for(2_000)
    expect(indicator).to_have_attribute("data-feed-mode", "live")
    assert resync.value.ok
    assert len(refused) == 1
    list_requests: list[str] = []
    page.on("request", lambda r: list_requests.append(r.url) if _is_list_request(r) else None)
    page.clock.resume()  # the deletion's resync is a 100 ms timer, due after the event arrives
    host.client.delete("/api/mcp/servers/polled")
    expect(row).to_have_count(0)
    assert len(list_requests) == 1  # one resync for the deletion event
    page.clock.run_for(6_000)  # two poll periods: no poll while the stream is live
    page.evaluate("() => document.title")  # request events of reads started before this have arrived
    assert len(list_requests) == 1


def test_a_malformed_tool_is_shown_quarantined_with_its_reason_and_a_failed_category_with_its_error(
    page: Page, host: Host
) -> None:
    add_ready_on_host(host, raw_stdio_body(broken_prompts=True))
    sign_in(page)
    open_server(page, "Raw")
    catalog = page.get_by_role("region", name="Catalog")
    tools = catalog.locator('tr[data-category="tools"]')
    expect(tools.locator('td[data-label="Items"]')).to_have_text("2")
    expect(tools.locator('td[data-label="Quarantined"]')).to_have_text("1")
    expect(tools.locator('td[data-label="Last refresh"]')).to_have_text("ok")
    notice = catalog.get_by_test_id("quarantined")
    expect(notice).to_contain_text("1 item quarantined")
    expect(notice.locator('li[data-name="broken"]')).to_have_text(
        "tool #3 broken: inputSchema: must be a JSON Schema object"
    )

    prompts = catalog.locator('tr[data-category="prompts"]')
    expect(prompts.locator('td[data-label="Last refresh"]')).to_contain_text("failed: MCP_SERVER_ERROR (no list yet)")
    expect(catalog).to_contain_text("Prompts: the last refresh failed")
    expect(catalog).to_contain_text("prompts are broken on purpose")

    catalog.get_by_role("button", name="Refresh catalog").click()
    expect(tools.locator('td[data-label="Refreshes"]')).to_have_text("2")
    expect(prompts.locator('td[data-label="Refreshes"]')).to_have_text("0")  # still the list before the failures
    expect(notice.locator('li[data-name="broken"]')).to_be_visible()

    open_server(page, "Raw", "Tools")
    expect(page.locator("li.tool")).to_have_count(2)
    expect(page.get_by_test_id("quarantined").locator('li[data-name="broken"]')).to_contain_text(
        "inputSchema: must be a JSON Schema object"
    )
