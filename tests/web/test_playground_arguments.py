"""The call playground's arguments in a real browser (page40, page36, R-7.3, R-5.1): a field left
empty is not sent, of every kind the form draws, so the host's own check of the tool's `required`
refuses the call before anything reaches the server and its field errors show beside the fields; what
the form cannot say (an empty string) goes through the playground's JSON editor, whose text is kept
across views and fills the form; what the page cannot read (a number box holding no number, a JSON
box that does not parse) is said before anything is sent; a schema default is shown, and sent only
when chosen; property names such as `__proto__` round-trip exactly.

The server is the hand-written raw stdio server with its `typed` and `odd` tools
(tests/servers/raw_stdio.py), which answer with the arguments they received, exactly.
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


def open_playground(page: Page, host: Host, tool: str) -> Locator:
    """The playground form of the raw stdio server's `tool` (`typed` or `odd`), on a signed-in page."""
    add_ready_on_host(host, raw_stdio_body(typed_tool=True))
    sign_in(page)
    open_server(page, "Raw", "Tools")
    item = page.locator(f'li.tool[data-tool="{tool}"]')
    item.get_by_text("Call playground").click()
    return item.get_by_role("form", name=f"Call {tool}")


@pytest.fixture
def typed(page: Page, host: Host) -> Iterator[Locator]:
    """The playground form of the raw stdio server's `typed` tool, opened on a signed-in page."""
    yield open_playground(page, host, "typed")


def calls_sent(page: Page, tool: str = "typed") -> list[dict[str, Any]]:
    """The bodies of the playground's `tool` calls the page sends to the host, appended as they go."""
    bodies: list[dict[str, Any]] = []

    def record(request: Request) -> None:
        if request.url.endswith(f"/tools/{tool}/call"):
            bodies.append(json.loads(request.post_data or "null"))

    page.on("request", record)
    return bodies


def server_calls(host: Host) -> list[dict[str, Any]]:
    """The `tools/call` requests the host sent to the raw server (its request log)."""
    requests: list[dict[str, Any]] = host.client.get("/api/mcp/servers/raw/logs").json()["requests"]
    return [entry for entry in requests if entry["method"] == "tools/call"]


def field(form: Locator, name: str) -> Locator:
    return form.locator(f'[data-argument="{name}"]')


def call(form: Locator, tool: str = "typed") -> None:
    form.get_by_role("button", name=f"Call {tool}").click()


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

    # Back to the form: it shows what the JSON said; the "" a text box cannot hold is named, not lost.
    typed.get_by_role("button", name="Edit as JSON").click()
    expect(field(typed, "count").get_by_role("spinbutton")).to_have_value("1")
    expect(field(typed, "text").get_by_role("textbox")).to_have_value("")
    expect(typed.locator(".left-out")).to_contain_text('"text"')


def test_json_written_in_the_editor_is_kept_across_views_and_fills_the_form(
    page: Page, host: Host, typed: Locator
) -> None:
    """page36: before, switching to the form and back refilled the editor from the form, so an exact
    edit (an empty string, a name the schema does not list, the user's own layout) was lost, and the
    form never showed what the JSON said. JSON that does not parse keeps the editor open, text intact."""
    sent = calls_sent(page)
    field(typed, "text").get_by_role("textbox").fill("from the form")
    toggle = typed.get_by_role("button", name="Edit as JSON")
    toggle.click()
    editor = typed.get_by_label("Arguments (JSON object)")
    assert json.loads(editor.input_value()) == {"text": "from the form"}
    written = '{"text": "",   "count": 2, "flag": false, "mode": "", "tags": ["x"], "extra": null}'
    editor.fill(written)

    toggle.click()  # the form shows what the JSON says, and names what it cannot hold
    expect(field(typed, "count").get_by_role("spinbutton")).to_have_value("2")
    expect(field(typed, "flag").locator("option:checked")).to_have_text("false")
    expect(field(typed, "mode").locator("option:checked")).to_have_text('""')
    expect(field(typed, "text").get_by_role("textbox")).to_have_value("")
    assert json.loads(field(typed, "tags").get_by_role("textbox").input_value()) == ["x"]
    for name in ('"text"', '"extra"'):
        expect(typed.locator(".left-out")).to_contain_text(name)

    toggle.click()  # and back: exactly what was written
    expect(editor).to_have_value(written)

    # A field changed in the form replaces its own name in the JSON, nothing else.
    toggle.click()
    field(typed, "count").get_by_role("spinbutton").fill("5")
    toggle.click()
    assert json.loads(editor.input_value()) == {
        "text": "",
        "count": 5,
        "flag": False,
        "mode": "",
        "tags": ["x"],
        "extra": None,
    }

    # JSON that does not parse: the editor stays, with the reason, and keeps the text.
    editor.fill('{"text": ')
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(editor).to_be_visible()
    expect(editor).to_be_focused()
    expect(editor).to_have_value('{"text": ')
    expect(typed.locator(".field-error").filter(has_text="is not valid JSON")).to_be_visible()

    # Reset empties both views.
    typed.get_by_role("button", name="Reset", exact=True).click()
    assert json.loads(editor.input_value()) == {}
    toggle.click()
    expect(field(typed, "count").get_by_role("spinbutton")).to_have_value("")
    expect(field(typed, "tags").get_by_role("textbox")).to_have_value("")
    expect(typed.locator(".left-out")).to_be_hidden()
    assert sent == []
    assert server_calls(host) == []


