"""REST: `POST /api/mcp/import/preview|apply`, `GET /api/mcp/export`, `GET /api/mcp/templates` (R-1.8 to R-1.10).

Driven in process against the real app. The planted-secret scan at the end imports a file with
literal secrets and supplied secret values, exports it in every format, and checks that no
response, log record or data file holds a secret in plain text.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.api import ADMIN_TOKEN, BASE_URL, api_client, assert_error, field_codes

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[1] / "interchange" / "fixtures"
PREVIEW = "/api/mcp/import/preview"
APPLY = "/api/mcp/import/apply"
CURSOR = (FIXTURES / "cursor.json").read_text(encoding="utf-8")


async def preview(api: httpx2.AsyncClient, content: str, format: str = "auto") -> dict[str, Any]:
    response = await api.post(PREVIEW, json={"content": content, "format": format})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def apply_body(previewed: dict[str, Any], content: str, **extra: Any) -> dict[str, Any]:
    return {"token": previewed["token"], "digest": previewed["digest"], "content": content, **extra}


CURSOR_VALUES = {
    "JIRA_TOKEN": "jira-token-invented-42",
    "userHome": "/home/dana",
    "workspaceFolder": "/home/dana/src/shop",
    "REPO_TOOLS_TOKEN": "repo-tools-invented-77",
}


async def test_preview_then_apply_creates_untrusted_disabled_servers(api: httpx2.AsyncClient) -> None:
    previewed = await preview(api, CURSOR)
    assert set(previewed) == {
        "token",
        "digest",
        "expires_at",
        "format",
        "servers",
        "variables",
        "rejected",
        "existing",
        "on_conflict",
    }
    assert previewed["format"] == "cursor"
    assert [s["id"] for s in previewed["servers"]] == ["acme-docs", "playwright", "jira", "repo-tools"]
    response = await api.post(APPLY, json=apply_body(previewed, CURSOR, values=CURSOR_VALUES))
    assert response.status_code == 201, response.text
    created = response.json()["servers"]
    assert [(s["id"], s["enabled"], s["trusted"]) for s in created] == [
        ("acme-docs", False, False),
        ("playwright", False, False),
        ("jira", False, False),
        ("repo-tools", False, False),
    ]
    listed = (await api.get("/api/mcp/servers")).json()["servers"]
    assert sorted(s["id"] for s in listed) == ["acme-docs", "jira", "playwright", "repo-tools"]
    repo_tools = next(s for s in listed if s["id"] == "repo-tools")
    assert repo_tools["command"] == "/home/dana/.local/bin/repo-tools"
    assert repo_tools["secret_env"] == {"REPO_TOOLS_TOKEN": {"configured": True}}


@pytest.mark.parametrize(
    "path",
    [("POST", PREVIEW), ("POST", APPLY), ("GET", "/api/mcp/export?format=cursor"), ("GET", "/api/mcp/templates")],
)
async def test_every_route_needs_the_admin_token(center: McpCenter, settings: Settings, path: tuple[str, str]) -> None:
    app = create_api(settings, ADMIN_TOKEN)
    app.state.center = center
    method, url = path
    async with api_client(app, token=None) as anonymous:
        assert_error(await anonymous.request(method, url, json={"content": "{}"}), 401, "ADMIN_AUTH_REQUIRED")


async def test_invalid_json_answers_422_with_line_and_column(api: httpx2.AsyncClient) -> None:
    content = (FIXTURES / "invalid_missing_comma.json").read_text(encoding="utf-8")
    error = assert_error(await api.post(PREVIEW, json={"content": content}), 422, "IMPORT_JSON_INVALID")
    assert (error["details"]["line"], error["details"]["column"]) == (5, 7)


@pytest.mark.parametrize(
    ("content", "path"),
    [
        ('{"mcpServers": {"a": {"command": "one"}, "a": {"command": "two"}}}', "mcpServers.a"),
        ('{"mcpServers": {"a": {"command": "one", "command": "two"}}}', "mcpServers.a.command"),
    ],
)
async def test_a_key_named_twice_answers_422_with_its_path(api: httpx2.AsyncClient, content: str, path: str) -> None:
    """A repeated key was last-wins, so a server (or its command) vanished from the preview (issue 16)."""
    error = assert_error(await api.post(PREVIEW, json={"content": content}), 422, "IMPORT_DUPLICATE_KEY")
    assert error["details"]["path"] == path
    assert (await api.get("/api/mcp/servers")).json()["servers"] == []


async def test_an_unpaired_surrogate_answers_422_not_500(api: httpx2.AsyncClient) -> None:
    content = json.dumps({"mcpServers": {"a\udcff": {"command": "x"}}})  # the file spells it \\udcff
    for body in ({"content": content}, {"content": '{"a": "\udcff"}'}):  # ... or the request body does
        response = await api.post(
            PREVIEW, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        assert_error(response, 422, "IMPORT_JSON_INVALID")


async def test_a_body_that_is_not_utf8_answers_the_encoding_error(api: httpx2.AsyncClient) -> None:
    """fix38: raw Latin-1 bytes in the body answered REQUEST_INVALID "body: is not valid JSON"; the
    CLI says the file is not UTF-8. REST now names the encoding problem with the same code (R-1.8)."""
    body = b'{"content": "{\\"mcpServers\\": {\\"caf\xe9\\": {\\"command\\": \\"x\\"}}}"}'
    response = await api.post(PREVIEW, content=body, headers={"Content-Type": "application/json"})
    error = assert_error(response, 422, "IMPORT_JSON_INVALID")
    assert error["details"]["reason"] == "encoding"
    assert "not valid UTF-8" in error["message"]
    assert (await api.get("/api/mcp/servers")).json()["servers"] == []


async def test_a_five_megabyte_file_answers_413_with_the_limit(api: httpx2.AsyncClient) -> None:
    content = json.dumps({"mcpServers": {f"s{i}": {"command": "x", "args": ["y" * 1000]} for i in range(5000)}})
    assert len(content) > 5_000_000
    error = assert_error(await api.post(PREVIEW, json={"content": content}), 413, "IMPORT_TOO_LARGE")
    assert error["details"] == {"limit_bytes": 1048576, "size_bytes": len(content)}


async def test_a_body_over_the_request_limit_is_refused_while_streaming(api: httpx2.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b" " * (1024 * 1024)

    response = await api.post(PREVIEW, content=chunks(), headers={"Content-Type": "application/json"})
    error = assert_error(response, 413, "IMPORT_TOO_LARGE")
    assert error["details"] == {"limit_bytes": 1048576}


async def test_a_declared_oversized_body_is_refused_before_it_is_read(api: httpx2.AsyncClient) -> None:
    response = await api.post(
        PREVIEW, content=b"{}", headers={"Content-Type": "application/json", "Content-Length": str(100 * 1024 * 1024)}
    )
    assert_error(response, 413, "IMPORT_TOO_LARGE")


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        (b"", "body", "JSON_INVALID"),
        (b"{oops", "body", "JSON_INVALID"),
        (b"[1]", "body", "FIELD_INVALID"),
        (b"{}", "content", "FIELD_REQUIRED"),
        (b'{"content": 5}', "content", "FIELD_INVALID"),
        (b'{"content": "{}", "format": "notepad"}', "format", "FIELD_INVALID"),
        (b'{"content": "{}", "extra": 1}', "extra", "FIELD_UNKNOWN"),
    ],
)
async def test_a_malformed_preview_body_names_the_field(
    api: httpx2.AsyncClient, body: bytes, field: str, code: str
) -> None:
    response = await api.post(PREVIEW, content=body, headers={"Content-Type": "application/json"})
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert field_codes(error) == [(field, code)]


@pytest.mark.parametrize(
    ("extra", "field", "code"),
    [
        ({"values": []}, "values", "FIELD_INVALID"),
        ({"values": {"A": 1}}, "values.A", "FIELD_INVALID"),
        ({"use_defaults": "A"}, "use_defaults", "FIELD_INVALID"),
        ({"use_defaults": ""}, "use_defaults", "FIELD_INVALID"),
        ({"token": ""}, "token", "FIELD_INVALID"),
    ],
)
async def test_a_malformed_apply_body_names_the_field(
    api: httpx2.AsyncClient, extra: dict[str, Any], field: str, code: str
) -> None:
    body = {"token": "t", "digest": "d", "content": "{}", **extra}
    error = assert_error(await api.post(APPLY, json=body), 422, "REQUEST_INVALID")
    assert field_codes(error) == [(field, code)]


async def test_apply_refusals_answer_409_and_create_nothing(api: httpx2.AsyncClient) -> None:
    previewed = await preview(api, CURSOR)
    unknown = apply_body(previewed, CURSOR, values=CURSOR_VALUES, token="unknown-token")
    assert_error(await api.post(APPLY, json=unknown), 409, "IMPORT_PREVIEW_UNKNOWN")
    changed = apply_body(previewed, CURSOR.replace("acme", "acne"), values=CURSOR_VALUES)
    assert_error(await api.post(APPLY, json=changed), 409, "IMPORT_INPUT_CHANGED")
    other_digest = apply_body(previewed, CURSOR, values=CURSOR_VALUES, digest="sha256:" + "1" * 64)
    error = assert_error(await api.post(APPLY, json=other_digest), 409, "IMPORT_PREVIEW_STALE")
    assert error["details"] == {"reason": "digest_mismatch"}
    non_ascii_digest = apply_body(previewed, CURSOR, values=CURSOR_VALUES, digest="sha256:é\udcff")
    raw = json.dumps(non_ascii_digest).encode()  # \\uXXXX escapes: a lone surrogate reaches the server
    headers = {"Content-Type": "application/json"}
    assert_error(await api.post(APPLY, content=raw, headers=headers), 409, "IMPORT_PREVIEW_STALE")
    missing = apply_body(previewed, CURSOR, values={"JIRA_TOKEN": CURSOR_VALUES["JIRA_TOKEN"]})
    error = assert_error(await api.post(APPLY, json=missing), 422, "IMPORT_VALUES_INVALID")
    assert {code for _, code in field_codes(error)} == {"VALUE_REQUIRED"}
    created = await api.post(APPLY, json=apply_body(previewed, CURSOR, values=CURSOR_VALUES))
    assert created.status_code == 201
    assert len((await api.get("/api/mcp/servers")).json()["servers"]) == 4


async def test_a_preview_goes_stale_when_a_server_takes_its_id(api: httpx2.AsyncClient) -> None:
    previewed = await preview(api, CURSOR)
    taken = await api.post("/api/mcp/servers", json={"name": "playwright", "transport": "stdio", "command": "x"})
    assert taken.status_code == 201
    error = assert_error(
        await api.post(APPLY, json=apply_body(previewed, CURSOR, values=CURSOR_VALUES)), 409, "IMPORT_PREVIEW_STALE"
    )
    assert error["details"] == {"reason": "servers_changed"}
    assert [s["id"] for s in (await api.get("/api/mcp/servers")).json()["servers"]] == ["playwright"]


@pytest.mark.parametrize("format", ["claude-code", "cursor", "vscode", "claude-desktop"])
async def test_export_answers_each_format_with_a_gateway_snippet(api: httpx2.AsyncClient, format: str) -> None:
    response = await api.get(f"/api/mcp/export?format={format}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"format", "filename", "config", "gateway", "placeholders", "notes"}
    assert body["gateway"]["url"] == f"{BASE_URL}/mcp"
    assert "MCP_CENTER_GATEWAY_TOKEN" in json.dumps(body["gateway"]["config"])


async def test_the_claude_desktop_export_starts_this_installations_bridge(api: httpx2.AsyncClient) -> None:
    """The service finds the program (interchange does no I/O): an absolute path beside the running Python."""
    response = await api.get("/api/mcp/export?format=claude-desktop")
    assert response.status_code == 200, response.text
    bridge = response.json()["gateway"]["config"]["mcpServers"]["mcp-center"]
    assert bridge["command"] == str(Path(sys.executable).parent / "mcp-center")


@pytest.mark.parametrize("query", ["", "?format=notepad"])
async def test_export_needs_a_known_format(api: httpx2.AsyncClient, query: str) -> None:
    error = assert_error(await api.get(f"/api/mcp/export{query}"), 422, "REQUEST_INVALID")
    assert [field for field, _ in field_codes(error)] == ["format"]


async def test_templates_list_the_four_and_each_example_can_be_created(api: httpx2.AsyncClient) -> None:
    response = await api.get("/api/mcp/templates")
    assert response.status_code == 200
    templates = response.json()["templates"]
    assert [(t["id"], t["legacy"]) for t in templates] == [
        ("stdio-uvx", False),
        ("stdio-npx", False),
        ("streamable-http", False),
        ("legacy-sse", True),
    ]
    for template in templates:
        created = await api.post("/api/mcp/servers", json=template["example"])
        assert created.status_code == 201, created.text
        assert created.json()["transport"] == template["transport"]


async def test_openapi_documents_the_import_bodies(api: httpx2.AsyncClient) -> None:
    spec = (await api.get("/openapi.json")).json()
    body = spec["paths"][PREVIEW]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["content"]
    assert (
        "values" in spec["paths"][APPLY]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
    )


# ----- planted secrets ------------------------------------------------------------------------

LITERAL_HEADER = "PLANTED-literal-header-3c1d9e"
LITERAL_BEARER = "PLANTED-literal-bearer-77aa01"
LITERAL_ENV = "PLANTED-literal-env-5b2f8c"
LITERAL_DSN = "postgres://app:PLANTED-dsn-password-91@db.local/app"
SUPPLIED_ENV = "PLANTED-supplied-env-e4d2"
SUPPLIED_HEADER = "PLANTED-supplied-header-0f3b"
SUPPLIED_DEFAULT = "PLANTED-secret-default-a9c7"
PLANTED = (
    LITERAL_HEADER,
    LITERAL_BEARER,
    LITERAL_ENV,
    "PLANTED-dsn-password-91",
    SUPPLIED_ENV,
    SUPPLIED_HEADER,
    SUPPLIED_DEFAULT,
)
SECRET_FILE = json.dumps(
    {
        "mcpServers": {
            "local": {
                "command": "mcp-local",
                "env": {
                    "SERVICE_API_KEY": LITERAL_ENV,
                    "DATABASE_URL": LITERAL_DSN,
                    "GH_TOKEN": "${GH_TOKEN}",
                    "VAULT_SECRET": "${VAULT_SECRET:-" + SUPPLIED_DEFAULT + "}",
                },
            },
            "remote": {
                "type": "http",
                "url": "https://remote.example.com/mcp",
                "headers": {"X-Api-Key": LITERAL_HEADER, "X-Tenant": "${TENANT_KEY}"},
            },
            "bearer": {
                "type": "sse",
                "url": "https://b.example.com/sse",
                "headers": {"Authorization": "Bearer " + LITERAL_BEARER},
            },
        }
    },
    indent=2,
)


async def test_secret_values_never_appear_in_responses_logs_or_servers_json(
    api: httpx2.AsyncClient, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    previewed = await preview(api, SECRET_FILE)
    seen.append(json.dumps(previewed))
    assert {v["name"]: v["secret"] for v in previewed["variables"]} == {
        "GH_TOKEN": True,
        "VAULT_SECRET": True,
        "TENANT_KEY": True,
    }
    short = await api.post(
        APPLY,
        json=apply_body(
            previewed,
            SECRET_FILE,
            values={"GH_TOKEN": "Zq9", "TENANT_KEY": SUPPLIED_HEADER},
            use_defaults=["VAULT_SECRET"],
        ),
    )
    assert_error(short, 422, "IMPORT_VALUES_INVALID")
    seen.append(short.text)
    applied = await api.post(
        APPLY,
        json=apply_body(
            previewed,
            SECRET_FILE,
            values={"GH_TOKEN": SUPPLIED_ENV, "TENANT_KEY": SUPPLIED_HEADER},
            use_defaults=["VAULT_SECRET"],
        ),
    )
    assert applied.status_code == 201, applied.text
    seen.append(applied.text)
    local, remote, bearer = applied.json()["servers"]
    assert local["secret_env"] == {
        k: {"configured": True} for k in ("SERVICE_API_KEY", "DATABASE_URL", "GH_TOKEN", "VAULT_SECRET")
    }
    assert remote["secret_headers"] == {"X-Api-Key": {"configured": True}, "X-Tenant": {"configured": True}}
    assert bearer["auth"] == {"kind": "bearer", "token": {"configured": True}}
    seen += [
        (await api.get(f"/api/mcp/export?format={f}")).text
        for f in ("claude-code", "cursor", "vscode", "claude-desktop")
    ]
    seen.append((await api.get("/api/mcp/servers")).text)
    seen += [record.getMessage() + json.dumps(record.__dict__, default=str) for record in caplog.records]
    data_files = [p.read_bytes() for p in sorted(settings.data_dir.rglob("*")) if p.is_file()]
    for secret in PLANTED:
        assert [i for i, text in enumerate(seen) if secret in text] == [], secret
        assert [f for f in data_files if secret.encode() in f] == [], secret


async def test_the_preview_offers_only_the_defaults_that_apply_accepts(api: httpx2.AsyncClient) -> None:
    """`X-Team: ${TEAM:-core}` is a plain header with its default shown; a secret's default too short
    for a secret is flagged in the preview, not refused only at apply (R-1.8)."""
    content = json.dumps(
        {
            "mcpServers": {
                "docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"X-Team": "${TEAM:-core}"}},
                "local": {"command": "mcp-local", "env": {"API_KEY": "${API_KEY:-dev}"}},
            }
        }
    )
    previewed = await preview(api, content)
    variables = {v["name"]: (v["secret"], v["has_default"], v["default"]) for v in previewed["variables"]}
    assert variables == {"TEAM": (False, True, "core"), "API_KEY": (True, False, None)}
    docs, local = previewed["servers"]
    assert (docs["config"]["headers"], docs["secrets"]) == ({"X-Team": "${TEAM:-core}"}, [])
    assert [(w["field"], w["code"]) for w in local["warnings"]] == [("env.API_KEY", "DEFAULT_UNUSABLE")]
    refused = await api.post(APPLY, json=apply_body(previewed, content, use_defaults=["TEAM", "API_KEY"]))
    error = assert_error(refused, 422, "IMPORT_VALUES_INVALID")
    assert field_codes(error) == [("use_defaults.API_KEY", "DEFAULT_UNUSABLE")]
    applied = await api.post(
        APPLY, json=apply_body(previewed, content, values={"API_KEY": "key-invented-1"}, use_defaults=["TEAM"])
    )
    assert applied.status_code == 201, applied.text
    docs_view, local_view = applied.json()["servers"]
    assert (docs_view["headers"], docs_view["secret_headers"]) == ({"X-Team": "core"}, {})
    assert local_view["secret_env"] == {"API_KEY": {"configured": True}}


async def test_a_reimport_preview_with_many_variables_answers_and_names_secrets_not_updated(
    api: httpx2.AsyncClient,
) -> None:
    """`${V0}...${V13}/zz` against a registered `docs` URL froze serve on this request (a `.*` regex
    backtracking with the GIL held); the linear match answers the conflict. An unchanged entry's
    secret values are not compared: the preview lists them as not updated (R-1.8, R-7.3)."""
    long_url = "https://docs.example.com/" + "a/" * 1_000 + "z"  # near the 2048-character limit
    created = await api.post("/api/mcp/servers", json={"name": "docs", "transport": "streamable_http", "url": long_url})
    assert created.status_code == 201, created.text
    entry = {"command": "uvx", "args": ["wiki-mcp"], "env": {"WIKI_TOKEN": "wiki-token-invented-1"}}
    first = json.dumps({"mcpServers": {"wiki": entry}})
    previewed = await preview(api, first)
    applied = await api.post(APPLY, json=apply_body(previewed, first))
    assert applied.status_code == 201, applied.text
    url = "".join(f"${{V{i}}}" for i in range(14)) + "/zz"
    content = json.dumps({"mcpServers": {"docs": {"url": url}, "wiki": entry}})
    again = await preview(api, content)
    existing = {e["server_id"]: e for e in again["existing"]}
    assert (existing["docs"]["outcome"], "url" in existing["docs"]["fields"]) == ("conflict", True)
    assert (existing["wiki"]["outcome"], existing["wiki"]["secrets_not_updated"]) == (
        "unchanged",
        [{"kind": "env", "key": "WIKI_TOKEN"}],
    )


ROUND_TRIP_SERVERS: list[dict[str, Any]] = [
    {
        "name": "Notes",
        "transport": "stdio",
        "command": "notes-mcp",
        "args": ["--root", "/srv/notes"],
        "cwd": "/srv/notes",
        "env": {"LOG_LEVEL": "debug", "PLAIN_API_KEY": "shown-as-plain"},
        "secret_env": ["NOTES_TOKEN"],
        "tool_policies": {"write": "deny"},
        "disabled_tools": ["rm"],
        "call_timeout_s": 30,
    },
    {
        "name": "Docs",
        "transport": "streamable_http",
        "url": "https://docs.example.com/mcp",
        "headers": {"X-Team": "core"},
        "secret_headers": ["X-Api-Key"],
        "auth": {"kind": "bearer"},
    },
    {"name": "Wiki", "transport": "sse", "url": "https://wiki.example.com/sse", "auth": {"kind": "oauth"}},
]


async def configurations(api: httpx2.AsyncClient) -> list[dict[str, Any]]:
    """Every server as listed, without its connection status (which tells time, not configuration)."""
    listed: list[dict[str, Any]] = (await api.get("/api/mcp/servers")).json()["servers"]
    return [{k: v for k, v in s.items() if k != "status"} for s in listed]


@pytest.mark.parametrize("format", ["claude-code", "cursor", "vscode", "claude-desktop"])
async def test_an_export_imported_again_is_unchanged_and_applies_nothing(api: httpx2.AsyncClient, format: str) -> None:
    """REST export -> preview -> apply of the same servers is a no-op: a stdio server's `cwd` (which
    client files do not carry), a plain credential-looking env var and an OAuth server were each
    an IMPORT_CONFLICT (R-1.8, R-1.9, issue 16)."""
    for body in ROUND_TRIP_SERVERS:
        created = await api.post("/api/mcp/servers", json=body)
        assert created.status_code == 201, created.text
    before = await configurations(api)
    exported = await api.get(f"/api/mcp/export?format={format}")
    assert exported.status_code == 200, exported.text
    content = json.dumps(exported.json()["config"])
    previewed = await preview(api, content, format)
    expected = ["notes"] if format == "claude-desktop" else ["notes", "docs", "wiki"]
    assert (previewed["servers"], previewed["rejected"], previewed["variables"]) == ([], [], [])
    assert {e["server_id"]: (e["outcome"], e["fields"]) for e in previewed["existing"]} == {
        sid: ("unchanged", []) for sid in expected
    }
    applied = await api.post(APPLY, json=apply_body(previewed, content, format=format))
    assert_error(applied, 422, "IMPORT_NOTHING_TO_APPLY")
    assert await configurations(api) == before


async def test_apply_accepts_and_ignores_values_of_entries_already_registered(api: httpx2.AsyncClient) -> None:
    """A re-import's preview lists the variables of its unchanged and skipped entries (`existing`);
    apply refused values for them as VALUE_UNKNOWN while the CLI dropped them: the service now
    accepts and ignores them, for REST, the page and the CLI alike (R-1.8, issue 16)."""
    notes = {"command": "notes-mcp", "args": ["--root", "${NOTES_ROOT}"]}
    first = json.dumps({"mcpServers": {"notes": notes}})
    previewed = await preview(api, first)
    applied = await api.post(APPLY, json=apply_body(previewed, first, values={"NOTES_ROOT": "/srv/notes"}))
    assert applied.status_code == 201, applied.text
    wiki = {"command": "wiki-mcp", "args": ["--space", "${SPACE}"]}
    tasks = {"command": "tasks-mcp", "args": ["--team", "${TEAM:-core}"]}
    changed = {"command": "notes-mcp", "args": ["--root", "${NOTES_ROOT}", "--ro"]}
    for again, on_conflict, outcome in (
        ({"notes": notes, "wiki": wiki}, "refuse", "unchanged"),
        ({"notes": changed, "wiki": wiki}, "skip", "skipped"),
    ):
        content = json.dumps({"mcpServers": {**again, "tasks": tasks}})
        second = await api.post(PREVIEW, json={"content": content, "on_conflict": on_conflict})
        assert second.status_code == 200, second.text
        body = second.json()
        assert [(e["server_id"], e["outcome"], e["variables"]) for e in body["existing"]] == [
            ("notes", outcome, ["NOTES_ROOT"])
        ]
        assert [v["name"] for v in body["variables"]] == ["SPACE", "TEAM"]
        values = {"NOTES_ROOT": "/srv/other", "SPACE": "eng"}
        request = apply_body(body, content, values=values, use_defaults=["TEAM", "NOTES_ROOT"], on_conflict=on_conflict)
        done = await api.post(APPLY, json=request)
        assert done.status_code == 201, done.text
        assert [(s["name"], s["args"][-1]) for s in done.json()["servers"]] == [("wiki", "eng"), ("tasks", "core")]
        for created in done.json()["servers"]:
            assert (await api.delete(f"/api/mcp/servers/{created['id']}")).status_code == 204
    listed = {s["id"]: s for s in (await api.get("/api/mcp/servers")).json()["servers"]}
    assert (sorted(listed), listed["notes"]["args"]) == (["notes"], ["--root", "/srv/notes"])
    other = json.dumps({"mcpServers": {"notes": notes, "other": {"command": "other-mcp"}}})
    unknown = await api.post(PREVIEW, json={"content": other})
    request = apply_body(unknown.json(), other, values={"NOTES_ROOT": "/x", "NOT_IN_THE_FILE": "x"})
    error = assert_error(await api.post(APPLY, json=request), 422, "IMPORT_VALUES_INVALID")
    assert field_codes(error) == [("values.NOT_IN_THE_FILE", "VALUE_UNKNOWN")]


async def test_a_typod_key_is_named_with_the_key_it_may_mean(api: httpx2.AsyncClient) -> None:
    """trial35: `comand` was rejected as "entry has neither 'command' nor 'url'" with no hint, while
    POST /api/mcp/servers offered "did you mean 'command'?" for the same typo (R-7.3)."""
    content = json.dumps(
        {"mcpServers": {"a": {"comand": "npx"}, "b": {"command": "npx", "argz": ["x"]}, "c": {"name": "x"}}}
    )
    previewed = await preview(api, content)
    [a, c] = previewed["rejected"]
    assert [(e["code"], e["message"]) for e in a["errors"]] == [
        ("ENTRY_EMPTY", "has neither 'command' nor 'url'; it has 'comand': did you mean 'command'?")
    ]
    assert [e["message"] for e in c["errors"]] == ["has neither 'command' nor 'url'; its keys: 'name'"]
    [b] = previewed["servers"]
    assert [(w["field"], w["message"]) for w in b["warnings"]] == [
        ("argz", "is not imported (mcp-center has no such setting); did you mean 'args'?")
    ]


async def test_an_argument_flagged_as_a_credential_is_redacted_in_the_preview(api: httpx2.AsyncClient) -> None:
    """break36: the preview showed `echo --token SEKRET456` beside its own `args.1: CREDENTIAL_IN_ARGS`;
    the flagged argument is `[redacted]` there, and apply still creates the server as the file says (R-1.5)."""
    content = json.dumps({"mcpServers": {"t": {"command": "echo", "args": ["--token", "SEKRET456", "--verbose"]}}})
    previewed = await preview(api, content)
    assert "SEKRET456" not in json.dumps(previewed)
    [server] = previewed["servers"]
    assert server["config"]["args"] == ["--token", "[redacted]", "--verbose"]
    assert [(w["field"], w["code"]) for w in server["warnings"]] == [("args.1", "CREDENTIAL_IN_ARGS")]
    response = await api.post(APPLY, json=apply_body(previewed, content))
    assert response.status_code == 201, response.text
    assert [s["id"] for s in response.json()["servers"]] == ["t"]


async def test_a_misspelled_key_above_the_entries_is_named_with_the_key_it_may_mean(api: httpx2.AsyncClient) -> None:
    """fix38: `{"mcpServer": ...}` answered "no MCP servers found" with no hint, and a misspelled
    `projects` beside `mcpServers` was skipped without a word (R-1.8, R-7.3)."""
    typo = json.dumps({"mcpServer": {"a": {"command": "x"}}})
    error = assert_error(await api.post(PREVIEW, json={"content": typo}), 422, "IMPORT_FORMAT_UNKNOWN")
    assert error["message"].endswith("; it has 'mcpServer': did you mean 'mcpServers'?")
    assert error["details"]["did_you_mean"] == ["mcpServers"]
    beside = json.dumps({"mcpServers": {"a": {"command": "x"}}, "project": {"/p": {"mcpServers": {}}}})
    previewed = await preview(api, beside)
    assert [(r["source"], [e["code"] for e in r["errors"]]) for r in previewed["rejected"]] == [
        ("project", ["KEY_MISSPELLED"])
    ]


@pytest.mark.parametrize("content", ["", "  \n", "\ufeff"])
async def test_an_empty_import_answers_import_empty_without_cli_advice(api: httpx2.AsyncClient, content: str) -> None:
    """fix38: an empty `content` answered IMPORT_JSON_INVALID "... or pipe one to 'import -'", the
    CLI's advice; it has its own code, and words that fit REST and the page (R-1.8, R-7.3)."""
    error = assert_error(await api.post(PREVIEW, json={"content": content}), 422, "IMPORT_EMPTY")
    assert error["message"].startswith("the configuration is empty: nothing to import; paste or send")
    assert "import -" not in error["message"] and "pipe" not in error["message"]
