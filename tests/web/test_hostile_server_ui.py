"""A hostile MCP server against the settings page (R-7, R-1.5, R-5.3, R-6.1): every string the server
controls — server info, instructions, tool names/titles/descriptions/schemas/annotations, results,
errors, logs, stderr, prompts, resources, elicitation messages and schemas — carries markup, event
handlers and `javascript:` URIs (`tests/servers/xss_stdio.py`) plus a secret env value it was given.

Injected markup would be blocked by the page's CSP, so the tests look for the markup itself (an
element with the marker class, any `on*` attribute, a CSP violation, a non-http(s) link), never only
for a dialog. Also: 2,000 tools with a 1 MB description and a deep schema, a card answered from two
tabs, and a question whose server is deleted meanwhile.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, Response, expect

from tests.support.browser import NO_HORIZONTAL_SCROLL, new_window, press_like_a_person, sign_in
from tests.support.http import Background, pending_card
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

XSS = Path(__file__).parents[1] / "servers" / "xss_stdio.py"
SECRET = "PLANTED-hostile-9f3c1b7e5a"
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""
CARD_LISTS = re.compile(r"/api/(approvals|interactions)(\?[^/]*)?$")
"""The inbox's reads of the pending approvals and questions (GET; an answer POSTs to a card's own URL)."""
INJECTED = """() => ({
  xss: window.__xss || null,
  csp: window.__csp,
  marked: document.querySelectorAll(".xssmark").length,
  handlers: [...document.querySelectorAll("*")]
    .filter((el) => [...el.attributes].some((a) => a.name.startsWith("on")))
    .map((el) => el.outerHTML.slice(0, 200)),
  links: [...document.querySelectorAll("a[href], img[src]")]
    .map((el) => el.href || el.src)
    .filter((url) => !/^(https?:|blob:|data:image\\/(png|jpeg|gif|webp);)/.test(url)),
  storage: Object.keys(localStorage).length + Object.keys(sessionStorage).length,
  dom: document.documentElement.outerHTML + document.body.innerText
    + [...document.querySelectorAll("input, textarea, select")].map((el) => el.value).join("\\n"),
})"""


def hostile_body(*extra: str) -> dict[str, Any]:
    return {
        "name": "Hostile",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(XSS), *extra],
        "secret_values": {"env": {"API_KEY": SECRET}},
    }


def assert_clean(page: Page, where: str) -> None:
    state = page.evaluate(INJECTED)
    dom = state.pop("dom")
    assert state == {"xss": None, "csp": [], "marked": 0, "handlers": [], "links": [], "storage": 0}, (where, state)
    assert SECRET not in dom, where


def watch(page: Page) -> list[tuple[str, str]]:
    """Record every response body the page receives (to look for the secret) and fail on any dialog."""
    bodies: list[tuple[str, str]] = []

    def keep(response: Response) -> None:
        if "/api/events" in response.url:
            return  # the live stream never ends: its body cannot be read here
        try:
            bodies.append((response.url, response.text()))
        except Exception:  # noqa: BLE001 - a streamed or aborted response has no body to read
            bodies.append((response.url, ""))

    page.add_init_script(WATCH)
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    page.on("response", keep)
    return bodies


def _overview_drawn(page: Page) -> None:
    expect(page.get_by_test_id("server-info").get_by_test_id("protocol-version")).to_have_text("2025-11-25")
    expect(page.get_by_role("region", name="Catalog").locator("table")).to_be_visible()
    expect(page.locator("section.instances table")).to_be_visible()


SECTIONS_DRAWN: dict[str, Callable[[Page], None]] = {
    "": _overview_drawn,
    "/config": lambda page: expect(page.get_by_label("Name", exact=True)).to_have_value("Hostile"),
    "/tools": lambda page: expect(page.locator("li.tool")).to_have_count(5),
    "/prompts": lambda page: expect(page.locator("li.prompt")).to_have_count(2),
    "/resources": lambda page: expect(page.locator("li.resource")).to_have_count(3),
    "/approvals": lambda page: expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you."),
    "/auth": lambda page: expect(page.get_by_role("region", name="Authorization")).to_contain_text(
        "A local program is not authorized here"
    ),
}
"""Each section of the hostile server's page, with a wait for the last of what it loads (the server's
info, lists, cards) to be drawn: the page is searched for injected markup after it, not after a fixed
pause (issue 16: 0.5 s per section)."""


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_hostile_strings_stay_text_and_the_secret_never_reaches_the_page(page: Page, host: Host) -> None:
    bodies = watch(page)
    sid = add_ready_on_host(host, hostile_body())["id"]
    sign_in(page)
    assert_clean(page, "server list")
    for section, drawn in SECTIONS_DRAWN.items():
        page.goto(f"/#/servers/{sid}{section}")
        expect(page.locator("main h1")).to_have_text("Hostile")
        drawn(page)  # what the section loads after its heading: all of it is drawn, then looked at
        assert_clean(page, section or "overview")

    page.goto(f"/#/servers/{sid}/tools")
    for tool in ("result", "err", "log"):
        item = page.locator(f'li.tool[data-tool="{tool}"]')
        item.get_by_text("Input schema").click()
        item.get_by_text("Call playground").click()
        item.get_by_role("form", name=f"Call {tool}").get_by_role("button", name=f"Call {tool}").click()
        expect(item.locator(".call-output")).not_to_be_empty()
        assert_clean(page, f"call {tool}")

    page.goto(f"/#/servers/{sid}/prompts")
    expect(page.get_by_role("button", name="Get prompt")).to_have_count(2)
    for form in page.locator("form").filter(has=page.get_by_role("button", name="Get prompt")).all():
        for box in form.locator("input[type=text], input:not([type])").all():
            box.fill("v")
        form.get_by_role("button", name="Get prompt").click()
    expect(page.get_by_test_id("untrusted-block")).to_have_count(2)
    assert_clean(page, "prompts/get")

    page.goto(f"/#/servers/{sid}/resources")
    reads = page.locator("li.resource button", has_text=re.compile("^Read$"))
    expect(reads).to_have_count(2)  # `all()` does not wait: before the list is drawn it is [] and nothing is read
    for button in reads.all():
        button.click()
        expect(page.get_by_test_id("untrusted-block")).to_have_count(1)
        assert_clean(page, "resources/read")

    asked = Background(
        lambda: host.client.post(f"/api/mcp/servers/{sid}/tools/elicit/call", json={"arguments": {"a": "1"}})
    )
    waiting = Background(
        lambda: host.client.post(f"/api/tools/mcp__{sid}__result/call", json={"arguments": {"a": "<b class=xssmark>"}})
    )
    pending_card(host)
    page.goto("/#/inbox")
    expect(page.locator("article.interaction-card")).to_have_count(1)
    expect(page.locator("article.approval-card")).to_have_count(1)
    assert_clean(page, "inbox")
    page.goto(f"/#/servers/{sid}/approvals")
    expect(page.locator("article.approval-card")).to_have_count(1)
    assert_clean(page, "approvals tab")
    page.get_by_role("button", name="Logs").click()
    expect(page.get_by_role("dialog")).to_contain_text("xssmark")
    assert_clean(page, "logs drawer")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()

    page.locator("article.approval-card").get_by_role("button", name="Deny").click()
    assert waiting.result().status_code == 403
    page.goto("/#/inbox")
    page.locator("article.interaction-card").get_by_role("button", name="Decline").click()
    assert asked.result().status_code == 200
    leaks = [url for url, text in bodies if SECRET in text]
    assert leaks == []


def test_thousands_of_tools_a_1_mb_description_and_a_deep_schema_keep_the_page_usable(page: Page, host: Host) -> None:
    page.add_init_script(WATCH)
    sid = add_ready_on_host(host, hostile_body("--big"))["id"]
    sign_in(page)
    page.goto(f"/#/servers/{sid}/tools")
    expect(page.get_by_text("2007 tools.")).to_be_visible()
    tools = page.locator("li.tool")
    # 100 tools are drawn at a time; schemas and playgrounds exist only once opened.
    assert tools.count() == 100
    assert page.locator("li.tool form").count() == 0
    assert page.locator("li.tool details pre").count() == 0
    more = page.get_by_role("button", name="Show 100 more (1,907 not shown)")
    # Reached at the end of the list and pressed like a person (the press lasts a few frames): the button
    # stays under the pointer while the tools scrolled into view are laid out (issue 16).
    press_like_a_person(page, more)
    expect(tools).to_have_count(200)
    expect(page.locator("li.tool").nth(100).locator("h3")).to_be_focused()
    # The 1 MB description is clipped until asked for: a megabyte never enters the list's layout.
    huge = page.locator('li.tool[data-tool="huge_description"]')
    assert len(huge.inner_text()) < 2_000
    assert len(page.locator("ul.tools").evaluate("(el) => el.textContent")) < 1_000_000
    huge.get_by_role("button", name="Show all 1,000,000 characters").click()
    expect(huge.get_by_label("Whole description")).to_be_focused()
    assert huge.get_by_label("Whole description").evaluate("(el) => el.textContent.length") == 1_000_000
    # The filter searches all 2,007 tools, not only those drawn.
    page.get_by_label("Filter tools").fill("t1999")
    expect(tools).to_have_count(1)
    expect(page.get_by_text("1 of 2007 tools match.")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^Show .* more"))).to_be_hidden()
    page.get_by_label("Filter tools").fill("deep")
    expect(tools).to_have_count(1)
    deep = page.locator('li.tool[data-tool="deep"]')
    deep.get_by_text("Input schema").click()
    expect(deep.locator("details pre")).to_contain_text('"properties"')
    deep.get_by_text("Call playground").click()
    expect(deep.get_by_role("form", name="Call deep")).to_be_visible()
    page.get_by_label("Filter tools").fill("")
    expect(tools).to_have_count(100)
    page.set_viewport_size({"width": 360, "height": 700})
    assert page.evaluate(NO_HORIZONTAL_SCROLL)
    assert_clean(page, "big catalog")


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_a_card_answered_in_another_tab_and_a_question_of_a_deleted_server_are_told_not_sent(
    page: Page, host: Host, context: BrowserContext
) -> None:
    sid = add_ready_on_host(host, hostile_body())["id"]
    sign_in(page)
    stale = new_window(page)  # both drawn: a background tab's clicks wait for frames (new_window)
    stale.route("**/api/events*", lambda route: route.abort())  # this tab never hears of the answer
    call = Background(lambda: host.client.post(f"/api/tools/mcp__{sid}__result/call", json={"arguments": {"a": "1"}}))
    asked = Background(
        lambda: host.client.post(f"/api/mcp/servers/{sid}/tools/elicit/call", json={"arguments": {"a": "1"}})
    )
    pending_card(host)
    page.goto("/#/inbox")
    stale.goto("/#/inbox")
    expect(page.locator("article.approval-card")).to_have_count(1)
    expect(stale.locator("article.approval-card")).to_have_count(1)
    expect(stale.locator("article.interaction-card")).to_have_count(1)
    # Its stream refused, the stale tab's feed falls back to polling a few seconds after it loaded, and
    # its inbox then reads the cards again and drops the answered ones: from here its reads of the card
    # lists fail, so it learns of each answer only from its own click's refusal (issue 16: the Deny
    # button was gone when a slow run reached it).
    stale.route(CARD_LISTS, lambda route: route.abort() if route.request.method == "GET" else route.continue_())

    page.locator("article.approval-card").get_by_role("button", name="Approve").click()
    assert call.result().status_code == 200
    stale.locator("article.approval-card").get_by_role("button", name="Deny").click()
    expect(stale.locator("#toast")).to_contain_text("Already approved")
    expect(stale.locator("article.approval-card")).to_have_count(0)

    assert host.client.delete(f"/api/mcp/servers/{sid}").status_code == 204
    assert asked.result().json()["error"]["code"] == "MCP_CONNECTION_LOST"
    stale.locator("article.interaction-card").get_by_role("button", name="Accept").click()
    expect(stale.locator("#toast")).to_contain_text("Your answer was not sent")
    expect(stale.locator("article.interaction-card")).to_have_count(0)
    page.reload()
    expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")
