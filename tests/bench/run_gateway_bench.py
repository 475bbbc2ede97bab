"""Gateway overhead benchmark (R-8.2, R-8.3): the team's harness (`../shared/bench`) against mcp-center.

Starts two of the harness's upstream servers — `up` (echo, sleep, blob) and `big` (the same plus
`--catalog` dummy tools, 1,000 by default) — and a real `mcp-center serve` on loopback with both
registered (trusted, tested, enabled; echo, sleep and blob set to `allow`, so no approval waits).
Then, with `proxy_overhead.py`: the calls, direct to `up` vs via `/mcp` (`mcp__up__echo`); and the
catalog, `tools/list` direct to `big` vs via `/mcp/big` (its 1,003 tools under their own names).
With `--peers`, the naive relay (`tests/bench/naive_relay.py`: the SDK's low-level server in front
of 4 pooled SDK sessions) is measured in the same run against the same upstreams, right after, and
then the byte relay (`tests/bench/byte_relay.py`: bytes copied between connections, nothing parsed),
the floor of any proxy on this machine: the gap between its ratios and the gateway's is our own work.
With `--profile FILE`, py-spy samples the gateway during the calls and writes the top frames to FILE.

It prints the harness's tables and summary line(s), then one line per path:
`<path>: c1_ratio_p50=… c64_tput_ratio=… cpu_ratio=… list_ratio=… idle_rss_mb=… errors=…`, where
`cpu_ratio` is the path's server CPU per call divided by the upstream's (all concurrency levels
pooled) and `list_ratio` is its `tools/list` p50 over the direct one. Figures are ratios from one
run; nothing here asserts a speed. Every process it starts is stopped by pid at the end. Not part
of the test suite: `scripts/bench` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from tests.support.loopback import NO_TLS
from tests.support.ports import free_port, wait_for_port

ADMIN = "bench-admin-token-0123456789abcdef"
GATEWAY = "bench-gateway-token-0123456789abcdef"
HARNESS_DEFAULTS = ["--concurrency", "1,16,64", "--calls", "1500", "--rounds", "3", "--duration-cap", "150"]
LIST_ONLY = ["--concurrency", "1", "--calls", "20", "--rounds", "2", "--warmup", "10", "--list-calls", "20"]
"""The catalog phase: `tools/list` of the large upstream (a few calls only, the harness always makes some)."""


def _shared_bench() -> Path:
    """`shared/bench` beside the checkout (a main checkout or a worktree under `wt/`)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "shared" / "bench" / "proxy_overhead.py").exists():
            return parent / "shared" / "bench"
    return here.parents[3] / "shared" / "bench"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _register(base: str, server_id: str, up_port: int, catalog: int, timeout_s: float = 120) -> None:
    """Register, trust, test and enable the upstream at `up_port` as `server_id` (echo/sleep/blob allowed;
    each admin request waits `timeout_s` at most)."""
    policies = {"echo": "allow", "sleep": "allow", "blob": "allow"}
    del catalog  # its dummy tools stay `ask`: listed, never called
    with httpx2.Client(
        verify=NO_TLS, base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=timeout_s
    ) as admin:
        body = {
            "id": server_id,
            "name": f"Bench upstream {server_id}",
            "transport": "streamable_http",
            "url": f"http://127.0.0.1:{up_port}/mcp",
            "tool_policies": policies,
        }
        view = admin.post("/api/mcp/servers", json=body).json()
        admin.post(f"/api/mcp/servers/{server_id}/trust", json={"digest": view["digest"]}).raise_for_status()
        tested = admin.post(f"/api/mcp/servers/{server_id}/test").json()
        if not tested.get("ok"):
            raise SystemExit(f"bench: the upstream's test failed: {tested}")
        enabled = admin.post(f"/api/mcp/servers/{server_id}/enable").json()
        if enabled["status"]["state"] != "ready":
            raise SystemExit(f"bench: the upstream did not become ready: {enabled['status']}")


def _harness(
    bench: Path,
    direct: tuple[int, int],
    via: tuple[str, int, str],
    out: Path,
    extra: list[str],
    *,
    token: bool = True,
) -> dict[str, Any] | None:
    """Run the harness: direct `(port, pid)` against via `(url, pid, tool prefix)` (with the gateway
    token unless `token` is False); its JSON, or None."""
    (up_port, up_pid), (via_url, via_pid, prefix) = direct, via
    command = [
        sys.executable,
        str(bench / "proxy_overhead.py"),
        "--direct",
        f"http://127.0.0.1:{up_port}/mcp",
        "--via",
        via_url,
        "--tool-prefix",
        prefix,
        "--direct-pid",
        str(up_pid),
        "--via-pid",
        str(via_pid),
        "--json",
        str(out),
        *extra,
    ]
    if token:
        command += ["--via-header", f"Authorization: Bearer {GATEWAY}"]
    subprocess.run(command, check=False)
    return json.loads(out.read_text()) if out.exists() else None


