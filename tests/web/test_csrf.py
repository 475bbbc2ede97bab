"""The browser session and its CSRF defence, in process (R-7.1, R-7.2): what the API and the page
accept with the session cookie, and what they refuse. No browser: the real app over ASGI.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import pytest

from mcp_center.app import create_app
from mcp_center.config import Settings
from mcp_center.web.csrf import MAX_SESSIONS, SESSION_IDLE_S, SESSION_MAX_S, BrowserSessions
from tests.support.api import BASE_URL, assert_error

pytestmark = pytest.mark.anyio

TOKEN = "web-admin-token-0123456789abcdef"
OURS = BASE_URL
CREATE = {"name": "Remote", "transport": "sse", "url": "https://a.example/sse"}
SERVERS = "/api/mcp/servers"


class LoggedIn:
    """A client holding the session cookie (httpx2 keeps it) and the page's CSRF token."""

    def __init__(self, client: httpx2.AsyncClient, csrf: str) -> None:
        self.client = client
        self.csrf = csrf

    async def post(
        self, path: str, *, origin: str | None = OURS, csrf: str | None = "page", **headers: str
    ) -> httpx2.Response:
        sent = dict(headers)
        if origin is not None:
            sent["Origin"] = origin
        if csrf is not None:
            sent["X-CSRF-Token"] = self.csrf if csrf == "page" else csrf
        return await self.client.post(path, json=CREATE, headers=sent)


async def _open(settings: Settings, base_url: str = BASE_URL) -> AsyncGenerator[LoggedIn]:
    app, _, _ = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url=base_url) as client:
            response = await client.post("/login", data={"token": TOKEN}, headers={"Origin": base_url})
            assert response.status_code == 303, response.text
            cookie = response.headers["set-cookie"]
            assert "HttpOnly" in cookie
            assert "SameSite=strict" in cookie
            assert "Path=/" in cookie
            assert ("Secure" in cookie) == base_url.startswith("https://")
            shell = await client.get("/")
            match = re.search(r'<meta name="csrf-token" content="([^"]+)">', shell.text)
            assert match, shell.text
            yield LoggedIn(client, match.group(1))


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncGenerator[LoggedIn]:
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_ADMIN_TOKEN": TOKEN})
    async for logged_in in _open(settings):
        yield logged_in


async def count_servers(browser: LoggedIn) -> int:
    response = await browser.client.get(SERVERS)
    assert response.status_code == 200, response.text
    return len(response.json()["servers"])


async def test_the_api_accepts_the_session_cookie_for_reads_without_a_csrf_token(browser: LoggedIn) -> None:
    assert await count_servers(browser) == 0


async def test_a_state_change_with_the_cookie_our_origin_and_the_csrf_token_is_accepted(browser: LoggedIn) -> None:
    response = await browser.post(SERVERS)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another port of the same host: same site, so the cookie would come along
        "https://127.0.0.1:8765",  # another scheme
        "http://localhost:8765",  # another allowed host name is still another origin
        "http://127.0.0.1",
        "null",
        "not an origin",
    ],
)
async def test_a_state_change_with_the_cookie_from_any_other_origin_is_refused(browser: LoggedIn, origin: str) -> None:
    assert_error(await browser.post(SERVERS, origin=origin), 403, "ORIGIN_NOT_ALLOWED")
    assert await count_servers(browser) == 0


async def test_a_state_change_with_the_cookie_but_no_origin_is_refused(browser: LoggedIn) -> None:
    assert_error(await browser.post(SERVERS, origin=None), 403, "ORIGIN_NOT_ALLOWED")
    assert await count_servers(browser) == 0


@pytest.mark.parametrize("csrf", [None, "", "wrong-token", "page-token-of-another-session"])
async def test_a_state_change_with_the_cookie_and_a_missing_or_wrong_csrf_token_is_refused(
    browser: LoggedIn, csrf: str | None
) -> None:
    assert_error(await browser.post(SERVERS, csrf=csrf), 403, "CSRF_TOKEN_INVALID")
    assert await count_servers(browser) == 0


@pytest.mark.parametrize("site", ["same-site", "cross-site"])
async def test_a_request_the_browser_marks_as_from_another_site_is_refused_even_for_reads(
    browser: LoggedIn, site: str
) -> None:
    assert_error(await browser.post(SERVERS, **{"Sec-Fetch-Site": site}), 403, "ORIGIN_NOT_ALLOWED")
    read = await browser.client.get(SERVERS, headers={"Sec-Fetch-Site": site})
    assert_error(read, 403, "ORIGIN_NOT_ALLOWED")


async def test_a_read_with_the_cookie_from_another_origin_is_refused(browser: LoggedIn) -> None:
    assert_error(
        await browser.client.get(SERVERS, headers={"Origin": "http://127.0.0.1:9999"}), 403, "ORIGIN_NOT_ALLOWED"
    )


async def test_an_authorization_header_is_judged_alone_even_beside_a_valid_cookie(browser: LoggedIn) -> None:
    response = await browser.client.get(SERVERS, headers={"Authorization": "Bearer wrong-token-0123456789"})
    assert_error(response, 401, "ADMIN_AUTH_REQUIRED")


async def test_the_public_url_origin_counts_as_ours_and_makes_the_cookie_secure(tmp_path: Path) -> None:
    """Behind a TLS proxy the page's origin is the public URL's, and the cookie is `Secure`."""
    settings = Settings.load(
        data_dir=tmp_path / "data",
        public_url="https://mcp.example.com",
        environ={"MCP_CENTER_ADMIN_TOKEN": TOKEN},
    )
    async for browser in _open(settings, "https://127.0.0.1:8765"):
        response = await browser.post(SERVERS, origin="https://mcp.example.com")
        assert response.status_code == 201, response.text
        assert_error(await browser.post(SERVERS, origin="https://mcp.example.com:8443"), 403, "ORIGIN_NOT_ALLOWED")


