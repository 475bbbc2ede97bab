"""`scripts/bench --instances 2`: the gateway through HAProxy in front of two instances, beside one instance (R-10.2).

In one run, on the same machine and the same upstream (`tests/servers/run_http_echo.py`):

  files-1   one `serve` on the data directory's files            (the embedded default)
  pg-1      one `serve` on PostgreSQL                             (the shared store, one instance)
  pg-2-lb   two `serve` on PostgreSQL behind `deploy/haproxy.cfg`  (round-robin)

For each, `--calls` agent `tools/call` requests of the sessionless 2026-07-28 era (one HTTP POST
each, which is what a balancer spreads) at each `--concurrency`, after a warm-up. Reported per
setup: calls/s, p50/p99 latency, CPU per call of the serve processes (user+system from
/proc, summed over instances) and of the PostgreSQL cluster (its postmaster and backends). The
summary line gives `cpu_ratio_pg_vs_files` (the per-call CPU of one instance on PostgreSQL over the
file backend: the database must stay off the hot path, target <= 1.2) and
`throughput_ratio_lb_vs_one` (two instances through the balancer over one PostgreSQL instance).
Reports, never asserts. Every process it starts is stopped by pid; traffic goes to loopback only.
Its serves are console-script processes, as a deployment's (`MCP_CENTER_TEST_FORK=0`: not the tests'
fork server, tests/support/zygote.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2

from tests.e2e.cluster import cluster_env, running_cluster, spawn_instance
from tests.support.loopback import NO_TLS
from tests.support.mcp_servers import running_echo_http
from tests.support.postgres import PgCluster
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN

CLK_TCK = os.sysconf("SC_CLK_TCK")
TOOL = "mcp__echo__echo"


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of `pids` so far (from /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def _cluster_pids(cluster: PgCluster) -> list[int]:
    """The postmaster of the test cluster and its children (the backends, the background workers)."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    children = [int(p) for p in Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()]
    return [postmaster, *children]


def _register(api_url: str, echo_url: str) -> str:
    """Register, trust, test and enable the echo server; return a gateway token."""
    with httpx2.Client(
        verify=NO_TLS, base_url=api_url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60
    ) as api:
        body = {"name": "Echo", "transport": "streamable_http", "url": echo_url, "tool_policies": {"echo": "allow"}}
        view = api.post("/api/mcp/servers", json=body).json()
        api.post(f"/api/mcp/servers/{view['id']}/trust", json={"digest": view["digest"]}).raise_for_status()
        if not api.post(f"/api/mcp/servers/{view['id']}/test").json()["ok"]:
            raise RuntimeError("the echo server did not pass its test")
        api.post(f"/api/mcp/servers/{view['id']}/enable").raise_for_status()
        token: str = api.post("/api/gateway/tokens", json={"name": "bench"}).json()["token"]
    return token


