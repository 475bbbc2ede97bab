"""The Gateway page (#/gateway): the endpoint and its tools, gateway tokens shown once, revoked with
a confirmation, and client snippets in README.md's forms (R-8.1, R-7.1, R-7.3).

A token created in the page must open `/mcp` (an MCP client from the SDK lists the tools), and after
the one-time view is gone it must not be in the DOM, localStorage, sessionStorage, the URL or any
response the browser received after the create answer.
"""

from __future__ import annotations

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from playwright.sync_api import BrowserContext, Locator, Page, Response, expect

from tests.support.browser import go_to, held_requests, sign_in, sign_in_on_a_paused_clock, wait_held
from tests.support.gateway import gateway_client
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser

README = Path(__file__).parents[2] / "README.md"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "gateway-page-test", "version": "1"},
    },
}
DOM_DUMP = """() => {
  const values = [...document.querySelectorAll("input, textarea, select")].map((el) => el.value);
  return document.documentElement.outerHTML + "\\n" + values.join("\\n") + "\\n" + document.body.innerText;
}"""
STORAGE_DUMP = "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])"


def open_gateway(page: Page) -> None:
    """From anywhere: the Gateway link of the main navigation, then wait for the token list."""
    go_to(page, "Gateway")
    expect(page.get_by_role("heading", name="Gateway", exact=True)).to_be_visible()
    expect(page.get_by_test_id("gateway-url")).to_have_text(re.compile(r"/mcp$"))


def create_token(page: Page, name: str) -> str:
    """Create a token with the keyboard (type, Enter); return it from the one-time view."""
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Name", exact=True).press("Enter")
    field = page.get_by_label("Gateway token", exact=True)
    expect(field).to_be_focused()
    token = field.input_value()
    assert token.startswith("mcpg_"), token
    return token