def test_schema_defaults_are_shown_and_sent_only_when_chosen(page: Page, host: Host) -> None:
    """page36, R-5.1: before, every default was filled in and sent (`default: null` of an object as
    `null`); the server applies its own defaults, so the page shows them and sends one only when the
    user picks it ("Use default") or types it."""
    odd = open_playground(page, host, "odd")
    sent = calls_sent(page, "odd")
    note = field(odd, "note").get_by_role("textbox")
    expect(note).to_have_value("")
    expect(note).to_have_attribute("placeholder", 'default "hello"')
    expect(field(odd, "limit").get_by_role("spinbutton")).to_have_value("")
    expect(field(odd, "limit").get_by_role("spinbutton")).to_have_attribute("placeholder", "default 10")
    expect(field(odd, "fast").get_by_role("combobox")).to_have_value("")
    expect(field(odd, "fast").locator("option:checked")).to_have_text("(not set · default true)")
    expect(field(odd, "shape").get_by_role("textbox")).to_have_value("")
    expect(field(odd, "shape").get_by_role("textbox")).to_have_attribute("placeholder", "default null")
    # A string box cannot hold null: no "Use default", the hint points at the JSON editor.
    expect(field(odd, "maybe").get_by_role("textbox")).to_have_value("")
    expect(field(odd, "maybe").get_by_role("button", name="Use default")).to_have_count(0)
    expect(field(odd, "maybe").locator(".default-note")).to_contain_text("Edit as JSON can")

    call(odd, "odd")
    expect(odd.locator(".result")).to_contain_text("{}")
    assert [body["arguments"] for body in sent] == [{}]

    for name in ("limit", "fast", "shape"):
        field(odd, name).get_by_role("button", name="Use default").click()
    call(odd, "odd")
    chosen = {"fast": True, "limit": 10, "shape": None}
    expect(odd.locator(".result")).to_contain_text(json.dumps(chosen, sort_keys=True))
    assert [body["arguments"] for body in sent] == [{}, chosen]


def test_property_names_an_object_already_has_round_trip_exactly(page: Page, host: Host) -> None:
    """page36: arguments were built with `args[name] = value` on a plain object, so `__proto__` set
    the object's prototype and was never sent. Names now go out, come back from the JSON editor and
    fill the form exactly."""
    odd = open_playground(page, host, "odd")
    sent = calls_sent(page, "odd")
    field(odd, "__proto__").get_by_role("textbox").fill("p")
    field(odd, "constructor").get_by_role("spinbutton").fill("3")
    field(odd, "toString").get_by_role("combobox").select_option(label='"b"')
    call(odd, "odd")
    arguments = {"__proto__": "p", "constructor": 3, "toString": "b"}
    expect(odd.locator(".result")).to_contain_text(json.dumps(arguments, sort_keys=True))
    assert [body["arguments"] for body in sent] == [arguments]

    toggle = odd.get_by_role("button", name="Edit as JSON")
    toggle.click()
    editor = odd.get_by_label("Arguments (JSON object)")
    assert json.loads(editor.input_value()) == arguments
    editor.fill('{"__proto__": "q", "constructor": 4, "toString": "a"}')
    toggle.click()
    expect(field(odd, "__proto__").get_by_role("textbox")).to_have_value("q")
    expect(field(odd, "constructor").get_by_role("spinbutton")).to_have_value("4")
    expect(field(odd, "toString").locator("option:checked")).to_have_text('"a"')
    expect(odd.locator(".left-out")).to_be_hidden()


