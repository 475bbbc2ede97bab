"""The settings page as an MCP debugger (issue 15, R-12.1), in a real browser against a real
`mcp-center serve` and @modelcontextprotocol/server-everything (the Inspector's own test server:
progress, logging, completion and elicitation tools): server info, live log messages with a
`logging/setLevel` control, notifications, a call's progress bar, the JSON-RPC console with ping,
completion in prompt and resource-template forms, and a playground call that waits on a question
linking to its Inbox card.

server-everything runs as the worker's one Streamable HTTP server (`everything_http`,
tests/web/conftest.py), each test in an MCP session of its own: adding it over stdio started node
twice per test (the test and the session), the larger part of these tests' time (issue 16). What
it says about itself over stdio is checked through the API (tests/api/test_debugger_api.py)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import RAW_STDIO, call_in_playground, go_to, open_server, raw_stdio_body, sign_in
from tests.support.gateway import gateway_client
from tests.support.readiness import add_ready_on_host
from tests.support.serve import Host

pytestmark = pytest.mark.browser


@pytest.fixture
def everything(host: Host, everything_http: str) -> dict[str, Any]:
    """The worker's server-everything over Streamable HTTP, ready on `host` (created, confirmed,
    tested and enabled through the API) in an MCP session of its own."""
    body = {"id": "everything", "name": "Everything", "transport": "streamable_http", "url": f"{everything_http}/mcp"}
    return add_ready_on_host(host, body)


def test_the_overview_shows_what_the_server_says_about_itself(
    page: Page, host: Host, everything: dict[str, Any]
) -> None:
    sign_in(page)
    open_server(page, "Everything")
    info = page.get_by_test_id("server-info")
    expect(info).to_contain_text("mcp-servers/everything")
    expect(info.get_by_test_id("protocol-version")).to_have_text("2025-11-25")
    for capability in ("tools", "prompts", "resources", "logging", "completions"):
        expect(info.locator(f'li[data-capability="{capability}"]')).to_be_visible()
    instructions = host.client.get("/api/mcp/servers/everything/info").json()["instructions"]
    expect(info.locator("blockquote.instructions")).to_contain_text(instructions.strip().splitlines()[0][:40])


def test_log_messages_arrive_live_at_the_level_set_on_the_activity_tab(
    page: Page, host: Host, everything: dict[str, Any]
) -> None:
    sign_in(page)
    open_server(page, "Everything", "Activity")
    expect(page.get_by_test_id("log-level")).to_have_text("Level: the server's default")
    page.get_by_label("Minimum log level").select_option("debug")
    page.get_by_role("button", name="Set level").click()
    expect(page.get_by_test_id("log-level")).to_have_text("Level: debug")
    # The server starts logging (one message at once, then one every 5 s): it appears without a reload.
    started = host.client.post(
        "/api/mcp/servers/everything/tools/toggle-simulated-logging/call", json={"arguments": {}}
    )
    assert started.status_code == 200, started.text
    entry = page.locator('li.activity-entry[data-kind="log"]').first
    expect(entry).to_contain_text("notifications/message")
    expect(entry).to_contain_text(re.compile(r"message", re.IGNORECASE))
    # The filter narrows to one kind; the request log has the setLevel request like any call.
    page.get_by_label("Show").select_option("progress")
    expect(page.locator('li.activity-entry[data-kind="log"]')).to_have_count(0)
    page.get_by_label("Show").select_option("all")
    page.get_by_role("button", name="Logs").click()
    drawer = page.get_by_role("dialog", name="Logs · Everything")
    expect(drawer.locator('tr[data-method="logging/setLevel"]').first).to_be_visible()
    drawer.get_by_role("button", name="Close").click()
    host.client.post("/api/mcp/servers/everything/tools/toggle-simulated-logging/call", json={"arguments": {}})


def test_the_playground_draws_the_progress_of_its_call(page: Page, everything: dict[str, Any]) -> None:
    sign_in(page)
    open_server(page, "Everything", "Tools")
    tool = "trigger-long-running-operation"
    call_in_playground(page, tool, {"duration": "0.6", "steps": "3"})  # 0.2 s a step
    item = page.locator(f'li.tool[data-tool="{tool}"]')
    bar = item.get_by_role("progressbar", name="Progress of this call")
    expect(bar).to_be_visible()
    expect(item.locator(".progress-text")).to_have_text(re.compile(r"^[123] of 3$"))
    expect(item.locator(".result")).to_contain_text("Long running operation completed")
    expect(item.locator(".progress-text")).to_have_text("3 of 3")
    # The same progress is in the server's activity feed, under the call's operation id.
    open_server(page, "Everything", "Activity")
    expect(page.locator('li.activity-entry[data-kind="progress"]')).to_have_count(3)


def test_the_console_sends_a_request_shows_the_pair_and_pings(page: Page, everything: dict[str, Any]) -> None:
    sign_in(page)
    open_server(page, "Everything", "Console")
    method = page.get_by_label("Method")
    expect(page.locator("datalist option[value='completion/complete']")).to_have_count(1)
    method.fill("prompts/list")
    page.get_by_label(re.compile(r"^Params")).fill("{}")
    page.get_by_role("button", name="Send request").click()
    exchange = page.locator('li.exchange[data-method="prompts/list"]').first
    expect(exchange.locator("pre.rpc-request")).to_contain_text('"method": "prompts/list"')
    expect(exchange.locator("pre.rpc-response")).to_contain_text("completable-prompt")
    expect(exchange.locator("h3")).to_contain_text(re.compile(r"ok · [\d.]+ ms"))
    page.get_by_role("button", name="Ping").click()
    expect(page.get_by_test_id("ping-latency")).to_have_text(re.compile(r"^ping: [\d.]+ ms$"))
    # A server's JSON-RPC error is an answer, shown as such; bad JSON never leaves the page.
    method.fill("resources/read")
    page.get_by_label(re.compile(r"^Params")).fill('{"uri": "demo://no/such/thing"}')
    page.get_by_role("button", name="Send request").click()
    expect(page.locator('li.exchange[data-method="resources/read"]').first.locator("pre.rpc-response")).to_contain_text(
        '"error"'
    )
    page.get_by_label(re.compile(r"^Params")).fill("{not json")
    page.get_by_role("button", name="Send request").click()
    expect(page.get_by_text(re.compile(r"^Not valid JSON"))).to_be_visible()
    page.get_by_role("button", name="Logs").click()
    drawer = page.get_by_role("dialog", name="Logs · Everything")
    expect(drawer.locator('tr[data-method="ping"]').first).to_be_visible()


def test_prompt_and_template_forms_offer_the_server_s_completions(page: Page, everything: dict[str, Any]) -> None:
    sign_in(page)
    open_server(page, "Everything", "Prompts")
    prompt = page.locator('li.prompt[data-prompt="completable-prompt"]')
    department = prompt.get_by_label(re.compile(r"department"))
    department.click()
    department.fill("E")
    # Each answer redraws the list: both checks wait for it (a read after a count could see an older list).
    departments = prompt.locator('datalist[data-completions="department"] option')
    expect(departments).to_have_count(1)
    expect(departments).to_have_attribute("value", "Engineering")
    department.fill("Engineering")
    name = prompt.get_by_label(re.compile(r"\bname\b"))
    name.click()
    # The other argument's value is the context: Engineering's team leads.
    options = prompt.locator('datalist[data-completions="name"] option')
    expect(options).to_have_count(3)
    for i, lead in enumerate(("Alice", "Bob", "Charlie")):
        expect(options.nth(i)).to_have_attribute("value", lead)

    open_server(page, "Everything", "Resources")
    template = page.locator('li.resource[data-uri="demo://resource/dynamic/text/{resourceId}"]')
    template.get_by_text("Fill the template").click()
    field = template.get_by_role("textbox", name=re.compile(r"^resourceId"))
    field.fill("7")
    expect(template.locator('datalist[data-completions="resourceId"] option[value="7"]')).to_have_count(1)


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_a_playground_call_waiting_on_a_question_links_to_its_inbox_card(
    page: Page, everything: dict[str, Any]
) -> None:
    sign_in(page)
    open_server(page, "Everything", "Tools")
    tool = "trigger-elicitation-request"
    call_in_playground(page, tool, {})
    item = page.locator(f'li.tool[data-tool="{tool}"]')
    waits = item.get_by_test_id("call-waits")
    expect(waits).to_contain_text("waits for your answer")
    waits.get_by_role("link", name="answer it in the Inbox").click()
    card = page.locator("article.interaction-card.linked")
    expect(card).to_be_visible()
    expect(card.get_by_role("heading")).to_be_focused()
    # The call goes on once the question is declined and finishes while we are in the Inbox: the
    # playground's request is answered (the page left the Tools tab, not the document).
    with page.expect_response(lambda response: response.url.endswith(f"/tools/{tool}/call")) as finished:
        card.get_by_role("button", name="Decline").click()
    assert finished.value.ok, finished.value.text()


def test_after_enable_the_step_card_follows_the_live_state_at_once(page: Page, host: Host, tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.mkdir()
    body = {
        "id": "slow",
        "name": "Slow",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(RAW_STDIO), "--hold-later-starts", str(hold)],
    }
    created = host.client.post("/api/mcp/servers", json=body)
    assert created.status_code == 201, created.text
    digest = created.json()["digest"]
    assert host.client.post("/api/mcp/servers/slow/trust", json={"digest": digest}).status_code == 200
    assert host.client.post("/api/mcp/servers/slow/test").json()["ok"]
    sign_in(page)
    open_server(page, "Slow")
    expect(page.get_by_test_id("enable-state")).to_have_text("Ready to enable.")
    page.get_by_role("button", name="Enable", exact=True).click()
    # The long-lived session is held in `connecting`: the card says so, with the badge, at once.
    state = page.get_by_test_id("enable-state")
    expect(state).to_contain_text(re.compile(r"^(Enabling: starting its long-lived session…|Enabled: connecting…)"))
    expect(state.locator(".badge")).to_have_text("connecting")
    expect(page.locator(".head-state .badge")).to_have_text("connecting")
    expect(page.get_by_role("button", name="Disable", exact=True)).to_be_enabled()
    (hold / "release").touch()
    expect(state).to_contain_text("Enabled: a long-lived session serves its tools.")
    expect(state.locator(".badge")).to_have_text("ready")
    expect(page.get_by_test_id("step-said")).to_have_text("Slow enabled.")
    # What a step did is said above the steps, not in a toast over them.
    steps = page.locator("ol.steps").bounding_box()
    toast = page.locator("#toast").bounding_box()
    assert steps is not None and toast is not None
    assert toast["y"] + toast["height"] <= steps["y"]
    go_to(page, "Servers")


@pytest.mark.own_serve  # it leaves cards or approvals: a serve of its own
def test_an_approval_card_names_the_gateway_token_and_the_client_that_asked(
    page: Page, host: Host, everything: dict[str, Any]
) -> None:
    token = host.client.post("/api/gateway/tokens", json={"name": "ci-agent"}).json()["token"]

    async def agent_call() -> str:
        async with gateway_client(host.url, token) as client:
            result = await client.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
            return str(result.content[0].model_dump().get("text"))

    sign_in(page)
    go_to(page, "Inbox")
    with ThreadPoolExecutor(1) as pool:  # the agent waits in another thread while the page answers
        call = pool.submit(anyio.run, agent_call)
        card = page.locator("article.approval-card")
        caller = card.get_by_test_id("approval-caller")
        expect(caller).to_contain_text("gateway token ci-agent")
        expect(caller).to_contain_text(re.compile(r"client \S+"))
        card.get_by_role("button", name="Approve").click()
        assert "5" in call.result(timeout=60)


def test_screenshots_of_the_debugger(page: Page, host: Host, everything: dict[str, Any], tmp_path: Path) -> None:
    """README's pictures of the debugger; copied to $MCP_CENTER_SCREENSHOT_DIR when it is set
    (`scripts/screenshots`)."""
    shots = tmp_path / "screenshots"
    shots.mkdir()
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page)
    open_server(page, "Everything", "Activity")
    page.get_by_label("Minimum log level").select_option("debug")
    page.get_by_role("button", name="Set level").click()
    expect(page.get_by_test_id("log-level")).to_have_text("Level: debug")
    host.client.post("/api/mcp/servers/everything/tools/toggle-simulated-logging/call", json={"arguments": {}})
    host.client.post(
        "/api/mcp/servers/everything/tools/trigger-long-running-operation/call",
        json={"arguments": {"duration": 0.4, "steps": 2}},
    )
    host.client.post(
        "/api/mcp/servers/everything/rpc",
        json={"method": "resources/subscribe", "params": {"uri": "demo://resource/static/document/architecture.md"}},
    )
    host.client.post("/api/mcp/servers/everything/tools/toggle-subscriber-updates/call", json={"arguments": {}})
    expect(page.locator('li.activity-entry[data-kind="progress"]')).to_have_count(2)
    expect(page.locator('li.activity-entry[data-kind="log"]').first).to_be_visible()
    page.screenshot(path=shots / "activity.png", full_page=False)
    open_server(page, "Everything", "Console")
    page.get_by_label("Method").fill("tools/call")
    page.get_by_label(re.compile(r"^Params")).fill('{"name": "get-sum", "arguments": {"a": 2, "b": 40}}')
    page.get_by_role("button", name="Send request").click()
    expect(page.locator('li.exchange[data-method="tools/call"]')).to_be_visible()
    page.get_by_role("button", name="Ping").click()
    expect(page.get_by_test_id("ping-latency")).to_contain_text("ping:")
    page.screenshot(path=shots / "console.png", full_page=False)
    open_server(page, "Everything")
    expect(page.get_by_test_id("server-info")).to_contain_text("mcp-servers/everything")
    page.get_by_test_id("server-info").scroll_into_view_if_needed()
    page.screenshot(path=shots / "server-info.png", full_page=False)
    host.client.post("/api/mcp/servers/everything/tools/toggle-simulated-logging/call", json={"arguments": {}})
    host.client.post("/api/mcp/servers/everything/tools/toggle-subscriber-updates/call", json={"arguments": {}})
    target = os.environ.get("MCP_CENTER_SCREENSHOT_DIR")
    if target:
        for shot in sorted(shots.glob("*.png")):
            shutil.copyfile(shot, Path(target) / shot.name)
    assert {p.name for p in shots.glob("*.png")} == {"activity.png", "console.png", "server-info.png"}


def test_a_server_that_went_down_is_connected_again_from_the_console(page: Page, host: Host) -> None:
    """Debugging a broken server: the Console and Activity tabs say why they cannot work and offer
    to connect again; the Activity tab keeps what the server sent before it went down."""
    add_ready_on_host(host, raw_stdio_body("Crashing"))
    host.client.post("/api/mcp/servers/crashing/tools/exit/call", json={"arguments": {"code": 3}})
    sign_in(page)
    open_server(page, "Crashing", "Console")
    note = page.get_by_test_id("not-ready")
    expect(note).to_contain_text("process exited")
    expect(page.get_by_label("Method")).to_have_count(0)
    note.get_by_role("button", name="Connect now").click()
    expect(page.get_by_label("Method")).to_be_visible()
    page.get_by_role("button", name="Ping").click()
    expect(page.get_by_test_id("ping-latency")).to_have_text(re.compile(r"^ping: [\d.]+ ms$"))
    host.client.post("/api/mcp/servers/crashing/tools/exit/call", json={"arguments": {"code": 4}})
    open_server(page, "Crashing", "Activity")
    expect(page.get_by_test_id("not-ready")).to_contain_text("code 4")
    expect(page.get_by_text("A local server's own stderr is in the Logs drawer.", exact=False)).to_be_visible()
