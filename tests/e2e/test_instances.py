"""Two real `serve` instances on one PostgreSQL 15 database behind Debian's HAProxy, round-robin (R-10.1, R-10.2).

One cluster per module (the instances, the balancer from `deploy/haproxy.cfg`, a fresh database,
an echo server both instances connect to); the last test kills an instance with SIGKILL. Times of
propagation are required (within 1 s), so they are bounded waits; the measured times go to stderr.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.cluster import ACCEPT, INSTANCE_HEADER, Cluster, GatewayClient, running_cluster
from tests.support.api import create_gateway_token, register_ready
from tests.support.mcp_servers import running_echo_http
from tests.support.postgres import PgCluster
from tests.support.waiting import eventually_sync

ECHO = "mcp__echo__echo"
ADD = "mcp__echo__add"
ERAS = ("2025-11-25", "2026-07-28")


def _text(message: dict[str, Any]) -> str:
    assert "result" in message, message
    content = message["result"]["content"]
    return "".join(c.get("text", "") for c in content)


def _ready_everywhere(cluster: Cluster, server_id: str) -> None:
    def ready() -> bool:
        with cluster.api() as api:
            board = api.get("/api/instances").json()
        states = {i["name"]: i["servers"].get(server_id, {}).get("state") for i in board["instances"]}
        return states == dict.fromkeys(cluster.instances, "ready")

    eventually_sync(ready, timeout_s=30)


def _confirm_again(api: httpx2.Client, view: dict[str, Any]) -> None:
    """Trust, test and enable a server again where its view says it needs it."""
    server_id = view["id"]
    if "trust" in view["needs"]:
        assert api.post(f"/api/mcp/servers/{server_id}/trust", json={"digest": view["digest"]}).is_success
    if "test" in view["needs"]:
        assert api.post(f"/api/mcp/servers/{server_id}/test").json()["ok"]
    if view["needs"]:
        assert api.post(f"/api/mcp/servers/{server_id}/enable").is_success


@pytest.fixture(scope="module")
def cluster(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("instances")
    database_url = pg_cluster.database()
    try:
        with running_echo_http() as echo_url, running_cluster(root, database_url) as running:
            with running.api() as api:
                body = {
                    "name": "Echo",
                    "transport": "streamable_http",
                    "url": echo_url,
                    "tool_policies": {"echo": "allow", "add": "ask"},
                }
                view = register_ready(api, body)
                token = create_gateway_token(api, "agents")
            running.extra.update(token=token["token"], token_id=token["id"], server_id=view["id"])
            _ready_everywhere(running, view["id"])
            yield running
    finally:
        pg_cluster.drop(database_url)


@pytest.mark.parametrize("era", ERAS)
def test_200_gateway_calls_through_the_balancer_are_all_correct(cluster: Cluster, era: str) -> None:
    """2026-07-28 requests go round-robin (every instance answers); 2025-11-25 sessions stay on the
    instance that opened them (four sessions, fifty calls each)."""
    answered: list[str] = []
    for session in range(4):
        agent = GatewayClient(cluster.lb_url, cluster.extra["token"], era)
        try:
            for i in range(50):
                text = f"{era}-{session}-{i}"
                assert _text(agent.call(ECHO, {"text": text})) == text
            answered += agent.answered_by
            if era == "2025-11-25":
                assert len(set(agent.answered_by)) == 1, agent.answered_by  # one session, one instance
        finally:
            agent.close()
    assert len(answered) >= 200
    assert set(answered) == set(cluster.instances), f"answered by {sorted(set(answered))}"


def test_a_call_waiting_for_approval_on_one_instance_is_approved_on_the_other_and_completes(cluster: Cluster) -> None:
    agent = GatewayClient(cluster.lb_url, cluster.extra["token"], "2025-11-25")
    outcome: list[dict[str, Any]] = []
    try:
        agent.initialize()
        waiting_on = agent.answered_by[-1]
        other = next(i for name, i in cluster.instances.items() if name != waiting_on)
        caller = threading.Thread(target=lambda: outcome.append(agent.call(ADD, {"a": 2, "b": 40})), daemon=True)
        caller.start()
        with cluster.api(other.url) as api:
            pending = eventually_sync(lambda: api.get("/api/approvals").json()["approvals"], timeout_s=10)
            decided = api.post(f"/api/approvals/{pending[0]['id']}", json={"decision": "approve"})
            assert decided.status_code == 200, decided.text
            assert decided.headers[INSTANCE_HEADER] == other.name
        caller.join(timeout=20)
        assert not caller.is_alive()
    finally:
        agent.close()
    assert _text(outcome[0]) == "42"
    assert agent.answered_by[-1] == waiting_on  # the call itself stayed on its session's instance


def test_an_agent_that_hangs_up_behind_the_balancer_cancels_its_pending_approval(cluster: Cluster) -> None:
    """A caller that goes away while its `ask` call waits for a human ends the approval (cancelled),
    through the balancer as when it calls an instance directly: without `option abortonclose`
    HAProxy kept the instance's side of the request open, the approval stayed pending for its
    10 minutes, and approving it later still ran the tool for nobody (found by a new-user trial;
    R-5.3, R-10.2)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": ADD,
            "arguments": {"a": 1, "b": 2},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "0"},
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "Authorization": f"Bearer {cluster.extra['token']}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": ADD,
    }
    address = cluster.lb_url.removeprefix("http://")
    agent = http.client.HTTPConnection(address, timeout=30)
    with cluster.api() as api:
        before = {a["id"] for a in api.get("/api/approvals", params={"include_closed": "true"}).json()["approvals"]}
        try:
            agent.request("POST", "/mcp", body=json.dumps(body), headers=headers)
            pending = eventually_sync(
                lambda: [a for a in api.get("/api/approvals").json()["approvals"] if a["id"] not in before],
                timeout_s=10,
            )
        finally:
            agent.close()  # the agent goes away without reading an answer

        def closed() -> list[dict[str, Any]]:
            everything = api.get("/api/approvals", params={"include_closed": "true"}).json()["approvals"]
            return [a for a in everything if a["id"] == pending[0]["id"] and a["state"] != "pending"]

        assert [a["state"] for a in eventually_sync(closed, timeout_s=15)] == ["cancelled"]
        late = api.post(f"/api/approvals/{pending[0]['id']}", json={"decision": "approve"})
        assert late.status_code == 409, late.text  # nothing left to approve: the tool never runs