def ratios(result: dict[str, Any], idle_rss_mb: float | None, listing_result: dict[str, Any] | None = None) -> str:
    """The one-line figures of one path (see the module docstring)."""
    levels: dict[str, Any] = result["levels"]
    parts: list[str] = []
    first = next(iter(levels.values()))
    parts.append(f"c1_ratio_p50={first['ratio_p50']:.2f}")
    for conc, level in levels.items():
        parts.append(f"c{conc}_tput_ratio={level['throughput_ratio']:.2f}")
    via_cpu = direct_cpu = 0.0
    for level in levels.values():
        for side in ("via", "direct"):
            per_call = level[side]["server_cpu_ms_per_call"]
            if per_call is None:
                return " ".join([*parts, "cpu_ratio=-"])
        via_cpu += level["via"]["server_cpu_ms_per_call"] * level["via"]["n"]
        direct_cpu += level["direct"]["server_cpu_ms_per_call"] * level["direct"]["n"]
    parts.append(f"cpu_ratio={via_cpu / direct_cpu:.2f}" if direct_cpu else "cpu_ratio=-")
    listing = (listing_result or result).get("tools_list", {})
    if listing.get("direct", {}).get("n"):
        parts.append(f"list_ratio={listing['via']['p50_ms'] / listing['direct']['p50_ms']:.2f}")
        parts.append(f"list_tools={listing['via'].get('tools', '-')}")
    if idle_rss_mb is not None:
        parts.append(f"idle_rss_mb={idle_rss_mb:.0f}")
    errors = sum(
        level["direct"]["errors"] + level["via"]["errors"]
        for run in (result, listing_result or {"levels": {}})
        for level in run["levels"].values()
    )
    parts.append(f"errors={errors}")
    return " ".join(parts)


