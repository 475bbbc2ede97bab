"""Approvals and elicitation cards in a real browser (issue 7; R-1.4, R-5.3, R-6.1): a tool's
approval policy set from the Tools tab (a high-risk change that asks first and needs a new
confirmation; a stale page gets a 409 with a reload), agent calls that wait for a card in the
inbox and on the server's Approvals tab (approve sends the call, deny refuses it, a card survives a
reload), and elicitation forms generated from the requested schema with its defaults filled —
against a real `mcp-center serve` and real MCP servers on loopback.
"""

from __future__ import annotations

import json
import re
import signal
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect

from tests.support.browser import (
    NO_HORIZONTAL_SCROLL,
    UNLABELLED,
    PageErrors,
    confirm_test_enable,
    go_to,
    new_context,
    open_server,
    sign_in,
)
from tests.support.http import Background, wait_for
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host, running_host
from tests.support.spare_serves import SpareServes

pytestmark = pytest.mark.browser

RECORD = "/api/tools/mcp__capabilities__record/call"
ASK = "/api/mcp/servers/capabilities/tools/ask/call"


def ask(host: Host, question: str) -> Background:
    """Call the capabilities server's `ask` tool in the background: it asks `question` back (a card)."""
    return Background(lambda: host.client.post(ASK, json={"arguments": {"question": question}}))


def ready_capabilities(host: Host, url: str) -> dict[str, Any]:
    return add_ready_on_host(host, {"name": "Capabilities", "transport": "streamable_http", "url": url})


def open_inbox(page: Page) -> None:
    go_to(page, "Inbox")
    expect(page.get_by_role("heading", name="Inbox", exact=True)).to_be_visible()


def text_of(response: Any) -> str:
    assert response.status_code == 200, response.text
    return "\n".join(block["text"] for block in response.json()["content"] if block["type"] == "text")


def control(card: Locator, label: str) -> Locator:
    """The form control labelled `label` (a required field's label ends in " *")."""
    return card.get_by_label(re.compile(rf"^{re.escape(label)}( \*)?$"))


def field(card: Locator, label: str) -> Locator:
    """The `.field` box of the control labelled `label` (its error shows there)."""
    return card.locator(".field").filter(has=card.page.get_by_label(re.compile(rf"^{re.escape(label)}( \*)?$")))


