"""The page's history after a destructive action, and names a page may mistake for its own (page36).

History: deleting a server and applying an import take the place of the page left in the browser's
history, so Back never lands on a deleted server's page or an applied import; a page of a server
deleted in this tab that is still further back shows the list with a notice, never the server.

Names: a secret env var named `constructor` or `__proto__` is not "configured" (a plain object's
`states["constructor"]` is Object), and an elicitation answer, an approval's hints and a prompt's
arguments keep every name exactly.
Real `mcp-center serve`, real chromium, 127.0.0.1 only.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import RAW_STDIO, go_to, open_server, raw_stdio_body, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

NOT_FOUND = re.compile("not found", re.IGNORECASE)


def create_remote(host: Host, name: str, url: str) -> None:
    created = host.client.post("/api/mcp/servers", json={"name": name, "transport": "streamable_http", "url": url})
    assert created.status_code == 201, created.text


def delete_here(page: Page) -> None:
    """Delete the server whose overview is open, through its confirmation dialog; wait for the list."""
    page.get_by_role("button", name="Delete server").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()


def test_deleting_a_server_takes_its_pages_place_in_the_history(page: Page, host: Host, echo_url: str) -> None:
    """Before: the list was pushed after the deleted server's page, so Back showed "Server not found"."""
    create_remote(host, "Doomed", echo_url)
    sign_in(page)
    open_server(page, "Doomed")
    entries = page.evaluate("history.length")
    delete_here(page)
    assert page.evaluate("history.length") == entries

    page.go_back()
    expect(page).not_to_have_url(re.compile(r"servers/doomed"))
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name=NOT_FOUND)).to_have_count(0)


def test_back_to_an_older_page_of_a_server_deleted_here_shows_the_list_and_says_why(
    page: Page, host: Host, echo_url: str
) -> None:
    """The history before the deleted page cannot be rewritten: its Tools tab, reached by Back, now
    gives its place to the list with a notice (before: "Server not found")."""
    create_remote(host, "Doomed", echo_url)
    sign_in(page)
    open_server(page, "Doomed", "Tools")
    expect(page).to_have_url(re.compile(r"#/servers/doomed/tools$"))
    page.get_by_role("navigation", name="Server sections").get_by_role("link", name="Overview").click()
    delete_here(page)

    page.go_back()
    expect(page.get_by_role("status").filter(has_text="doomed was deleted.")).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"servers/doomed"))
    expect(page.get_by_role("heading", name=NOT_FOUND)).to_have_count(0)
    assert host.client.get("/api/mcp/servers/doomed").status_code == 404


def test_applying_an_import_takes_the_import_pages_place_in_the_history(page: Page, host: Host) -> None:
    """Before: Back after "Create 1 server" went to the import page of a file already applied."""
    content = json.dumps({"mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time"]}}})
    sign_in(page)
    go_to(page, "Import")
    page.get_by_label("Configuration (JSON)").fill(content)
    page.get_by_role("button", name="Preview").click()
    entries = page.evaluate("history.length")
    page.get_by_role("region", name="Preview").get_by_role("button", name="Create 1 server").click()
    expect(page.get_by_role("status").filter(has_text="Imported 1 server (clock)")).to_be_visible()
    assert page.evaluate("history.length") == entries

    page.go_back()
    expect(page).not_to_have_url(re.compile(r"#/import"))
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    expect(page.get_by_label("Configuration (JSON)")).to_have_count(0)