def test_a_configuration_change_on_one_instance_reaches_the_other_s_catalog_within_a_second(cluster: Cluster) -> None:
    server_id = cluster.extra["server_id"]
    a, b = cluster.instances["a"], cluster.instances["b"]
    agent = GatewayClient(b.url, cluster.extra["token"], "2026-07-28")

    def listed() -> set[str]:
        return {t["name"] for t in agent.request("tools/list", {})["result"]["tools"]}

    try:
        assert ADD in listed()
        with cluster.api(a.url) as api:
            version = api.get(f"/api/mcp/servers/{server_id}").json()["version"]
            started = time.monotonic()
            changed = api.patch(f"/api/mcp/servers/{server_id}", json={"version": version, "disabled_tools": ["add"]})
            assert changed.status_code == 200, changed.text
            eventually_sync(lambda: ADD not in listed(), timeout_s=1.0, interval_s=0.01)
            took = time.monotonic() - started
            restored = api.patch(
                f"/api/mcp/servers/{server_id}", json={"version": changed.json()["version"], "disabled_tools": []}
            )
            assert restored.status_code == 200, restored.text
            _confirm_again(api, restored.json())  # enabling a tool is high-risk
        _ready_everywhere(cluster, server_id)
        eventually_sync(lambda: ADD in listed(), timeout_s=5.0, interval_s=0.01)
    finally:
        agent.close()
    sys.stderr.write(f"configuration change seen by the other instance's catalog after {took * 1000:.0f} ms\n")


def test_a_stale_version_is_refused_by_the_other_instance(cluster: Cluster) -> None:
    """Optimistic versions (409) hold across instances: both read version N, the second writer loses."""
    server_id = cluster.extra["server_id"]
    a, b = cluster.instances["a"], cluster.instances["b"]
    with cluster.api(a.url) as on_a, cluster.api(b.url) as on_b:
        version = on_a.get(f"/api/mcp/servers/{server_id}").json()["version"]
        first = on_a.patch(f"/api/mcp/servers/{server_id}", json={"version": version, "name": "Echo A"})
        assert first.status_code == 200, first.text
        second = on_b.patch(f"/api/mcp/servers/{server_id}", json={"version": version, "name": "Echo B"})
        assert second.status_code == 409, second.text
        assert second.json()["error"]["code"] == "MCP_SERVER_VERSION_CONFLICT"
        assert on_b.get(f"/api/mcp/servers/{server_id}").json()["name"] == "Echo A"


