"""The browser tests' helpers: Debian's chromium as Playwright launches it, fresh browser profiles,
logging in, and UI steps that each end on a visible outcome (bounded `expect` waits).

Playwright's Python package never downloads a browser here: it launches `/usr/bin/chromium`
(installed by `.ci/run`; `scripts/test` refuses to run without it) headless, with the flags this
machine needs (no sandbox as root, no background networking on a closed network).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from playwright.sync_api import Browser, BrowserContext, Error, Locator, Page, Route, ViewportSize, expect

from tests.support.serve import ADMIN_TOKEN, Host

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "NO_HORIZONTAL_SCROLL",
    "PAGE_DOM_JS",
    "PLAYWRIGHT_DISABLED_FEATURES",
    "RAW_STDIO",
    "UNLABELLED",
    "UNUSED_FEATURES",
    "WAIT_MS",
    "PageErrors",
    "ReusedProfile",
    "add_echo_server",
    "add_from_template",
    "call_in_playground",
    "confirm_test_enable",
    "go_to",
    "held_requests",
    "login",
    "new_context",
    "new_window",
    "open_server",
    "press_like_a_person",
    "raw_stdio_body",
    "save_new",
    "sign_in",
    "sign_in_on_a_paused_clock",
    "wait_held",
]

CHROMIUM = Path("/usr/bin/chromium")

PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
"""The features Playwright's own `--disable-features` switch turns off (its chromiumSwitches). Chromium
keeps only the last `--disable-features` of its command line, so ours must repeat them; a test compares
this copy with the installed Playwright (tests/web/test_browser_flags.py)."""

UNUSED_FEATURES = (
    # Chromium 156 draws the address bar's suggestion popup with WebUI: every window, so every browser
    # context of a test, preloads chrome://omnibox-popup.top-chrome/ (and its AI-mode page) in a
    # `--type=renderer --top-chrome-webui` process of its own, ~1 s of CPU per test. No test types
    # into an address bar.
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    # A warm renderer kept for the next navigation of the same browser context: each test's context
    # opens one page, so its spare is started and thrown away with the context (~0.07 s per test).
    "SpareRendererForSitePerProcess",
)
"""Chromium features the browser tests never use and pay for per browser context; turned off (issue 16).
tests/web/test_browser_flags.py fails when the omnibox WebUI comes back (e.g. a feature renamed)."""

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--disable-features=" + ",".join((*PLAYWRIGHT_DISABLED_FEATURES, *UNUSED_FEATURES)),
]

WAIT_MS = 15_000
"""Bound on one UI wait (a stdio test may start node; a call crosses two processes)."""


expect.set_options(timeout=WAIT_MS)

NO_HORIZONTAL_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"
"""A page script: true when the page does not scroll sideways (the narrow-window checks)."""
UNLABELLED = """() => [...document.querySelectorAll("input:not([type=hidden]), select, textarea, button")]
  .filter((el) => el.offsetParent !== null)
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.textContent.trim())
  .map((el) => el.outerHTML)"""
"""A page script: the visible controls with no label, no aria-label and no text (should be none)."""

RAW_STDIO = Path(__file__).parents[1] / "servers" / "raw_stdio.py"
"""The hand-written stdio server: a malformed tool, an `exit` tool, RAW_TOKEN echoed on stderr."""


def raw_stdio_body(
    name: str = "Raw", *, token: str | None = None, broken_prompts: bool = False, typed_tool: bool = False
) -> dict[str, Any]:
    """The create body of the raw stdio server, with RAW_TOKEN as a secret env var when `token` is given,
    a `prompts/list` that always fails with `broken_prompts`, and its `typed` tool with `typed_tool`."""
    args = [
        str(RAW_STDIO),
        *(["--broken-prompts"] if broken_prompts else []),
        *(["--typed-tool"] if typed_tool else []),
    ]
    body: dict[str, Any] = {"name": name, "transport": "stdio", "command": sys.executable, "args": args}
    if token is not None:
        body["secret_values"] = {"env": {"RAW_TOKEN": token}}
    return body


PAGE_DOM_JS = "new URL('dom.js', document.querySelector('script[type=module]').src).href"
"""A page expression: the URL of the page's own dom.js (the same module instance its views use)."""