def test_a_tool_policy_is_set_from_the_tools_tab_after_a_warning_and_needs_a_new_confirmation(
    page: Page, host: Host, echo_url: str
) -> None:
    add_ready_on_host(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    sign_in(page)
    open_server(page, "Echo", "Tools")
    policy = page.get_by_role("group", name="Approval policy for echo")
    expect(policy.get_by_role("radio", name=re.compile("^Ask"))).to_be_checked()
    save = policy.get_by_role("button", name="Save policy")
    expect(save).to_be_disabled()

    policy.get_by_role("radio", name=re.compile("^Allow")).check()
    save.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("the server is disabled until you confirm the new summary")
    dialog.get_by_role("button", name="Cancel").click()
    assert host.client.get("/api/mcp/servers/echo").json()["tool_policies"] == {}

    save.click()
    page.get_by_role("dialog").get_by_role("button", name="Set policy").click()
    expect(page.get_by_text("Tool permissions changed: confirm the new summary")).to_be_visible()
    view = host.client.get("/api/mcp/servers/echo").json()
    assert (view["tool_policies"], view["trusted"], view["enabled"]) == ({"echo": "allow"}, False, False)
    expect(page.get_by_test_id("digest")).to_have_text(view["digest"])

    confirm_test_enable(page)
    open_server(page, "Echo", "Tools")
    expect(
        page.get_by_role("group", name="Approval policy for echo").get_by_role("radio", name=re.compile("^Allow"))
    ).to_be_checked()
    expect(
        page.get_by_role("group", name="Approval policy for add").get_by_role("radio", name=re.compile("^Ask"))
    ).to_be_checked()
    # `allow` took effect: an agent's call runs without an approval.
    assert (
        text_of(host.client.post("/api/tools/mcp__echo__echo/call", json={"arguments": {"text": "no card"}}))
        == "no card"
    )
    assert host.client.get("/api/approvals").json()["approvals"] == []

    # Another client changes the server after this tab read it: the page's save is refused, not overwritten.
    fresh = host.client.get("/api/mcp/servers/echo").json()
    changed = host.client.put(
        "/api/mcp/servers/echo/tools/add/policy", json={"policy": "deny", "version": fresh["version"]}
    )
    assert changed.status_code == 200, changed.text
    policy = page.get_by_role("group", name="Approval policy for add")
    policy.get_by_role("radio", name=re.compile("^Allow")).check()
    policy.get_by_role("button", name="Save policy").click()
    page.get_by_role("dialog").get_by_role("button", name="Set policy").click()
    alert = policy.get_by_role("alert")
    expect(alert).to_contain_text("This server changed since this page read it")
    assert host.client.get("/api/mcp/servers/echo").json()["tool_policies"] == {"echo": "allow", "add": "deny"}
    alert.get_by_role("button", name="Reload").click()
    expect(page.get_by_text("confirm, test and enable the server first")).to_be_visible()  # deny disabled it


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_an_agent_call_waits_for_approval_in_the_inbox_and_on_the_servers_tab(
    page: Page, host: Host, caps_url: str
) -> None:
    ready_capabilities(host, caps_url)
    sign_in(page)
    badge = page.locator("#inbox-count")
    expect(badge).to_be_hidden()
    open_inbox(page)
    expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")

    call = Background(lambda: host.client.post(RECORD, json={"arguments": {"note": "first"}}))
    card = page.locator("article.approval-card")
    expect(card).to_have_count(1)  # arrives live: the page is not reloaded
    expect(badge).to_have_text("1 card waiting")
    expect(card.get_by_role("heading")).to_have_text("Tool call: record")
    expect(card).to_contain_text("mcp__capabilities__record")
    expect(card.locator("pre.arguments")).to_contain_text('"note": "first"')
    expect(card).to_contain_text("Untrusted hints from the server")
    expect(card.locator(".hint-badge", has_text="read-only")).to_be_visible()
    # Each badge's tooltip says what the server claims with that value, never the opposite.
    expect(card.locator(".hint-badge", has_text="not destructive")).to_have_attribute(
        "title", "The server says it only adds, never deletes or overwrites (hint only)"
    )
    expect(card.get_by_text("Asked by")).to_be_visible()
    expect(card).to_contain_text("the REST API (POST /api/tools/…/call, with the admin token)")
    expect(card.get_by_role("link", name="capabilities")).to_be_visible()
    expect(card.locator("time")).to_contain_text(re.compile(r"\(in \d+ (min|s)\)"))

    # The same card on the server's Approvals tab; approving it there sends the call.
    open_server(page, "Capabilities", "Approvals")
    tab_card = page.locator("article.approval-card")
    expect(tab_card).to_contain_text('"note": "first"')
    tab_card.get_by_role("button", name="Approve").click()
    assert text_of(call.result()) == "recorded first"
    expect(page.locator("article.approval-card")).to_have_count(0)
    expect(page.get_by_role("heading", name="Tool calls waiting for approval")).to_be_focused()
    expect(badge).to_be_hidden()

    # Deny: the agent gets MCP_APPROVAL_DENIED and the server never sees the call.
    open_inbox(page)
    denied = Background(lambda: host.client.post(RECORD, json={"arguments": {"note": "second"}}))
    expect(page.locator("article.approval-card")).to_contain_text('"note": "second"')
    page.locator("article.approval-card").get_by_role("button", name="Deny").click()
    answer = denied.result()
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "MCP_APPROVAL_DENIED"
    expect(page.locator("article.approval-card")).to_have_count(0)

    # A card comes from the host, so it survives a reload of the page; two cards, answered in turn,
    # pass the focus from one to the next.
    third = Background(lambda: host.client.post(RECORD, json={"arguments": {"note": "third"}}))
    expect(page.locator("article.approval-card")).to_have_count(1)
    fourth = Background(lambda: host.client.post(RECORD, json={"arguments": {"note": "fourth"}}))
    expect(page.locator("article.approval-card")).to_have_count(2)
    page.reload()
    expect(page.locator("article.approval-card")).to_have_count(2)
    expect(badge).to_have_text("2 cards waiting")
    first = page.locator("article.approval-card").first
    expect(first).to_contain_text('"note": "third"')
    first.get_by_role("button", name="Approve").click()
    expect(page.locator("article.approval-card")).to_have_count(1)
    expect(page.locator("article.approval-card h3")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # the server link, then Approve
    expect(page.locator("article.approval-card").get_by_role("button", name="Approve")).to_be_focused()
    page.keyboard.press("Enter")
    assert text_of(third.result()) == "recorded third"
    assert text_of(fourth.result()) == "recorded fourth"
    expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")
    # A decision on a call that already ended is told as such (409), not pretended.
    closed = host.client.get("/api/approvals", params={"include_closed": "true"}).json()["approvals"][0]
    again = host.client.post(f"/api/approvals/{closed['id']}", json={"decision": "approve"})
    assert again.status_code == 409


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_an_elicitation_form_is_generated_from_the_schema_with_defaults_and_sends_the_edited_answer(
    page: Page, host: Host, caps_url: str
) -> None:
    ready_capabilities(host, caps_url)
    sign_in(page)
    open_inbox(page)
    call = ask(host, "Who are you?")
    card = page.locator("article.interaction-card")
    expect(card).to_have_count(1)
    expect(page.locator("#inbox-count")).to_have_text("1 card waiting")
    expect(card.locator("blockquote.server-message")).to_have_text("Who are you?")
    expect(card).to_contain_text("ask called by you")
    # Every control comes from the requested schema, with its default filled in.
    expect(control(card, "Name")).to_have_value("Ada")
    expect(control(card, "age")).to_have_value("36")
    expect(control(card, "age")).to_have_attribute("type", "number")
    expect(control(card, "score")).to_have_value("9.5")
    expect(control(card, "status")).to_have_value("active")
    expect(control(card, "verified")).to_be_checked()
    colors = card.get_by_role("group", name="colors")
    expect(colors.get_by_label("red")).to_be_checked()
    expect(colors.get_by_label("blue")).not_to_be_checked()
    expect(control(card, "email")).to_have_attribute("type", "email")
    expect(control(card, "email")).to_have_value("")
    expect(control(card, "Password")).to_have_attribute("type", "password")

    control(card, "Name").fill("Grace")
    control(card, "age").fill("200")
    control(card, "email").fill("not an address")
    card.get_by_role("button", name="Accept").click()
    # The host's validation, next to each field; the card stays open and nothing reached the server.
    expect(field(card, "age").locator(".field-error")).to_have_text("must be at most 150 (VALUE_OUT_OF_RANGE)")
    expect(field(card, "email").locator(".field-error")).to_have_text("must be a valid email (FORMAT_INVALID)")
    expect(control(card, "age")).to_have_attribute("aria-invalid", "true")
    expect(control(card, "age")).to_be_focused()
    expect(card.get_by_role("alert")).to_contain_text("Nothing was sent")

    control(card, "age").fill("85")
    control(card, "email").fill("grace@example.com")
    control(card, "status").select_option("pending")
    control(card, "verified").uncheck()
    colors.get_by_label("blue").check()
    card.get_by_role("button", name="Accept").click()
    result = text_of(call.result())
    assert result.startswith("accept: "), result
    for part in (
        "'name': 'Grace'",
        "'age': 85",
        "'score': 9.5",
        "'status': 'pending'",
        "'verified': False",
        "'colors': ['red', 'blue']",
        "'email': 'grace@example.com'",
    ):
        assert part in result, (part, result)
    assert "password" not in result  # left empty: not sent
    expect(card).to_have_count(0)
    expect(page.locator("#inbox-count")).to_be_hidden()

    # Decline and cancel, answered from the server's Approvals tab.
    open_server(page, "Capabilities", "Approvals")
    for button, said in (("Decline", "decline: None"), ("Cancel", "cancel: None")):
        asked = ask(host, "Again?")
        tab_card = page.locator("article.interaction-card")
        expect(tab_card).to_have_count(1)
        tab_card.get_by_role("button", name=button, exact=True).click()
        assert text_of(asked.result()) == said
        expect(tab_card).to_have_count(0)
    states = [c["state"] for c in host.client.get("/api/interactions").json()["interactions"]]
    assert states == ["cancelled", "declined", "accepted"]


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_a_question_survives_a_reload_and_an_answer_to_a_closed_card_says_so(
    page: Page, host: Host, caps_url: str
) -> None:
    ready_capabilities(host, caps_url)
    sign_in(page)
    open_inbox(page)
    call = ask(host, "Still there?")
    card = page.locator("article.interaction-card")
    expect(card).to_have_count(1)
    page.reload()
    expect(card.locator("blockquote.server-message")).to_have_text("Still there?")
    expect(control(card, "Name")).to_have_value("Ada")

    # Answered elsewhere (the API) while the page's own answer is on its way: the page is told (409).
    card_id = card.get_attribute("data-interaction")
    declined: list[int] = []

    def answer_elsewhere_first(route: Route) -> None:
        declined.append(host.client.post(f"/api/interactions/{card_id}", json={"action": "decline"}).status_code)
        route.continue_()

    page.route(f"**/api/interactions/{card_id}", answer_elsewhere_first)
    card.get_by_role("button", name="Accept").click()
    expect(page.locator("#toast")).to_contain_text("This request is declined: it was answered elsewhere")
    expect(card).to_have_count(0)
    assert declined == [200]
    assert text_of(call.result()) == "decline: None"


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_server_everything_s_form_shows_titled_enums_multi_selects_formats_and_a_required_field(
    page: Page, host: Host, everything_http: str
) -> None:
    # The worker's server-everything over Streamable HTTP (tests/web/conftest.py): over stdio, adding
    # it ready started node twice (issue 16).
    add_ready_on_host(host, {"name": "Everything", "transport": "streamable_http", "url": f"{everything_http}/mcp"})
    sign_in(page)
    open_server(page, "Everything", "Approvals")
    call = Background(
        lambda: host.client.post(
            "/api/mcp/servers/everything/tools/trigger-elicitation-request/call", json={"arguments": {}}
        )
    )
    card = page.locator("article.interaction-card")
    expect(card).to_have_count(1)
    name = control(card, "String (name)")
    expect(name).to_have_attribute("aria-required", "true")
    expect(control(card, "String with email format (email)")).to_have_attribute("type", "email")
    expect(control(card, "String with uri format (homepage)")).to_have_attribute("type", "url")
    expect(control(card, "String with date format (birthdate)")).to_have_attribute("type", "date")
    expect(control(card, "Integer")).to_have_value("42")
    expect(control(card, "String with default (firstLine)")).to_have_value("It was a dark and stormy night.")
    hero = control(card, "Titled Single Select Enum (titledSingleSelectEnum)")
    expect(hero.locator("option:checked")).to_have_text("Superman")
    expect(control(card, "Legacy Titled Single Select Enum (legacyTitledEnum)").locator("option:checked")).to_have_text(
        "Cats"
    )
    fish = card.get_by_role("group", name=re.compile("^Titled Multiple Select Enum"))
    expect(fish.get_by_label("Tuna")).to_be_checked()
    expect(fish.get_by_label("Salmon")).not_to_be_checked()
    instruments = card.get_by_role("group", name=re.compile("^Untitled Multiple Select Enum"))
    expect(instruments.get_by_label("Guitar")).to_be_checked()
    # The server's description and mcp-center's note on the limits are two lines, not one run-on
    # sentence (the description ran straight into "Choose 1 to 3", a new user's trial, docs36).
    about_instruments = (
        card.locator(".field")
        .filter(has=page.get_by_role("group", name=re.compile("^Untitled Multiple Select Enum")))
        .locator(".hint")
    )
    expect(about_instruments).to_have_text(["Choose your favorite instruments", "Choose 1–3."])
    described, noted = (box.bounding_box() for box in about_instruments.all())
    assert described is not None and noted is not None
    assert noted["y"] >= described["y"] + described["height"]  # the note starts below the description
    expect(instruments).to_have_accessible_description("Choose your favorite instruments Choose 1–3.")

    # The required name is empty: the host refuses, the error sits next to the field, focus goes there.
    card.get_by_role("button", name="Accept").click()
    expect(field(card, "String (name)").locator(".field-error")).to_have_text("is required (FIELD_REQUIRED)")
    expect(name).to_be_focused()
    # Too many instruments: a multi-select's limits are checked by the host too.
    for label in ("Piano", "Violin", "Drums"):
        instruments.get_by_label(label).check()
    card.get_by_role("button", name="Accept").click()
    instruments_error = (
        card.locator(".field")
        .filter(has=page.get_by_role("group", name=re.compile("^Untitled Multiple Select Enum")))
        .locator(".field-error")
    )
    expect(instruments_error).to_have_text("must have at most 3 choice(s) (LENGTH_INVALID)")

    instruments.get_by_label("Drums").uncheck()
    name.fill("Ada Lovelace")
    control(card, "String with date format (birthdate)").fill("1815-12-10")
    control(card, "String with uri format (homepage)").fill("https://ada.example/")
    hero.select_option(label="Wonder Woman")
    card.get_by_role("button", name="Accept").click()
    text = text_of(call.result())
    assert "- Name: Ada Lovelace" in text
    raw = json.loads(text.split("Raw result: ", 1)[1])
    assert raw == {
        "action": "accept",
        "content": {
            "name": "Ada Lovelace",
            "firstLine": "It was a dark and stormy night.",
            "homepage": "https://ada.example/",
            "birthdate": "1815-12-10",
            "integer": 42,
            "number": 3.14,
            "untitledSingleSelectEnum": "Monica",
            "untitledMultipleSelectEnum": ["Guitar", "Piano", "Violin"],
            "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-1",
        },
    }
    expect(card).to_have_count(0)


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_the_inbox_with_cards_fits_a_narrow_window_and_labels_every_control(
    browser: Browser, host: Host, caps_url: str, page_errors: PageErrors
) -> None:
    ready_capabilities(host, caps_url)
    context = new_context(browser, host, width=400, height=800)
    try:
        page = context.new_page()
        page_errors.watch(page)
        sign_in(page)
        open_inbox(page)
        waiting = Background(lambda: host.client.post(RECORD, json={"arguments": {"note": "x" * 300}}))
        asked = ask(host, "Narrow?")
        expect(page.locator("article.approval-card")).to_have_count(1)
        expect(page.locator("article.interaction-card")).to_have_count(1)
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        assert page.evaluate(UNLABELLED) == []
        open_server(page, "Capabilities", "Approvals")
        expect(page.locator("article.inbox-card")).to_have_count(2)
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        open_server(page, "Capabilities", "Tools")
        expect(page.get_by_role("group", name="Approval policy for record")).to_be_visible()
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        assert page.evaluate(UNLABELLED) == []
        page.set_viewport_size({"width": 1280, "height": 800})
        open_inbox(page)
        assert page.evaluate(NO_HORIZONTAL_SCROLL)
        page.locator("article.approval-card").get_by_role("button", name="Deny").click()
        page.locator("article.interaction-card").get_by_role("button", name="Cancel", exact=True).click()
        assert waiting.result().status_code == 403
        assert text_of(asked.result()) == "cancel: None"
    finally:
        context.close()
    assert page_errors.messages == []


def test_a_question_interrupted_by_a_restart_is_counted_and_its_call_can_be_retried(
    browser: Browser, spare_serves: SpareServes, caps_url: str, page_errors: PageErrors
) -> None:
    """R-6.3: after a restart the interrupted card waits for the user (badge, summary) until retried.
    The first serve is the worker's spare (started ahead, tests/web/conftest.py); the restart runs
    on its data directory."""
    with spare_serves.take() as host:
        place = host.data_dir.parent
        ready_capabilities(host, caps_url)
        caller = ask(host, "Before the restart?")
        wait_for(lambda: host.client.get("/api/interactions", params={"state": "pending"}).json()["interactions"])
        host.proc.send_signal(signal.SIGTERM)
        assert caller.result().status_code == 503
        host.proc.wait(timeout=30)
    with running_host(place) as host:
        context = new_context(browser, host)
        try:
            page = context.new_page()
            page_errors.watch(page)
            sign_in(page)
            expect(page.locator("#inbox-count")).to_have_text("1 card waiting")
            open_inbox(page)
            expect(page.get_by_test_id("inbox-summary")).to_have_text("1 interrupted call can be retried.")
            card = page.locator('article.interaction-card[data-state="interrupted"]')
            card.get_by_role("button", name="Retry the call").click()
            page.get_by_role("dialog").get_by_role("button", name="Re-send the call").click()
            # The re-sent call asks again: a new question card, answered here, lets the retry finish.
            again = page.locator('article.interaction-card[data-state="pending"]')
            expect(again.locator("blockquote.server-message")).to_have_text("Before the restart?")
            again.get_by_role("button", name="Decline").click()
            expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")
            expect(page.locator("#inbox-count")).to_be_hidden()
            # The re-sent call's result stays on the page (not only in a toast) until dismissed.
            result = page.get_by_role("article", name=re.compile("^Result of the re-sent call ask"))
            expect(result).to_contain_text("decline: None")
            expect(result.get_by_role("heading")).to_be_focused()
            result.get_by_role("button", name="Dismiss").click()
            expect(result).to_have_count(0)
        finally:
            context.close()
        closed = host.client.get("/api/interactions", params={"state": "interrupted"}).json()["interactions"]
        assert [c["retry"]["done"] for c in closed] == [True]
