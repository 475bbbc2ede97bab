"""Capabilities for agents on real input (issue 5): a real `mcp-center serve` and the npm
`@modelcontextprotocol/server-everything` over stdio, driven only through the REST API.

Tool names and exports, approvals, a prompt and a resource read as untrusted blocks, elicitation
answered with the schema defaults, declined, cancelled, URL mode declined — and a card left
pending across a restart of `serve`: the caller gets an explicit "not delivered" failure, the
card is still listed after the restart, and the call is re-sent only when the user asks.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from mcp_center.registry import TOOL_NAME_PATTERN
from tests.support.http import Background, check, pending_card, wait_for
from tests.support.mcp_servers import EVERYTHING
from tests.support.readiness import add_ready_on_host
from tests.support.results import text_of
from tests.support.serve import Host, running_host

pytestmark = [pytest.mark.e2e, pytest.mark.own_serve]  # every test leaves approvals or cards

EVERYTHING_STDIO = {"name": "Everything", "transport": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]}
ELICIT = "/api/mcp/servers/everything/tools/trigger-elicitation-request/call"


def test_server_everything_tools_prompts_resources_and_approvals_through_the_api(host: Host) -> None:
    add_ready_on_host(host, EVERYTHING_STDIO)
    exported = check(host.client.get("/api/tools", params={"format": "openai"}), 200)
    names = [t["function"]["name"] for t in exported["tools"]]
    assert all(TOOL_NAME_PATTERN.fullmatch(n) for n in names)
    # Listed only because we advertise the elicitation capability.
    assert {"mcp__everything__get-sum", "mcp__everything__trigger-elicitation-request"} <= set(names)
    anthropic = check(host.client.get("/api/tools", params={"format": "anthropic"}), 200)["tools"]
    get_sum = next(t for t in anthropic if t["name"] == "mcp__everything__get-sum")
    assert get_sum["input_schema"]["required"] == ["a", "b"]

    agent = Background(
        lambda: host.client.post("/api/tools/mcp__everything__get-sum/call", json={"arguments": {"a": 2, "b": 40}})
    )
    approval = wait_for(lambda: check(host.client.get("/api/approvals"), 200)["approvals"])
    assert approval["tool"] == "mcp__everything__get-sum"
    assert approval["arguments"] == {"a": 2, "b": 40}
    check(host.client.post(f"/api/approvals/{approval['id']}", json={"decision": "approve"}), 200)
    assert text_of(check(agent.result(), 200)) == "The sum of 2 and 40 is 42."

    denied = Background(lambda: host.client.post("/api/tools/mcp__everything__echo/call", json={"arguments": {}}))
    approval = wait_for(lambda: check(host.client.get("/api/approvals"), 200)["approvals"])
    check(host.client.post(f"/api/approvals/{approval['id']}", json={"decision": "deny"}), 200)
    assert denied.result().json()["error"]["code"] == "MCP_APPROVAL_DENIED"

    prompts = {p["name"]: p for p in check(host.client.get("/api/prompts"), 200)["prompts"]}
    assert prompts["everything:args-prompt"]["arguments"][0] == {
        "name": "city",
        "title": None,
        "description": "Name of the city",
        "required": True,
    }
    block = check(
        host.client.post(
            "/api/prompts/everything:args-prompt/get", json={"arguments": {"city": "Lyon", "state": "Rhône"}}
        ),
        200,
    )
    assert block["untrusted"] is True
    assert block["provenance"]["arguments"] == {"city": "Lyon", "state": "Rhône"}
    assert (
        f"{block['delimiters']['begin']}\nuser: What's weather in Lyon, Rhône?\n{block['delimiters']['end']}"
        in (block["text"])
    )

    templates = check(host.client.get("/api/resources", params={"q": "dynamic"}), 200)["resources"]
    text_template = next(r for r in templates if r["name"] == "Dynamic Text Resource")
    assert (text_template["kind"], text_template["variables"]) == ("template", ["resourceId"])
    read = check(
        host.client.post(
            "/api/resources/read", json={"server_id": "everything", "uri": "demo://resource/dynamic/text/7"}
        ),
        200,
    )
    assert read["provenance"]["mime_type"] == "text/plain"
    assert "Resource 7: This is a plaintext resource" in read["text"]
    assert read["text"].endswith(read["delimiters"]["end"])
    blob = check(
        host.client.post(
            "/api/resources/read", json={"server_id": "everything", "uri": "demo://resource/dynamic/blob/7"}
        ),
        200,
    )
    assert blob["contents"][0]["kind"] == "binary"
    assert "not inlined" in blob["text"]


def test_server_everything_elicitation_answered_with_defaults_declined_cancelled_and_no_url_mode_offered(
    host: Host,
) -> None:
    add_ready_on_host(host, EVERYTHING_STDIO)

    call = Background(lambda: host.client.post(ELICIT, json={"arguments": {}}))
    card = pending_card(host)
    assert card["defaults"]["integer"] == 42
    assert card["defaults"]["untitledSingleSelectEnum"] == "Monica"
    assert card["defaults"]["titledMultipleSelectEnum"] == ["fish-1"]
    missing = host.client.post(f"/api/interactions/{card['id']}", json={"action": "accept"})
    assert missing.status_code == 422
    assert missing.json()["error"]["details"]["errors"][0]["field"] == "content.name"
    check(
        host.client.post(f"/api/interactions/{card['id']}", json={"action": "accept", "content": {"name": "Ada"}}), 200
    )
    text = text_of(check(call.result(), 200))
    assert "- Name: Ada" in text
    assert "- Favorite Integer: 42" in text
    assert "- Favorite Number: 3.14" in text

    for action, marker in (("decline", "declined"), ("cancel", "cancelled")):
        call = Background(lambda: host.client.post(ELICIT, json={"arguments": {}}))
        card = pending_card(host)
        check(host.client.post(f"/api/interactions/{card['id']}", json={"action": action}), 200)
        assert f"User {marker}" in text_of(check(call.result(), 200))

    # the host advertises form mode only, so server-everything offers no URL-mode tool.
    tools = [t["name"] for t in check(host.client.get("/api/mcp/servers/everything/tools"), 200)["tools"]]
    # The test connection advertised the same capabilities: its tool count is the live one.
    assert check(host.client.get("/api/mcp/servers/everything"), 200)["last_test"]["tool_count"] == len(tools)
    assert "trigger-elicitation-request" in tools
    assert "trigger-url-elicitation" not in tools
    states = [c["state"] for c in check(host.client.get("/api/interactions"), 200)["interactions"]]
    assert states == ["cancelled", "declined", "accepted"]


def test_a_card_left_pending_across_a_restart_of_serve_fails_its_call_and_is_still_listed(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        add_ready_on_host(host, EVERYTHING_STDIO)
        caller = Background(lambda: host.client.post(ELICIT, json={"arguments": {}}))
        card = pending_card(host)
        # Stop `serve` (SIGTERM, as a service manager does) while the card is pending.
        host.proc.send_signal(signal.SIGTERM)
        interrupted = caller.result()
        host.proc.wait(timeout=30)
    # The caller got an explicit failure, not a dropped connection and not a pretended success.
    assert interrupted.status_code == 503, interrupted.text
    error = interrupted.json()["error"]
    assert error["code"] == "MCP_CALL_INTERRUPTED"
    assert error["details"]["delivered"] is False
    assert "not delivered" in error["message"]

    with running_host(tmp_path) as host:
        after = check(host.client.get(f"/api/interactions/{card['id']}"), 200)
        assert after["state"] == "interrupted"
        assert after["retry"] == {"offered": True, "done": False, "at": None, "outcome": None}
        assert after["actions"] == ["retry"]
        late = host.client.post(f"/api/interactions/{card['id']}", json={"action": "accept", "content": {"name": "x"}})
        assert late.status_code == 409
        assert late.json()["error"]["code"] == "MCP_INTERACTION_NOT_DELIVERED"
        # The retry happens only now, because the user asks for it; it asks again, and this time we answer.
        retry = Background(lambda: host.client.post(f"/api/interactions/{card['id']}", json={"action": "retry"}))
        second = pending_card(host)
        assert second["id"] != card["id"]
        check(
            host.client.post(
                f"/api/interactions/{second['id']}", json={"action": "accept", "content": {"name": "Ada"}}
            ),
            200,
        )
        retried = check(retry.result(), 200)
        assert "- Name: Ada" in text_of(retried["result"])
        assert retried["interaction"]["retry"]["done"] is True
