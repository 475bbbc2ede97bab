"""Several real `mcp-center serve` instances on one PostgreSQL database behind Debian's HAProxy (R-10.2).

`running_cluster` starts the instances together (each with its own data directory and port, one
shared key and admin token), then HAProxy with the shipped `deploy/haproxy.cfg` — the very file the README
tells users to run — and waits until the balancer has reached every instance. Also: a small
gateway client that speaks both protocol eras over plain HTTP and notes which instance answered.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.support.loopback import NO_TLS
from tests.support.ports import free_port, wait_for_port
from tests.support.processes import Process, stop_process
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, serve_env, wait_until_serving
from tests.support.zygote import fork_enabled, zygote

__all__ = [
    "Cluster",
    "GatewayClient",
    "Instance",
    "running_cluster",
    "spawn_instance",
    "start_instance",
    "wait_serving",
]

REPO = Path(__file__).parents[2]
HAPROXY_CFG = REPO / "deploy" / "haproxy.cfg"
INSTANCE_HEADER = "x-mcp-center-instance"
ACCEPT = "application/json, text/event-stream"


@dataclass
class Instance:
    """One `serve` of the cluster."""

    name: str
    url: str
    data_dir: Path
    log_path: Path
    proc: Process

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class Cluster:
    """The instances, the balancer in front of them, and what they share."""

    lb_url: str
    instances: dict[str, Instance]
    database_url: str
    env: dict[str, str]
    haproxy: subprocess.Popen[bytes]
    extra: dict[str, Any] = field(default_factory=dict[str, Any])

    def api(self, base: str | None = None) -> httpx2.Client:
        """An admin API client that keeps no cookie (the balancer's instance cookie would pin it):
        every request through the balancer is balanced anew."""
        client = httpx2.Client(
            verify=NO_TLS,
            base_url=base or self.lb_url,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=60,
            trust_env=False,
        )

        def forget_cookies(_response: httpx2.Response) -> None:
            client.cookies.clear()

        client.event_hooks["response"] = [forget_cookies]
        return client


def start_instance(
    name: str, root: Path, env: dict[str, str], database_url: str | None, port: int | None = None
) -> Instance:
    """Start `mcp-center serve --database-url ... --instance-name NAME` on a free port without waiting
    for it (`database_url` None: on its data directory's files); `wait_serving` waits. Instances
    started one after the other this way start together, as a deployment's do (R-10.2).

    The serve is forked by this process's fork server as `spawn_serve`'s are (tests/support/zygote.py:
    ~0.2 s of CPU instead of ~2.5 s importing the host; issue 16), unless `MCP_CENTER_TEST_FORK=0` (as
    the benchmark sets): then it is the console script in a new interpreter. What the tests here check
    (the instances' shared store, the balancer, kill -9 of one) is the same either way."""
    port = port or free_port()
    data_dir = root / f"data-{name}"
    log_path = root / f"serve-{name}.log"
    argv = [
        str(VENV_BIN / "mcp-center"),
        "serve",
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
        *(["--database-url", database_url] if database_url else []),
        "--instance-name",
        name,
    ]
    with log_path.open("ab") as log:
        if fork_enabled():
            proc: Process = zygote().spawn(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        else:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    return Instance(name, f"http://127.0.0.1:{port}", data_dir, log_path, proc)


def wait_serving(instance: Instance, timeout_s: float = 60.0) -> None:
    """Until `instance` serves (its `serve.json` names it, `wait_until_serving`).

    Raises:
        RuntimeError: it exited first. TimeoutError: not serving within `timeout_s` seconds.
    """
    wait_until_serving(instance.data_dir, timeout_s, instance.proc)


def spawn_instance(
    name: str, root: Path, env: dict[str, str], database_url: str | None, port: int | None = None
) -> Instance:
    """`start_instance`, then wait until it serves (stopped again if it does not)."""
    instance = start_instance(name, root, env, database_url, port)
    try:
        wait_serving(instance)
    except BaseException:
        stop_process(instance.proc)
        raise
    return instance


def cluster_env() -> dict[str, str]:
    """`serve_env()` plus one secret key for every instance (they share the ciphertexts)."""
    key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii")
    return {**serve_env(), "MCP_CENTER_SECRET_KEY": key}


@contextmanager
def running_cluster(root: Path, database_url: str, names: tuple[str, ...] = ("a", "b")) -> Generator[Cluster]:
    """Two `serve` instances on `database_url` behind HAProxy (`deploy/haproxy.cfg`); all stopped at the end."""
    haproxy_bin = shutil.which("haproxy")
    if haproxy_bin is None:
        raise RuntimeError(
            "haproxy is missing: install Debian's haproxy ('apt-get install -y haproxy', as .ci/run does)"
        )
    env = cluster_env()
    with ExitStack() as stack:
        instances: dict[str, Instance] = {}
        for name in names:  # all start at once (each imports the host for a second or two)
            instance = start_instance(name, root, env, database_url)
            stack.callback(stop_process, instance.proc)
            instances[name] = instance
        for instance in instances.values():
            wait_serving(instance)
        lb_port = free_port()
        lb_env = {
            **os.environ,
            "MCP_CENTER_LB_BIND": f"127.0.0.1:{lb_port}",
            "MCP_CENTER_INSTANCE_A": instances[names[0]].url.removeprefix("http://"),
            "MCP_CENTER_INSTANCE_B": instances[names[1]].url.removeprefix("http://"),
        }
        lb_log = (root / "haproxy.log").open("ab")
        stack.callback(lb_log.close)
        haproxy = subprocess.Popen(
            [haproxy_bin, "-db", "-f", str(HAPROXY_CFG)], env=lb_env, stdout=lb_log, stderr=lb_log
        )
        stack.callback(stop_process, haproxy, 10)
        wait_for_port(lb_port, 20, haproxy)
        cluster = Cluster(f"http://127.0.0.1:{lb_port}", instances, database_url, env, haproxy)
        _wait_balanced(cluster)
        yield cluster


def _wait_balanced(cluster: Cluster, timeout_s: float = 20.0) -> None:
    """Until requests through the balancer have reached every instance (its health checks passed)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    with cluster.api() as api:
        while seen != set(cluster.instances):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the balancer reached only {sorted(seen)} within {timeout_s} s")
            response = api.get("/healthz")
            if response.status_code == 200:
                seen.add(response.headers.get(INSTANCE_HEADER, "?"))
            time.sleep(0.05)


def rpc_body(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a gateway response: a JSON body, or the last `data:` of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        messages = [json.loads(d) for d in data if d]
        return next(m for m in reversed(messages) if "result" in m or "error" in m)
    body: dict[str, Any] = response.json()
    return body


class GatewayClient:
    """An agent at `<base>/mcp` speaking one protocol era over plain HTTP, noting which instance answered.

    Args:
        base: The balancer's (or an instance's) base URL.
        token: A gateway token.
        era: `2025-11-25` (a session: initialize first, re-initialize after a 404) or `2026-07-28`
            (sessionless: every request stands alone).
    """

    def __init__(self, base: str, token: str, era: str) -> None:
        self.era = era
        self.http = httpx2.Client(verify=NO_TLS, base_url=base, timeout=60, trust_env=False)
        self.token = token
        self.session_id: str | None = None
        self.answered_by: list[str] = []
        self.reinitialized = 0
        self._id = 0

    def close(self) -> None:
        self.http.close()

    def _headers(self, method: str, name: str | None = None) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Authorization": f"Bearer {self.token}", "Mcp-Protocol-Version": self.era}
        if self.era == "2026-07-28":
            headers["Mcp-Method"] = method
            if name is not None:
                headers["Mcp-Name"] = name
        elif self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _post(self, method: str, params: dict[str, Any], name: str | None = None) -> httpx2.Response:
        self._id += 1
        if self.era == "2026-07-28":
            params = {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "0"},
                },
            }
        body = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        response = self.http.post("/mcp", json=body, headers=self._headers(method, name))
        self.answered_by.append(response.headers.get(INSTANCE_HEADER, "?"))
        return response

    def initialize(self) -> None:
        """Open a 2025-11-25 session (initialize + initialized)."""
        self.session_id = None
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}
        response = self._post("initialize", params)
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        notified = self.http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=self._headers("notifications/initialized"),
        )
        assert notified.status_code == 202, notified.text

    def request(self, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        """One request; a session that the answering instance does not know (404) is opened again, once."""
        if self.era == "2025-11-25" and self.session_id is None:
            self.initialize()
        response = self._post(method, params, name)
        if response.status_code == 404 and self.era == "2025-11-25":  # the spec: re-initialize
            self.reinitialized += 1
            self.initialize()
            response = self._post(method, params, name)
        assert response.status_code == 200, (response.status_code, response.text)
        return rpc_body(response)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`tools/call`; the JSON-RPC message (with `result` or `error`)."""
        return self.request("tools/call", {"name": tool, "arguments": arguments}, name=tool)
