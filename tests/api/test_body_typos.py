"""A typo in a REST body is named first, with the closest known field or value (issue 16, R-7.3).

A newcomer's `{"comand": "uvx"}` answered "command: is required" (the typo was the second error,
unnamed in the message), `{"policy": "aks"}` pydantic's "Input should be ...", and a PUT with
`versoin` only "version: is required". Every refusal here changed nothing (checked by reading back).
"""

from __future__ import annotations

import difflib
from typing import Any

import httpx2
import pytest

from mcp_center.errors import MAX_FIELD_ERRORS, MAX_SUGGESTED, clip_echo
from mcp_center.gateway.server import unknown_server_message
from tests.support.api import assert_error, create_remote, field_codes, remote_body, stdio_body

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"


def without(body: dict[str, Any], key: str, **extra: Any) -> dict[str, Any]:
    return {**{k: v for k, v in body.items() if k != key}, **extra}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            without(stdio_body("s", "uvx"), "command", comand="uvx"),
            "comand: is not a known field; did you mean 'command'? (and 1 more)",
        ),
        (
            remote_body("r", "https://mcp.example.com/mcp", transport="http"),
            "transport: must be one of: stdio, streamable_http, sse; did you mean 'streamable_http'?",
        ),
        (
            remote_body("r", "https://mcp.example.com/mcp", hedaers={"X-A": "b"}),
            "hedaers: is not a known field; did you mean 'headers'?",
        ),
        (
            remote_body("r", "https://mcp.example.com/mcp", auth={"kind": "oauth", "scopez": ["a"]}),
            "auth.scopez: is not a known field; did you mean 'scopes'?",
        ),
        (
            stdio_body("s", "uvx", tool_policies={"t": "aks"}),
            "tool_policies.t: must be one of: ask, allow, deny; did you mean 'ask'?",
        ),
        (
            stdio_body("s", "uvx", secret_values={"evn": {"A": "0123456789abcdef"}}),
            "secret_values.evn: is not a known field; did you mean 'env'?",
        ),
    ],
)
async def test_a_create_body_names_the_typo_first_with_what_was_meant(
    api: httpx2.AsyncClient, body: dict[str, Any], message: str
) -> None:
    error = assert_error(await api.post(SERVERS, json=body), 422, "CONFIG_INVALID")
    assert error["message"] == message
    assert (await api.get(SERVERS)).json()["servers"] == []


async def test_an_update_with_a_typod_version_names_the_typo_before_the_missing_version(
    api: httpx2.AsyncClient,
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    body = remote_body("remote", "https://mcp.example.com/mcp", name="Renamed", versoin=before["version"])
    error = assert_error(await api.put(f"{SERVERS}/remote", json=body), 422, "CONFIG_INVALID")
    assert field_codes(error) == [("versoin", "FIELD_UNKNOWN"), ("version", "FIELD_REQUIRED")]
    assert error["message"] == "versoin: is not a known field; did you mean 'version'? (and 1 more)"
    assert (await api.get(f"{SERVERS}/remote")).json()["name"] == before["name"]


@pytest.mark.parametrize(
    ("body", "message", "codes"),
    [
        (
            {"polcy": "ask", "version": 1},
            "polcy: is not a known field; did you mean 'policy'?",
            [("polcy", "FIELD_UNKNOWN"), ("policy", "FIELD_REQUIRED")],
        ),
        (
            {"policy": "aks", "version": 1},
            "policy: must be one of: ask, allow, deny; did you mean 'ask'?",
            [("policy", "FIELD_INVALID")],
        ),
        (
            {"policy": "ask", "versoin": 1},
            "versoin: is not a known field; did you mean 'version'?",
            [("versoin", "FIELD_UNKNOWN"), ("version", "FIELD_REQUIRED")],
        ),
        (
            {"policy": "ask", "version": 1, "zzz": 1},
            "zzz: is not a known field",
            [("zzz", "FIELD_UNKNOWN")],
        ),
    ],
)
async def test_a_policy_body_names_the_typo_first_with_what_was_meant(
    api: httpx2.AsyncClient, body: dict[str, Any], message: str, codes: list[tuple[str, str]]
) -> None:
    before = await create_remote(api, "remote", "https://mcp.example.com/mcp")
    response = await api.put(f"{SERVERS}/remote/tools/echo/policy", json=body)
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert (error["message"], field_codes(error)) == (message, codes)
    assert (await api.get(f"{SERVERS}/remote")).json()["tool_policies"] == before["tool_policies"]


async def test_an_approval_decision_names_the_typo_first_with_what_was_meant(api: httpx2.AsyncClient) -> None:
    key = assert_error(await api.post("/api/approvals/x", json={"decison": "approve"}), 422, "REQUEST_INVALID")
    assert key["message"] == "decison: is not a known field; did you mean 'decision'?"
    value = assert_error(await api.post("/api/approvals/x", json={"decision": "aprove"}), 422, "REQUEST_INVALID")
    assert value["message"] == "decision: must be one of: approve, deny; did you mean 'approve'?"


class _CountingMatcher:
    """`difflib.get_close_matches`, counting its calls (the did-you-mean search of each unknown key)."""

    def __init__(self) -> None:
        self.calls = 0
        self._real = difflib.get_close_matches

    def __call__(self, word: str, possibilities: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
        self.calls += 1
        return self._real(word, possibilities, n, cutoff)


@pytest.mark.parametrize(
    ("path", "code"),
    [(SERVERS, "CONFIG_INVALID"), (f"{SERVERS}/nosuch/tools/echo/call", "REQUEST_INVALID")],
)
async def test_many_unknown_keys_get_a_bounded_search_and_a_short_answer(
    api: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch, path: str, code: str
) -> None:
    # 20,000 unknown keys made 20,000 did-you-mean searches and, for a tool call, a 3.7 MB answer
    # repeating every key in its {"arguments": ...} example (issue 16, R-7.3).
    matcher = _CountingMatcher()
    monkeypatch.setattr(difflib, "get_close_matches", matcher)
    body: dict[str, Any] = {f"comand{i}": 1 for i in range(3000)}
    if path == SERVERS:
        body.update(stdio_body("s", "uvx"))
    response = await api.post(path, json=body)
    error = assert_error(response, 422, code)
    assert matcher.calls <= MAX_SUGGESTED
    assert len(error["details"]["errors"]) == MAX_FIELD_ERRORS
    assert error["details"]["errors_omitted"] == 3000 - MAX_FIELD_ERRORS
    assert len(response.content) < 8_000
    assert "more)" in error["message"]


async def test_a_long_unknown_key_is_echoed_clipped(api: httpx2.AsyncClient) -> None:
    # A 10,000-character key was echoed twice in full (issue 16, R-7.3).
    key = "k" * 10_000
    response = await api.post(f"{SERVERS}/nosuch/tools/echo/call", json={key: 1})
    error = assert_error(response, 422, "REQUEST_INVALID")
    assert error["details"]["errors"][0]["field"] == clip_echo(key) == "k" * 64 + "… (10000 characters)"
    assert len(response.content) < 1_000


def test_an_unknown_endpoint_id_is_echoed_clipped() -> None:
    message = unknown_server_message("x" * 30_000)
    assert "x" * 64 + "… (30000 characters)" in message
    assert len(message) < 300
