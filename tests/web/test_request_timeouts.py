"""A request of the settings page that is never answered, and the toast that reports it (issue 12,
found by a breaker): `api()` had no timeout, so a hung request left its button spinning forever.
Now it is aborted after 30 s (the calls that start a server by design: 660 s) and fails as a
network failure does, with the stable code NETWORK_TIMEOUT; and the toast, a band in the sticky
top bar, hangs over the page instead of pushing it down when it appears.

The page's clock is Playwright's, paused (`sign_in_on_a_paused_clock`, so a fresh profile:
`context`): a held request times out exactly when the test moves the clock past its limit.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext, Page, Route, expect

from tests.support.browser import PAGE_DOM_JS, go_to, held_requests, sign_in, sign_in_on_a_paused_clock, wait_held
from tests.support.serve import Host

pytestmark = pytest.mark.browser

GEOMETRY = """() => ({
  main: document.getElementById('main').getBoundingClientRect().top,
  footer: document.querySelector('.footer').getBoundingClientRect().top,
  bar: document.querySelector('.topbar').getBoundingClientRect().bottom,
})"""
"""A page script: where the content starts and the footer and where the top bar ends (px, viewport)."""


def test_a_toast_hangs_over_the_page_without_moving_its_content(page: Page, host: Host) -> None:
    sign_in(page)
    before = page.evaluate(GEOMETRY)
    toast = page.locator("#toast")
    message = "A message about something that just happened, long enough to take a line of its own."
    page.evaluate(f"(text) => import({PAGE_DOM_JS}).then((dom) => dom.toast(text))", message)
    expect(toast).to_have_class("toast visible")
    expect(toast).to_have_text(message)
    assert page.evaluate(GEOMETRY) == before  # nothing moved: not the content, the footer nor the bar
    box = toast.bounding_box()
    assert box is not None and box["height"] > 0
    assert box["y"] == pytest.approx(before["bar"], abs=1)  # a band from the bar's lower edge


def test_a_request_left_unanswered_ends_after_30_s_with_the_toast_of_a_network_failure(
    context: BrowserContext, page: Page, host: Host
) -> None:
    sign_in_on_a_paused_clock(page)
    toast = page.locator("#toast")
    held = held_requests(page, "**/api/gateway")
    with page.expect_request("**/api/gateway"):
        go_to(page, "Gateway")
    wait_held(page, held)
    assert len(held) == 1
    page.clock.fast_forward(29_000)
    expect(page.get_by_role("heading", name="Gateway", exact=True)).to_be_visible()
    expect(toast).not_to_have_class("toast visible")  # still waiting
    page.clock.fast_forward(1_000)
    expect(toast).to_have_class("toast visible")
    expect(toast).to_have_text("The gateway's address could not be loaded: NETWORK_TIMEOUT")
    # A network failure is told the same way, with its own code.
    page.unroute("**/api/gateway")

    def fail(route: Route) -> None:
        route.abort()

    page.route("**/api/gateway", fail)
    go_to(page, "Servers")
    page.clock.fast_forward(6_000)  # the first toast has gone
    expect(toast).not_to_have_class("toast visible")
    go_to(page, "Gateway")
    expect(toast).to_have_text("The gateway's address could not be loaded: NETWORK_ERROR")


def test_a_server_test_may_take_longer_than_30_s_and_then_ends_with_the_timeout_in_its_alert(
    context: BrowserContext, page: Page, host: Host
) -> None:
    """A test starts the server (up to its start-up timeout, at most 600 s): it is not cut at 30 s,
    but a test that never answers still ends, at 660 s, and the button can be pressed again."""
    body = {"name": "Sluggish", "transport": "streamable_http", "url": "https://a.example/mcp"}
    created = host.client.post("/api/mcp/servers", json=body)
    assert created.status_code == 201, created.text
    trusted = host.client.post("/api/mcp/servers/sluggish/trust", json={"digest": created.json()["digest"]})
    assert trusted.status_code == 200, trusted.text
    sign_in_on_a_paused_clock(page)
    held = held_requests(page, "**/api/mcp/servers/sluggish/test")
    page.goto("/#/servers/sluggish")
    run = page.get_by_role("button", name="Run test")
    with page.expect_request("**/api/mcp/servers/sluggish/test"):
        run.click()
    wait_held(page, held)
    assert len(held) == 1
    page.clock.fast_forward(60_000)
    expect(run).to_have_attribute("aria-busy", "true")  # a slow call: still waiting after a minute
    page.clock.fast_forward(600_000)
    expect(page.locator("p.alert-error")).to_have_text(
        "NETWORK_TIMEOUT: mcp-center did not answer within 660 s (is it still running?)"
    )
    expect(run).to_be_enabled()
    expect(run).not_to_have_attribute("aria-busy", "true")
