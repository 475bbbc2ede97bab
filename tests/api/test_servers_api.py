"""The servers REST API (seed 002 §4, docs/decisions.md#seed-002-4): configuration, trust → test → enable,
tools, secrets.

Every flow runs against a real SDK MCP server on loopback. Every refused request is checked for
its stable code AND for having changed nothing (R-1.3, R-7.3: nothing is half-applied).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.config import Settings
from tests.servers.http_echo import sse_app, streamable_app
from tests.support.api import assert_error, create_remote, field_codes, open_api, remote_body, stdio_body
from tests.support.loopback import serve_loopback
from tests.support.ports import closed_port_url
from tests.support.readiness import STEP_TIMEOUT_S, make_ready
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
ECHO_STDIO = str(Path(__file__).parents[1] / "servers" / "echo_stdio.py")


@pytest.fixture
async def echo_url() -> AsyncGenerator[str]:
    """The `/mcp` URL of a real SDK Streamable HTTP server on 127.0.0.1, stopped after the test."""
    async with serve_loopback(streamable_app()) as base:
        yield base + "/mcp"


async def read(api: httpx2.AsyncClient, server_id: str) -> dict[str, Any]:
    response = await api.get(f"{SERVERS}/{server_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def listing(api: httpx2.AsyncClient) -> list[dict[str, Any]]:
    response = await api.get(SERVERS)
    assert response.status_code == 200, response.text
    return response.json()["servers"]


def stable(view: dict[str, Any]) -> dict[str, Any]:
    """The parts of a read shape that a refused request must not change (status timestamps move)."""
    return {k: v for k, v in view.items() if k != "status"} | {"state": view["status"]["state"]}


async def call(api: httpx2.AsyncClient, server_id: str, tool: str, arguments: object) -> httpx2.Response:
    with anyio.fail_after(STEP_TIMEOUT_S):
        return await api.post(f"{SERVERS}/{server_id}/tools/{tool}/call", json={"arguments": arguments})


# ----- the full flow -------------------------------------------------------------------------------


async def test_a_remote_server_goes_from_created_to_trusted_tested_enabled_called_disabled_and_deleted(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    created = await api.post(SERVERS, json=remote_body("echo", echo_url))
    assert created.status_code == 201, created.text
    view = created.json()
    assert view["id"] == "echo"
    assert view["version"] == 1
    assert view["summary"]["url"] == echo_url
    assert view["digest"].startswith("sha256:")
    assert view["needs"] == ["trust", "test", "enable"]
    assert view["status"]["state"] == "disconnected"
    assert view["enabled"] is False

    trusted = await api.post(f"{SERVERS}/echo/trust", json={"digest": view["digest"]})
    assert trusted.status_code == 200, trusted.text
    assert trusted.json()["trusted"] is True
    assert trusted.json()["needs"] == ["test", "enable"]

    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = await api.post(f"{SERVERS}/echo/test")
    assert tested.status_code == 200, tested.text
    result = tested.json()
    assert result["ok"] is True
    assert result["tool_count"] == 4
    assert result["digest"] == view["digest"]
    after_test = await read(api, "echo")
    assert after_test["last_test"] == result
    assert after_test["tested"] is True
    assert after_test["needs"] == ["enable"]

    with anyio.fail_after(STEP_TIMEOUT_S):
        enabled = await api.post(f"{SERVERS}/echo/enable")
    assert enabled.status_code == 200, enabled.text
    assert enabled.json()["enabled"] is True
    assert enabled.json()["needs"] == []
    assert enabled.json()["status"]["state"] == "ready"

    with anyio.fail_after(STEP_TIMEOUT_S):
        tools = await api.get(f"{SERVERS}/echo/tools")
    assert tools.status_code == 200, tools.text
    assert {t["name"] for t in tools.json()["tools"]} == {"echo", "add", "sleep", "whoami"}
    assert all(t["enabled"] for t in tools.json()["tools"])

    added = await call(api, "echo", "add", {"a": 1, "b": 2})
    assert added.status_code == 200, added.text
    assert added.json()["structuredContent"] == {"result": 3}
    assert added.json()["isError"] is False

    disabled = await api.post(f"{SERVERS}/echo/disable")
    assert disabled.status_code == 200, disabled.text
    assert disabled.json()["enabled"] is False
    assert disabled.json()["status"]["state"] == "disconnected"
    assert_error(await call(api, "echo", "add", {"a": 1, "b": 2}), 409, "MCP_SERVER_DISABLED")

    deleted = await api.delete(f"{SERVERS}/echo")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert_error(await api.get(f"{SERVERS}/echo"), 404, "MCP_SERVER_NOT_FOUND")
    assert await listing(api) == []


async def test_a_legacy_sse_server_and_a_local_stdio_server_go_ready_and_answer_calls(api: httpx2.AsyncClient) -> None:
    async with serve_loopback(sse_app()) as base:
        created = await api.post(SERVERS, json={**remote_body("legacy", base + "/sse"), "transport": "sse"})
        assert created.status_code == 201, created.text
        command, *args = launch_command(ECHO_STDIO)  # in the fork server: the SDK imported once (issue 16)
        stdio = await api.post(SERVERS, json=stdio_body("local", command, args))
        assert stdio.status_code == 201, stdio.text
        assert stdio.json()["summary"]["command_path"] == sys.executable
        for server_id in ("legacy", "local"):
            ready = await make_ready(api, server_id)
            assert ready["status"]["state"] == "ready"
            echoed = await call(api, server_id, "echo", {"text": f"via {server_id}"})
            assert echoed.status_code == 200, echoed.text
            assert echoed.json()["structuredContent"] == {"result": f"via {server_id}"}
            with anyio.fail_after(STEP_TIMEOUT_S):
                disabled = await api.post(f"{SERVERS}/{server_id}/disable")
            assert disabled.json()["status"]["state"] == "disconnected"


async def test_a_server_read_back_and_put_with_a_new_name_keeps_trust_test_and_enabled(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    """A body may be what GET returned, edited: read-only fields are ignored (docs/decisions.md#read-shape-bodies)."""
    await create_remote(api, "echo", echo_url)
    ready = await make_ready(api, "echo")
    edited = {**ready, "name": "Renamed"}
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.put(f"{SERVERS}/echo", json=edited)
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["name"] == "Renamed"
    assert view["version"] == ready["version"] + 1
    assert view["digest"] == ready["digest"]
    assert (view["trusted"], view["tested"], view["enabled"]) == (True, True, True)


async def test_a_read_back_bearer_server_with_secrets_round_trips_through_put_without_losing_them(
    echo_url: str, api: httpx2.AsyncClient, settings: Settings
) -> None:
    """The read shape of secrets (`{"configured": true}`) is accepted and keeps the stored values."""
    await create_remote(
        api,
        "echo",
        echo_url,
        auth={"kind": "bearer"},
        secret_values={"headers": {"X-Key": "header-value-rt"}, "bearer_token": "bearer-value-rt"},
    )
    ready = await make_ready(api, "echo")
    stored = secrets_file(settings)
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.put(f"{SERVERS}/echo", json={**ready, "name": "Renamed"})
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["secret_headers"] == {"X-Key": {"configured": True}}
    assert view["auth"] == {"kind": "bearer", "token": {"configured": True}}
    assert view["digest"] == ready["digest"]
    assert (view["trusted"], view["tested"], view["enabled"]) == (True, True, True)
    assert secrets_file(settings) == stored


async def test_concurrent_updates_with_the_same_version_let_exactly_one_win(api: httpx2.AsyncClient) -> None:
    """R-1.3: two pages never overwrite each other."""
    await create_remote(api, "remote", "https://mcp.example.com/mcp")
    statuses: list[int] = []

    async def rename(n: int) -> None:
        response = await api.patch(f"{SERVERS}/remote", json={"version": 1, "name": f"Page {n}"})
        statuses.append(response.status_code)

    with anyio.fail_after(STEP_TIMEOUT_S):
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(rename, n)
    assert sorted(statuses) == [200, 409, 409, 409, 409, 409]
    assert (await read(api, "remote"))["version"] == 2


async def test_a_delete_with_a_stale_version_is_refused_and_keeps_the_server(api: httpx2.AsyncClient) -> None:
    await create_remote(api, "remote", "https://mcp.example.com/mcp")
    assert (await api.patch(f"{SERVERS}/remote", json={"version": 1, "name": "v2"})).status_code == 200
    before = await read(api, "remote")
    assert_error(await api.delete(f"{SERVERS}/remote?version=1"), 409, "MCP_SERVER_VERSION_CONFLICT")
    assert stable(await read(api, "remote")) == stable(before)
    assert (await api.delete(f"{SERVERS}/remote?version=2")).status_code == 204


async def test_a_created_server_without_id_gets_a_unique_slug_from_its_name(api: httpx2.AsyncClient) -> None:
    """A different server of a name already taken gets `-2` and a SERVER_NAME_SHARED note (R-1.1)."""
    body = {"name": "My Echo", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}
    first = await api.post(SERVERS, json=body)
    second = await api.post(SERVERS, json=body | {"url": "https://other.example.com/mcp"})
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["id"] == "my-echo"
    assert second.json()["id"] == "my-echo-2"
    assert [w["code"] for w in second.json()["warnings"] if w["code"] == "SERVER_NAME_SHARED"] == ["SERVER_NAME_SHARED"]


async def test_the_same_create_posted_again_is_refused_naming_the_oldest(api: httpx2.AsyncClient) -> None:
    """A retried POST of the same name and configuration made `time-2`, a copy, with only a note
    (trialfix36): it is 409 MCP_SERVER_ALREADY_REGISTERED naming the server registered first, as
    `mcp-center add` is, and nothing is created; an explicit new `id` registers a copy (R-1.1)."""
    body = {"name": "time", "transport": "streamable_http", "url": "https://mcp.example.com/mcp"}
    assert (await api.post(SERVERS, json=body)).status_code == 201
    copy = await api.post(SERVERS, json=body | {"id": "a-copy"})  # sorts before `time`: named second all the same
    assert copy.status_code == 201, copy.text
    assert "SERVER_NAME_SHARED" in [w["code"] for w in copy.json()["warnings"]]
    before = await listing(api)

    error = assert_error(await api.post(SERVERS, json=body), 409, "MCP_SERVER_ALREADY_REGISTERED")
    assert error["details"] == {"server_id": "time", "same_config": ["time", "a-copy"]}
    assert error["message"].startswith("'time' is already registered with this name and configuration")
    assert "--id" not in error["message"]  # no CLI flag in a REST answer
    assert [stable(v) for v in await listing(api)] == [stable(v) for v in before]


# ----- bad inputs: a stable code and nothing changed ------------------------------------------------


async def test_a_put_or_patch_with_a_stale_version_is_refused_and_changes_nothing(api: httpx2.AsyncClient) -> None:
    await create_remote(api, "remote", "https://mcp.example.com/mcp")
    first = await api.patch(f"{SERVERS}/remote", json={"version": 1, "name": "Second"})
    assert first.status_code == 200, first.text
    before = await read(api, "remote")
    assert before["version"] == 2

    for method in ("PUT", "PATCH"):
        body = remote_body("remote", "https://other.example.com/mcp", version=1, name="Stale")
        response = await api.request(method, f"{SERVERS}/remote", json=body)
        error = assert_error(response, 409, "MCP_SERVER_VERSION_CONFLICT")
        assert error["details"]["current_version"] == 2
        assert stable(await read(api, "remote")) == stable(before)


async def test_a_put_or_patch_without_version_is_refused_with_the_version_field_named(
    api: httpx2.AsyncClient,
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    for method in ("PUT", "PATCH"):
        response = await api.request(method, f"{SERVERS}/remote", json={"name": "No version"})
        error = assert_error(response, 422, "CONFIG_INVALID")
        assert [f for f, _ in field_codes(error)] == ["version"]
        assert stable(await read(api, "remote")) == stable(before)


PER_SERVER_ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "", None),
    ("PUT", "", remote_body("ghost", "https://mcp.example.com/mcp", version=1)),
    ("PATCH", "", {"version": 1, "name": "Ghost"}),
    ("DELETE", "", None),
    ("GET", "/tools", None),
    ("POST", "/trust", {"digest": "sha256:" + "0" * 64}),
    ("POST", "/test", None),
    ("POST", "/enable", None),
    ("POST", "/disable", None),
    ("PUT", "/secrets/X-Key?kind=header", {"value": "some-secret-value"}),
    ("DELETE", "/secrets/X-Key?kind=header", None),
    ("POST", "/tools/echo/call", {"arguments": {"text": "hi"}}),
]


