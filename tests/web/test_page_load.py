"""What one load of the settings page asks the host for (issue 16): the server list and each list of
the inbox once, the event stream once, and each script and style sheet once, the scripts announced
up front by the page (`<link rel="modulepreload">`) so the browser fetches them side by side, not
one level of imports after another.
"""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, expect

from tests.support.browser import go_to, sign_in
from tests.support.serve import Host

pytestmark = pytest.mark.browser

ONCE_PER_LOAD = [
    "/api/mcp/servers",
    "/api/approvals",
    "/api/interactions?state=pending",
    "/api/interactions?state=interrupted",
    "/api/events",
]
PRELOADED = """() => [...document.querySelectorAll('link[rel="modulepreload"]')]
  .map((link) => new URL(link.href).pathname)"""
"""A page script: the paths of the modules the page announces with `<link rel="modulepreload">`."""


def _where(request: Request) -> str:
    """The request's path and query, as the page asked for it."""
    parts = urlsplit(request.url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_a_page_load_reads_the_server_list_and_the_inbox_once_and_each_static_file_once(page: Page, host: Host) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(_where(request)))
    sign_in(page)
    expect(page.locator('.feed-state[data-feed-mode="live"]')).to_contain_text("Live")
    expect(page.get_by_text("No servers yet.")).to_be_visible()
    go_to(page, "Inbox")  # the shared inbox, already read: opening its view asks for nothing
    expect(page.get_by_test_id("inbox-summary")).to_have_text("Nothing is waiting for you.")
    # Renderer-side request events arrive in order with the answer of this evaluation: a read the
    # page started before it (e.g. a second list read queued behind the first) is in `asked` by now.
    page.evaluate("() => document.title")

    counts = Counter(asked)
    assert {where: counts[where] for where in ONCE_PER_LOAD} == dict.fromkeys(ONCE_PER_LOAD, 1), asked
    # Scripts and styles once; the favicon is chromium's own fetch (again on a change of route).
    static = [where for where in asked if where.startswith("/static/") and where.endswith((".js", ".css"))]
    assert len(static) == len(set(static)), sorted(static)
    scripts = {where for where in static if where.endswith(".js")}
    preloaded = page.evaluate(PRELOADED)
    entry = {where for where in scripts if where.endswith("/js/app.js")}
    assert len(entry) == 1 and set(preloaded) == scripts - entry, (sorted(preloaded), sorted(scripts))
    assert not [where for where in asked if re.match(r"^/api/", where) and where not in ONCE_PER_LOAD], asked
