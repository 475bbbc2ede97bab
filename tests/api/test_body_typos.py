"""A typo in a REST body is named first, with the closest known field or value (issue 16, R-7.3).

A newcomer's `{"comand": "uvx"}` answered "command: is required" (the typo was the second error,
unnamed in the message), `{"policy": "aks"}` pydantic's "Input should be ...", and a PUT with
`versoin` only "version: is required". Every refusal here changed nothing (checked by reading back).
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

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