@pytest.mark.parametrize(("method", "suffix", "body"), PER_SERVER_ROUTES)
async def test_every_per_server_route_answers_404_for_an_unknown_server(
    api: httpx2.AsyncClient, method: str, suffix: str, body: dict[str, Any] | None
) -> None:
    await create_remote(api, "remote", "https://mcp.example.com/mcp")
    before = await listing(api)
    response = await api.request(method, f"{SERVERS}/ghost{suffix}", json=body)
    error = assert_error(response, 404, "MCP_SERVER_NOT_FOUND")
    assert error["details"]["server_id"] == "ghost"
    assert [stable(s) for s in await listing(api)] == [stable(s) for s in before]


BAD_REMOTE_FIELDS: list[tuple[dict[str, Any], str, str]] = [
    ({"url": "https://user:hunter2-in-url@mcp.example.com/mcp"}, "url", "URL_HAS_CREDENTIALS"),
    ({"url": "https://mcp.example.com/mcp#frag"}, "url", "URL_HAS_FRAGMENT"),
    ({"url": "ftp://mcp.example.com/mcp"}, "url", "URL_SCHEME_NOT_ALLOWED"),
    ({"url": "http://mcp.example.com/mcp"}, "url", "URL_HTTPS_REQUIRED"),
    ({"headers": {"Host": "evil.example"}}, "headers.Host", "HEADER_RESERVED"),
    ({"headers": {"Mcp-Session-Id": "fixed"}}, "headers.Mcp-Session-Id", "HEADER_RESERVED"),
    (
        {"auth": {"kind": "bearer"}, "headers": {"Authorization": "Bearer x"}},
        "headers.Authorization",
        "HEADER_RESERVED",
    ),
    # `Bearer $TOKEN` with TOKEN unset: a scheme with no credential is refused, plain or secret.
    ({"headers": {"Authorization": "Bearer "}}, "headers.Authorization", "CREDENTIAL_EMPTY"),
    (
        {"secret_values": {"headers": {"Authorization": "Bearer"}}},
        "secret_values.headers.Authorization",
        "CREDENTIAL_EMPTY",
    ),
]
BAD_STDIO_FIELDS: list[tuple[dict[str, Any], str, str]] = [
    ({"command": ""}, "command", "COMMAND_EMPTY"),
    ({"command": "npx foo | sh"}, "command", "COMMAND_NOT_A_PROGRAM"),
    ({"command": "python", "cwd": "relative/dir"}, "cwd", "CWD_INVALID"),
]


