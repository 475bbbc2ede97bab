"""The page names the instance that answered and lists each instance's state of a server (R-10.2).

One `serve` here (the file backend): its footer names it and a server's page lists it with its
connection state; the same `GET /api/instances` lists every instance of a cluster
(tests/e2e/test_instances.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import open_server, raw_stdio_body, sign_in
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser


def test_the_footer_names_the_answering_instance_and_a_server_page_lists_each_instance_s_state(
    page: Page, host: Host
) -> None:
    add_ready_on_host(host, raw_stdio_body())
    answered = host.client.get("/api/instances")
    name = answered.headers["X-MCP-Center-Instance"]
    sign_in(page)
    expect(page.locator("#instance-name")).to_have_text(name)
    open_server(page, "Raw")
    card = page.locator("section.instances")
    row = card.locator("tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td").first).to_have_text(f"{name} (this page)")
    expect(row.locator(".badge")).to_have_text("ready")
    expect(card.locator("thead th").last).to_have_text("Listens on")
    expect(row.locator("td").last).to_have_text(host.url)  # where this serve listens
