"""The add/edit form in a real browser: form and JSON modes over one model, server-side validation
shown next to the field it names, and optimistic locking (R-1.3) shown as a conflict, never an overwrite.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.support.browser import add_from_template, new_window, open_server, sign_in
from tests.support.serve import Host

pytestmark = pytest.mark.browser


def test_switching_between_form_and_json_keeps_every_edit(page: Page, host: Host) -> None:
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Docs")
    page.get_by_label("URL").fill("https://mcp.example.com/mcp")
    page.get_by_role("button", name="Add header", exact=True).click()
    page.get_by_label("Header name", exact=True).fill("X-Team")
    page.get_by_label("Header value", exact=True).fill("blue")

    page.get_by_role("button", name="JSON", exact=True).click()
    editor = page.get_by_label("Configuration (JSON)")
    model = json.loads(editor.input_value())
    assert model["name"] == "Docs"
    assert model["url"] == "https://mcp.example.com/mcp"
    assert model["headers"] == {"X-Team": "blue"}
    assert model["transport"] == "streamable_http"

    model["url"] = "https://other.example.com/mcp"
    model["headers"]["X-Region"] = "eu"
    editor.fill(json.dumps(model))
    page.get_by_role("button", name="Form", exact=True).click()
    expect(page.get_by_label("URL")).to_have_value("https://other.example.com/mcp")
    expect(page.get_by_label("Name", exact=True)).to_have_value("Docs")
    expect(page.get_by_label("Header name", exact=True)).to_have_count(2)

    page.get_by_role("button", name="JSON", exact=True).click()
    editor.fill("{not json")
    page.get_by_role("button", name="Form", exact=True).click()
    expect(page.get_by_text("Not valid JSON")).to_be_visible()
    expect(editor).to_be_visible()
    assert host.client.get("/api/mcp/servers").json()["servers"] == []


def test_server_side_validation_errors_appear_next_to_the_fields_they_name(page: Page, host: Host) -> None:
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Broken")
    page.get_by_label("URL").fill("http://user:pw@127.0.0.1/mcp")
    page.get_by_role("button", name="Add header", exact=True).click()
    page.get_by_label("Header name", exact=True).fill("Host")
    page.get_by_label("Header value", exact=True).fill("evil.example")
    page.get_by_role("button", name="Save and review").click()

    url_field = page.locator('.field[data-field="url"]')
    expect(url_field.locator(".field-error")).to_contain_text("URL_HAS_CREDENTIALS")
    expect(page.get_by_label("URL")).to_have_attribute("aria-invalid", "true")
    header_row = page.locator('.row[data-field="headers.Host"]')
    expect(header_row.locator(".field-error")).to_contain_text("HEADER_RESERVED")
    expect(page.get_by_role("alert").first).to_contain_text("CONFIG_INVALID")
    assert host.client.get("/api/mcp/servers").json()["servers"] == []


def test_a_too_short_secret_value_marks_the_value_input_not_the_name(page: Page, host: Host) -> None:
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Short")
    page.get_by_label("URL").fill("https://a.example/mcp")
    page.get_by_role("button", name="Add secret header").click()
    page.get_by_label("Secret header name").fill("X-Api-Key")
    page.get_by_label("Secret header value").fill("abc")
    page.get_by_role("button", name="Save and review").click()
    row = page.locator('.row[data-field="secret_headers.X-Api-Key"]')
    expect(row.locator(".field-error")).to_contain_text("SECRET_VALUE_TOO_SHORT")
    expect(page.get_by_label("Secret header value")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Secret header name")).not_to_have_attribute("aria-invalid", "true")
    described = page.get_by_label("Secret header value").get_attribute("aria-describedby") or ""
    assert row.locator(".field-error").get_attribute("id") in described.split()
    assert host.client.get("/api/mcp/servers").json()["servers"] == []


def test_editing_an_oauth_server_in_the_form_keeps_the_settings_the_form_does_not_show(page: Page, host: Host) -> None:
    body = {
        "name": "Machine",
        "transport": "streamable_http",
        "url": "https://a.example/mcp",
        "auth": {"kind": "oauth", "grant": "client_credentials", "client_id": "machine-1", "scopes": ["read"]},
    }
    assert host.client.post("/api/mcp/servers", json=body).status_code == 201
    sign_in(page)
    open_server(page, "Machine", "Configuration")
    expect(page.get_by_label("Client id (optional)")).to_have_value("machine-1")
    page.get_by_label("Scopes (optional)").fill("read write")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("This change touched something security-relevant")).to_be_visible()
    auth = host.client.get("/api/mcp/servers/machine").json()["auth"]
    assert (auth["grant"], auth["client_id"], auth["scopes"]) == ("client_credentials", "machine-1", ["read", "write"])


def test_two_pages_editing_one_server_get_a_conflict_with_a_reload_option_not_an_overwrite(
    context: BrowserContext, host: Host
) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Shared", "transport": "streamable_http", "url": "https://a.example/mcp"}
    )
    assert created.status_code == 201, created.text
    first = context.new_page()
    second = new_window(first)  # both drawn: a background tab's clicks wait for frames (new_window)
    sign_in(first)
    second.goto("/")
    for page in (first, second):
        open_server(page, "Shared", "Configuration")
        expect(page.get_by_label("Name", exact=True)).to_have_value("Shared")

    first.get_by_label("Name", exact=True).fill("Shared by the first page")
    first.get_by_role("button", name="Save", exact=True).click()
    expect(first.get_by_text("Saved.")).to_be_visible()

    second.get_by_label("Name", exact=True).fill("Shared by the second page")
    second.get_by_role("button", name="Save", exact=True).click()
    conflict = second.get_by_role("alert").filter(has_text="Changed elsewhere")
    expect(conflict).to_contain_text("you edited version 1; it is now 2")
    expect(second.get_by_label("Name", exact=True)).to_have_value("Shared by the second page")
    assert host.client.get("/api/mcp/servers/shared").json()["name"] == "Shared by the first page"

    conflict.get_by_role("button", name="Load the current version").click()
    expect(second.get_by_label("Name", exact=True)).to_have_value("Shared by the first page")
    second.get_by_label("Name", exact=True).fill("Shared, merged by hand")
    second.get_by_role("button", name="Save", exact=True).click()
    expect(second.get_by_text("Saved.")).to_be_visible()
    view = host.client.get("/api/mcp/servers/shared").json()
    assert (view["name"], view["version"]) == ("Shared, merged by hand", 3)


def test_a_low_risk_edit_keeps_trust_and_a_high_risk_edit_asks_for_a_new_confirmation(page: Page, host: Host) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Docs", "transport": "streamable_http", "url": "https://a.example/mcp"}
    ).json()
    assert host.client.post("/api/mcp/servers/docs/trust", json={"digest": created["digest"]}).status_code == 200
    sign_in(page)
    open_server(page, "Docs", "Configuration")
    page.get_by_label("Name", exact=True).fill("Docs renamed")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    # The page redraws the tab from the saved record (its heading is the new name): edit that form,
    # not the one it replaces (filled before the redraw, the edit was lost and "Saved." shown again).
    expect(page.get_by_role("heading", name="Docs renamed", exact=True)).to_be_visible()
    assert host.client.get("/api/mcp/servers/docs").json()["trusted"] is True

    page.get_by_label("URL").fill("https://b.example/mcp")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("This change touched something security-relevant")).to_be_visible()
    expect(page.locator("dl.summary")).to_contain_text("https://b.example/mcp")
    view = host.client.get("/api/mcp/servers/docs").json()
    assert view["trusted"] is False
    expect(page.get_by_test_id("digest")).to_have_text(view["digest"])


def test_adding_a_server_registered_already_links_to_it_and_adds_nothing(page: Page, host: Host) -> None:
    """The page's create of the same name and configuration as a registered server is refused
    (409 MCP_SERVER_ALREADY_REGISTERED, trialfix36, R-1.1): the page shows the message and a link to
    the existing server, and no `-2` copy appears."""
    body = {"name": "Docs", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}
    assert host.client.post("/api/mcp/servers", json=body).status_code == 201
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Docs")
    page.get_by_label("URL").fill("https://mcp.example.com/mcp")
    page.get_by_role("button", name="Save and review").click()
    alert = page.get_by_role("alert").first
    expect(alert).to_contain_text("MCP_SERVER_ALREADY_REGISTERED")
    expect(alert).to_contain_text("'docs' is already registered")
    link = page.get_by_test_id("existing-server")
    expect(link).to_have_attribute("href", "#/servers/docs")
    assert [s["id"] for s in host.client.get("/api/mcp/servers").json()["servers"]] == ["docs"]
    link.click()
    expect(page).to_have_url(re.compile(r"#/servers/docs$"))
