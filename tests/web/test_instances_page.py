"""The page names the instance that answered and lists each instance's state of a server (R-10.2).

One `serve` here (the file backend): its footer names it and a server's page lists it with its
connection state; the same `GET /api/instances` lists every instance of a cluster
(tests/e2e/test_instances.py), and the page lists this page's instance first, then the others by name."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

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


def peer(name: str, server_id: str, state: str) -> dict[str, Any]:
    """An instance of `GET /api/instances` that is not this page's (a cluster's other serve)."""
    return {
        "id": f"id-{name}",
        "name": name,
        "url": f"http://10.0.0.9/{name}",
        "hostname": "peer",
        "pid": 1,
        "started_at": "2026-01-01T00:00:00+00:00",
        "here": False,
        "servers": {server_id: {"state": state, "reason": None, "updated_at": "2026-01-01T00:00:00+00:00"}},
    }


def test_the_instances_card_lists_this_page_first_then_by_name_below_the_status_card_with_a_gap(
    page: Page, host: Host
) -> None:
    """A new user's trial (docs36): with two instances the table listed "b" before "a (this page)",
    and the Instances card touched the Status card. The host's real answer is extended with two
    peers, listed before and after it (one serve here; a real cluster is tests/e2e) (R-10.2)."""
    add_ready_on_host(host, raw_stdio_body())
    name = host.client.get("/api/instances").headers["X-MCP-Center-Instance"]

    def with_peers(route: Route) -> None:
        answer = route.fetch()
        board = answer.json()
        board["instances"] = [peer("zz-peer", "raw", "error"), *board["instances"], peer("a-peer", "raw", "ready")]
        route.fulfill(response=answer, json=board)

    page.route("**/api/instances", with_peers)
    sign_in(page)
    open_server(page, "Raw")
    rows = page.locator("section.instances tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.locator("td:first-child")).to_have_text([f"{name} (this page)", "a-peer", "zz-peer"])
    status = page.locator('section[aria-labelledby="status-title"] .card').bounding_box()
    instances = page.locator("section.instances .card").bounding_box()
    assert status is not None and instances is not None
    assert instances["y"] - (status["y"] + status["height"]) > 8  # px: a gap, not two cards touching
