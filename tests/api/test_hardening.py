"""Findings of an adversarial review, each fixed and pinned here (R-1.5, R-1.6, R-1.7, R-2.1, R-3.9, R-7.3)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.config import Settings
from mcp_center.secrets import REDACTED, default_redactor
from mcp_center.secrets.redact import install_log_redaction
from tests.support.api import assert_error
from tests.support.readiness import make_ready

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
HOSTILE = str(Path(__file__).parent.parent / "servers" / "hostile_stdio.py")
SECRET = "HOSTILE-planted-secret-4242"


def codes(response: httpx2.Response) -> set[tuple[str, str]]:
    return {(e["field"], e["code"]) for e in response.json()["error"]["details"].get("errors", [])}


async def _hostile(api: httpx2.AsyncClient, **extra: Any) -> dict[str, Any]:
    body = {
        "id": "hostile",
        "name": "Hostile",
        "transport": "stdio",
        "command": sys.executable,
        "args": [HOSTILE],
        "secret_values": {"env": {"API_KEY": SECRET}},
        **extra,
    }
    created = await api.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    return await make_ready(api, "hostile")


async def test_a_server_echoing_its_secret_in_names_descriptions_and_results_never_shows_it(
    api: httpx2.AsyncClient, settings: Settings
) -> None:
    view = await _hostile(api)
    texts = [json.dumps(view)]
    texts.append((await api.get(f"{SERVERS}/hostile/tools")).text)
    texts.append((await api.get(f"{SERVERS}/hostile/catalog")).text)
    call = await api.post(f"{SERVERS}/hostile/tools/echo_secret/call", json={"arguments": {}})
    texts.append(call.text)
    texts.append((await api.get(f"{SERVERS}/hostile/logs")).text)
    texts.append((settings.mcp_dir / "servers.json").read_text())
    assert all(SECRET not in text for text in texts)
    assert view["status"]["server_name"] == f"hostile-{REDACTED}"
    assert call.json()["content"][0]["text"] == REDACTED


async def test_a_server_error_with_code_32000_is_the_servers_answer_not_a_lost_connection(
    api: httpx2.AsyncClient,
) -> None:
    await _hostile(api)
    response = await api.post(f"{SERVERS}/hostile/tools/rpc_error/call", json={"arguments": {}})
    error = assert_error(response, 502, "MCP_SERVER_ERROR")
    assert "quota exceeded" in error["message"]
    assert error["details"]["rpc_code"] == -32000
    assert (await api.get(f"{SERVERS}/hostile")).json()["status"]["state"] == "ready"


async def test_a_message_over_the_size_limit_fails_the_call_at_once_instead_of_timing_out(
    api: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_center.transports import factory
    from mcp_center.transports.clip import ReadLimits

    small = ReadLimits(
        read_cap_bytes=4 * 1024 * 1024, max_message_bytes=1024 * 1024, max_string_bytes=256 * 1024, max_tokens=10_000
    )

    def small_limits(max_result_bytes: int) -> ReadLimits:
        del max_result_bytes
        return small

    monkeypatch.setattr(factory, "read_limits", small_limits)
    await _hostile(api, call_timeout_s=60)
    with anyio.fail_after(15):  # a line of 3 MB that is not JSON: nothing readable is left of it
        response = await api.post(f"{SERVERS}/hostile/tools/huge/call", json={"arguments": {"size": 3_000_000}})
    error = assert_error(response, 502, "MCP_PROTOCOL_ERROR")
    assert error["details"]["limit_bytes"] == 1024 * 1024


async def test_a_call_cut_by_a_disable_says_so(api: httpx2.AsyncClient) -> None:
    await _hostile(api)
    outcome: list[httpx2.Response] = []

    async def call() -> None:
        outcome.append(await api.post(f"{SERVERS}/hostile/tools/slow/call", json={"arguments": {"seconds": 30}}))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            while not any(  # noqa: ASYNC110 - the state is only visible over HTTP; bounded by fail_after
                entry["method"] == "tools/call" and entry["status"] == "pending"
                for entry in (await api.get(f"{SERVERS}/hostile/logs")).json()["requests"]
            ):
                await anyio.sleep(0.05)
            await api.post(f"{SERVERS}/hostile/disable")
    error = assert_error(outcome[0], 502, "MCP_CONNECTION_LOST")
    assert error["details"]["interrupted_by"] == "disconnect"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"name": "bad \udcff name"}, "name", "TEXT_INVALID"),
        ({"args": ["fine", "x\ud800"]}, "args.1", "TEXT_INVALID"),
        ({"env": {"A": "\udfff"}}, "env.A", "TEXT_INVALID"),
        ({"args": ["\u202etxt.exe"]}, "args.0", "TEXT_INVALID"),
        ({"env": {f"V{i}": "x" for i in range(300)}}, "env", "ENV_INVALID"),
    ],
)
async def test_text_that_cannot_be_stored_or_shown_honestly_is_refused(
    api: httpx2.AsyncClient, settings: Settings, body: dict[str, Any], field: str, code: str
) -> None:
    full = {"name": "S", "transport": "stdio", "command": sys.executable, **body}
    raw = json.dumps(full).encode("ascii")  # keeps lone surrogates as \\u escapes
    response = await api.post(SERVERS, content=raw, headers={"Content-Type": "application/json"})
    assert_error(response, 422, "CONFIG_INVALID")
    assert (field, code) in codes(response)
    assert (await api.get(SERVERS)).json()["servers"] == []


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"X-Name": "caf\u00e9"}, "HEADER_VALUE_INVALID"),
        ({"Upgrade": "websocket"}, "HEADER_RESERVED"),
        ({"Keep-Alive": "timeout=5"}, "HEADER_RESERVED"),
    ],
)
async def test_header_values_must_be_ascii_and_hop_by_hop_headers_are_reserved(
    api: httpx2.AsyncClient, headers: dict[str, str], code: str
) -> None:
    body = {"name": "R", "transport": "streamable_http", "url": "https://mcp.example.com/mcp", "headers": headers}
    response = await api.post(SERVERS, json=body)
    assert_error(response, 422, "CONFIG_INVALID")
    assert code in {c for _, c in codes(response)}


async def test_tool_arguments_with_nan_or_a_lone_surrogate_are_refused_before_the_server_sees_them(
    api: httpx2.AsyncClient,
) -> None:
    await _hostile(api)
    for raw in (b'{"arguments": {"x": NaN}}', b'{"arguments": {"x": "\\ud800"}}'):
        response = await api.post(
            f"{SERVERS}/hostile/tools/echo_secret/call", content=raw, headers={"Content-Type": "application/json"}
        )
        error = assert_error(response, 422, "REQUEST_INVALID")  # a call, not configuration (cli36)
        assert error["details"]["errors"][0]["field"] == "arguments.x", error
    assert (await api.get(f"{SERVERS}/hostile")).json()["status"]["state"] == "ready"


async def test_a_body_over_one_mebibyte_is_refused_before_it_is_parsed(api: httpx2.AsyncClient) -> None:
    big = json.dumps({"name": "x", "transport": "stdio", "command": "true", "args": ["a" * 8000] * 200})
    response = await api.post(SERVERS, content=big.encode(), headers={"Content-Type": "application/json"})
    assert_error(response, 413, "REQUEST_TOO_LARGE")


async def test_a_chunked_body_over_one_mebibyte_is_refused_as_too_large_not_bad_json(api: httpx2.AsyncClient) -> None:
    """No Content-Length: the body is counted while it streams (R-7.3), and the answer says why."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "x", "transport": "stdio", "command": "true", "args": ['
        for _ in range(300):
            yield b'"' + b"a" * 8000 + b'",'
        yield b'"end"]}'

    response = await api.post(SERVERS, content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "REQUEST_TOO_LARGE")
    assert (await api.get(SERVERS)).json()["servers"] == []