async def _load(url: str, token: str, calls: int, concurrency: int) -> tuple[float, list[float]]:
    """`calls` sessionless tool calls, `concurrency` at a time; (wall seconds, latencies in ms)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": TOOL,
    }
    latencies: list[float] = []
    left = calls
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(
        verify=NO_TLS, base_url=url, headers=headers, timeout=60, limits=limits, trust_env=False
    ) as http:

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                params = {"name": TOOL, "arguments": {"text": "x" * 64}, "_meta": meta}
                body: dict[str, Any] = {"jsonrpc": "2.0", "id": left, "method": "tools/call", "params": params}
                started = time.perf_counter()
                response = await http.post("/mcp", json=body)
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200 or b'"result"' not in response.content:
                    raise RuntimeError(f"a call failed: {response.status_code} {response.text[:200]}")

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        wall = time.perf_counter() - started
    return wall, latencies


def _measure(
    name: str, url: str, token: str, serve_pids: list[int], db_pids: list[int], args: argparse.Namespace
) -> list[dict[str, Any]]:
    anyio.run(_load, url, token, args.warmup, 4)
    os.environ["MCP_CENTER_TEST_FORK"] = "0"  # see the module doc
    rows: list[dict[str, Any]] = []
    for concurrency in args.concurrency:
        cpu_before, db_before = _cpu_s(serve_pids), _cpu_s(db_pids)
        wall, latencies = anyio.run(_load, url, token, args.calls, concurrency)
        cpu, db = _cpu_s(serve_pids) - cpu_before, _cpu_s(db_pids) - db_before
        latencies.sort()
        row = {
            "setup": name,
            "concurrency": concurrency,
            "calls": len(latencies),
            "calls_per_s": round(len(latencies) / wall, 1),
            "p50_ms": round(statistics.median(latencies), 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2),
            "serve_cpu_ms_per_call": round(cpu * 1000 / len(latencies), 3),
            "db_cpu_ms_per_call": round(db * 1000 / len(latencies), 3) if db_pids else None,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


@contextmanager
def _one(root: Path, echo_url: str, database_url: str | None) -> Generator[tuple[str, str, list[int]]]:
    env = cluster_env()
    root.mkdir(parents=True, exist_ok=True)
    instance = spawn_instance("files" if database_url is None else "pg", root, env, database_url)
    try:
        token = _register(instance.url, echo_url)
        _wait_ready(instance.url)
        yield instance.url, token, [instance.proc.pid]
    finally:
        stop_process(instance.proc)


def _wait_ready(url: str) -> None:
    with httpx2.Client(
        verify=NO_TLS, base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60
    ) as api:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            board = api.get("/api/instances").json()["instances"]
            if board and all(i["servers"].get("echo", {}).get("state") == "ready" for i in board):
                return
            time.sleep(0.1)
    raise TimeoutError("the echo server did not become ready on every instance")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench --instances 2", description=__doc__)
    parser.add_argument("--instances", type=int, default=2, help="only 2 is supported")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--concurrency", type=lambda v: [int(x) for x in v.split(",")], default=[1, 16])
    parser.add_argument("--json", default="bench-instances.json")
    args = parser.parse_args(argv)
    if args.instances != 2:
        parser.error("--instances 2 is what the balancer configuration (deploy/haproxy.cfg) describes")
    os.environ["MCP_CENTER_TEST_FORK"] = "0"  # see the module doc
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-center-bench-")))
        pg = PgCluster()
        stack.callback(pg.close)
        pg.start()
        echo_url = stack.enter_context(running_echo_http())
        with _one(root / "files", echo_url, None) as (url, token, pids):
            rows += _measure("files-1", url, token, pids, [], args)
        database = pg.database()
        with _one(root / "pg1", echo_url, database) as (url, token, pids):
            rows += _measure("pg-1", url, token, pids, _cluster_pids(pg), args)
        database = pg.database()
        (root / "pg2").mkdir()
        with running_cluster(root / "pg2", database) as cluster:
            token = _register(cluster.instances["a"].url, echo_url)
            _wait_ready(cluster.instances["a"].url)
            pids = [i.proc.pid for i in cluster.instances.values()]
            rows += _measure("pg-2-lb", cluster.lb_url, token, pids, _cluster_pids(pg), args)
    summary: dict[str, Any] = {"rows": rows}
    for concurrency in args.concurrency:
        by = {r["setup"]: r for r in rows if r["concurrency"] == concurrency}
        summary[f"c{concurrency}"] = {
            "cpu_ratio_pg_vs_files": round(
                by["pg-1"]["serve_cpu_ms_per_call"] / by["files-1"]["serve_cpu_ms_per_call"], 3
            ),
            "throughput_ratio_lb_vs_one": round(by["pg-2-lb"]["calls_per_s"] / by["pg-1"]["calls_per_s"], 3),
            "db_cpu_ms_per_call_pg_1": by["pg-1"]["db_cpu_ms_per_call"],
        }
    Path(args.json).write_text(json.dumps(summary, indent=2))
    line = " ".join(f"c{c}:{k}={v}" for c in args.concurrency for k, v in summary[f"c{c}"].items())
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