def _wait_initializes(url: str, deadline_s: float = 60.0) -> None:
    """Wait (bounded) until an MCP `initialize` at `url` is answered 200."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    end = time.monotonic() + deadline_s
    with httpx2.Client(verify=NO_TLS, timeout=10) as http:
        while time.monotonic() < end:
            try:
                if http.post(url, json=body, headers=headers).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
    raise SystemExit(f"bench: {url} did not answer initialize within {deadline_s:.0f} s")


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> int:
    if any(arg == "--instances" or arg.startswith("--instances=") for arg in sys.argv[1:]):
        from tests.bench.instances_bench import main as instances_main  # through the balancer

        return instances_main(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", default=str(_shared_bench()))
    parser.add_argument("--json", default="bench-result.json", help="the harness's JSON for mcp-center")
    parser.add_argument("--catalog", type=int, default=1000, help="tools of the second upstream (tools/list)")
    parser.add_argument("--peers", action="store_true", help="also measure the naive relay in this run")
    parser.add_argument("--profile", default=None, help="py-spy the gateway; write its top frames to this file")
    parser.add_argument("--host-src", default=None, help="run serve from this src/ (e.g. an older checkout)")
    args, passthrough = parser.parse_known_args()
    extra = passthrough or HARNESS_DEFAULTS
    bench = Path(args.bench_dir)
    if not (bench / "proxy_overhead.py").exists():
        print(f"the benchmark harness is not at {bench} (pass --bench-dir)", file=sys.stderr)
        return 2
    python = sys.executable
    up_port, big_port, host_port, relay_port = free_port(), free_port(), free_port(), free_port()
    started: list[subprocess.Popen[bytes]] = []
    lines: list[str] = []
    out = Path(args.json)

    def start(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        return proc

    with tempfile.TemporaryDirectory() as data:
        try:
            upstream = start([python, str(bench / "upstream_server.py"), "--port", str(up_port)])
            big = start([python, str(bench / "upstream_server.py"), "--port", str(big_port), *_extra(args.catalog)])
            env = {**os.environ, "MCP_CENTER_ADMIN_TOKEN": ADMIN, "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY}
            if args.host_src:
                env["PYTHONPATH"] = str(Path(args.host_src).resolve())
            serve = [python, "-c", "from mcp_center.cli import main; main()", "serve", "--data-dir", data]
            host = start([*serve, "--port", str(host_port), "--log-level", "warning"], env)
            for port, proc in ((up_port, upstream), (big_port, big), (host_port, host)):
                wait_for_port(port, 60, proc)
            base = f"http://127.0.0.1:{host_port}"
            bare_rss = _rss_mb(host.pid)
            _register(base, "up", up_port, 0)
            _register(base, "big", big_port, args.catalog)
            idle_rss = _rss_mb(host.pid)
            print(f"# serve RSS: {bare_rss:.0f} MB with no server, {idle_rss:.0f} MB idle with both", file=sys.stderr)
            spy = (
                start(spy_command(python, host.pid, Path(args.profile).with_suffix(".raw.txt")))
                if args.profile
                else None
            )
            calls = _harness(
                bench,
                (up_port, upstream.pid),
                (f"{base}/mcp", host.pid, "mcp__up__"),
                out,
                [*extra, "--list-calls", "0"],
            )
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
                _top_frames(Path(args.profile).with_suffix(".raw.txt"), Path(args.profile))
            listing = _harness(
                bench, (big_port, big.pid), (f"{base}/mcp/big", host.pid, ""), out.with_suffix(".list.json"), LIST_ONLY
            )
            if listing is None:  # a host without per-server endpoints (--host-src of an older checkout)
                via = (f"{base}/mcp", host.pid, "mcp__big__")
                listing = _harness(bench, (big_port, big.pid), via, out.with_suffix(".list.json"), LIST_ONLY)
            if calls is None or listing is None:
                return 1
            lines.append("mcp-center: " + ratios(calls, idle_rss, listing))
            if args.peers:
                relay_urls = (f"http://127.0.0.1:{up_port}/mcp", f"http://127.0.0.1:{big_port}/mcp")
                relay = start(
                    [python, "-m", "tests.bench.naive_relay", "--upstream", relay_urls[0], "--port", str(relay_port)]
                )
                wait_for_port(relay_port, 60, relay)
                _wait_initializes(f"http://127.0.0.1:{relay_port}/mcp")  # its pool connects in its lifespan
                relay_rss = _rss_mb(relay.pid)
                via = (f"http://127.0.0.1:{relay_port}/mcp", relay.pid, "")
                peer = _harness(
                    bench,
                    (up_port, upstream.pid),
                    via,
                    out.with_suffix(".relay.json"),
                    [*extra, "--list-calls", "0"],
                    token=False,
                )
                _stop(relay)
                relay = start(
                    [python, "-m", "tests.bench.naive_relay", "--upstream", relay_urls[1], "--port", str(relay_port)]
                )
                wait_for_port(relay_port, 60, relay)
                _wait_initializes(f"http://127.0.0.1:{relay_port}/mcp")
                via = (f"http://127.0.0.1:{relay_port}/mcp", relay.pid, "")
                peer_list = _harness(
                    bench, (big_port, big.pid), via, out.with_suffix(".relay.list.json"), LIST_ONLY, token=False
                )
                if peer is not None and peer_list is not None:
                    lines.append("naive-relay: " + ratios(peer, relay_rss, peer_list))
                _stop(relay)
                floor = _byte_relay(bench, python, start, (up_port, upstream.pid), relay_port, extra, out)
                if floor is not None:
                    lines.append("byte-relay: " + floor)
        finally:
            for proc in reversed(started):
                _stop(proc)
    for line in lines:
        print(line)
    return 0


def _byte_relay(
    bench: Path,
    python: str,
    start: Callable[[list[str]], subprocess.Popen[bytes]],
    upstream: tuple[int, int],
    port: int,
    extra: list[str],
    out: Path,
) -> str | None:
    """The floor of any proxy on this machine (`tests.bench.byte_relay`, bytes copied, nothing parsed)
    in front of the upstream `(port, pid)`: its one-line figures (no tools/list: it has no catalog)."""
    relay = start([python, "-m", "tests.bench.byte_relay", "--upstream-port", str(upstream[0]), "--port", str(port)])
    try:
        wait_for_port(port, 60, relay)
        rss = _rss_mb(relay.pid)
        via = (f"http://127.0.0.1:{port}/mcp", relay.pid, "")
        floor = _harness(
            bench, upstream, via, out.with_suffix(".bytes.json"), [*extra, "--list-calls", "0"], token=False
        )
    finally:
        _stop(relay)
    return None if floor is None else ratios(floor, rss)


def _extra(catalog: int) -> list[str]:
    return ["--extra-tools", str(catalog)]


def spy_command(python: str, pid: int, raw: Path) -> list[str]:
    """py-spy sampling `pid` at 200 Hz into `raw` (collapsed stacks) until interrupted."""
    spy = str(Path(python).parent / "py-spy")
    return [spy, "record", "--pid", str(pid), "--format", "raw", "--output", str(raw), "--rate", "200", "--nonblocking"]


def _top_frames(raw: Path, out: Path, count: int = 25) -> None:
    """Self time and total time per frame from py-spy's raw (collapsed stacks) output."""
    if not raw.exists():
        return
    own: dict[str, int] = {}
    total: dict[str, int] = {}
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        hits = int(n)
        samples += hits
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + hits
        for frame in set(frames):
            total[frame] = total.get(frame, 0) + hits
    with out.open("w") as handle:
        handle.write(f"# py-spy samples: {samples}\n# self%  total%  frame\n")
        for frame, hits in sorted(own.items(), key=lambda item: -item[1])[:count]:
            handle.write(f"{100 * hits / samples:5.1f}  {100 * total[frame] / samples:5.1f}  {frame}\n")


if __name__ == "__main__":
    sys.exit(main())