def initialize_status(host: Host, token: str | None) -> int:
    """The status of an MCP `initialize` POST to `/mcp`, with `Authorization: Bearer <token>` if given."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    with httpx2.Client(timeout=15) as http:
        return http.post(f"{host.url}/mcp", json=INITIALIZE, headers=headers).status_code


def gateway_tool_names(host: Host, token: str) -> set[str]:
    """The tool names an MCP client (the SDK's) sees at `/mcp` with `token`."""

    async def run() -> set[str]:
        with anyio.fail_after(30):
            async with gateway_client(host.url, token) as c:
                return {tool.name for tool in (await c.list_tools()).tools}

    # Playwright's sync API already runs an event loop in this thread: the client gets its own thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, run).result(timeout=60)


def record_bodies(context: BrowserContext) -> list[str]:
    """Every response body (and headers) the browser receives from now on, in order; the event stream is skipped."""
    bodies: list[str] = []

    def record(response: Response) -> None:
        if "/api/events" in response.url:
            return
        try:
            bodies.append(response.text())
        except Exception:  # noqa: BLE001 - redirects and aborted requests have no body to read
            bodies.append("")
        bodies.append(json.dumps(response.headers))

    context.on("response", record)
    return bodies


def snippet(scope: Page | Locator, key: str) -> str:
    return scope.locator(f'textarea[data-snippet="{key}"]').input_value()


def test_a_token_created_in_the_page_opens_the_gateway_and_is_shown_only_once(
    context: BrowserContext, page: Page, host: Host, echo_url: str
) -> None:
    add_ready_on_host(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    bodies = record_bodies(context)
    sign_in(page)
    open_gateway(page)
    expect(page.get_by_test_id("gateway-url")).to_have_text(f"{host.url}/mcp")
    expect(page.get_by_test_id("gateway-tool-count")).to_have_text("4")
    expect(page.get_by_test_id("gateway-tools").get_by_role("link", name="Manage the servers")).to_have_attribute(
        "href", "#/"
    )
    expect(page.get_by_text("No gateway tokens yet")).to_be_visible()

    token = create_token(page, "claude-code")
    after_create = len(bodies)
    one_time = page.get_by_role("region", name="New token “claude-code”")
    expect(one_time).to_contain_text("you will not see it again")
    expect(page.locator("tr", has_text="claude-code")).to_be_visible()

    # The token works at /mcp: an SDK client lists what the page counted; without it, 401.
    names = gateway_tool_names(host, token)
    assert names == {"mcp__echo__echo", "mcp__echo__add", "mcp__echo__sleep", "mcp__echo__whoami"}
    assert initialize_status(host, token) == 200
    assert initialize_status(host, None) == 401

    # Only the one-time view offers the snippets with the token; the page's own snippets keep the placeholder.
    assert token not in snippet(page.get_by_role("region", name="Connect a client"), "claude-code")
    one_time.get_by_label("Fill this token into the client snippets").check()
    assert f'--header "Authorization: Bearer {token}"' in snippet(one_time, "claude-code")
    assert json.loads(snippet(one_time, "cursor"))["mcpServers"]["mcp-center"]["headers"] == {
        "Authorization": f"Bearer {token}"
    }
    assert json.loads(snippet(one_time, "stdio"))["mcpServers"]["mcp-center"]["env"] == {
        "MCP_CENTER_GATEWAY_TOKEN": token
    }
    assert token not in page.url
    assert token not in page.evaluate(STORAGE_DUMP)

    one_time.get_by_role("button", name="Done, I saved it").press("Enter")
    expect(one_time).to_have_count(0)
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    assert token not in page.evaluate(DOM_DUMP)

    page.reload()
    expect(page.locator("tr", has_text="claude-code")).to_be_visible()
    expect(page.get_by_test_id("gateway-tool-count")).to_have_text("4")
    assert token not in page.evaluate(DOM_DUMP)
    assert token not in page.evaluate(STORAGE_DUMP)
    assert token not in page.url
    later = bodies[after_create:]
    assert any('"claude-code"' in body for body in later)  # the list answer was recorded...
    assert not any(token in body for body in later)  # ...and nothing after the create answer held the token
    assert any(token in body for body in bodies[:after_create])  # (the recorder did see the create answer)


def test_the_token_form_is_drawn_once_the_endpoint_and_its_tools_have_answered(
    context: BrowserContext, page: Page, host: Host
) -> None:
    """Drawn before GET /api/tools answered, the tools line grew ("Show their names") and moved the token
    form between a person's press and release on "Create token": the click was lost (issue 16). The
    heading comes at once; the sections once the endpoint's address and tools have answered, or after
    3 s of the page's clock (paused here: a fresh profile, `context`) when one of them hangs."""
    sign_in_on_a_paused_clock(page)
    held = held_requests(page, "**/api/tools")
    go_to(page, "Gateway")
    expect(page.get_by_role("heading", name="Gateway", exact=True)).to_be_visible()
    expect(page.get_by_test_id("gateway-url")).to_have_count(0)
    expect(page.get_by_role("button", name="Create token")).to_have_count(0)  # drawn with the heading before
    wait_held(page, held)
    assert len(held) == 1
    page.clock.fast_forward(3_000)  # GET /api/tools still hangs: the page is drawn anyway, never left empty
    expect(page.get_by_role("button", name="Create token")).to_be_visible()
    held[0].continue_()
    expect(page.get_by_test_id("gateway-tools")).to_contain_text("Add and enable a server")


def test_the_page_works_with_the_keyboard_alone(page: Page, host: Host, echo_url: str) -> None:
    add_ready_on_host(host, {"name": "Echo", "transport": "streamable_http", "url": echo_url})
    sign_in(page)
    page.keyboard.press("Shift+Tab")  # from the Servers heading: "Log out", then the last nav link
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Gateway")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Gateway", exact=True)).to_be_focused()
    expect(page.get_by_test_id("gateway-tool-count")).to_have_text("4")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Manage the servers")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # opens "Show their names"
    expect(page.get_by_text("mcp__echo__whoami")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    page.keyboard.type("keyboard")
    page.keyboard.press("Enter")
    expect(page.get_by_label("Gateway token", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Copy token")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Done, I saved it")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("region", name=re.compile("^New token"))).to_have_count(0)
    expect(page.get_by_label("Name", exact=True)).to_be_focused()


def test_leaving_the_page_removes_the_one_time_view(page: Page, host: Host) -> None:
    sign_in(page)
    open_gateway(page)
    token = create_token(page, "laptop")
    go_to(page, "Servers")
    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    assert token not in page.evaluate(DOM_DUMP)
    open_gateway(page)
    expect(page.locator("tr", has_text="laptop")).to_be_visible()
    expect(page.get_by_role("region", name=re.compile("^New token"))).to_have_count(0)
    assert token not in page.evaluate(DOM_DUMP)


def test_revoking_asks_first_and_the_token_is_refused_afterwards(page: Page, host: Host) -> None:
    sign_in(page)
    open_gateway(page)
    token = create_token(page, "cursor")
    keep = create_token(page, "keep")
    assert initialize_status(host, token) == 200
    row = page.locator("tr", has_text="cursor")
    dialog = page.get_by_role("dialog", name="Revoke “cursor”?")

    row.get_by_role("button", name="Revoke cursor").press("Enter")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")  # cancelled: nothing changes
    expect(dialog).to_be_hidden()
    expect(row).to_be_visible()
    assert initialize_status(host, token) == 200

    row.get_by_role("button", name="Revoke cursor").press("Enter")
    dialog.get_by_role("button", name="Revoke token").press("Enter")
    expect(row).to_have_count(0)
    expect(page.locator("tr", has_text="keep")).to_be_visible()
    assert initialize_status(host, token) == 401
    assert initialize_status(host, keep) == 200
    listed = host.client.get("/api/gateway/tokens").json()["tokens"]
    assert [t["name"] for t in listed] == ["keep"]


def test_revoking_the_token_in_the_one_time_view_closes_that_view(page: Page, host: Host) -> None:
    sign_in(page)
    open_gateway(page)
    token = create_token(page, "oops")
    page.get_by_role("button", name="Revoke oops").click()
    page.get_by_role("dialog", name="Revoke “oops”?").get_by_role("button", name="Revoke token").click()
    expect(page.locator("tr", has_text="oops")).to_have_count(0)
    expect(page.get_by_role("region", name="New token “oops”")).to_have_count(0)
    assert token not in page.evaluate(DOM_DUMP)
    assert initialize_status(host, token) == 401


@pytest.mark.own_serve  # 100 tokens: revoking them one by one after the test took longer than a new serve
def test_a_refused_name_and_the_token_limit_show_their_code_next_to_the_field(page: Page, host: Host) -> None:
    sign_in(page)
    open_gateway(page)
    name = page.get_by_label("Name", exact=True)
    error = page.locator(".token-form .field-error")
    name.fill("   ")
    page.get_by_role("button", name="Create token").click()
    expect(error).to_contain_text("REQUEST_INVALID")
    expect(error).to_contain_text("name")
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_be_focused()
    expect(page.get_by_role("region", name=re.compile("^New token"))).to_have_count(0)
    assert host.client.get("/api/gateway/tokens").json()["tokens"] == []

    for i in range(100):  # MAX_TOKENS in service/gateway_tokens.py
        assert host.client.post("/api/gateway/tokens", json={"name": f"t{i}"}).status_code == 201
    name.fill("one-too-many")
    page.get_by_role("button", name="Create token").click()
    expect(error).to_contain_text("REQUEST_INVALID: at most 100 gateway tokens")
    expect(page.get_by_role("region", name=re.compile("^New token"))).to_have_count(0)

    host.client.delete(f"/api/gateway/tokens/{host.client.get('/api/gateway/tokens').json()['tokens'][0]['id']}")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("region", name="New token “one-too-many”")).to_be_visible()
    expect(error).to_be_hidden()
    expect(name).not_to_have_attribute("aria-invalid", "true")


