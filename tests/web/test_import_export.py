"""Import and export in a real browser (R-1.8, R-1.9): a Claude Code `.mcp.json` is chosen as a file,
previewed (ids and a clash, transports, which fields become secrets, values to supply with a
default offered, a rejected entry and why), completed with values typed into password inputs, and
applied; the servers appear untrusted and disabled, and the planted secrets never reach the page
HTML, the DOM, storage or any response. Export shows placeholders instead of them.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, Response, expect

from tests.support.browser import go_to, sign_in
from tests.support.serve import ADMIN_TOKEN, Host

pytestmark = pytest.mark.browser

ROOT = "PLANTED-import-" + uuid.uuid4().hex
GITHUB_SECRET = ROOT + "-github"
ORBIT_SECRET = ROOT + "-orbit"
LITERAL_SECRET = ROOT + "-literal"  # written in the file itself

MCP_JSON = """{
  // Project servers. Secrets come from the shell.
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}",
        "GITHUB_API_URL": "${GITHUB_API_URL:-https://api.github.com}"
      }
    },
    "orbit": {
      "type": "http",
      "url": "https://mcp.orbit.example/mcp",
      "headers": {"Authorization": "Bearer ${ORBIT_TOKEN}", "X-Workspace": "acme", "X-Api-Key": "LITERAL"}
    },
    "shell": {"command": "npx -y some-server | tee log"},
  }
}
""".replace("LITERAL", LITERAL_SECRET)

DOM_DUMP = """() => {
  const values = [...document.querySelectorAll("input, textarea, select")].map((el) => el.value);
  return document.documentElement.outerHTML + "\\n" + values.join("\\n") + "\\n" + document.body.innerText;
}"""
STORAGE_DUMP = "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])"
LISTEN_TO_EVENTS = """() => {
  window.seenEvents = [];
  const stream = new EventSource("/api/events");
  const types = ["server.status", "server.catalog", "server.created", "server.updated", "server.deleted",
    "server.trusted", "server.tested", "server.enabled", "server.disabled", "server.secret_set",
    "server.secret_deleted", "events.dropped"];
  for (const type of types) stream.addEventListener(type, (message) => window.seenEvents.push(message.data));
}"""


def test_a_claude_code_file_is_previewed_completed_and_applied_without_leaking_its_secrets(
    context: BrowserContext, page: Page, host: Host, tmp_path: Path
) -> None:
    existing = host.client.post(
        "/api/mcp/servers", json={"name": "github", "transport": "streamable_http", "url": "https://gh.example/mcp"}
    )
    assert existing.status_code == 201, existing.text
    bodies: list[str] = []

    def record(response: Response) -> None:
        try:
            bodies.append(response.text())
        except Exception:  # noqa: BLE001 - redirects and the event stream have no body to read here
            bodies.append(response.url)
        bodies.append(json.dumps(response.headers))

    context.on("response", record)
    sign_in(page)
    page.evaluate(LISTEN_TO_EVENTS)  # the event stream's messages, which no response body shows
    go_to(page, "Import")
    expect(page.get_by_role("heading", name="Import", exact=True)).to_be_visible()
    source = tmp_path / ".mcp.json"
    source.write_text(MCP_JSON, encoding="utf-8")
    page.get_by_label("Or choose a file").set_input_files(source)
    expect(page.get_by_label("Configuration (JSON)")).to_have_value(MCP_JSON)
    page.get_by_role("button", name="Preview").click()

    # The registered `github` is another server (HTTP): by default that stops the import.
    preview = page.get_by_role("region", name="Preview")
    expect(preview.get_by_test_id("import-conflicts")).to_contain_text(
        "IMPORT_CONFLICT: github has the name of a registered server with another definition"
    )
    expect(preview.locator('li[data-existing="github"]')).to_contain_text("differs in transport")
    expect(preview.get_by_role("button", name="Create 1 server")).to_be_disabled()
    page.get_by_label("A server of the same name, defined differently").select_option("rename")
    expect(preview.get_by_text("The configuration changed since this preview")).to_be_visible()
    page.get_by_role("button", name="Preview", exact=True).click()

    expect(preview.get_by_test_id("import-summary")).to_have_text(
        "Claude Code format · 2 servers to create, untrusted and disabled · 1 entry rejected · 3 values to supply."
    )
    github = preview.locator('li.import-server[data-source="mcpServers.github"]')
    expect(github).to_contain_text("github-2")
    expect(github).to_contain_text("“github” is taken by a registered server")
    expect(github).to_contain_text("stdio (local program)")
    expect(github).to_contain_text("npx -y @modelcontextprotocol/server-github@2025.4.8")
    expect(github).to_contain_text("GITHUB_PERSONAL_ACCESS_TOKEN — secret environment variable")
    orbit = preview.locator('li.import-server[data-source="mcpServers.orbit"]')
    expect(orbit).to_contain_text("Streamable HTTP")
    expect(orbit).to_contain_text("https://mcp.orbit.example/mcp")
    expect(orbit).to_contain_text("token — bearer token; its value comes from the variables below")
    expect(orbit).to_contain_text("X-Api-Key — secret header; its value is in the file and is stored encrypted")
    rejected = preview.locator('li.rejected[data-source="mcpServers.shell"]')
    expect(rejected).to_contain_text("COMMAND_NOT_A_PROGRAM")

    github_token = preview.get_by_label("GITHUB_TOKEN (secret)")
    orbit_token = preview.get_by_label("ORBIT_TOKEN (secret)")
    expect(github_token).to_have_attribute("type", "password")
    expect(orbit_token).to_have_attribute("type", "password")
    api_url = preview.get_by_label("GITHUB_API_URL", exact=True)
    expect(api_url).to_have_attribute("type", "text")
    use_default = preview.get_by_label("Use the file's default: https://api.github.com")
    expect(use_default).not_to_be_checked()
    use_default.check()
    expect(api_url).to_be_disabled()
    github_token.fill(GITHUB_SECRET)
    orbit_token.fill(ORBIT_SECRET)
    preview.get_by_role("button", name="Create 2 servers").click()

    expect(page.get_by_role("heading", name="Servers", exact=True)).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Imported 2 servers (github-2, orbit)")).to_be_visible()
    for server_id, name in (("github-2", "github"), ("orbit", "orbit")):
        row = page.locator(f'tr[data-server="{server_id}"]')
        expect(row.get_by_role("switch", name=f"Enabled: {name}")).to_have_attribute("aria-checked", "false")
        expect(row.locator('td[data-label="Trusted / tested"]')).to_have_text("not trusted / not tested")
    github_view = host.client.get("/api/mcp/servers/github-2").json()
    assert (github_view["trusted"], github_view["enabled"]) == (False, False)
    assert github_view["secret_env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": {"configured": True}}
    assert github_view["env"] == {"GITHUB_API_URL": "https://api.github.com"}
    orbit_view = host.client.get("/api/mcp/servers/orbit").json()
    assert orbit_view["auth"] == {"kind": "bearer", "token": {"configured": True}}
    assert orbit_view["headers"] == {"X-Workspace": "acme"}
    assert orbit_view["secret_headers"] == {"X-Api-Key": {"configured": True}}

    # Export shows placeholders where the secrets are.
    go_to(page, "Export")
    page.get_by_label("Client").select_option("cursor")
    exported = page.get_by_label("Exported configuration (.cursor/mcp.json)")
    expect(exported).to_have_value(re.compile(r"\$\{env:MCP_CENTER_SECRET_GITHUB_2_GITHUB_PERSONAL_ACCESS_TOKEN\}"))
    config = json.loads(exported.input_value())
    assert config == host.client.get("/api/mcp/export?format=cursor").json()["config"]
    assert config["mcpServers"]["orbit"]["headers"]["Authorization"].startswith("Bearer ${env:MCP_CENTER_SECRET_")
    placeholders = page.locator("table.placeholders tbody tr")
    expect(placeholders).to_have_count(3)
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download").first.click()
    download = download_info.value
    assert download.suggested_filename == "mcp.json"
    saved = tmp_path / "export.json"
    download.save_as(saved)
    assert json.loads(saved.read_text(encoding="utf-8")) == config

    snapshots = [page.content(), page.evaluate(DOM_DUMP), page.evaluate(STORAGE_DUMP), json.dumps(context.cookies())]
    events = page.evaluate("() => window.seenEvents")
    assert any('"server.created"' in e for e in events), events
    bodies.extend(events)
    assert len(bodies) > 10
    for text in [*snapshots, *bodies]:
        for planted in (GITHUB_SECRET, ORBIT_SECRET, LITERAL_SECRET, ROOT, ADMIN_TOKEN):
            assert planted not in text
    assert page.evaluate(STORAGE_DUMP) == "[[],[]]"


def test_broken_json_points_at_its_line_and_missing_values_are_shown_next_to_their_field(
    page: Page, host: Host
) -> None:
    sign_in(page)
    go_to(page, "Import")
    content = page.get_by_label("Configuration (JSON)")
    content.fill('{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}')
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("alert")).to_contain_text("IMPORT_JSON_INVALID")
    expect(page.get_by_role("alert")).to_contain_text("Line 4, column 5")
    expect(page.get_by_role("alert")).not_to_contain_text("(line 4, column 5)")  # trial35: said twice
    expect(content).to_have_attribute("aria-invalid", "true")
    expect(content).to_be_focused()

    content.fill(MCP_JSON)
    page.get_by_role("button", name="Preview").click()
    preview = page.get_by_role("region", name="Preview")
    orbit_token = preview.get_by_label("ORBIT_TOKEN (secret)")
    orbit_token.fill(ORBIT_SECRET)
    preview.get_by_role("button", name="Create 2 servers").click()
    github_field = preview.locator('.variable[data-variable="GITHUB_TOKEN"]')
    expect(github_field.locator(".field-error")).to_contain_text("VALUE_REQUIRED")
    expect(preview.get_by_label("GITHUB_TOKEN (secret)")).to_have_attribute("aria-invalid", "true")
    expect(orbit_token).to_have_value("")  # typed secrets are cleared whatever the answer
    expect(preview.get_by_role("alert")).to_contain_text("IMPORT_VALUES_INVALID")
    assert ORBIT_SECRET not in page.evaluate(DOM_DUMP)
    assert host.client.get("/api/mcp/servers").json()["servers"] == []

    # Editing the text after the preview makes it stale: apply waits for a new preview.
    content.fill(MCP_JSON.replace("acme", "beta"))
    expect(preview.get_by_text("The configuration changed since this preview")).to_be_visible()
    expect(preview.get_by_role("button", name="Create 2 servers")).to_be_disabled()


def test_previewing_a_file_already_imported_shows_it_registered_and_nothing_to_create(page: Page, host: Host) -> None:
    """Importing the same file again created `-2` copies (issue 16). The page now lists each entry as
    already registered and unchanged, and has nothing to create (R-1.8)."""
    content = json.dumps({"mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time"]}}})
    preview = host.client.post("/api/mcp/import/preview", json={"content": content}).json()
    applied = host.client.post(
        "/api/mcp/import/apply", json={"token": preview["token"], "digest": preview["digest"], "content": content}
    )
    assert applied.status_code == 201, applied.text
    sign_in(page)
    go_to(page, "Import")
    page.get_by_label("Configuration (JSON)").fill(content)
    page.get_by_role("button", name="Preview").click()
    shown = page.get_by_role("region", name="Preview")
    expect(shown.get_by_test_id("import-summary")).to_contain_text("0 servers to create")
    expect(shown.get_by_test_id("import-summary")).to_contain_text("1 entry already registered")
    expect(shown.locator('li[data-existing="clock"]')).to_have_attribute("data-outcome", "unchanged")
    expect(shown.get_by_role("button", name="Nothing to create")).to_be_disabled()
    assert [s["id"] for s in host.client.get("/api/mcp/servers").json()["servers"]] == ["clock"]


def test_a_file_that_is_not_utf8_is_refused_not_loaded_as_replacement_characters(
    page: Page, host: Host, tmp_path: Path
) -> None:
    """fix38: the page read a chosen file with `file.text()`, so Latin-1 bytes became U+FFFD and the
    mangled text was previewed; the CLI and REST refuse it. The page refuses it too, with the same
    code and the place of the first bad byte, and loads nothing. A UTF-16 file with its BOM (Notepad)
    is read as the host reads it (R-1.8)."""
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'{\n  "mcpServers": {"caf\xe9": {"command": "x"}}\n}\n')
    sign_in(page)
    go_to(page, "Import")
    content = page.get_by_label("Configuration (JSON)")
    page.get_by_label("Or choose a file").set_input_files(latin1)
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("IMPORT_JSON_INVALID")
    expect(alert).to_contain_text("latin1.json is not valid UTF-8 text (line 2, column 22)")
    expect(content).to_have_value("")
    assert "\ufffd" not in page.evaluate(DOM_DUMP)

    utf16 = tmp_path / "notepad.json"
    utf16.write_bytes(json.dumps({"mcpServers": {"café": {"command": "x"}}}).encode("utf-16"))
    page.get_by_label("Or choose a file").set_input_files(utf16)
    expect(content).to_have_value(json.dumps({"mcpServers": {"café": {"command": "x"}}}))
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("region", name="Preview").get_by_test_id("import-summary")).to_contain_text(
        "1 server to create"
    )


def test_an_empty_import_is_refused_with_import_empty_in_the_page_words(page: Page, host: Host, tmp_path: Path) -> None:
    """fix38: IMPORT_EMPTY, the host's code for an empty import, is what the page says too, without
    the CLI's advice; a chosen empty file is named and nothing is loaded (R-1.8)."""
    sign_in(page)
    go_to(page, "Import")
    page.get_by_role("button", name="Preview").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("IMPORT_EMPTY: Nothing to import: paste a configuration or choose a file first.")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"\xef\xbb\xbf \n")
    page.get_by_label("Or choose a file").set_input_files(empty)
    expect(alert).to_contain_text("IMPORT_EMPTY: empty.json is empty: nothing to import.")
    expect(alert).not_to_contain_text("import -")
    expect(page.get_by_label("Configuration (JSON)")).to_have_value("")


def test_a_misspelled_key_above_the_entries_is_named_in_the_page(page: Page, host: Host) -> None:
    """fix38: the page shows the same "did you mean" as the CLI and REST for a typo'd container key:
    in the refusal when no servers are found, as a rejected entry beside servers that are (R-7.3)."""
    sign_in(page)
    go_to(page, "Import")
    content = page.get_by_label("Configuration (JSON)")
    content.fill(json.dumps({"mcpServer": {"a": {"command": "x"}}}))
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("alert")).to_contain_text("IMPORT_FORMAT_UNKNOWN")
    expect(page.get_by_role("alert")).to_contain_text("it has 'mcpServer': did you mean 'mcpServers'?")
    content.fill(json.dumps({"mcpServers": {"a": {"command": "x"}}, "project": {"/p": {"mcpServers": {}}}}))
    page.get_by_role("button", name="Preview").click()
    rejected = page.get_by_role("region", name="Preview").locator('.rejected[data-source="project"]')
    expect(rejected).to_contain_text("did you mean 'projects'?")
    expect(rejected).to_contain_text("(KEY_MISSPELLED)")