def go_to(page: Page, link: str) -> None:
    """Follow a link of the main navigation; on a narrow window, open the folded "Menu" first."""
    menu = page.get_by_role("button", name=re.compile(r"^Menu\b"))
    if menu.is_visible() and menu.get_attribute("aria-expanded") != "true":
        menu.click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name=link).click()


def add_from_template(page: Page, template: str, name: str) -> None:
    """Open "Add server", pick a template by its button text, and type the name."""
    go_to(page, "Add server")
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
    expect(page.get_by_test_id("last-test")).to_have_text(re.compile(r"^OK · \d+ tools?"))
    page.get_by_role("button", name="Enable", exact=True).click()
    expect(page.get_by_role("button", name="Disable", exact=True)).to_be_visible()
    expect(page.locator(".head-state .badge")).to_have_text("ready")


def open_server(page: Page, name: str, section: str | None = None) -> None:
    """From anywhere: the server list, then the server's page (and one of its section links)."""
    go_to(page, "Servers")
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


FRAMES = """(n) => new Promise((done) => {
  const next = (left) => (left ? requestAnimationFrame(() => next(left - 1)) : done());
  next(n);
})"""
"""A page script: resolves after the page has drawn `n` more animation frames."""


def press_like_a_person(page: Page, target: Locator, *, frames: int = 4) -> None:
    """Click `target` as a person does: scroll it into view, press the mouse at its centre, let the page
    draw `frames` animation frames (a person's press lasts ~100 ms, several frames), release there.

    A Playwright click presses and releases in one go and checks only the press's target: when the
    page moves the element between the two (a layout that settles a few frames after the scroll), the
    release lands elsewhere, no click happens, and `click()` still returns (issue 16: CI saw the Tools
    tab's "Show more" lose its click). This press fails such a page deterministically.

    Raises:
        AssertionError: `target` has no box (it is hidden or detached).
    """
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    assert box is not None, target
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.evaluate(FRAMES, frames)
    page.mouse.up()


@dataclass
class PageErrors:
    """Uncaught script errors of every page of a context (each test asserts there were none)."""

    messages: list[str] = field(default_factory=list[str])

    def watch(self, page: Page) -> None:
        """Record the uncaught script errors of `page`."""
        page.on("pageerror", self.record)

    def record(self, error: Error) -> None:
        """Record one uncaught script error (a `pageerror` listener)."""
        self.messages.append(str(error))


VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
"""The browser tests' window size (CSS pixels), unless a test names another."""


def whole_page_screenshot(page: Page, path: Path | None = None) -> bytes:
    """A full-page screenshot (PNG bytes, also written to `path` when given) taken from the top of the
    page. Chromium draws a full page at the current scroll position, so after a `fill` or a click had
    scrolled the page, the sticky top bar was drawn across the middle of the picture (the README's
    add-server.png, docs36): this scrolls back to the top first."""
    scrolled = page.evaluate(
        "() => { window.scrollTo({ top: 0, left: 0, behavior: 'instant' }); return window.scrollY; }"
    )
    assert scrolled == 0, f"the page stayed {scrolled} px down: its top bar would be drawn mid-picture"
    return page.screenshot(path=path, full_page=True)


def new_context(browser: Browser, host: Host, *, width: int = 1280, height: int = 800) -> BrowserContext:
    """A fresh browser profile (no cookies, no storage) pointed at `host`."""
    context = browser.new_context(base_url=host.url, viewport={"width": width, "height": height})
    context.set_default_timeout(WAIT_MS)
    return context


