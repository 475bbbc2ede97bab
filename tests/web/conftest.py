"""Browser-test fixtures: Debian's chromium driven by Playwright, a real `mcp-center serve`, real MCP servers.

Every server binds 127.0.0.1 and is stopped by its fixture; every page fails its test on an uncaught
script error. The serve (`host`) and the echo and capability servers (`echo_url`, `caps_url`) are the
worker's, from tests/conftest.py, shared with its other tests. The helpers behind them (chromium's
flags, profiles, login, UI steps) are in `tests/support/browser.py`. server-everything over Streamable
HTTP (`everything_http`) is the worker's too, shared with its end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, PageErrors, ReusedProfile, new_context
from tests.support.serve import Host


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
def host(shared_serve: Host) -> Host:
    """The worker's shared `mcp-center serve` (`shared_serve` in tests/conftest.py), shared with the
    worker's other browser and end-to-end tests and looking just started through the REST API; a
    serve of the test's own when it is marked `own_serve` (it leaves a card, an approval, or much to remove), started
    ahead (`spare_serves`)."""
    return shared_serve


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


@pytest.fixture
def context(browser: Browser, host: Host, page_errors: PageErrors) -> Generator[BrowserContext]:
    """A 1280x800 browser profile for `host`; the test fails if any of its pages threw."""
    opened = new_context(browser, host)
    opened.on("page", page_errors.watch)
    yield opened
    opened.close()
    assert page_errors.messages == [], page_errors.messages


@pytest.fixture(scope="session")
def reused_profile(browser: Browser) -> Iterator[ReusedProfile]:
    """The worker's one browser profile lent to the tests that do not name `context` (issue 16)."""
    profile = ReusedProfile(browser)
    yield profile
    profile.close()


@pytest.fixture
def page(
    request: pytest.FixtureRequest, reused_profile: ReusedProfile, host: Host, page_errors: PageErrors
) -> Iterator[Page]:
    """A 1280x800 page for `host`; the test fails if any page it opened threw. A page of the test's own
    fresh profile when it names `context` (it changes the profile: clock, routes, permissions), else the
    page of the worker's reused profile (`ReusedProfile`: cache kept, cookies cleared, the page at
    about:blank, a new one when the last test left a listener, route or init script on it)."""
    if "context" in request.fixturenames:
        context: BrowserContext = request.getfixturevalue("context")
        yield context.new_page()
        return
    with reused_profile.lend(host, page_errors) as page:
        yield page
    assert page_errors.messages == [], page_errors.messages
