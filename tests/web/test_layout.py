"""The page at 1280x800 and in a narrow (400 px) window, labels on every control, and the
screenshots shown in the README (written to docs/screenshots when MCP_CENTER_SCREENSHOT_DIR is set,
which `scripts/screenshots` does)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from tests.support.browser import (
    NO_HORIZONTAL_SCROLL,
    PAGE_DOM_JS,
    UNLABELLED,
    PageErrors,
    add_from_template,
    call_in_playground,
    confirm_test_enable,
    go_to,
    held_requests,
    new_context,
    open_server,
    raw_stdio_body,
    save_new,
    sign_in,
    sign_in_on_a_paused_clock,
    wait_held,
    whole_page_screenshot,
)
from tests.support.http import Background
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

RECORD_CALL = "/api/tools/mcp__capabilities__record/call"
ASK_CALL = "/api/mcp/servers/capabilities/tools/ask/call"
IMPORT_SAMPLE = json.dumps(
    {
        "mcpServers": {
            "notes": {"command": "uvx", "args": ["notes-mcp==0.4.2", "--root", "${NOTES_ROOT:-/srv/notes}"]},
            "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS}"}},
            "bad": {"command": "a | b"},
        }
    }
)
SCREENSHOT_IMPORT = """{
  // .mcp.json of a project
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}",
        "GITHUB_API_URL": "${GITHUB_API_URL:-https://api.github.com}"
      }
    },
    "shell-pipe": {"command": "npx -y some-server | tee server.log"}
  }
}
"""


def test_every_visible_control_has_a_label_or_a_name(page: Page, host: Host) -> None:
    sign_in(page)
    for template in ("Local program (uvx)", "Remote server (Streamable HTTP)", "Legacy HTTP+SSE"):
        add_from_template(page, template, "Labelled")
        for add in page.get_by_role("button", name="Add ").all():
            add.click()
        page.get_by_text("Advanced").click()
        assert page.evaluate(UNLABELLED) == [], template
    page.get_by_label("Authorization", exact=True).select_option("bearer")
    assert page.evaluate(UNLABELLED) == []
    page.get_by_label("Authorization", exact=True).select_option("oauth")
    assert page.evaluate(UNLABELLED) == []
    expect(page.get_by_text("sign in on the server's Authorization tab")).to_be_visible()
    go_to(page, "Import")
    page.get_by_label("Configuration (JSON)").fill(IMPORT_SAMPLE)
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("region", name="Preview")).to_be_visible()
    assert page.evaluate(UNLABELLED) == []
    go_to(page, "Export")
    expect(page.get_by_role("button", name="Download")).to_be_visible()
    assert page.evaluate(UNLABELLED) == []
    go_to(page, "Gateway")
    page.get_by_label("Name", exact=True).fill("labelled")
    page.get_by_role("button", name="Create token").click()
    page.get_by_label("Fill this token into the client snippets").check()
    expect(page.locator("textarea[data-snippet]")).to_have_count(6)
    assert page.evaluate(UNLABELLED) == []


def test_the_main_screens_fit_a_400_px_window_without_horizontal_scrolling(
    browser: Browser, host: Host, echo_url: str, page_errors: PageErrors
) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Echo", "transport": "streamable_http", "url": echo_url}
    )
    assert created.status_code == 201, created.text
    context = new_context(browser, host, width=400, height=800)
    try:
        page = context.new_page()
        page_errors.watch(page)
        sign_in(page)
        expect(page.locator('tr[data-server="echo"]')).to_be_visible()
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        # The navigation folds behind "Menu" (one row of top bar, not four), and opens on demand.
        nav = page.get_by_role("navigation", name="Main")
        expect(nav).to_be_hidden()
        assert page.locator(".topbar").evaluate("(el) => el.getBoundingClientRect().height") < 70
        menu = page.get_by_role("button", name=re.compile(r"^Menu\b"))
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
        expect(nav.get_by_role("link", name="Gateway")).to_be_visible()
        page.keyboard.press("Escape")
        expect(nav).to_be_hidden()
        open_server(page, "Echo")
        expect(
            page.get_by_role("button", name="Confirm this summary")
        ).to_be_visible()  # the section, not only its heading
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        confirm_test_enable(page)
        open_server(page, "Echo", "Tools")
        expect(page.locator("li.tool")).to_have_count(4)
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        open_server(page, "Echo", "Configuration")
        expect(page.get_by_label("Name", exact=True)).to_have_value("Echo")
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        open_server(page, "Echo", "Authorization")
        expect(page.get_by_role("region", name="Authorization")).to_contain_text("none")
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        open_server(page, "Echo")
        expect(page.get_by_role("region", name="Catalog").locator("table")).to_be_visible()
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        assert page.locator("section.catalog .card").evaluate("(el) => el.scrollWidth <= el.clientWidth")
        page.get_by_role("button", name="Logs").click()
        drawer = page.get_by_role("dialog", name="Logs · Echo")
        expect(drawer.locator('tr[data-method="initialize"]').first).to_be_visible()
        assert drawer.evaluate("(el) => el.scrollWidth <= el.clientWidth")
        assert drawer.evaluate("(el) => el.getBoundingClientRect().width") <= 400
        drawer.get_by_role("button", name="Close").click()
        go_to(page, "Add server")
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        go_to(page, "Import")
        page.get_by_label("Configuration (JSON)").fill(IMPORT_SAMPLE)
        page.get_by_role("button", name="Preview").click()
        expect(page.get_by_role("region", name="Preview")).to_be_visible()
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        go_to(page, "Export")
        expect(page.get_by_role("button", name="Download")).to_be_visible()
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        go_to(page, "Gateway")
        expect(page.get_by_test_id("gateway-tool-count")).to_have_text("4")
        page.get_by_label("Name", exact=True).fill("narrow")
        page.get_by_role("button", name="Create token").click()
        page.get_by_label("Fill this token into the client snippets").check()
        expect(page.locator('tr[data-token-id] td[data-label="Name"]')).to_have_text("narrow")
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        go_to(page, "Inbox")
        expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")
        assert page.evaluate(NO_HORIZONTAL_SCROLL)  # with cards: tests/web/test_approvals_and_cards.py
    finally:
        context.close()
    assert page_errors.messages == []


def test_sections_of_a_server_not_set_up_say_what_to_do_first(page: Page, host: Host) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Echo", "transport": "sse", "url": "https://a.example/sse"}
    )
    assert created.status_code == 201, created.text
    sign_in(page)
    for section in ("Prompts", "Resources"):
        open_server(page, "Echo", section)
        expect(page.get_by_test_id("empty-state")).to_contain_text("confirm, test and enable the server first")
    open_server(page, "Echo", "Tools")
    expect(page.get_by_text("confirm, test and enable the server first")).to_be_visible()
    open_server(page, "Echo")
    expect(page.get_by_role("region", name="Catalog")).to_contain_text("enable the server to see it")
    go_to(page, "Export")
    page.get_by_text("Point the client at this host's gateway instead").click()
    page.get_by_role("link", name="create one on the Gateway page").click()
    expect(page.get_by_role("heading", name="Gateway", exact=True)).to_be_visible()


def test_the_list_refreshes_by_itself_and_shows_a_failed_test_with_its_reason(page: Page, host: Host) -> None:
    sign_in(page)
    expect(page.get_by_text("No servers yet.")).to_be_visible()
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Gone", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
    ).json()
    assert host.client.post("/api/mcp/servers/gone/trust", json={"digest": created["digest"]}).status_code == 200
    assert host.client.post("/api/mcp/servers/gone/test").json()["ok"] is False
    row = page.locator('tr[data-server="gone"]')
    expect(row.locator('td[data-label="Last test"]')).to_contain_text("failed")
    expect(row.locator('td[data-label="Last test"]')).to_contain_text("refused")
    expect(row.get_by_role("switch", name="Enabled: Gone")).to_have_attribute("aria-disabled", "true")
    expect(row.get_by_role("link", name="Set up")).to_be_visible()


HEADINGS_SEEN = """(() => {
  window.headingsSeen = [];
  new MutationObserver(() => {
    const text = document.querySelector("#main h1")?.textContent;
    if (text && text !== window.headingsSeen.at(-1)) window.headingsSeen.push(text);
  }).observe(document, { childList: true, subtree: true });
})()"""
"""An init script: every main heading the page shows, in order, in `window.headingsSeen`."""


def test_a_server_page_answered_after_the_user_moved_on_never_replaces_the_newer_page(page: Page, host: Host) -> None:
    """A server page waits for the server's record before drawing; when another route was drawn
    meanwhile, that late answer must not write the page (app.js's route generations; once a late
    Tools tab replaced the one the user had paged, issue 16)."""
    for name in ("Slow", "Quick"):
        body = {"name": name, "transport": "streamable_http", "url": "https://a.example/mcp"}
        assert host.client.post("/api/mcp/servers", json=body).status_code == 201
    page.add_init_script(HEADINGS_SEEN)
    sign_in(page)
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/api/mcp/servers/slow", hold)  # the record of Slow waits until released
    # The page asks for Slow's record before the user moves on: a hash change made at once after it
    # could reach app.js first, and then Slow's route never runs (a full run saw `held` empty).
    with page.expect_request("**/api/mcp/servers/slow"):
        page.goto("/#/servers/slow/tools")
    page.goto("/#/servers/quick/tools")
    expect(page.get_by_role("heading", name="Quick", exact=True)).to_be_visible()
    wait_held(page, held)
    assert len(held) == 1  # Slow's render is still waiting for its record
    with page.expect_response("**/api/mcp/servers/slow") as late:
        held[0].continue_()
    assert late.value.ok
    late.value.finished()
    # One more answer through the same page: the late one was handled before it (a barrier, no sleep).
    assert page.evaluate("() => fetch('/api/mcp/servers/quick').then((r) => r.json()).then((v) => v.name)") == "Quick"
    expect(page.locator("#main h1")).to_have_text("Quick")
    assert page.evaluate("() => window.headingsSeen") == ["Servers", "Quick"]
    expect(page.get_by_text("confirm, test and enable the server first")).to_be_visible()


def test_a_server_overview_is_drawn_once_its_cards_have_answered_so_nothing_moves_under_the_pointer(
    context: BrowserContext, page: Page, host: Host
) -> None:
    """The overview's cards (instances, server info, catalog) read their data after the server's record.
    Drawn before they answered, each answer grew a card and moved what is below it (the steps' buttons,
    Delete) between a person's press and release: the click was lost (issue 16). The section is drawn
    once they have answered: while the instances' answer is held, none of it is — for 3 s of the page's
    clock at most (paused here, in a fresh profile: `context`), then it is drawn anyway."""
    body = {"name": "Still", "transport": "streamable_http", "url": "https://a.example/mcp"}
    assert host.client.post("/api/mcp/servers", json=body).status_code == 201
    sign_in_on_a_paused_clock(page)
    held = held_requests(page, "**/api/instances")
    page.goto("/#/servers/still")
    expect(page.get_by_role("heading", name="Still", exact=True)).to_be_visible()
    expect(page.get_by_role("navigation", name="Server sections")).to_be_visible()
    expect(page.get_by_role("button", name="Delete server")).to_have_count(0)  # drawn with the heading before
    wait_held(page, held)
    assert len(held) == 1
    page.clock.fast_forward(3_000)  # the instances' answer still hangs: drawn anyway, never left empty
    expect(page.get_by_role("button", name="Delete server")).to_be_visible()
    held[0].continue_()
    expect(page.locator("section.instances table")).to_be_visible()
    expect(page.get_by_text("Loading instances…")).to_have_count(0)


def test_a_toast_of_the_page_left_does_not_follow_to_the_next_one(
    context: BrowserContext, page: Page, host: Host
) -> None:
    """A message about the previous page would cover the next one; one that reports the navigation
    itself ("Deleted.") is shown on the page it leads to. The page's clock is Playwright's, paused once
    the list is drawn: the toast ages by exactly the time the test moves it on, without waiting (issue 16).
    The clock is the profile's: a fresh one (`context`), not the worker's reused profile."""
    sign_in_on_a_paused_clock(page)
    toast = page.locator("#toast")
    page.evaluate(f"() => import({PAGE_DOM_JS}).then((dom) => dom.toast('About the list'))")
    expect(toast).to_have_class("toast visible")
    page.clock.fast_forward(1_200)
    go_to(page, "Gateway")
    expect(toast).not_to_have_class("toast visible")
    page.evaluate(f"() => import({PAGE_DOM_JS}).then((dom) => {{ dom.toast('Deleted.'); location.hash = '#/inbox'; }})")
    expect(page.get_by_test_id("inbox-summary")).to_be_visible()
    expect(toast).to_have_class("toast visible")
    expect(toast).to_have_text("Deleted.")


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_screenshots_of_the_main_screens(
    browser: Browser, host: Host, echo_url: str, caps_url: str, tmp_path: Path, page_errors: PageErrors
) -> None:
    """Takes the README's screenshots; copies them to $MCP_CENTER_SCREENSHOT_DIR when it is set."""
    shots = tmp_path / "screenshots"
    shots.mkdir()
    context = new_context(browser, host)
    try:
        page = context.new_page()
        page_errors.watch(page)
        sign_in(page)
        page.evaluate("() => { document.getElementById('toast').hidden = true; }")  # it would cover the pictures
        add_from_template(page, "Remote server (Streamable HTTP)", "Echo")
        page.get_by_label("URL").fill(echo_url)
        page.get_by_role("button", name="Add secret header").click()
        page.get_by_label("Secret header name").fill("X-Api-Key")
        page.get_by_label("Secret header value").fill("a-secret-value-for-the-screenshot")
        whole_page_screenshot(page, shots / "add-server.png")
        save_new(page)
        whole_page_screenshot(page, shots / "summary-confirmation.png")
        confirm_test_enable(page)
        host.client.post(
            "/api/mcp/servers",
            json={
                "name": "Time",
                "transport": "stdio",
                "command": "uvx",
                "args": ["--isolated", "--from", "mcp-server-time==2026.10.19", "mcp-server-time"],
            },
        )
        host.client.post(
            "/api/mcp/servers", json={"name": "Old SSE server", "transport": "sse", "url": "http://127.0.0.1:9/sse"}
        )
        add_ready_on_host(host, raw_stdio_body("Crashing"))
        host.client.post("/api/mcp/servers/crashing/tools/exit/call", json={"arguments": {"code": 3}})
        go_to(page, "Servers")
        expect(page.locator("tbody tr")).to_have_count(4)
        expect(page.locator('tr[data-server="crashing"] .badge')).to_have_text("error")
        whole_page_screenshot(page, shots / "server-list.png")
        open_server(page, "Echo", "Tools")
        call_in_playground(page, "add", {"a": "2", "b": "40"})
        item = page.locator('li.tool[data-tool="add"]')
        expect(item.locator(".result")).to_contain_text("42")
        item.scroll_into_view_if_needed()
        whole_page_screenshot(page, shots / "tools-playground.png")
        page.get_by_role("button", name="Logs").click()
        drawer = page.get_by_role("dialog", name="Logs · Echo")
        expect(drawer.locator('tr[data-method="tools/call"]')).to_have_count(1)
        page.screenshot(path=shots / "logs-drawer.png")
        page.keyboard.press("Escape")
        go_to(page, "Import")
        page.get_by_label("Configuration (JSON)").fill(SCREENSHOT_IMPORT)
        page.get_by_role("button", name="Preview").click()
        preview = page.get_by_role("region", name="Preview")
        preview.get_by_label("GITHUB_TOKEN (secret)").fill("a-secret-value-for-the-screenshot")
        preview.get_by_label("Use the file's default: https://api.github.com").check()
        page.get_by_label("Configuration (JSON)").evaluate("(el) => { el.scrollTop = 0; }")
        whole_page_screenshot(page, shots / "import-preview.png")
        # The worker's capability server (`caps_url`, tests/conftest.py), not one started for this test.
        add_ready_on_host(host, {"name": "Capabilities", "transport": "streamable_http", "url": caps_url})
        open_server(page, "Capabilities", "Prompts")
        prompt = page.locator('li.prompt[data-prompt="greet"]')
        prompt.locator('[data-argument="name"] input').fill("Ada")
        prompt.get_by_role("button", name="Get prompt").click()
        expect(prompt.get_by_test_id("untrusted-body")).to_contain_text("Please greet Ada warmly.")
        whole_page_screenshot(page, shots / "prompt-block.png")
        waiting = Background(lambda: host.client.post(RECORD_CALL, json={"arguments": {"note": "deploy v2"}}))
        asked = Background(lambda: host.client.post(ASK_CALL, json={"arguments": {"question": "Who are you?"}}))
        go_to(page, "Inbox")
        expect(page.locator("article.approval-card")).to_have_count(1)
        expect(page.locator("article.interaction-card")).to_have_count(1)
        whole_page_screenshot(page, shots / "inbox-cards.png")
        page.locator("article.approval-card").get_by_role("button", name="Approve").click()
        page.locator("article.interaction-card").get_by_role("button", name="Decline").click()
        assert waiting.result().status_code == 200
        assert asked.result().status_code == 200
        go_to(page, "Gateway")
        expect(page.get_by_test_id("gateway-tool-count")).to_have_text(re.compile(r"^[1-9]\d*$"))  # drawn, not 0
        page.get_by_label("Name", exact=True).fill("laptop")
        page.get_by_role("button", name="Create token").click()
        expect(page.locator('tr[data-token-id] td[data-label="Name"]')).to_have_text("laptop")
        # The one-time token panel is not pictured: the list, the endpoint and the snippets are.
        page.get_by_role("button", name="Done, I saved it").click()
        expect(page.get_by_role("button", name="Done, I saved it")).to_have_count(0)
        whole_page_screenshot(page, shots / "gateway.png")
        page.set_viewport_size({"width": 400, "height": 800})
        go_to(page, "Servers")
        expect(page.locator("tbody tr")).to_have_count(5)
        whole_page_screenshot(page, shots / "server-list-narrow.png")
    finally:
        context.close()
    names = sorted(p.name for p in shots.iterdir())
    assert names == [
        "add-server.png",
        "gateway.png",
        "import-preview.png",
        "inbox-cards.png",
        "logs-drawer.png",
        "prompt-block.png",
        "server-list-narrow.png",
        "server-list.png",
        "summary-confirmation.png",
        "tools-playground.png",
    ]
    target = os.environ.get("MCP_CENTER_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for shot in shots.iterdir():
            shutil.copyfile(shot, Path(target) / shot.name)
    assert page_errors.messages == []


CLIPPED = "(el) => el.scrollWidth > el.clientWidth"
"""A page script: true when the element's text is cut (wider than its box)."""
LINES = "(el) => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight))"
"""A page script: how many lines of text the element takes."""


def test_a_long_test_failure_is_one_clipped_line_in_the_list_with_the_whole_text_on_hover(
    browser: Browser, host: Host
) -> None:
    """trial38: at 400 px a failed test's long message overflowed its cell; at 1280 px one long
    message squeezed the table so "trusted / tested" wrapped to 3 lines in every row (ux39)."""
    command = "/nonexistent/" + "long-directory-name-" * 12 + "server"  # one word: nothing to break at
    for name in ("Long failure", "Fine neighbour"):
        body = {"name": name, "transport": "stdio", "command": command if name == "Long failure" else "true"}
        created = host.client.post("/api/mcp/servers", json=body)
        assert created.status_code == 201, created.text
    view = host.client.get("/api/mcp/servers/long-failure").json()
    assert host.client.post("/api/mcp/servers/long-failure/trust", json={"digest": view["digest"]}).status_code == 200
    tested = host.client.post("/api/mcp/servers/long-failure/test")
    assert tested.status_code == 200 and tested.json()["ok"] is False, tested.text
    for width in (1280, 400):
        context = new_context(browser, host, width=width, height=800)
        try:
            page = context.new_page()
            sign_in(page)
            cell = page.locator('tr[data-server="long-failure"] td[data-label="Last test"] .clip')
            expect(cell).to_have_attribute("title", re.compile(r"^failed .*long-directory-name-long"))
            assert cell.evaluate(CLIPPED), width
            assert page.evaluate(NO_HORIZONTAL_SCROLL), width
            for row in ("long-failure", "fine-neighbour"):
                trust = page.locator(f'tr[data-server="{row}"] td[data-label="Trusted / tested"] > span')
                lines = trust.evaluate(LINES)
                assert lines == 1, (width, row, lines)
        finally:
            context.close()