def new_window(beside: Page) -> Page:
    """A new page of the profile (browser context) of `beside`, in a browser window of its own, as a
    person opens a second window.

    Full chromium draws only the front tab of a window: a second page from `context.new_page()` is a
    background tab of the window of `beside`, which gets no animation frames, so every click there
    waited ~1.2 s for Playwright's stability check (a test editing in two tabs spent 6 s of its 11 s
    so; issue 16). Pages in windows of their own are both drawn, like two windows side by side.

    Raises:
        playwright.sync_api.Error: chromium refused the new window (CDP `Target.createTarget`).
    """
    context = beside.context
    session = context.new_cdp_session(beside)
    try:
        # CDP answers are untyped dicts.
        info = cast("dict[str, dict[str, str]]", session.send("Target.getTargetInfo"))  # pyright: ignore[reportUnknownMemberType]
    finally:
        session.detach()
    browser = context.browser
    assert browser is not None, "a context of a launched browser"
    cdp = browser.new_browser_cdp_session()
    try:
        with context.expect_page() as opened:
            cdp.send(  # pyright: ignore[reportUnknownMemberType]
                "Target.createTarget",
                {"url": "about:blank", "browserContextId": info["targetInfo"]["browserContextId"], "newWindow": True},
            )
    finally:
        cdp.detach()
    return opened.value


PAGE_STATE_SETTERS = (
    "on",
    "once",
    "add_init_script",
    "add_locator_handler",
    "expose_binding",
    "expose_function",
    "route",
    "route_from_har",
    "route_web_socket",
    "set_default_navigation_timeout",
    "set_default_timeout",
    "set_extra_http_headers",
    "emulate_media",
    "set_viewport_size",
)
"""The `Page` methods that leave state on the page itself (listeners, init scripts, routes, bindings,
emulation, timeouts) beyond its document: a test's page that called one is not lent again."""


@dataclass
class _KeptPage:
    """A profile's page lent to one test after another while no test changed it (`ReusedProfile`)."""

    page: Page
    touched: bool = False

    def watch_setters(self) -> None:
        """Mark the page touched when a test calls one of `PAGE_STATE_SETTERS` on it."""
        for name in PAGE_STATE_SETTERS:
            setattr(self.page, name, self._marking(getattr(type(self.page), name)))

    def _marking(self, method: Any) -> Any:
        def marked(*args: Any, **kwargs: Any) -> Any:
            self.touched = True
            return method(self.page, *args, **kwargs)

        return marked


class ReusedProfile:
    """The worker's browser profiles (contexts), one per host, each lent to one test at a time with a
    page of its own.

    A new profile costs chromium about a third of what a test's page load costs (its window, its
    first renderer), and its HTTP cache starts empty, so every test asked the serve again for each
    of the page's files. A reused profile keeps its cache (the page's versioned files are
    `immutable`: loaded once per worker and host) and nothing else a test could see: after each
    test its other pages are closed and its cookies (the session) cleared. The page does not use web
    storage. A test that changes the profile itself (its clock, routes, permissions) or needs an
    empty cache names the `context` fixture and gets a fresh one. The profiles of the two hosts used
    last are kept (the shared serve's and an `own_serve` test's). Issue 16.

    The page (the tab) is lent again too: a new tab and its renderer cost chromium, its driver and the
    worker ~0.2 s of CPU, about what the page load of `sign_in` costs (measured side by side, issue 16).
    After each test it is sent to about:blank (its document, timers and event stream end there); it is
    closed instead, and the next test gets a new one, when the test closed it, resized it or called
    any of `PAGE_STATE_SETTERS` on it (a listener, an init script or a route would outlive the test).
    """

    KEPT = 2

    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self._contexts: dict[str, BrowserContext] = {}
        self._pages: dict[str, _KeptPage] = {}

    @contextmanager
    def lend(self, host: Host, errors: PageErrors) -> Generator[Page]:
        """A 1280x800 page of the profile for `host` (at about:blank); every page the test opens in
        that profile reports to `errors`. Afterwards the profile's other pages are closed, its
        cookies cleared, and the page kept for the next test when the test left nothing on it."""
        context = self._contexts.pop(host.url, None) or new_context(self._browser, host)
        self._contexts[host.url] = context  # the most recently used last
        while len(self._contexts) > self.KEPT:
            gone = next(iter(self._contexts))
            self._pages.pop(gone, None)
            self._contexts.pop(gone).close()
        kept = self._pages.pop(host.url, None)
        if kept is None:
            kept = _KeptPage(context.new_page())
        kept.page.on("pageerror", errors.record)
        kept.watch_setters()
        context.on("page", errors.watch)
        try:
            yield kept.page
        finally:
            context.remove_listener("page", errors.watch)
            for opened in context.pages:
                if opened is not kept.page:
                    opened.close()
            if self._reusable(kept):
                kept.page.goto("about:blank")
                kept.page.mouse.up()  # a test that failed between a press and its release held the button
                kept.page.remove_listener("pageerror", errors.record)
                for name in PAGE_STATE_SETTERS:
                    delattr(kept.page, name)
                self._pages[host.url] = kept
            else:
                kept.page.close()
            context.clear_cookies()

    @staticmethod
    def _reusable(kept: _KeptPage) -> bool:
        page = kept.page
        return not kept.touched and not page.is_closed() and page.viewport_size == VIEWPORT

    def close(self) -> None:
        """Close every profile."""
        self._pages.clear()
        while self._contexts:
            self._contexts.popitem()[1].close()