async def test_json_nested_too_deep_is_a_request_error_not_a_bad_request(api: httpx2.AsyncClient) -> None:
    deep = "[" * 5000 + "]" * 5000
    response = await api.post(SERVERS, content=deep.encode(), headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "REQUEST_INVALID"


async def test_a_form_encoded_body_gets_a_hint_about_the_content_type(api: httpx2.AsyncClient) -> None:
    response = await api.post(
        SERVERS, content=b'{"name": "x"}', headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert "Content-Type: application/json" in error["message"]


async def test_a_look_alike_host_is_shown_as_the_name_it_really_connects_to(api: httpx2.AsyncClient) -> None:
    body = {"name": "L", "transport": "streamable_http", "url": "https://ex\u0430mple.com/mcp"}
    view = (await api.post(SERVERS, json=body)).json()
    assert view["summary"]["origin"] == "https://xn--exmple-4nf.com"
    assert "URL_NOT_ASCII" in {w["code"] for w in view["warnings"]}


async def test_a_relative_command_is_resolved_against_cwd_and_a_missing_one_is_warned(
    api: httpx2.AsyncClient, tmp_path: Path
) -> None:
    program = tmp_path / "run-me"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    body = {"name": "Rel", "transport": "stdio", "command": "./run-me", "cwd": str(tmp_path)}
    view = (await api.post(SERVERS, json=body)).json()
    assert view["summary"]["command_path"] == str(program)
    missing = (await api.post(SERVERS, json={"name": "Gone", "transport": "stdio", "command": "no-such-mcp-x"})).json()
    assert missing["summary"]["command_path"] is None
    assert "COMMAND_NOT_FOUND" in {w["code"] for w in missing["warnings"]}


async def test_a_credential_looking_argument_is_warned_without_repeating_it(api: httpx2.AsyncClient) -> None:
    args = ["--db", "postgres://bob:hunter2@localhost/db", "--header", "Bearer abc.def"]
    body = {"name": "Pg", "transport": "stdio", "command": "no-such-mcp-x", "args": args}
    view = (await api.post(SERVERS, json=body)).json()
    found = [w for w in view["warnings"] if w["code"] == "CREDENTIAL_IN_ARGS"]
    assert [w["message"].split(" looks")[0] for w in found] == ["argument 2", "argument 4"]
    assert all("hunter2" not in w["message"] and "abc.def" not in w["message"] for w in found)


async def test_a_token_given_as_an_option_value_is_warned_on_the_server_without_repeating_it(
    api: httpx2.AsyncClient,
) -> None:
    args = ["run", "-e", "GITHUB_TOKEN=ghp_invented0006", "--api-key", "sk-invented-0007", "image"]
    body = {"name": "Opt", "transport": "stdio", "command": "no-such-mcp-x", "args": args}
    view = (await api.post(SERVERS, json=body)).json()
    found = [w for w in view["warnings"] if w["code"] == "CREDENTIAL_IN_ARGS"]
    assert [w["message"].split(" looks")[0] for w in found] == ["argument 3", "argument 5"]
    assert all("invented" not in w["message"] for w in found)


async def test_a_credential_in_a_plain_header_or_env_var_is_warned_not_repeated(
    api: httpx2.AsyncClient,
) -> None:
    """R-1.5: only declared secrets are encrypted; a credential-looking plain value gets a warning."""
    remote = {
        "name": "Plain",
        "transport": "streamable_http",
        "url": "https://a.example/mcp",
        "headers": {"X-Api-Key": "k-123456789", "X-Trace": "on"},
    }
    view = (await api.post(SERVERS, json=remote)).json()
    found = [w["message"] for w in view["warnings"] if w["code"] == "CREDENTIAL_IN_PLAIN_FIELD"]
    assert len(found) == 1 and "'X-Api-Key'" in found[0] and "k-123456789" not in found[0]
    local = {"name": "Env", "transport": "stdio", "command": "x", "env": {"API_KEY": "v-1", "MODE": "fast"}}
    view = (await api.post(SERVERS, json=local)).json()
    assert [w["message"].split("'")[1] for w in view["warnings"] if w["code"] == "CREDENTIAL_IN_PLAIN_FIELD"] == [
        "API_KEY"
    ]


async def test_the_oauth_callback_cannot_teach_the_redactor_arbitrary_text(api: httpx2.AsyncClient) -> None:
    await api.get("/oauth/callback", params={"code": "no server with id", "state": "bogus-state"})
    assert default_redactor.redact("no server with id 'x'") == "no server with id 'x'"
    response = await api.get(f"{SERVERS}/nonexistent")
    assert "[redacted]" not in response.text


def test_the_access_log_drops_the_query_of_oauth_redirects_and_keeps_its_shape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    install_log_redaction()
    logger = logging.getLogger("uvicorn.access")
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logger.info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", "/oauth/callback?code=abc123&state=xyz789", "1.1", 200
        )
    record = caplog.records[-1]
    assert isinstance(record.args, tuple) and len(record.args) == 5
    assert "abc123" not in record.getMessage()
    assert "/oauth/callback?[query omitted]" in record.getMessage()


async def test_a_tool_set_to_deny_is_refused_even_for_the_user(api: httpx2.AsyncClient) -> None:
    """R-5.3: `deny` means the tool never runs, whoever asks (an `ask` tool needs no approval for the user)."""
    view = await _hostile(api)
    denied = await api.patch(
        f"{SERVERS}/hostile", json={"version": view["version"], "tool_policies": {"echo_secret": "deny"}}
    )
    assert denied.status_code == 200, denied.text
    await make_ready(api, "hostile")
    response = await api.post(f"{SERVERS}/hostile/tools/echo_secret/call", json={"arguments": {}})
    assert_error(response, 403, "MCP_TOOL_DENIED")
    logs = (await api.get(f"{SERVERS}/hostile/logs")).json()["requests"]
    assert not any(entry["method"] == "tools/call" for entry in logs)


async def test_a_credential_in_the_url_query_is_warned_without_repeating_it(api: httpx2.AsyncClient) -> None:
    """The same warning import gives (URL_QUERY_CREDENTIAL), for a server created through the API."""
    body = {"name": "Q", "transport": "streamable_http", "url": "https://q.example/mcp?api_key=k-998877&region=eu"}
    view = (await api.post(SERVERS, json=body)).json()
    found = [w["message"] for w in view["warnings"] if w["code"] == "URL_QUERY_CREDENTIAL"]
    assert len(found) == 1 and "'api_key'" in found[0] and "k-998877" not in found[0]
    plain = {"name": "P", "transport": "streamable_http", "url": "https://p.example/mcp?region=eu"}
    assert "URL_QUERY_CREDENTIAL" not in {w["code"] for w in (await api.post(SERVERS, json=plain)).json()["warnings"]}