def _readme_gateway_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Connect Claude Code, Cursor or any MCP client")
    return text[start : text.index("\n## ", start + 1)]


def _readme_json_blocks(section: str) -> list[dict[str, Any]]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL)]


def test_the_snippets_are_the_readmes_forms_with_this_hosts_url(page: Page, host: Host) -> None:
    """README.md is the reference: the same command and files, with this host's URL and a placeholder."""
    section = _readme_gateway_section()
    readme_url = "http://127.0.0.1:8765/mcp"
    url = f"{host.url}/mcp"
    assert url != readme_url  # the test host runs on a free port, so the bridge needs --url
    (claude_line,) = [line for line in section.splitlines() if line.startswith("claude mcp add")]
    # The section shows Claude Code's .mcp.json, Cursor's (with `${env:...}`) and the stdio bridge's.
    blocks = _readme_json_blocks(section)
    (readme_cursor,) = [block for block in blocks if "${env:" in json.dumps(block)]
    (readme_stdio,) = [block for block in blocks if "command" in block["mcpServers"]["mcp-center"]]

    sign_in(page)
    open_gateway(page)
    connect = page.get_by_role("region", name="Connect a client")
    expect(connect.locator("textarea[data-snippet]")).to_have_count(3)

    assert snippet(connect, "claude-code") == claude_line.replace(readme_url, url).replace(
        "$GW", "${MCP_CENTER_GATEWAY_TOKEN}"
    )
    assert json.loads(snippet(connect, "cursor")) == json.loads(json.dumps(readme_cursor).replace(readme_url, url))
    stdio = json.loads(snippet(connect, "stdio"))
    entry = stdio["mcpServers"]["mcp-center"]
    assert entry["args"][-2:] == ["--url", url]
    entry["args"] = entry["args"][:-2]
    # The page fills in this installation's own program where README shows a path to replace.
    program = Path(sys.executable).parent / "mcp-center"
    assert entry["command"] == str(program)
    entry["command"] = readme_stdio["mcpServers"]["mcp-center"]["command"]
    assert stdio == readme_stdio