def test_a_token_revoked_on_one_instance_is_refused_by_the_other_within_a_second(cluster: Cluster) -> None:
    a, b = cluster.instances["a"], cluster.instances["b"]
    with cluster.api(a.url) as api:
        created = api.post("/api/gateway/tokens", json={"name": "doomed"}).json()
        agent = GatewayClient(b.url, created["token"], "2026-07-28")
        try:

            def status() -> int:
                return agent._post("tools/list", {}).status_code  # pyright: ignore[reportPrivateUsage]

            # Created on a, the token is known to b once b's store has seen the change (a 401 until
            # then: `agent.call` asserts 200, so it cannot be the probe).
            eventually_sync(lambda: status() == 200)
            assert _text(agent.call(ECHO, {"text": "before"})) == "before"
            started = time.monotonic()
            assert api.delete(f"/api/gateway/tokens/{created['id']}").status_code == 204
            eventually_sync(lambda: status() == 401, timeout_s=1.0, interval_s=0.01)
            took = time.monotonic() - started
        finally:
            agent.close()
    sys.stderr.write(f"revoked token refused by the other instance after {took * 1000:.0f} ms\n")


def test_every_instance_is_listed_with_its_state_of_the_server(cluster: Cluster) -> None:
    with cluster.api() as api:
        board = api.get("/api/instances")
    assert board.status_code == 200
    names = [i["name"] for i in board.json()["instances"]]
    assert sorted(names) == sorted(cluster.instances)
    answered = board.headers[INSTANCE_HEADER]
    assert [i["here"] for i in board.json()["instances"]].count(True) == 1
    assert next(i for i in board.json()["instances"] if i["here"])["name"] == answered


def test_an_import_previewed_on_one_instance_is_applied_on_the_other(cluster: Cluster) -> None:
    """R-1.8, R-10.2: preview and apply without a cookie are balanced apart; the sealed token is
    applied by whichever instance gets it (four rounds: round-robin sends some across)."""
    crossed = 0
    with cluster.api() as api:
        for i in range(4):
            content = json.dumps({"mcpServers": {f"imp{i}": {"command": "uvx", "args": ["mcp-server-time"]}}})
            preview = api.post("/api/mcp/import/preview", json={"content": content})
            assert preview.status_code == 200, preview.text
            body = {"token": preview.json()["token"], "digest": preview.json()["digest"], "content": content}
            applied = api.post("/api/mcp/import/apply", json={**body, "values": {}})
            assert applied.status_code == 201, applied.text
            crossed += preview.headers[INSTANCE_HEADER] != applied.headers[INSTANCE_HEADER]
            for server in applied.json()["servers"]:
                assert api.delete(f"/api/mcp/servers/{server['id']}").is_success
    assert crossed >= 1, "every apply reached the instance of its preview: nothing was checked"


def test_after_kill_9_of_one_instance_the_agents_continue_through_the_other(cluster: Cluster, tmp_path: Path) -> None:
    """Sessionless agents at once; a session on the dead instance after its 404 and a new initialize."""
    del tmp_path
    sessionless = GatewayClient(cluster.lb_url, cluster.extra["token"], "2026-07-28")
    sessions = [GatewayClient(cluster.lb_url, cluster.extra["token"], "2025-11-25") for _ in range(2)]
    try:
        for agent in sessions:
            assert _text(agent.call(ECHO, {"text": "warm"})) == "warm"
        homes = [agent.answered_by[-1] for agent in sessions]
        victim = cluster.instances[homes[0]]  # at least one session lives on the instance that dies
        survivor = next(i for name, i in cluster.instances.items() if name != victim.name)
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(timeout=10)
        for i in range(20):
            assert _text(sessionless.call(ECHO, {"text": f"after-{i}"})) == f"after-{i}"
            for agent in sessions:
                assert _text(agent.call(ECHO, {"text": f"s-{i}"})) == f"s-{i}"
        assert set(sessionless.answered_by[-20:]) == {survivor.name}
        for agent in sessions:
            assert agent.answered_by[-1] == survivor.name
        # Exactly the sessions that lived on the victim met the spec's 404 and opened a new session.
        assert [agent.reinitialized for agent in sessions] == [int(home == victim.name) for home in homes]
    finally:
        sessionless.close()
        for agent in sessions:
            agent.close()
