"""Logging in to the settings page and the browser-side CSRF defence, in a real browser (R-7.1, R-7.2).

The session cookie is HttpOnly, SameSite=Strict, Path=/ and is not the admin token; the API takes it
only with the page's CSRF token for state-changing requests and only from our exact origin. A page on
another port of 127.0.0.1 is the *same site* (the browser sends it the cookie), so the attack test
serves one there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx2
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.browser import login, new_context
from tests.support.loopback import serve_threaded
from tests.support.serve import ADMIN_TOKEN, Host

pytestmark = pytest.mark.browser

CREATE_JS = """async ([withToken]) => {
  const headers = {"Content-Type": "application/json"};
  if (withToken) headers["X-CSRF-Token"] = document.querySelector('meta[name="csrf-token"]').content;
  const response = await fetch("/api/mcp/servers", {
    method: "POST", headers, body: JSON.stringify({name: "Made by script", transport: "sse", url: "https://a.example/sse"}),
  });
  return [response.status, await response.json()];
}"""


def session_cookie(context: BrowserContext) -> dict[str, object]:
    cookies = [c for c in context.cookies() if c.get("name") == "mcp_center_session"]
    assert len(cookies) == 1, context.cookies()
    return dict(cookies[0])


def test_a_wrong_admin_token_is_refused_and_sets_no_cookie(context: BrowserContext, page: Page, host: Host) -> None:
    page.goto("/")
    expect(page).to_have_url(f"{host.url}/login")
    page.get_by_label("Admin token").fill(ADMIN_TOKEN + "-wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_have_text("That is not the admin token.")
    expect(page.get_by_label("Admin token")).to_have_attribute("aria-invalid", "true")
    assert context.cookies() == []
    page.goto("/")
    expect(page.get_by_role("button", name="Log in")).to_be_visible()


def test_logging_in_sets_an_httponly_strict_session_cookie_that_is_not_the_token(
    context: BrowserContext, page: Page
) -> None:
    login(page)
    cookie = session_cookie(context)
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/"
    value = str(cookie["value"])
    assert ADMIN_TOKEN not in value
    assert len(value) >= 40
    assert ADMIN_TOKEN not in page.url
    assert page.evaluate("() => document.cookie") == ""
    assert page.evaluate("() => JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage)])") == "[[],[]]"


def test_logging_out_ends_the_session_on_the_server_too(context: BrowserContext, page: Page, host: Host) -> None:
    login(page)
    value = str(session_cookie(context)["value"])
    cookie_header = {"Cookie": f"mcp_center_session={value}"}
    assert httpx2.get(f"{host.url}/api/mcp/servers", headers=cookie_header).status_code == 200
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("button", name="Log in")).to_be_visible()
    assert context.cookies() == []
    response = httpx2.get(f"{host.url}/api/mcp/servers", headers=cookie_header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "ADMIN_AUTH_REQUIRED"


def test_a_state_changing_request_with_the_cookie_but_without_the_csrf_header_is_refused(
    page: Page, host: Host
) -> None:
    login(page)
    status, body = page.evaluate(CREATE_JS, [False])
    assert (status, body["error"]["code"]) == (403, "CSRF_TOKEN_INVALID")
    assert host.client.get("/api/mcp/servers").json()["servers"] == []
    status, body = page.evaluate(CREATE_JS, [True])
    assert status == 201, body
    assert [s["id"] for s in host.client.get("/api/mcp/servers").json()["servers"]] == ["made-by-script"]


@pytest.fixture
def attacker_origin() -> Iterator[str]:
    """A page server on another port of 127.0.0.1: same site as the host, another origin."""

    class Handler(BaseHTTPRequestHandler):
        page = b""

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(Handler.page)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serve_threaded(Handler) as url:
        yield url


def test_a_page_on_another_port_of_the_same_host_cannot_use_the_session_cookie(
    context: BrowserContext, page: Page, host: Host, attacker_origin: str
) -> None:
    login(page)
    attack = context.new_page()
    attack.goto(attacker_origin)
    script = """async ([target]) => {
      await fetch(target + "/api/mcp/servers", {
        method: "POST", mode: "no-cors", credentials: "include",
        headers: {"Content-Type": "text/plain", "X-Requested-With": "x"},
        body: JSON.stringify({name: "Planted by attacker", transport: "sse", url: "https://a.example/sse"}),
      });
      return "sent";
    }"""
    with attack.expect_response(lambda r: r.url.endswith("/api/mcp/servers")) as caught:
        attack.evaluate(script, [host.url])
    # 403, not 401: the browser did send the cookie (same site), and the origin check refused it.
    assert caught.value.status == 403
    assert host.client.get("/api/mcp/servers").json()["servers"] == []


def test_the_login_and_the_first_screens_work_with_the_keyboard_alone(browser: Browser, host: Host) -> None:
    context = new_context(browser, host)
    try:
        page = context.new_page()
        page.goto("/")
        expect(page.get_by_label("Admin token")).to_be_focused()
        page.keyboard.type(ADMIN_TOKEN)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_focused()
        page.keyboard.press("Shift+Tab")  # back from the heading into the top bar: "Log out", then the nav
        expect(page.get_by_role("button", name="Log out")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Gateway")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Export")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Import")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Add server")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Add a server")).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Local program (uvx)")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.get_by_label("Name", exact=True)).to_be_focused()
        expect(page.get_by_label("Command")).to_have_value("uvx")
    finally:
        context.close()


def test_a_deep_link_opened_while_logged_out_is_where_the_login_lands(page: Page, host: Host) -> None:
    created = host.client.post(
        "/api/mcp/servers", json={"name": "Echo", "transport": "sse", "url": "https://a.example/sse"}
    )
    assert created.status_code == 201, created.text
    page.goto("/#/servers/echo/config")
    expect(page).to_have_url(re.compile(r"/login#/servers/echo/config$"))
    page.get_by_label("Admin token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Echo")).to_be_visible()
    sections = page.get_by_role("navigation", name="Server sections")
    expect(sections.get_by_role("link", name="Configuration")).to_have_attribute("aria-current", "page")
    # Nothing but an in-page route is ever carried into the form's address.
    page.context.clear_cookies()
    # A fresh tab: the logged-out app page sends itself to /login when its next API call gets a 401,
    # and that navigation would race (and abort) a goto in the same tab.
    page.close()
    fresh = page.context.new_page()
    fresh.goto("/login#javascript:alert(1)")
    expect(fresh.get_by_role("button", name="Log in")).to_be_visible()
    assert fresh.locator("form[action^='/login']").get_attribute("action") == "/login"
