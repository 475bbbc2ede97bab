"""The worker's reused browser profile lends its page again only when the last test left nothing on it
(tests/support/browser.py `ReusedProfile`, issue 16)."""

from __future__ import annotations

from playwright.sync_api import Browser, Request

from tests.support.browser import PageErrors, ReusedProfile, sign_in
from tests.support.serve import Host


def test_an_untouched_page_is_lent_again_blank_and_signed_out_and_a_page_given_a_listener_is_not(
    browser: Browser, host: Host
) -> None:
    profile = ReusedProfile(browser)
    errors = PageErrors()
    try:
        with profile.lend(host, errors) as first:
            sign_in(first)
        with profile.lend(host, errors) as second:
            assert second is first
            assert second.url == "about:blank"
            assert second.context.cookies() == []
            seen: list[str] = []

            def keep(request: Request) -> None:
                seen.append(request.url)

            second.on("request", keep)
        with profile.lend(host, errors) as third:
            assert third is not second
            assert second.is_closed()
            sign_in(third)
            assert seen == []  # the closed page's listener heard nothing of the new page
        with profile.lend(host, errors) as fourth:
            assert fourth is third
            fourth.set_viewport_size({"width": 400, "height": 800})
        with profile.lend(host, errors) as fifth:
            assert fifth is not fourth
            assert fifth.viewport_size == {"width": 1280, "height": 800}
    finally:
        profile.close()
    assert errors.messages == []