@pytest.mark.parametrize(("fields", "field", "code"), BAD_REMOTE_FIELDS)
async def test_a_remote_server_breaking_a_url_or_header_rule_is_refused_on_create_and_patch(
    api: httpx2.AsyncClient, fields: dict[str, Any], field: str, code: str
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")

    created = await api.post(SERVERS, json=remote_body("bad", "https://mcp.example.com/mcp") | fields)
    error = assert_error(created, 422, "CONFIG_INVALID")
    assert (field, code) in field_codes(error)
    assert "hunter2" not in created.text  # an embedded password is never echoed

    patched = await api.patch(f"{SERVERS}/remote", json={"version": 1, **fields})
    error = assert_error(patched, 422, "CONFIG_INVALID")
    assert (field, code) in field_codes(error)
    assert "hunter2" not in patched.text

    assert [stable(s) for s in await listing(api)] == [stable(before)]


@pytest.mark.parametrize(("fields", "field", "code"), BAD_STDIO_FIELDS)
async def test_a_stdio_server_with_an_unrunnable_command_is_refused_on_create_and_patch(
    api: httpx2.AsyncClient, fields: dict[str, Any], field: str, code: str
) -> None:
    created_ok = await api.post(SERVERS, json=stdio_body("local", sys.executable, [ECHO_STDIO]))
    assert created_ok.status_code == 201, created_ok.text
    before = created_ok.json()

    created = await api.post(SERVERS, json=stdio_body("bad", "python") | fields)
    assert (field, code) in field_codes(assert_error(created, 422, "CONFIG_INVALID"))

    patched = await api.patch(f"{SERVERS}/local", json={"version": 1, **fields})
    assert (field, code) in field_codes(assert_error(patched, 422, "CONFIG_INVALID"))

    assert [stable(s) for s in await listing(api)] == [stable(before)]


async def test_a_duplicate_id_is_refused_and_the_first_server_is_untouched(api: httpx2.AsyncClient) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    response = await api.post(SERVERS, json=remote_body("remote", "https://other.example.com/mcp"))
    assert_error(response, 409, "MCP_SERVER_EXISTS")
    assert [stable(s) for s in await listing(api)] == [stable(before)]


async def test_a_put_that_changes_the_id_is_refused(api: httpx2.AsyncClient) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    response = await api.put(f"{SERVERS}/remote", json=remote_body("renamed", "https://mcp.example.com/mcp", version=1))
    assert ("id", "ID_IMMUTABLE") in field_codes(assert_error(response, 422, "CONFIG_INVALID"))
    assert [stable(s) for s in await listing(api)] == [stable(before)]


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"text"', b"null", b"{not json", b""])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", SERVERS),
        ("PUT", f"{SERVERS}/remote"),
        ("PATCH", f"{SERVERS}/remote"),
        ("POST", f"{SERVERS}/remote/trust"),
        ("PUT", f"{SERVERS}/remote/secrets/X-Key?kind=header"),
        ("POST", f"{SERVERS}/remote/tools/echo/call"),
    ],
)
async def test_a_body_that_is_not_a_json_object_is_refused_as_request_invalid(
    api: httpx2.AsyncClient, method: str, path: str, payload: bytes
) -> None:
    if path.endswith("/call") and payload in {b"null", b""}:
        pytest.skip("a call's body is optional: no body (or null) means no arguments")
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    response = await api.request(method, path, content=payload, headers={"Content-Type": "application/json"})
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert all(e["field"] == "body" for e in error["details"]["errors"]), error
    assert [stable(s) for s in await listing(api)] == [stable(before)]


