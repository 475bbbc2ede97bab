"""An instance killed in the middle of a request behind the shipped balancer (R-10.2).

Its own cluster (two `serve` instances on one PostgreSQL 15 database behind HAProxy with
`deploy/haproxy.cfg`), because the test kills an instance. The balancer may re-send a request only
when it never reached an instance (the connection was refused): one that may have started a tool
must come back to the client as an error (502), never run again on the other instance.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.e2e.cluster import Cluster, GatewayClient, running_cluster
from tests.support.api import create_gateway_token, register_ready
from tests.support.mcp_servers import running_echo_http
from tests.support.postgres import PgCluster
from tests.support.waiting import eventually_sync

PAY = "mcp__ledger__pay"


@pytest.fixture(scope="module")
def cluster(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("failover")
    database_url = pg_cluster.database()
    try:
        with (
            running_echo_http("tests.servers.run_ledger_http") as ledger_url,
            running_cluster(root, database_url) as running,
        ):
            with running.api() as api:
                policies = {"pay": "allow", "ledger": "allow", "session": "allow"}
                body = {"name": "Ledger", "transport": "streamable_http", "url": ledger_url, "tool_policies": policies}
                register_ready(api, body)
                token = create_gateway_token(api, "agents")
            running.extra.update(token=token["token"])
            yield running
    finally:
        pg_cluster.drop(database_url)


def _text(message: dict[str, Any]) -> str:
    assert "result" in message, message
    return "".join(c.get("text", "") for c in message["result"]["content"])


def test_a_call_whose_instance_is_killed_is_answered_502_and_never_run_again(cluster: Cluster) -> None:
    """The instance running `pay` (one ledger line, then 20 s of work) gets SIGKILL: the client's
    request ends with 502 from the balancer, and the ledger still has one line (R-10.2)."""
    token = cluster.extra["token"]
    sessions: dict[str, str] = {}  # the ledger server's session id of each instance -> its name
    for name, instance in cluster.instances.items():
        direct = GatewayClient(instance.url, token, "2026-07-28")
        try:
            sessions[_text(direct.call("mcp__ledger__session", {}))] = name
        finally:
            direct.close()
    assert len(sessions) == 2, sessions
    agent = GatewayClient(cluster.lb_url, token, "2026-07-28")
    answers: list[httpx2.Response] = []

    def pay() -> None:  # the raw response: `call` asserts a 200
        params = {"name": PAY, "arguments": {"note": "invoice-42"}}
        answers.append(agent._post("tools/call", params, PAY))  # pyright: ignore[reportPrivateUsage]

    caller = threading.Thread(target=pay)
    survivor_name = next(iter(cluster.instances))
    reader = GatewayClient(cluster.instances[survivor_name].url, token, "2026-07-28")

    def ledger() -> list[dict[str, str]]:
        lines: list[dict[str, str]] = json.loads(_text(reader.call("mcp__ledger__ledger", {})))
        return lines

    try:
        caller.start()
        eventually_sync(lambda: len(ledger()) == 1, timeout_s=30)
        victim = cluster.instances[sessions[ledger()[0]["session"]]]
        survivor = next(i for i in cluster.instances.values() if i is not victim)
        reader.close()
        reader = GatewayClient(survivor.url, token, "2026-07-28")
        os.kill(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(timeout=10)
        caller.join(timeout=15)  # the tool works 20 s: an answer before means no second run finished it
        assert [line["note"] for line in ledger()] == ["invoice-42"], "re-sent to the other instance: paid twice"
        assert not caller.is_alive(), "no answer within 15 s"
        assert answers[0].status_code in (502, 503), (answers[0].status_code, answers[0].text[:300])
        # The survivor goes on answering through the balancer.
        assert len(json.loads(_text(agent.call("mcp__ledger__ledger", {})))) == 1
        assert agent.answered_by[-1] == survivor.name
    finally:
        caller.join(timeout=30)
        agent.close()
        reader.close()
