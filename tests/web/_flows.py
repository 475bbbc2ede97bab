"""UI steps shared by the browser tests, each ending on a visible outcome (bounded `expect` waits)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

__all__ = [
    "add_echo_server",
    "add_from_template",
    "call_in_playground",
    "confirm_test_enable",
    "open_server",
    "save_new",
]


def add_from_template(page: Page, template: str, name: str) -> None:
    """Open "Add server", pick a template by its button text, and type the name."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Add server").click()
    expect(page.get_by_role("heading", name="Add a server")).to_be_visible()
    page.get_by_role("button", name=template).click()
    page.get_by_label("Name", exact=True).fill(name)


def add_echo_server(page: Page, echo_url: str, name: str = "Echo") -> None:
    """Add the echo server from the Streamable HTTP template and wait for its summary confirmation."""
    add_from_template(page, "Remote server (Streamable HTTP)", name)
    page.get_by_label("URL").fill(echo_url)
    save_new(page)


def save_new(page: Page) -> None:
    """Save a new server and wait for its summary confirmation."""
    page.get_by_role("button", name="Save and review").click()
    expect(page.get_by_role("heading", name="1. Confirm the connection summary")).to_be_visible()
    expect(page.get_by_role("button", name="Confirm this summary")).to_be_visible()


def confirm_test_enable(page: Page) -> None:
    """On a server's overview: confirm the shown summary, run the test, enable; wait for `ready`."""
    page.get_by_role("button", name="Confirm this summary").click()
    expect(page.get_by_text("Confirmed. Changing any of these fields will ask again.")).to_be_visible()
    page.get_by_role("button", name="Run test").click()
    expect(page.get_by_test_id("last-test")).to_have_text(re.compile(r"^OK · \d+ tools"))
    page.get_by_role("button", name="Enable", exact=True).click()
    expect(page.get_by_role("button", name="Disable", exact=True)).to_be_visible()
    expect(page.locator(".head-state .badge")).to_have_text("ready")


def open_server(page: Page, name: str, section: str | None = None) -> None:
    """From anywhere: the server list, then the server's page (and one of its section links)."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Servers").click()
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    if section:
        page.get_by_role("navigation", name="Server sections").get_by_role("link", name=section).click()


def call_in_playground(page: Page, tool: str, arguments: dict[str, str]) -> None:
    """Open the tool's playground, fill the generated form, call, and wait for a result."""
    item = page.locator(f'li.tool[data-tool="{tool}"]')
    item.get_by_text("Call playground").click()
    playground = item.get_by_role("form", name=f"Call {tool}")
    for name, value in arguments.items():
        playground.get_by_label(re.compile(rf"^{re.escape(name)}\b")).fill(value)
    playground.get_by_role("button", name=f"Call {tool}").click()
