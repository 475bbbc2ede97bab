"""The call playground's arguments in a real browser (page40, R-7.3, R-5.1): a field left empty is
not sent, of every kind the form draws, so the host's own check of the tool's `required` refuses the
call before anything reaches the server and its field errors show beside the fields; what the form
cannot say (an empty string) goes through the playground's JSON editor; what the page cannot read
(a number box holding no number, a JSON box that does not parse) is said before anything is sent.

The server is the hand-written raw stdio server with its `typed` tool (tests/servers/raw_stdio.py),
which answers with the arguments it received, exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, Request, expect

from tests.support.browser import open_server, raw_stdio_body, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

REQUIRED = ("text", "count", "flag", "mode", "tags")
OPTIONAL = ("ratio", "options")


@pytest.fixture
def typed(page: Page, host: Host) -> Iterator[Locator]:
    """The playground form of the raw stdio server's `typed` tool, opened on a signed-in page."""
    add_ready_on_host(host, raw_stdio_body(typed_tool=True))
    sign_in(page)
    open_server(page, "Raw", "Tools")
    item = page.locator('li.tool[data-tool="typed"]')
    item.get_by_text("Call playground").click()
    yield item.get_by_role("form", name="Call typed")


def calls_sent(page: Page) -> list[dict[str, Any]]:
    """The bodies of the playground's `typed` calls the page sends to the host, appended as they go."""
    bodies: list[dict[str, Any]] = []

    def record(request: Request) -> None:
        if request.url.endswith("/tools/typed/call"):
            bodies.append(json.loads(request.post_data or "null"))

    page.on("request", record)
    return bodies


def server_calls(host: Host) -> list[dict[str, Any]]:
    """The `tools/call` requests the host sent to the raw server (its request log)."""
    requests: list[dict[str, Any]] = host.client.get("/api/mcp/servers/raw/logs").json()["requests"]
    return [entry for entry in requests if entry["method"] == "tools/call"]


def field(form: Locator, name: str) -> Locator:
    return form.locator(f'[data-argument="{name}"]')


def call(form: Locator) -> None:
    form.get_by_role("button", name="Call typed").click()


def test_every_field_left_empty_is_not_sent_and_the_hosts_refusal_shows_beside_each_required_one(
    page: Page, host: Host, typed: Locator
) -> None:
    """Before: `{"text": "", "flag": false, "mode": "fast"}` went out (an empty box, an unchecked
    checkbox and an enum's first option), so the host named only two of the five missing names."""
    sent = calls_sent(page)
    with page.expect_response(lambda response: response.url.endswith("/tools/typed/call")) as answered:
        call(typed)
    assert answered.value.status == 422
    alert = typed.locator('.call-output [role="alert"]')
    expect(alert).to_have_text(
        "REQUEST_INVALID: missing required arguments 'text', 'count', 'flag', 'mode', 'tags' of tool 'typed'"
    )
    assert sent == [{"arguments": {}, "operation_id": sent[0]["operation_id"]}]
    for name in REQUIRED:
        expect(field(typed, name).locator(".field-error")).to_have_text("is required by the tool (FIELD_REQUIRED)")
        expect(field(typed, name).locator("input, select, textarea")).to_have_attribute("aria-invalid", "true")
    for name in OPTIONAL:
        expect(field(typed, name).locator(".field-error")).to_be_hidden()
    expect(field(typed, "text").get_by_role("textbox")).to_be_focused()
    assert server_calls(host) == []

    # Filled in, the errors go and the server gets exactly what the fields say; the optional fields
    # left empty are still not sent. The enum's "" is a choice of its own, not an empty field.
    field(typed, "text").get_by_role("textbox").fill("hi")
    field(typed, "count").get_by_role("spinbutton").fill("3")
    field(typed, "flag").get_by_role("combobox").select_option(label="false")
    field(typed, "mode").get_by_role("combobox").select_option(label='""')
    field(typed, "tags").get_by_role("textbox").fill('["a"]')
    call(typed)
    expect(typed.locator(".result")).to_contain_text(
        '{"count": 3, "flag": false, "mode": "", "tags": ["a"], "text": "hi"}'
    )
    for name in REQUIRED:
        expect(field(typed, name).locator(".field-error")).to_be_hidden()
    assert sent[-1]["arguments"] == {"count": 3, "flag": False, "mode": "", "tags": ["a"], "text": "hi"}
    assert len(server_calls(host)) == 1


def test_the_json_editor_sends_a_real_empty_string_and_what_the_page_cannot_read_is_never_sent(
    page: Page, host: Host, typed: Locator
) -> None:
    """An empty string is a value a tool may need: the JSON editor sends it as written. A number box
    holding no number and a JSON box that does not parse stop the call in the page (before: the
    number was left out without a word)."""
    sent = calls_sent(page)
    field(typed, "count").get_by_role("spinbutton").press_sequentially("1e")
    field(typed, "options").get_by_role("textbox").fill("{oops")
    field(typed, "text").get_by_role("textbox").fill("kept")
    call(typed)
    expect(typed.locator('.call-output [role="alert"]')).to_contain_text("Not sent")
    expect(field(typed, "count").locator(".field-error")).to_have_text("is not a number (NUMBER_INVALID)")
    expect(field(typed, "options").locator(".field-error")).to_contain_text("is not valid JSON")
    expect(field(typed, "count").get_by_role("spinbutton")).to_be_focused()

    # The editor starts from what the form holds (what it cannot read left out).
    typed.get_by_role("button", name="Edit as JSON").click()
    editor = typed.get_by_label("Arguments (JSON object)")
    expect(editor).to_be_focused()
    assert json.loads(editor.input_value()) == {"text": "kept"}
    editor.fill("[1, 2]")
    call(typed)
    expect(typed.locator(".field-error").filter(has_text="must be a JSON object")).to_be_visible()
    assert sent == []

    arguments: dict[str, object] = {"text": "", "count": 1, "flag": True, "mode": "fast", "tags": []}
    editor.fill(json.dumps(arguments))
    call(typed)
    expect(typed.locator(".result")).to_contain_text(json.dumps(arguments, sort_keys=True))
    assert [body["arguments"] for body in sent] == [arguments]
    assert len(server_calls(host)) == 1

    # Back to the form: it kept its own values.
    typed.get_by_role("button", name="Edit as JSON").click()
    expect(field(typed, "text").get_by_role("textbox")).to_have_value("kept")