def raw_calls_sent(page: Page, tool: str) -> list[str]:
    """The bodies of the playground's `tool` calls as the page sends them: the exact text."""
    bodies: list[str] = []

    def record(request: Request) -> None:
        if request.url.endswith(f"/tools/{tool}/call"):
            bodies.append(request.post_data or "")

    page.on("request", record)
    return bodies


def test_the_json_editor_sends_its_text_itself_and_the_host_refuses_what_json_cannot_carry(
    page: Page, host: Host
) -> None:
    """fixb36 (R-7.3): the editor sent `JSON.stringify(JSON.parse(text))`, so `{"constructor": 1,
    "n": 1e400}` went as `{"constructor": 1, "n": null}` and the tool ran; `-0` went as 0 and
    99999999999999999999 as 100000000000000000000. Its text now goes as written: the host refuses
    1e400 with the value's position, shown beside the editor; a wide integer, `-0` and the order of
    keys leave the page as written, and the server (which echoes what it received) gets the integer."""
    odd = open_playground(page, host, "odd")
    sent = raw_calls_sent(page, "odd")
    odd.get_by_role("button", name="Edit as JSON").click()
    editor = odd.get_by_label("Arguments (JSON object)")
    editor.fill('{"constructor":1,"n":1e400}')
    with page.expect_response(lambda response: response.url.endswith("/tools/odd/call")) as answered:
        call(odd, "odd")
    assert answered.value.status == 422
    problem = "is NaN or infinite (or a number too large, such as 1e400), which JSON cannot carry"
    expect(odd.locator(".field-error").filter(has_text="arguments.n")).to_have_text(
        f"arguments.n: {problem} (FIELD_INVALID)"
    )
    expect(editor).to_have_attribute("aria-invalid", "true")
    assert sent[0].startswith('{"arguments":{"constructor":1,"n":1e400},"operation_id":"'), sent
    assert server_calls(host) == []

    written = '{"toString": "b", "constructor": 99999999999999999999, "zero": -0}'
    editor.fill(written)
    call(odd, "odd")
    expect(odd.locator(".result")).to_contain_text('"constructor": 99999999999999999999')
    assert sent[1].startswith('{"arguments":' + written + ',"operation_id":"'), sent
    assert len(server_calls(host)) == 1  # the refused one never reached the server
    expect(odd.locator(".field-error").filter(has_text="arguments.n")).to_be_hidden()


def test_the_forms_number_box_refuses_a_whole_number_it_cannot_send_exactly(page: Page, host: Host) -> None:
    """fixb36: the number box sent 99999999999999999999 as 100000000000000000000 (a double). It is
    refused in the page, beside the field, with the way to send it; 2^53 and fractions still go."""
    odd = open_playground(page, host, "odd")
    sent = calls_sent(page, "odd")
    box = field(odd, "constructor").get_by_role("spinbutton")
    box.fill("99999999999999999999")
    call(odd, "odd")
    expect(field(odd, "constructor").locator(".field-error")).to_have_text(
        "is a whole number too large to send exactly from the form (beyond 2^53); Edit as JSON sends it as typed"
        " (NUMBER_INEXACT)"
    )
    expect(box).to_be_focused()
    box.fill("1000000000000000000000")  # exact as a double, but it would go out as 1e+21
    call(odd, "odd")
    expect(field(odd, "constructor").locator(".field-error")).to_contain_text("(NUMBER_INEXACT)")
    assert sent == []
    box.fill("9007199254740992")
    call(odd, "odd")
    expect(odd.locator(".result")).to_contain_text('"constructor": 9007199254740992')
    assert [body["arguments"] for body in sent] == [{"constructor": 9007199254740992}]