async def test_login_from_another_origin_is_refused_and_sets_no_cookie(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_ADMIN_TOKEN": TOKEN})
    app, _, _ = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            response = await client.post("/login", data={"token": TOKEN}, headers={"Origin": "http://127.0.0.1:9999"})
            assert response.status_code == 403
            assert "set-cookie" not in response.headers
            wrong = await client.post("/login", data={"token": TOKEN[:-1]})
            assert wrong.status_code == 401
            assert "set-cookie" not in wrong.headers
            assert TOKEN[:-1] not in wrong.text
            big = await client.post(
                "/login",
                content=b"token=" + b"x" * 20_000,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            assert big.status_code == 401
            shell = await client.get("/")
            assert shell.status_code == 303
            assert shell.headers["location"] == "/login"


async def test_logout_needs_the_csrf_token_and_then_ends_the_session(browser: LoggedIn) -> None:
    refused = await browser.client.post("/logout", data={"csrf_token": "wrong"}, headers={"Origin": OURS})
    assert refused.status_code == 403
    assert await count_servers(browser) == 0
    response = await browser.client.post("/logout", data={"csrf_token": browser.csrf}, headers={"Origin": OURS})
    assert response.status_code == 303
    assert response.headers["location"] == "/login"
    assert "mcp_center_session=" in response.headers["set-cookie"]
    assert_error(await browser.client.get(SERVERS), 401, "ADMIN_AUTH_REQUIRED")


async def test_pages_answer_with_a_strict_content_security_policy_and_no_store(browser: LoggedIn) -> None:
    for path in ("/", "/login"):
        response = await browser.client.get(path, follow_redirects=True)
        assert response.status_code == 200
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["cache-control"] == "no-store"
        assert TOKEN not in response.text
    script = await browser.client.get("/static/js/app.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")


def test_sessions_expire_when_idle_or_too_old_and_the_oldest_goes_when_full() -> None:
    now = [1000.0]
    sessions = BrowserSessions(clock=lambda: now[0])
    idle_id, _ = sessions.create()
    now[0] += SESSION_IDLE_S + 1
    assert sessions.lookup(idle_id) is None

    busy_id, _ = sessions.create()
    for _ in range(int(SESSION_MAX_S // (SESSION_IDLE_S / 2)) + 1):
        now[0] += SESSION_IDLE_S / 2
        if sessions.lookup(busy_id) is None:
            break
    assert sessions.lookup(busy_id) is None
    assert now[0] - 1000.0 > SESSION_MAX_S

    first_id, _ = sessions.create()
    for _ in range(MAX_SESSIONS):
        now[0] += 1
        sessions.create()
    assert sessions.lookup(first_id) is None
    assert sessions.lookup(None) is None
    assert sessions.lookup("not-a-session") is None


@pytest.mark.parametrize("path", [f"{SERVERS}/remote/rpc", f"{SERVERS}/remote/complete"])
async def test_the_console_and_debugger_requests_need_the_csrf_token_too(browser: LoggedIn, path: str) -> None:
    """The JSON-RPC console sends requests as the admin: from a page, only with our CSRF token (R-12.1, R-7.2)."""
    assert_error(await browser.post(path, csrf=None), 403, "CSRF_TOKEN_INVALID")
    assert_error(await browser.post(path, csrf="wrong-token"), 403, "CSRF_TOKEN_INVALID")
    level = await browser.client.put(
        f"{SERVERS}/remote/logging/level", json={"level": "debug"}, headers={"Origin": OURS}
    )
    assert_error(level, 403, "CSRF_TOKEN_INVALID")
    # With the token the request reaches the route, whose body model refuses the server body sent
    # (FastAPI validates it before the handler runs: api/bodies.py).
    error = assert_error(await browser.post(path), 422, "REQUEST_INVALID")
    assert {e["code"] for e in error["details"]["errors"]} == {"FIELD_REQUIRED"}


async def test_the_page_loads_its_files_under_a_versioned_path_kept_for_good_and_preloads_every_module(
    browser: LoggedIn,
) -> None:
    """Versioned static paths are immutable, the plain and stale ones revalidated (issue 16)."""
    shell = (await browser.client.get("/")).text
    entry = re.search(r'<script type="module" src="(/static/v-[0-9a-f]{12})/js/app\.js"></script>', shell)
    assert entry, shell
    prefix = entry.group(1)
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)">', shell)
    assert f"{prefix}/js/dom.js" in preloaded and f"{prefix}/js/feed.js" in preloaded, preloaded
    assert f"{prefix}/js/app.js" not in preloaded and len(preloaded) == len(set(preloaded)), preloaded
    for path in (f"{prefix}/js/app.js", f"{prefix}/css/app.css", *preloaded):
        answer = await browser.client.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["cache-control"] == "public, max-age=31536000, immutable", path
        assert answer.headers["x-content-type-options"] == "nosniff"
    plain = await browser.client.get("/static/js/app.js")
    stale = await browser.client.get("/static/v-000000000000/js/app.js")
    current = await browser.client.get(f"{prefix}/js/app.js")
    for answer in (plain, stale):
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "no-cache"
        assert answer.content == current.content
    assert (await browser.client.get(f"{prefix}/js/nothing-here.js")).status_code == 404
