"""Secrets in the browser (R-1.5, seed 002 §2, docs/decisions.md#seed-002-2): typed into password
inputs, sent once on submit and cleared at once. A planted value must not appear afterwards in the
page HTML, the DOM (including input values), localStorage, sessionStorage, cookies, or any response
the browser received.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import BrowserContext, Page, Response, expect

from tests.support.browser import add_from_template, confirm_test_enable, open_server, save_new, sign_in
from tests.support.serve import ADMIN_TOKEN, Host

pytestmark = pytest.mark.browser

ROOT = "PLANTED-web-" + uuid.uuid4().hex
HEADER_SECRET = ROOT + "-header"
BEARER_SECRET = ROOT + "-bearer"
REPLACED_SECRET = ROOT + "-replaced"

DOM_DUMP = """() => {
  const values = [...document.querySelectorAll("input, textarea, select")].map((el) => el.value);
  return document.documentElement.outerHTML + "\\n" + values.join("\\n") + "\\n" + document.body.innerText;
}"""
STORAGE_DUMP = "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])"


def test_a_planted_secret_never_reaches_the_page_storage_cookies_or_responses(
    context: BrowserContext, page: Page, host: Host, echo_url: str
) -> None:
    bodies: list[str] = []

    def record(response: Response) -> None:
        try:
            bodies.append(response.text())
        except Exception:  # noqa: BLE001 - redirects and aborted requests have no body to read
            bodies.append(json.dumps(dict(response.headers)))
        bodies.append(json.dumps(response.headers))

    context.on("response", record)
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Vault")
    page.get_by_label("URL").fill(echo_url)
    page.get_by_role("button", name="Add secret header").click()
    page.get_by_label("Secret header name").fill("X-Api-Key")
    page.get_by_label("Secret header value").fill(HEADER_SECRET)
    page.get_by_label("Authorization", exact=True).select_option("bearer")
    page.get_by_label("Bearer token").fill(BEARER_SECRET)
    # A round trip through JSON mode keeps the typed values out of the JSON and in memory only.
    page.get_by_role("button", name="JSON", exact=True).click()
    json_text = page.get_by_label("Configuration (JSON)").input_value()
    assert ROOT not in json_text
    assert "X-Api-Key" in json_text
    page.get_by_role("button", name="Form", exact=True).click()
    save_new(page)

    view = host.client.get("/api/mcp/servers/vault").json()
    assert view["secret_headers"] == {"X-Api-Key": {"configured": True}}
    assert view["auth"] == {"kind": "bearer", "token": {"configured": True}}
    summary = page.locator("dl.summary")
    expect(summary).to_contain_text("X-Api-Key configured")
    expect(summary).to_contain_text("token configured")
    confirm_test_enable(page)

    open_server(page, "Vault", "Configuration")
    secret_value = page.get_by_label("Secret header value")
    expect(secret_value).to_have_value("")
    expect(secret_value).to_have_attribute("placeholder", "configured · type to replace")
    expect(page.get_by_label("Bearer token (configured)")).to_have_value("")
    secret_value.fill(REPLACED_SECRET)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("This change touched something security-relevant")).to_be_visible()
    open_server(page, "Vault", "Configuration")
    page.get_by_role("button", name="JSON", exact=True).click()
    expect(page.get_by_label("Configuration (JSON)")).to_have_value(re.compile(r'"secret_headers": \[\s*"X-Api-Key"'))

    snapshots = [page.content(), page.evaluate(DOM_DUMP), page.evaluate(STORAGE_DUMP), json.dumps(context.cookies())]
    assert len(bodies) > 20
    for text in [*snapshots, *bodies]:
        for planted in (HEADER_SECRET, BEARER_SECRET, REPLACED_SECRET, ROOT, ADMIN_TOKEN):
            assert planted not in text
    assert page.evaluate(STORAGE_DUMP) == "[[],[]]"


def test_typed_secret_values_are_cleared_even_when_the_server_refuses_the_change(page: Page, host: Host) -> None:
    sign_in(page)
    add_from_template(page, "Remote server (Streamable HTTP)", "Refused")
    page.get_by_label("URL").fill("ftp://example.com/mcp")
    page.get_by_role("button", name="Add secret header").click()
    page.get_by_label("Secret header name").fill("X-Api-Key")
    page.get_by_label("Secret header value").fill(HEADER_SECRET)
    page.get_by_role("button", name="Save and review").click()
    expect(page.locator('.field[data-field="url"] .field-error')).to_contain_text("URL_SCHEME_NOT_ALLOWED")
    expect(page.get_by_label("Secret header value")).to_have_value("")
    assert HEADER_SECRET not in page.evaluate(DOM_DUMP)