async def test_trust_without_a_digest_is_refused_as_request_invalid(api: httpx2.AsyncClient) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    response = await api.post(f"{SERVERS}/remote/trust", json={})
    assert ("digest", "FIELD_REQUIRED") in field_codes(assert_error(response, 422, "REQUEST_INVALID"))
    assert stable(await read(api, "remote")) == stable(before)


# ----- trust, test, enable rules (R-2) ---------------------------------------------------------------


async def test_enable_and_test_before_trust_are_refused_as_not_trusted(echo_url: str, api: httpx2.AsyncClient) -> None:
    before = await create_remote(api, "echo", echo_url)
    error = assert_error(await api.post(f"{SERVERS}/echo/enable"), 409, "MCP_SERVER_NOT_TRUSTED")
    assert error["details"]["current_digest"] == before["digest"]
    assert_error(await api.post(f"{SERVERS}/echo/test"), 409, "MCP_SERVER_NOT_TRUSTED")
    after = await read(api, "echo")
    assert stable(after) == stable(before)
    assert after["last_test"] is None


async def test_enable_after_trust_but_before_a_test_is_refused_as_not_tested(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    view = await create_remote(api, "echo", echo_url)
    trusted = await api.post(f"{SERVERS}/echo/trust", json={"digest": view["digest"]})
    assert trusted.status_code == 200
    assert_error(await api.post(f"{SERVERS}/echo/enable"), 409, "MCP_SERVER_NOT_TESTED")
    assert stable(await read(api, "echo")) == stable(trusted.json())


async def test_trust_with_a_digest_that_is_not_current_is_refused_with_the_current_digest(
    api: httpx2.AsyncClient,
) -> None:
    view = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    changed = await api.patch(f"{SERVERS}/remote", json={"version": 1, "url": "https://other.example.com/mcp"})
    assert changed.status_code == 200
    response = await api.post(f"{SERVERS}/remote/trust", json={"digest": view["digest"]})
    error = assert_error(response, 409, "MCP_TRUST_DIGEST_MISMATCH")
    assert error["details"]["current_digest"] == changed.json()["digest"]
    assert error["details"]["current_digest"] != view["digest"]
    after = await read(api, "remote")
    assert after["trusted"] is False
    assert after["trusted_digest"] is None


async def test_a_failed_test_answers_200_with_an_attributed_reason_and_enable_stays_refused(
    api: httpx2.AsyncClient,
) -> None:
    with closed_port_url() as url:
        view = await create_remote(api, "closed", url)
        assert (await api.post(f"{SERVERS}/closed/trust", json={"digest": view["digest"]})).status_code == 200
        with anyio.fail_after(STEP_TIMEOUT_S):
            tested = await api.post(f"{SERVERS}/closed/test")
        assert tested.status_code == 200, tested.text
        result = tested.json()
        assert result["ok"] is False
        assert result["error"]["reason"] == "refused"
        assert isinstance(result["error"]["code"], str)
        after = await read(api, "closed")
        assert after["last_test"] == result
        assert after["tested"] is False
        assert "test" in after["needs"]
        assert_error(await api.post(f"{SERVERS}/closed/enable"), 409, "MCP_SERVER_NOT_TESTED")
        assert (await read(api, "closed"))["enabled"] is False


# ----- calls -----------------------------------------------------------------------------------------


async def test_a_call_whose_arguments_are_not_an_object_is_refused(echo_url: str, api: httpx2.AsyncClient) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    for arguments in ([1, 2], "a=1", 3):
        error = assert_error(await call(api, "echo", "add", arguments), 422, "REQUEST_INVALID")
        assert ("arguments", "FIELD_INVALID") in field_codes(error)


async def test_a_call_with_an_unknown_body_field_is_refused(echo_url: str, api: httpx2.AsyncClient) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    response = await api.post(f"{SERVERS}/echo/tools/add/call", json={"args": {"a": 1, "b": 2}})
    assert_error(response, 422, "REQUEST_INVALID")


async def test_arguments_sent_without_their_wrapper_are_named_as_the_tools_own(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    await api.get(f"{SERVERS}/echo/tools")  # connected: the tool's input schema is known
    bare = assert_error(await api.post(f"{SERVERS}/echo/tools/add/call", json={"a": 1, "b": 2}), 422, "REQUEST_INVALID")
    assert bare["message"] == (
        "a: is not a known field; 'a', 'b' are arguments of tool 'add': send {\"arguments\": {\"a\": ..., \"b\": ...}}"
    )
    assert sorted(field_codes(bare)) == [("a", "FIELD_UNKNOWN"), ("b", "FIELD_UNKNOWN")]
    other = assert_error(await api.post(f"{SERVERS}/echo/tools/add/call", json={"z": 1}), 422, "REQUEST_INVALID")
    assert other["message"].endswith('; tool arguments go under "arguments": send {"arguments": {"z": ...}}')
    # A typo of the wrapper itself gets its did-you-mean, not this hint.
    typo = await api.post(f"{SERVERS}/echo/tools/add/call", json={"argument": {"a": 1, "b": 2}})
    assert "tool arguments go under" not in assert_error(typo, 422, "REQUEST_INVALID")["message"]
    # Not a tool call: no such hint.
    plain = assert_error(await api.post(SERVERS, json={"zzz": 1}), 422, "CONFIG_INVALID")
    assert "arguments" not in plain["message"]


async def test_a_call_to_an_unknown_tool_answers_tool_not_found(echo_url: str, api: httpx2.AsyncClient) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    error = assert_error(await call(api, "echo", "no_such_tool", {}), 404, "MCP_TOOL_NOT_FOUND")
    assert error["details"]["tool"] == "no_such_tool"


async def test_a_call_the_server_rejects_comes_back_as_a_tool_error_not_an_http_error(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    """R-5.1: arguments pass through unchanged and the server validates them."""
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    response = await call(api, "echo", "add", {"a": "not a number", "b": 2})
    assert response.status_code == 200, response.text
    assert response.json()["isError"] is True


async def test_a_call_without_a_required_argument_is_refused_before_it_is_sent(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    """R-7.3 (bridge39): the tool's top-level `required` is checked by the service, for REST as for the
    CLI and the page: REQUEST_INVALID naming what is missing, not the server's validator text."""
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    bare = assert_error(await call(api, "echo", "add", {}), 422, "REQUEST_INVALID")
    assert bare["message"] == "missing required arguments 'a', 'b' of tool 'add'"
    assert field_codes(bare) == [("arguments.a", "FIELD_REQUIRED"), ("arguments.b", "FIELD_REQUIRED")]
    assert (bare["details"]["tool"], bare["details"]["missing"]) == ("add", ["a", "b"])
    no_body = assert_error(await api.post(f"{SERVERS}/echo/tools/add/call"), 422, "REQUEST_INVALID")
    assert no_body["message"] == bare["message"]
    half = assert_error(await call(api, "echo", "add", {"a": 40}), 422, "REQUEST_INVALID")
    assert half["message"] == "missing required argument 'b' of tool 'add'"
    # Only presence is ours to check: a null or a wrong type is the server's to judge (a tool error).
    typed = await call(api, "echo", "add", {"a": None, "b": 2})
    assert typed.status_code == 200, typed.text
    assert typed.json()["isError"] is True


async def test_a_disabled_tool_needs_a_new_confirmation_and_is_then_refused_when_called(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    await create_remote(api, "echo", echo_url)
    ready = await make_ready(api, "echo")
    patched = await api.patch(f"{SERVERS}/echo", json={"version": ready["version"], "disabled_tools": ["add"]})
    assert patched.status_code == 200, patched.text
    view = patched.json()
    assert (view["trusted"], view["tested"], view["enabled"]) == (False, False, False)  # tool permissions
    await make_ready(api, "echo")

    error = assert_error(await call(api, "echo", "add", {"a": 1, "b": 2}), 403, "MCP_TOOL_DISABLED")
    assert error["details"]["tool"] == "add"
    with anyio.fail_after(STEP_TIMEOUT_S):
        tools = (await api.get(f"{SERVERS}/echo/tools")).json()["tools"]
    assert {t["name"]: t["enabled"] for t in tools}["add"] is False
    echoed = await call(api, "echo", "echo", {"text": "still works"})
    assert echoed.json()["structuredContent"] == {"result": "still works"}


async def test_a_call_cancelled_by_its_operation_id_before_it_is_admitted_is_refused(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    """R-3.8: a cancel that arrives first is remembered; the call never runs."""
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    early = await api.post("/api/operations/op-early/cancel")
    assert early.status_code == 200
    assert early.json() == {"operation_id": "op-early", "cancelled": False}
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.post(
            f"{SERVERS}/echo/tools/sleep/call", json={"arguments": {"seconds": 30}, "operation_id": "op-early"}
        )
    assert_error(response, 409, "MCP_CALL_CANCELLED")


async def test_a_running_call_is_cancelled_by_its_operation_id(echo_url: str, api: httpx2.AsyncClient) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    outcome: list[httpx2.Response] = []

    async def slow_call() -> None:
        body = {"arguments": {"seconds": 30}, "operation_id": "op-running"}
        outcome.append(await api.post(f"{SERVERS}/echo/tools/sleep/call", json=body))

    with anyio.fail_after(STEP_TIMEOUT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            # Poll (bounded) until the cancel finds the call running, or an early cancel refused it.
            while not outcome:
                cancelled = await api.post("/api/operations/op-running/cancel")
                if cancelled.json()["cancelled"]:
                    break
                await anyio.sleep(0.01)
    assert_error(outcome[0], 409, "MCP_CALL_CANCELLED")
    after = await call(api, "echo", "add", {"a": 1, "b": 1})
    assert after.json()["structuredContent"] == {"result": 2}


async def test_an_operation_id_that_is_not_a_short_string_is_refused(echo_url: str, api: httpx2.AsyncClient) -> None:
    await create_remote(api, "echo", echo_url)
    await make_ready(api, "echo")
    for operation_id in ("", "x" * 201, 5):
        body = {"arguments": {"a": 1, "b": 2}, "operation_id": operation_id}
        response = await api.post(f"{SERVERS}/echo/tools/add/call", json=body)
        assert ("operation_id", "FIELD_INVALID") in field_codes(assert_error(response, 422, "REQUEST_INVALID"))


# ----- high-risk invalidation (R-1.4) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"url": "URL"},
        {"headers": {"X-Team": "blue"}},
        {"auth": {"kind": "bearer"}},
        {"tool_policies": {"add": "allow"}},
    ],
    ids=["url", "headers", "auth", "tool_policies"],
)
async def test_a_high_risk_patch_of_an_enabled_server_drops_trust_test_and_enabled_and_disconnects(
    echo_url: str, api: httpx2.AsyncClient, change: dict[str, Any]
) -> None:
    await create_remote(api, "echo", echo_url)
    ready = await make_ready(api, "echo")
    assert ready["status"]["state"] == "ready"
    if change.get("url") == "URL":
        change = {"url": echo_url.replace("127.0.0.1", "localhost")}
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.patch(f"{SERVERS}/echo", json={"version": ready["version"], **change})
    assert response.status_code == 200, response.text
    view = response.json()
    assert_invalidated(view, ready)
    assert_invalidated(await read(api, "echo"), ready)
    assert_error(await call(api, "echo", "add", {"a": 1, "b": 2}), 409, "MCP_SERVER_DISABLED")


async def test_setting_a_secret_header_on_an_enabled_server_drops_trust_test_and_enabled(
    echo_url: str, api: httpx2.AsyncClient
) -> None:
    await create_remote(api, "echo", echo_url)
    ready = await make_ready(api, "echo")
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.put(f"{SERVERS}/echo/secrets/X-Key?kind=header", json={"value": "first-secret-value"})
    assert response.status_code == 200, response.text
    assert_invalidated(response.json(), ready)

    # A new value of the same key is a new digest too (keyed fingerprint, R-2.1).
    again = await make_ready(api, "echo")
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.put(f"{SERVERS}/echo/secrets/X-Key?kind=header", json={"value": "second-secret-value"})
    assert_invalidated(response.json(), again)


def assert_invalidated(view: dict[str, Any], ready: dict[str, Any]) -> None:
    assert view["trusted"] is False
    assert view["tested"] is False
    assert view["enabled"] is False
    assert view["trusted_digest"] is None
    assert view["last_test"] is None
    assert "trust" in view["needs"]
    assert "test" in view["needs"]
    assert view["status"]["state"] == "disconnected"
    assert view["digest"] != ready["digest"]
    assert view["version"] == ready["version"] + 1


@pytest.mark.parametrize(
    "change",
    [{"name": "New name"}, {"call_timeout_s": 30}, {"connect_on_startup": False}],
    ids=["name", "call_timeout_s", "connect_on_startup"],
)
async def test_a_low_risk_patch_keeps_trust_test_and_enabled(
    echo_url: str, api: httpx2.AsyncClient, change: dict[str, Any]
) -> None:
    await create_remote(api, "echo", echo_url)
    ready = await make_ready(api, "echo")
    with anyio.fail_after(STEP_TIMEOUT_S):
        response = await api.patch(f"{SERVERS}/echo", json={"version": ready["version"], **change})
    assert response.status_code == 200, response.text
    view = response.json()
    assert all(view[k] == v for k, v in change.items())
    assert (view["trusted"], view["tested"], view["enabled"]) == (True, True, True)
    assert view["needs"] == []
    assert view["digest"] == ready["digest"]
    assert view["version"] == ready["version"] + 1
    added = await call(api, "echo", "add", {"a": 2, "b": 3})
    assert added.json()["structuredContent"] == {"result": 5}


# ----- production profile (R-2.5) --------------------------------------------------------------------


async def test_the_production_profile_refuses_to_start_stdio_servers_but_runs_remote_ones(
    tmp_path: Path, echo_url: str
) -> None:
    settings = Settings.load(data_dir=tmp_path / "prod", profile="production", environ={})
    async with open_api(settings) as api:
        created = await api.post(SERVERS, json=stdio_body("local", sys.executable, [ECHO_STDIO]))
        assert created.status_code == 201, created.text
        view = created.json()
        assert "sandbox" in view["needs"]

        assert_error(await api.post(f"{SERVERS}/local/test"), 403, "MCP_SANDBOX_REQUIRED")
        trusted = await api.post(f"{SERVERS}/local/trust", json={"digest": view["digest"]})
        assert trusted.status_code == 200, trusted.text
        error = assert_error(await api.post(f"{SERVERS}/local/test"), 403, "MCP_SANDBOX_REQUIRED")
        assert error["details"]["profile"] == "production"
        assert_error(await api.post(f"{SERVERS}/local/enable"), 403, "MCP_SANDBOX_REQUIRED")
        assert_error(await api.get(f"{SERVERS}/local/tools"), 403, "MCP_SANDBOX_REQUIRED")
        after = await read(api, "local")
        assert (after["enabled"], after["last_test"]) == (False, None)
        assert after["status"]["state"] == "disconnected"

        await create_remote(api, "echo", echo_url)
        ready = await make_ready(api, "echo")
        assert ready["status"]["state"] == "ready"
        added = await call(api, "echo", "add", {"a": 1, "b": 2})
        assert added.json()["structuredContent"] == {"result": 3}


# ----- secrets (R-1.5) -------------------------------------------------------------------------------


def secrets_file(settings: Settings) -> dict[str, str]:
    path = settings.mcp_dir / "secrets.json"
    if not path.exists():
        return {}
    secrets: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))["secrets"]
    return secrets


async def test_a_secret_header_is_write_only_reaches_the_server_and_its_ciphertext_goes_with_delete(
    echo_url: str, api: httpx2.AsyncClient, settings: Settings
) -> None:
    value = "header-secret-7f3a9c"
    await create_remote(api, "echo", echo_url)
    response = await api.put(f"{SERVERS}/echo/secrets/X-Key?kind=header", json={"value": value})
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["secret_headers"] == {"X-Key": {"configured": True}}
    assert view["summary"]["secret_headers"]["X-Key"]["configured"] is True
    assert value not in response.text
    assert value not in (await api.get(f"{SERVERS}/echo")).text
    assert value not in (await api.get(SERVERS)).text
    stored = secrets_file(settings)
    assert len(stored) == 1
    assert value not in json.dumps(stored)

    # The value is really used: the server's whoami tool reports the headers it received.
    await make_ready(api, "echo")
    whoami = await call(api, "echo", "whoami", {})
    assert whoami.status_code == 200, whoami.text
    # The server echoes the header it received; mcp-center redacts the echo.
    assert whoami.json()["structuredContent"]["x-key"] == "[redacted]"

    ready = await read(api, "echo")
    with anyio.fail_after(STEP_TIMEOUT_S):
        deleted = await api.delete(f"{SERVERS}/echo/secrets/X-Key?kind=header")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["secret_headers"] == {}
    assert_invalidated(deleted.json(), ready)
    assert secrets_file(settings) == {}
    assert_error(await api.delete(f"{SERVERS}/echo/secrets/X-Key?kind=header"), 404, "MCP_SECRET_NOT_FOUND")


async def test_deleting_a_server_deletes_its_ciphertexts(api: httpx2.AsyncClient, settings: Settings) -> None:
    await create_remote(
        api,
        "remote",
        "https://mcp.example.com/mcp",
        auth={"kind": "bearer"},
        secret_values={"headers": {"X-Key": "header-value-1"}, "bearer_token": "bearer-value-1"},
    )
    view = await read(api, "remote")
    assert view["secret_headers"] == {"X-Key": {"configured": True}}
    assert view["auth"] == {"kind": "bearer", "token": {"configured": True}}
    assert len(secrets_file(settings)) == 2
    assert (await api.delete(f"{SERVERS}/remote")).status_code == 204
    assert secrets_file(settings) == {}


async def test_a_secret_of_the_wrong_kind_or_an_unknown_kind_is_refused_and_changes_nothing(
    api: httpx2.AsyncClient, settings: Settings
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    url = f"{SERVERS}/remote/secrets"
    cases = [
        (f"{url}/API_KEY?kind=environment", 422, "SECRET_KEY_INVALID"),
        (f"{url}/X-Key?kind=cookie", 422, "REQUEST_INVALID"),
        (f"{url}/X-Key", 422, "REQUEST_INVALID"),
        (f"{url}/Host?kind=header", 422, "SECRET_KEY_INVALID"),
        (f"{url}/other?kind=bearer", 422, "SECRET_KEY_INVALID"),
    ]
    for path, status, code in cases:
        response = await api.put(path, json={"value": "some-secret-value"})
        assert_error(response, status, code)
        assert "some-secret-value" not in response.text
    # The refusal says why (a new-user trial could not tell what was wrong with its bearer secret).
    refused = await api.put(f"{url}/token?kind=bearer", json={"value": "some-secret-value"})
    assert refused.json()["error"]["message"] == "a bearer secret needs auth.kind 'bearer' (this server's is 'none')"
    for bad_body in ({"value": ""}, {"value": 12}, {}, {"value": "ok-value", "extra": 1}, {"value": "a\nb"}):
        response = await api.put(f"{url}/X-Key?kind=header", json=bad_body)
        assert response.status_code == 422, (bad_body, response.text)
    assert stable(await read(api, "remote")) == stable(before)
    assert secrets_file(settings) == {}


async def test_a_secret_put_with_a_stale_version_is_refused(api: httpx2.AsyncClient, settings: Settings) -> None:
    await create_remote(api, "remote", "https://mcp.example.com/mcp")
    assert (await api.patch(f"{SERVERS}/remote", json={"version": 1, "name": "v2"})).status_code == 200
    before = await read(api, "remote")
    stale_query = await api.put(f"{SERVERS}/remote/secrets/X-Key?kind=header&version=1", json={"value": "v-secret"})
    assert_error(stale_query, 409, "MCP_SERVER_VERSION_CONFLICT")
    stale_body = await api.put(f"{SERVERS}/remote/secrets/X-Key?kind=header", json={"value": "v-secret", "version": 1})
    assert_error(stale_body, 409, "MCP_SERVER_VERSION_CONFLICT")
    assert stable(await read(api, "remote")) == stable(before)
    assert secrets_file(settings) == {}


async def test_a_secret_put_with_a_boolean_version_is_refused_not_read_as_1(
    api: httpx2.AsyncClient, settings: Settings
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    for version in (True, "1", 0):
        response = await api.put(
            f"{SERVERS}/remote/secrets/X-Key?kind=header", json={"value": "v-secret", "version": version}
        )
        assert_error(response, 422, "REQUEST_INVALID")
    assert stable(await read(api, "remote")) == stable(before)
    assert secrets_file(settings) == {}


async def test_an_environment_secret_of_a_stdio_server_is_write_only(
    api: httpx2.AsyncClient, settings: Settings
) -> None:
    created = await api.post(SERVERS, json=stdio_body("local", sys.executable, [ECHO_STDIO], env={"MODE": "x"}))
    assert created.status_code == 201, created.text
    response = await api.put(f"{SERVERS}/local/secrets/API_TOKEN?kind=environment", json={"value": "env-secret-42"})
    assert response.status_code == 200, response.text
    assert response.json()["secret_env"] == {"API_TOKEN": {"configured": True}}
    assert response.json()["env"] == {"MODE": "x"}
    assert "env-secret-42" not in response.text
    assert_error(
        await api.put(f"{SERVERS}/local/secrets/X-Key?kind=header", json={"value": "hdr-secret"}),
        422,
        "SECRET_KEY_INVALID",
    )
    assert_error(
        await api.put(f"{SERVERS}/local/secrets/1BAD?kind=environment", json={"value": "env-secret"}),
        422,
        "SECRET_KEY_INVALID",
    )
    assert len(secrets_file(settings)) == 1
