"""Gateway overhead benchmark (R-8.2): the team's harness (`../shared/bench`) against mcp-center.

Starts the harness's upstream server, a real `mcp-center serve` on loopback with that upstream
registered as server `up` (trusted, tested, enabled, tools set to `allow` so no approval waits),
then runs `proxy_overhead.py` direct vs via `/mcp` and prints its summary line. Every process it
starts is stopped by pid at the end. Not part of the test suite: `scripts/bench` runs it.
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
from pathlib import Path

import httpx2

from tests.e2e.conftest import free_port, wait_for_port

ADMIN = "bench-admin-token-0123456789abcdef"
GATEWAY = "bench-gateway-token-0123456789abcdef"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def main() -> int:
    if any(arg == "--instances" or arg.startswith("--instances=") for arg in sys.argv[1:]):
        from tests.bench.instances_bench import main as instances_main  # through the balancer

        return instances_main(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench-dir", default=str(Path(__file__).resolve().parents[3] / "shared" / "bench"))
    parser.add_argument("--json", default="bench-result.json")
    args, passthrough = parser.parse_known_args()
    bench = Path(args.bench_dir)
    if not (bench / "proxy_overhead.py").exists():
        print(f"the benchmark harness is not at {bench} (pass --bench-dir)", file=sys.stderr)
        return 2
    python = sys.executable
    up_port, host_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data:
        upstream = subprocess.Popen(
            [python, str(bench / "upstream_server.py"), "--port", str(up_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        env = {**os.environ, "MCP_CENTER_ADMIN_TOKEN": ADMIN, "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY}
        host = subprocess.Popen(
            [
                str(Path(python).parent / "mcp-center"),
                "serve",
                "--data-dir",
                data,
                "--port",
                str(host_port),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(up_port, 30, upstream)
            wait_for_port(host_port, 30, host)
            base = f"http://127.0.0.1:{host_port}"
            with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as admin:
                body = {
                    "id": "up",
                    "name": "Bench upstream",
                    "transport": "streamable_http",
                    "url": f"http://127.0.0.1:{up_port}/mcp",
                    "tool_policies": {"echo": "allow", "sleep": "allow", "blob": "allow"},
                }
                view = admin.post("/api/mcp/servers", json=body).json()
                admin.post("/api/mcp/servers/up/trust", json={"digest": view["digest"]}).raise_for_status()
                assert admin.post("/api/mcp/servers/up/test").json()["ok"]
                assert admin.post("/api/mcp/servers/up/enable").json()["status"]["state"] == "ready"
            time.sleep(0.5)
            command = [
                python,
                str(bench / "proxy_overhead.py"),
                "--direct",
                f"http://127.0.0.1:{up_port}/mcp",
                "--via",
                f"{base}/mcp",
                "--tool-prefix",
                "mcp__up__",
                "--via-header",
                f"Authorization: Bearer {GATEWAY}",
                "--direct-pid",
                str(upstream.pid),
                "--via-pid",
                str(host.pid),
                "--json",
                args.json,
                *passthrough,
            ]
            result = subprocess.run(command, check=False)
            if Path(args.json).exists():
                summary = json.loads(Path(args.json).read_text())
                print(json.dumps(summary.get("summary", {}), indent=2)[:2000])
            return result.returncode
        finally:
            _stop(host)
            _stop(upstream)


if __name__ == "__main__":
    sys.exit(main())
