"""Chromium's flags for the browser tests (tests/support/browser.py): Playwright's own disabled
features survive our `--disable-features` switch, and a browser context opens no WebUI of chromium's
own window (the omnibox popup renderers cost about half of chromium's CPU per test; issue 16)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import playwright
import pytest
from playwright.sync_api import Browser

from tests.support.browser import CHROMIUM_ARGS, PLAYWRIGHT_DISABLED_FEATURES, UNUSED_FEATURES


def playwright_disabled_features() -> set[str]:
    """The features the installed Playwright disables in chromium, read from its driver's
    chromiumSwitches (the list behind its own `--disable-features=` switch)."""
    lib = Path(playwright.__file__).parent / "driver" / "package" / "lib"
    for script in sorted(lib.rglob("*.js")):
        text = script.read_text(errors="replace")
        start = text.find("chromiumSwitches")
        found = re.search(r"disabledFeatures = \[(.*?)\]", text[start:], re.DOTALL) if start >= 0 else None
        if found:
            return set(re.findall(r'"([^"]+)"', re.sub(r"//[^\n]*", "", found.group(1))))
    pytest.fail(f"Playwright's chromiumSwitches (its disabledFeatures list) not found under {lib}")


def test_our_disable_features_switch_repeats_every_feature_playwright_disables() -> None:
    """Chromium keeps only the last `--disable-features`: ours comes after Playwright's, so it must
    carry Playwright's list too (else e.g. HttpsUpgrades or PaintHolding would be back on)."""
    switches = [arg for arg in CHROMIUM_ARGS if arg.startswith("--disable-features=")]
    assert len(switches) == 1, switches
    ours = set(switches[0].removeprefix("--disable-features=").split(","))
    theirs = playwright_disabled_features()
    assert len(theirs) >= 5, theirs  # the parse found the list, not an empty match
    assert theirs - set(PLAYWRIGHT_DISABLED_FEATURES) == set(), "update PLAYWRIGHT_DISABLED_FEATURES"
    assert ours == set(PLAYWRIGHT_DISABLED_FEATURES) | set(UNUSED_FEATURES)


@pytest.mark.browser
def test_a_browser_context_opens_only_its_page_and_no_webui_of_chromium_s_own(browser: Browser) -> None:
    """A new context's window preloads no chrome:// WebUI (the omnibox popup, one renderer per
    context) when its UNUSED_FEATURES are off; a renamed feature in a newer chromium fails here."""
    cdp = browser.new_browser_cdp_session()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto("data:text/html,<title>only page</title>")
        assert page.evaluate("() => document.title") == "only page"
        # CDP answers are untyped dicts.
        answer = cast("dict[str, list[dict[str, str]]]", cdp.send("Target.getTargets"))  # pyright: ignore[reportUnknownMemberType]
        targets = answer["targetInfos"]
        context_id = next(target["browserContextId"] for target in targets if target["url"].startswith("data:"))
        mine = [(target["type"], target["url"]) for target in targets if target.get("browserContextId") == context_id]
        assert mine == [("page", "data:text/html,<title>only page</title>")]
    finally:
        context.close()
        cdp.detach()
