"""Browser-test fixtures: Debian's chromium driven by Playwright, a real `mcp-center serve`, real MCP servers.

Playwright's Python package never downloads a browser here: it launches `/usr/bin/chromium`
(installed by `.ci/run`; `scripts/test` refuses to run without it) headless, with the flags this
machine needs (no sandbox as root, no background networking on a closed network). Every server
binds 127.0.0.1 and is stopped by its fixture; every page fails its test on an uncaught script error.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, expect, sync_playwright

from tests.e2e.conftest import ADMIN_TOKEN, Host, running_echo_http, running_host

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
REPO_ROOT = Path(__file__).parents[2]
WAIT_MS = 15_000
"""Bound on one UI wait (a stdio test may start node; a call crosses two processes)."""

expect.set_options(timeout=WAIT_MS)


@pytest.hookimpl(trylast=True)  # after any reordering plugin (pytest-randomly) has shuffled the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that drive the browser run after every other test of the session (a stable sort).

    Sync Playwright keeps its event loop on the main thread while the session-scoped `playwright`
    fixture is open, so an anyio test that runs after the first browser test cannot start its own
    loop ("Cannot run the event loop while another loop is running"): e.g. tests/web/test_csrf.py
    after tests/web/test_authorization.py, or tests/api after tests/web.
    """
    items.sort(key=lambda item: "playwright" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's chromium, headless. Missing chromium fails (never skips) the browser tests."""
    if not CHROMIUM.exists():
        pytest.fail("the browser tests need Debian's chromium at /usr/bin/chromium: apt-get install -y chromium")
    launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """A real `mcp-center serve` on a free loopback port (admin token `ADMIN_TOKEN`)."""
    with running_host(tmp_path) as running:
        yield running


@pytest.fixture
def echo_url() -> Iterator[str]:
    """The echo MCP server (`tests/servers/http_echo.py`) over Streamable HTTP; yields its /mcp URL."""
    with running_echo_http() as url:
        yield url


@dataclass
class PageErrors:
    """Uncaught script errors of every page of a context (each test asserts there were none)."""

    messages: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("pageerror", lambda exc: self.messages.append(str(exc)))


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


def new_context(browser: Browser, host: Host, *, width: int = 1280, height: int = 800) -> BrowserContext:
    """A fresh browser profile (no cookies, no storage) pointed at `host`."""
    context = browser.new_context(base_url=host.url, viewport={"width": width, "height": height})
    context.set_default_timeout(WAIT_MS)
    return context


@pytest.fixture
def context(browser: Browser, host: Host, page_errors: PageErrors) -> Generator[BrowserContext]:
    """A 1280x800 browser profile for `host`; the test fails if any of its pages threw."""
    opened = new_context(browser, host)
    opened.on("page", page_errors.watch)
    yield opened
    opened.close()
    assert page_errors.messages == [], page_errors.messages


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def login(page: Page, token: str = ADMIN_TOKEN) -> None:
    """Log in through the login form and wait for the server list."""
    page.goto("/")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
