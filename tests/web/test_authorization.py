"""The Authorization tab in a real browser (R-4.9, R-4.5, R-4.3, R-3.11, R-1.5).

A real `mcp-center serve` and the fake OAuth authorization server + protected MCP server of
`tests/support/fakes/oauth.py` (auto-approving `/authorize`) on 127.0.0.1, served from a thread of the test
process so the tests can read what the fakes issued. "Authorize" shows the issuer and scopes, then
opens the sign-in page in a new window; the callback page tells the settings page the outcome. No
credential the fakes issued (codes, access and refresh tokens, client secrets) may reach the page.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from playwright.sync_api import BrowserContext, Page, Response, Route, expect

from tests.support.browser import NO_HORIZONTAL_SCROLL, go_to, open_server, sign_in, whole_page_screenshot
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource
from tests.support.loopback import serve_loopback
from tests.support.serve import ADMIN_TOKEN, Host

pytestmark = pytest.mark.browser

SERVERS = "/api/mcp/servers"
MACHINE_SECRET = "machine-client-secret-" + "0f1e2d3c4b5a69788796"
BEARER_SECRET = "bearer-token-value-" + "a0b1c2d3e4f5"
DOM_DUMP = """() => {
  const values = [...document.querySelectorAll("input, textarea, select")].map((el) => el.value);
  return document.documentElement.outerHTML + "\\n" + values.join("\\n") + "\\n" + document.body.innerText;
}"""
STORAGE_DUMP = "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])"


@dataclass
class Fakes:
    """Two authorization servers and a protected MCP server (listing the first one unless told otherwise)."""

    authorization: FakeAuthorizationServer
    second: FakeAuthorizationServer
    resource: FakeProtectedResource

    def credentials(self) -> list[str]:
        """Every code, token and client secret the authorization servers issued so far."""
        return [*self.authorization.issued, *self.second.issued]


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    """The fakes on loopback, in an event loop on a thread of their own; stopped when the test ends."""
    authorization = FakeAuthorizationServer(preregistered={"machine": MACHINE_SECRET})
    second = FakeAuthorizationServer()
    resource = FakeProtectedResource([authorization, second], challenge_scope="mcp:read")
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_loopback(authorization.app)) as first_base,
        portal.wrap_async_context_manager(serve_loopback(second.app)) as second_base,
        portal.wrap_async_context_manager(serve_loopback(resource.app)) as resource_base,
    ):
        authorization.base_url, second.base_url, resource.base_url = first_base, second_base, resource_base
        resource.listed_issuers = [authorization.issuer]
        yield Fakes(authorization, second, resource)


class Recorder:
    """Bodies and headers of every response the browser received, except the authorization servers'
    own (their redirect carries the code to the callback, by design)."""

    def __init__(self, context: BrowserContext, *skip_origins: str) -> None:
        self.texts: list[str] = []
        self._skip = skip_origins
        context.on("response", self._record)

    def _record(self, response: Response) -> None:
        if response.url.startswith(self._skip):
            return
        self.texts.append(json.dumps(response.headers))
        try:
            self.texts.append(response.text())
        except Exception:  # noqa: BLE001 - redirects and aborted requests have no body to read
            self.texts.append("")


def assert_nothing_secret(page: Page, recorder: Recorder, secrets: list[str]) -> None:
    """No issued credential in the page, its storage or any response it received (R-1.5, R-4.7)."""
    assert secrets
    assert recorder.texts
    page_texts = [page.content(), page.evaluate(DOM_DUMP), page.evaluate(STORAGE_DUMP)]
    for text in [*page_texts, *recorder.texts]:
        for secret in [*secrets, ADMIN_TOKEN]:
            assert secret not in text
    assert page.evaluate(STORAGE_DUMP) == "[[],[]]"


def create(host: Host, body: dict[str, Any], *, trust: bool = True) -> dict[str, Any]:
    created = host.client.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    view = created.json()
    if trust:
        trusted = host.client.post(f"{SERVERS}/{view['id']}/trust", json={"digest": view["digest"]})
        assert trusted.status_code == 200, trusted.text
    return view


def oauth_server(fakes: Fakes, name: str = "Guarded", **auth: Any) -> dict[str, Any]:
    return {"name": name, "transport": "streamable_http", "url": fakes.resource.url, "auth": {"kind": "oauth", **auth}}


def test_authorize_opens_a_window_at_the_shown_issuer_and_the_tab_shows_the_result_live(
    context: BrowserContext, page: Page, host: Host, fakes: Fakes
) -> None:
    recorder = Recorder(context, fakes.authorization.base_url, fakes.second.base_url)
    create(host, oauth_server(fakes), trust=False)
    sign_in(page)
    # Authorization needs the confirmed summary first: a next step, not a raw error.
    open_server(page, "Guarded", "Authorization")
    section = page.get_by_role("region", name="Authorization")
    expect(section.get_by_test_id("oauth-state")).to_contain_text("authorization required")
    expect(section.get_by_test_id("auth-next-step")).to_contain_text("confirm the connection summary")
    expect(section.get_by_role("button", name="Authorize")).to_have_count(0)
    section.get_by_role("link", name="Review and confirm the summary").click()
    page.get_by_role("button", name="Confirm this summary").click()
    expect(page.get_by_text("Confirmed. Changing any of these fields will ask again.")).to_be_visible()
    page.get_by_role("button", name="Run test").click()
    expect(page.get_by_test_id("last-test")).to_contain_text("authorization required")
    # The list and the overview offer "Authorize".
    expect(page.locator(".auth-callout")).to_contain_text("Authorization required")
    go_to(page, "Servers")
    row = page.locator('tr[data-server="guarded"]')
    row.get_by_role("link", name="Authorize").click()
    expect(page.get_by_role("heading", name="Authorization", exact=True)).to_be_visible()

    # the issuer and the scopes are shown before the browser goes anywhere.
    page.get_by_role("button", name="Authorize", exact=True).click()
    expect(page.get_by_test_id("start-issuer")).to_have_text(fakes.authorization.issuer)
    expect(page.get_by_test_id("start-scopes")).to_have_text("mcp:read")
    assert fakes.authorization.saw("/authorize") == []
    with context.expect_page() as opened:
        page.get_by_role("button", name="Open the sign-in page").click()
    popup = opened.value
    result = page.locator('.auth-result [data-result="ok"]')
    expect(result).to_contain_text("Authorized")
    expect(result).to_contain_text("mcp:read")
    popup.wait_for_event("close")  # the callback page closes itself after a success
    assert len(fakes.authorization.saw("/authorize")) == 1
    state = page.get_by_test_id("oauth-state")
    expect(state).to_contain_text("Authorized")
    expect(state).to_contain_text(fakes.authorization.issuer)
    expect(state).to_contain_text("dynamic client registration")

    # Now the server connects with the token.
    result.get_by_role("link", name="test and enable the server on the Overview").click()
    page.get_by_role("button", name="Run test").click()
    expect(page.get_by_test_id("last-test")).to_have_text(re.compile(r"^OK · \d+ tools?"))
    page.get_by_role("button", name="Enable", exact=True).click()
    expect(page.locator(".head-state .badge")).to_have_text("ready")
    expect(page.locator(".auth-callout")).to_have_count(0)
    assert any(t in fakes.authorization.access_tokens for t in fakes.resource.tokens_seen())

    # Forget (confirmed) → back to "authorization required", and the running server says so too.
    open_server(page, "Guarded", "Authorization")
    page.get_by_role("button", name="Forget authorization").click()
    page.get_by_role("dialog").get_by_role("button", name="Forget").click()
    expect(page.get_by_test_id("oauth-state")).to_contain_text("authorization required")
    expect(page.get_by_role("button", name="Authorize", exact=True)).to_be_visible()
    expect(page.locator(".head-state")).to_contain_text("authorization required")
    go_to(page, "Servers")
    expect(row.get_by_role("link", name="Authorize")).to_have_attribute("data-need", "auth_required")
    assert_nothing_secret(page, recorder, fakes.credentials())


def test_a_redirect_the_browser_could_not_deliver_is_pasted_and_completes_the_authorization(
    context: BrowserContext, page: Page, host: Host, fakes: Fakes
) -> None:
    recorder = Recorder(context, fakes.authorization.base_url, fakes.second.base_url)
    create(host, oauth_server(fakes))
    undelivered: list[str] = []

    def unreachable(route: Route) -> None:
        # The sign-in happens, but its redirect back to this host never arrives (Playwright does not
        # route redirected requests, so the authorization server's answer is taken apart here).
        answer = route.fetch(max_redirects=0)
        undelivered.append(answer.headers["location"])
        route.fulfill(status=502, body="this host cannot be reached from here")

    context.route(re.compile(re.escape(fakes.authorization.base_url) + r"/authorize\?.*"), unreachable)
    sign_in(page)
    open_server(page, "Guarded", "Authorization")
    page.get_by_role("button", name="Authorize", exact=True).click()
    with context.expect_page() as opened:
        page.get_by_role("button", name="Open the sign-in page").click()
    opened.value.wait_for_load_state()
    expect(page.get_by_role("heading", name="The browser could not reach this host?")).to_be_visible()
    assert len(undelivered) == 1
    opened.value.close()
    field = page.get_by_label("Redirect URL")
    field.fill(undelivered[0])
    page.get_by_role("button", name="Complete authorization").click()
    expect(field).to_have_value("")
    result = page.locator('.auth-result [data-result="ok"]')
    expect(result).to_contain_text("Authorized")
    expect(result).to_contain_text("mcp:read")
    expect(page.get_by_test_id("oauth-state")).to_contain_text("Authorized")
    # A pasted address that was already used is refused with its reason.
    page.get_by_role("button", name="Authorize again").click()
    page.get_by_role("button", name="Open the sign-in page").click()
    page.get_by_label("Redirect URL").fill(undelivered[0])
    page.get_by_role("button", name="Complete authorization").click()
    expect(page.locator('.auth-result [data-result="error"]')).to_contain_text("OAUTH_CALLBACK_INVALID")
    assert_nothing_secret(page, recorder, fakes.credentials())


def test_a_machine_grant_is_authorized_at_once_without_a_window(
    context: BrowserContext, page: Page, host: Host, fakes: Fakes
) -> None:
    recorder = Recorder(context, fakes.authorization.base_url, fakes.second.base_url)
    body = oauth_server(fakes, "Machine", grant="client_credentials", client_id="machine")
    create(host, {**body, "secret_values": {"oauth": {"client_secret": MACHINE_SECRET}}})
    sign_in(page)
    open_server(page, "Machine", "Authorization")
    expect(page.get_by_test_id("oauth-state")).to_contain_text("client credentials")
    expect(page.get_by_test_id("oauth-state")).to_contain_text("client secret configured")
    page.get_by_role("button", name="Authorize", exact=True).click()
    result = page.locator('.auth-result [data-result="ok"]')
    expect(result).to_contain_text("Authorized")
    expect(result).to_contain_text(fakes.authorization.issuer)
    expect(page.get_by_test_id("oauth-state")).to_contain_text("Authorized")
    assert len(context.pages) == 1
    assert fakes.authorization.saw("/authorize") == []
    assert [s.form["grant_type"] for s in fakes.authorization.saw("/token")] == ["client_credentials"]
    assert_nothing_secret(page, recorder, [*fakes.credentials(), MACHINE_SECRET])


def test_several_authorization_servers_need_a_choice_and_the_chosen_one_is_shown(
    page: Page, host: Host, fakes: Fakes
) -> None:
    fakes.resource.listed_issuers = [fakes.authorization.issuer, fakes.second.issuer]
    create(host, oauth_server(fakes))
    sign_in(page)
    open_server(page, "Guarded", "Authorization")
    page.get_by_role("button", name="Authorize", exact=True).click()
    expect(page.locator('.auth-result [data-result="error"]')).to_contain_text("choose the one to sign in at")
    choice = page.get_by_role("group", name="Authorization server")
    choice.get_by_label(fakes.second.issuer).check()
    page.get_by_role("button", name="Authorize", exact=True).click()
    expect(page.get_by_test_id("start-issuer")).to_have_text(fakes.second.issuer)
    assert fakes.second.saw("/authorize") == []


def authorize_via_api(host: Host, server_id: str) -> None:
    """Start, play the browser up to the callback, then test and enable (no page involved)."""
    started = host.client.post(f"{SERVERS}/{server_id}/oauth/start")
    assert started.status_code == 200, started.text
    with httpx2.Client(trust_env=False) as browser:
        location = browser.get(started.json()["authorization_url"]).headers["location"]
        assert browser.get(location).status_code == 200
    assert host.client.post(f"{SERVERS}/{server_id}/test").json()["ok"]
    assert host.client.post(f"{SERVERS}/{server_id}/enable").status_code == 200


def test_more_scopes_required_names_the_scopes_and_asks_for_them(page: Page, host: Host, fakes: Fakes) -> None:
    """R-4.5: after a 403 insufficient_scope the list, the overview and the tab say which scopes are needed."""
    create(host, oauth_server(fakes))
    authorize_via_api(host, "guarded")
    fakes.resource.step_up_scope = "mcp:write"
    called = host.client.post(f"{SERVERS}/guarded/tools/echo/call", json={"arguments": {"text": "hi"}})
    assert called.status_code == 409, called.text
    sign_in(page)
    cta = page.locator('tr[data-server="guarded"]').get_by_role("link", name="Authorize")
    expect(cta).to_have_attribute("data-need", "step_up_required")
    expect(cta).to_have_attribute("title", "more scopes required: mcp:read mcp:write")
    open_server(page, "Guarded")
    expect(page.locator(".auth-callout")).to_contain_text("More scopes required · scopes needed: mcp:read mcp:write")
    page.locator(".auth-callout").get_by_role("link", name="Authorize").click()
    expect(page.get_by_test_id("oauth-state")).to_contain_text("more scopes required")
    page.get_by_role("button", name="Authorize", exact=True).click()
    expect(page.get_by_role("heading", name="Grant more scopes")).to_be_visible()
    expect(page.get_by_test_id("start-scopes")).to_have_text("mcp:read mcp:write")


def test_a_server_without_oauth_says_what_is_configured_and_never_the_token(
    page: Page, host: Host, fakes: Fakes
) -> None:
    body = {"name": "Tokened", "transport": "streamable_http", "url": fakes.resource.url, "auth": {"kind": "bearer"}}
    create(host, {**body, "secret_values": {"bearer_token": BEARER_SECRET}}, trust=False)
    create(host, {"name": "Open", "transport": "streamable_http", "url": fakes.resource.url}, trust=False)
    sign_in(page)
    open_server(page, "Tokened", "Authorization")
    section = page.get_by_role("region", name="Authorization")
    expect(section).to_contain_text("bearer token · configured")
    section.get_by_role("link", name="Configuration").click()
    expect(page.get_by_label("Bearer token (configured)")).to_have_value("")
    assert BEARER_SECRET not in page.evaluate(DOM_DUMP)
    open_server(page, "Open", "Authorization")
    expect(page.get_by_role("region", name="Authorization")).to_contain_text("Authorization: none")


def test_the_authorization_tab_fits_a_narrow_window_and_works_from_the_keyboard(
    context: BrowserContext, page: Page, host: Host, fakes: Fakes
) -> None:
    create(host, oauth_server(fakes))
    page.set_viewport_size({"width": 400, "height": 800})
    sign_in(page)
    open_server(page, "Guarded", "Authorization")
    authorize = page.get_by_role("button", name="Authorize", exact=True)
    authorize.focus()
    page.keyboard.press("Enter")
    open_button = page.get_by_role("button", name="Open the sign-in page")
    expect(open_button).to_be_focused()
    assert page.evaluate(NO_HORIZONTAL_SCROLL)
    with context.expect_page():
        page.keyboard.press("Enter")
    expect(page.locator('.auth-result [data-result="ok"]')).to_contain_text("Authorized")
    assert page.evaluate(NO_HORIZONTAL_SCROLL)


def test_screenshot_of_the_authorization_tab(context: BrowserContext, page: Page, host: Host, fakes: Fakes) -> None:
    """README's picture of an authorized server; copied to $MCP_CENTER_SCREENSHOT_DIR when it is set
    (`scripts/screenshots`). It also checks what the picture shows: issuer, scopes and registration."""
    create(host, oauth_server(fakes, name="Docs"))
    page.set_viewport_size({"width": 1100, "height": 760})
    sign_in(page)
    page.evaluate("() => { document.getElementById('toast').hidden = true; }")
    open_server(page, "Docs", "Authorization")
    page.get_by_role("button", name="Authorize", exact=True).click()
    with context.expect_page():
        page.get_by_role("button", name="Open the sign-in page").click()
    expect(page.locator('.auth-result [data-result="ok"]')).to_contain_text("Authorized")
    state = page.get_by_test_id("oauth-state")
    expect(state).to_contain_text(fakes.authorization.issuer)
    expect(state).to_contain_text("mcp:read")
    expect(state).to_contain_text("dynamic client registration")
    shot = whole_page_screenshot(page)
    assert shot.startswith(b"\x89PNG")
    target = os.environ.get("MCP_CENTER_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / "authorization.png").write_bytes(shot)


def test_the_callback_page_never_shows_the_code_and_strips_it_from_the_address(host: Host, fakes: Fakes) -> None:
    """The HTML page the browser lands on (R-4.9): outcome only; its script sends nothing secret."""
    view = create(host, oauth_server(fakes))
    started = host.client.post(f"{SERVERS}/{view['id']}/oauth/start").json()
    with httpx2.Client(trust_env=False) as browser:
        location = browser.get(started["authorization_url"]).headers["location"]
        landed = browser.get(location)
    code = httpx2.URL(location).params["code"]
    assert landed.status_code == 200, landed.text
    assert code not in landed.text
    assert 'data-server="guarded"' in landed.text
    assert "/static/js/oauth-callback.js" in landed.text
    assert "script-src 'self'" in landed.headers["content-security-policy"]
    assert landed.headers["referrer-policy"] == "no-referrer"