def login(page: Page, token: str = ADMIN_TOKEN) -> None:
    """Log in through the login form and wait for the server list."""
    page.goto("/")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()


def sign_in(page: Page, token: str = ADMIN_TOKEN) -> None:
    """Start a session of this page's profile without drawing the login form, then open the page and
    wait for the server list. The login form's post goes from the profile's own request context: it
    shares the profile's cookie jar, so the session cookie lands where the page's requests find it
    (no `Origin` header: the host treats that as a non-browser client, which the form check allows).

    For the tests that are not about logging in: it saves a page load and a form post per test (issue
    16). The form itself, its cookie and its errors stay driven by `login` (tests/web/test_login_and_csrf.py).

    Raises:
        AssertionError: the host did not answer with the redirect of a successful login.
    """
    answer = page.context.request.post("/login", form={"token": token}, max_redirects=0)
    assert answer.status == 303 and answer.headers.get("location") == "/", (answer.status, answer.text())
    page.goto("/")
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()


def sign_in_on_a_paused_clock(page: Page) -> None:
    """`sign_in` with the page's clock (timers, Date) installed, then paused a second ahead: it moves
    only when the test moves it (`page.clock.fast_forward`). The clock belongs to the profile, so use
    it only on a page of the test's own profile (a test that names `context`)."""
    page.clock.install()
    sign_in(page)
    page.clock.pause_at(datetime.now(UTC) + timedelta(seconds=1))


def held_requests(page: Page, pattern: str) -> list[Route]:
    """Hold every request of `page` matching `pattern` (a Playwright URL glob): none is answered until
    the test calls `continue_()` on it. Returns the list the held routes are appended to, in order."""
    held: list[Route] = []

    def hold(route: Route) -> None:  # a Python function: Playwright cannot wrap a bound builtin
        held.append(route)

    page.route(pattern, hold)
    return held


def wait_held(page: Page, held: list[Route], count: int = 1) -> None:
    """Wait until `held` (from `held_requests`) holds `count` routes, at most `WAIT_MS`.

    Playwright's Python client runs a route handler as a task of its own: the page's `request` event
    (`page.expect_request`) can be delivered before the handler has appended the route (a full run saw
    `held` empty right after the request). Each page round trip lets pending handlers run, so this
    waits on the handler itself, not on time.

    Raises:
        AssertionError: fewer than `count` routes were held within `WAIT_MS`.
    """
    deadline = time.monotonic() + WAIT_MS / 1000
    while len(held) < count and time.monotonic() < deadline:
        page.evaluate("() => 0")
    assert len(held) >= count, (len(held), count)
