"""Soak test (issue 3): many enable/disable cycles of a stdio server leave zero child processes
and flat memory. Not part of the default test run; `scripts/soak` runs it.

Prints one line per checkpoint and a final `soak:` summary line; exits 1 if a child process is
left or the resident memory grew by more than `--max-growth-mib` after the warm-up.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcp_center.config import Settings
from mcp_center.service import McpCenter

TINY = str(Path(__file__).parent / "tiny_stdio.py")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children() -> list[int]:
    pids: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


async def run(cycles: int, max_seconds: float, max_growth_mib: float) -> int:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings.load(data_dir=data_dir, environ={})
        async with McpCenter.open(settings, connect=False) as center:
            view = (
                await center.create_server(
                    {"name": "Tiny", "transport": "stdio", "command": sys.executable, "args": [TINY]}
                )
            ).to_dict()
            server_id = view["id"]
            await center.trust(server_id, view["digest"])
            assert (await center.test(server_id)).ok
            started = time.monotonic()
            warm_rss = 0.0
            done = 0
            for n in range(1, cycles + 1):
                enabled = (await center.enable(server_id)).to_dict()
                assert enabled["status"]["state"] == "ready", enabled["status"]
                await center.disable(server_id)
                done = n
                if n == min(100, cycles):
                    gc.collect()
                    warm_rss = rss_mib()
                if n % 100 == 0:
                    gc.collect()
                    so_far = time.monotonic() - started
                    print(f"cycle {n}: rss {rss_mib():.1f} MiB, children {len(children())}, {so_far:.1f} s", flush=True)
                if time.monotonic() - started > max_seconds:
                    print(f"stopping at the time cap after {n} cycles", flush=True)
                    break
            elapsed = time.monotonic() - started
        gc.collect()
        left = children()
        end_rss = rss_mib()
        growth = end_rss - warm_rss
        print(
            f"soak: cycles={done} seconds={elapsed:.1f} per_cycle_ms={elapsed / max(done, 1) * 1000:.1f} "
            f"rss_after_warmup_mib={warm_rss:.1f} rss_end_mib={end_rss:.1f} growth_mib={growth:.1f} "
            f"children_left={len(left)}",
            flush=True,
        )
        return 0 if not left and growth <= max_growth_mib else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--max-growth-mib", type=float, default=20.0)
    args = parser.parse_args()
    sys.exit(anyio.run(run, args.cycles, args.max_seconds, args.max_growth_mib))


if __name__ == "__main__":
    main()