def test_a_secret_named_like_an_object_property_is_not_set_until_one_is_typed(page: Page, host: Host) -> None:
    """Before: `constructor` read as "configured" with `function Object() { [native code] }` in its
    password box (a save would have sent it as the secret), `__proto__` as "[object Object]"."""
    names = ["constructor", "__proto__", "toString"]
    body = {
        "name": "Named",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(RAW_STDIO)],
        "secret_env": names,
    }
    created = host.client.post("/api/mcp/servers", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["secret_env"] == {name: {"configured": False} for name in names}
    sign_in(page)
    open_server(page, "Named", "Configuration")
    for name in names:
        row = page.locator(f'.row.secret[data-field="secret_env.{name}"]')
        expect(row.locator(".secret-name")).to_have_value(name)
        expect(row.locator(".secret-value")).to_have_value("")
        expect(row.locator(".secret-value")).to_have_attribute("placeholder", "value")
        expect(row).to_contain_text("not set")


ELICITATION_FORM = """async () => {
  const src = document.querySelector("script[type=module]").src;
  const { elicitationForm } = await import(new URL("cards.js", src).href);
  const form = elicitationForm([
    { name: "__proto__", kind: "string" },
    { name: "constructor", kind: "integer" },
    { name: "toString", kind: "string", format: "toString" },
    { name: "valueOf", kind: "boolean", required: true },
  ]);
  const inputs = form.element.querySelectorAll("input");
  inputs[0].value = "p";
  inputs[1].value = "3";
  inputs[2].value = "t";
  inputs[3].checked = true;
  return { content: JSON.stringify(form.read()), text: form.element.textContent, type: inputs[2].type };
}"""


def test_an_elicitation_answer_keeps_every_field_name(page: Page, host: Host) -> None:
    """cards.js's form, in the page's own module: before, `content[name] = value` dropped `__proto__`
    and a field format `toString` read as a function ("Expects function toString() ...")."""
    sign_in(page)
    answer = page.evaluate(ELICITATION_FORM)
    assert json.loads(answer["content"]) == {"__proto__": "p", "constructor": 3, "toString": "t", "valueOf": True}
    assert '"__proto__"' in answer["content"]
    assert "Expects toString." in answer["text"]
    assert answer["type"] == "text"


APPROVAL_HINTS = """async () => {
  const src = document.querySelector("script[type=module]").src;
  const { approvalCard } = await import(new URL("cards.js", src).href);
  const card = approvalCard(
    {
      id: "approval-1",
      server_id: "named",
      server_tool: "t",
      tool: "mcp__named__t",
      arguments: {},
      hints: { toString: true, constructor: false, readOnlyHint: true },
      expires_at: new Date(Date.now() + 60000).toISOString(),
    },
    { showServer: false, onAnswered() {} },
  );
  return [...card.querySelectorAll("li.hint-badge")].map((li) => [li.textContent, li.title]);
}"""


def test_an_approval_shows_annotations_named_like_object_properties_as_plain_hints(page: Page, host: Host) -> None:
    """A server's annotations are its own: before, a `toString` annotation was taken for one of ours
    (`key in HINTS`) and drawing the approval card threw, and `constructor` was labelled with Object's
    source text."""
    sign_in(page)
    badges = page.evaluate(APPROVAL_HINTS)
    assert badges == [
        ["toString", ""],
        ["not constructor", ""],
        ["read-only", "The server says it does not modify its environment (hint only)"],
    ]


def test_a_prompts_arguments_keep_every_name(page: Page, host: Host) -> None:
    """prompts.js built the arguments with `args[name] = value`: `__proto__` was never sent. The raw
    server's `odd` prompt answers with the arguments it received."""
    add_ready_on_host(host, raw_stdio_body(typed_tool=True))
    sign_in(page)
    open_server(page, "Raw", "Prompts")
    item = page.locator('li.prompt[data-prompt="odd"]')
    for name, value in (("__proto__", "p"), ("constructor", "c"), ("toString", "t")):
        item.locator(f'[data-argument="{name}"] input').fill(value)
    item.get_by_role("button", name="Get prompt").click()
    expected = json.dumps({"__proto__": "p", "constructor": "c", "toString": "t"}, sort_keys=True)
    expect(item.get_by_test_id("untrusted-body")).to_contain_text(expected)


def test_an_import_value_for_a_variable_named_proto_is_sent(page: Page, host: Host) -> None:
    """importer.js built `values` with `values[name] = value`: a value typed for `${__proto__}` was
    never sent, and the host refused the apply for a missing value."""
    content = json.dumps({"mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time", "${__proto__}"]}}})
    sign_in(page)
    go_to(page, "Import")
    page.get_by_label("Configuration (JSON)").fill(content)
    page.get_by_role("button", name="Preview").click()
    preview = page.get_by_role("region", name="Preview")
    preview.get_by_label("__proto__", exact=True).fill("--local-timezone=UTC")
    preview.get_by_role("button", name="Create 1 server").click()
    expect(page.get_by_role("status").filter(has_text="Imported 1 server (clock)")).to_be_visible()
    assert host.client.get("/api/mcp/servers/clock").json()["args"] == ["mcp-server-time", "--local-timezone=UTC"]


def test_a_console_method_named_like_an_object_property_leaves_the_params_alone(page: Page, host: Host) -> None:
    """debug.js looked the method up with `method in TEMPLATES`: typing `toString` or `constructor`
    (a method a server may well have) replaced the params with the text "undefined"."""
    add_ready_on_host(host, raw_stdio_body())
    sign_in(page)
    open_server(page, "Raw", "Console")
    params = page.get_by_label(re.compile(r"^Params"))
    expect(params).to_have_value("{}")
    for name in ("toString", "constructor", "__proto__"):
        page.get_by_label("Method").fill(name)
        expect(params).to_have_value("{}")
