"""What the sandbox costs a stdio server (R-11.1). Not a test: it reports, never asserts.

    .venv/bin/python -m tests.bench.sandbox_timing [--rounds N]

For the escape server (`tests/servers/escape_stdio.py`, standard library only, run by the system
Python) it times, unconfined and sandboxed: spawn + initialize + tools/list (what `test` does), one
tool call on the open session, and the close. It prints medians and the sandboxed/unconfined ratio.
The first sandboxed spawn of a process also pays the host probe (a trial sandbox), reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client import Client

from mcp_center.config import SandboxPolicy
from mcp_center.transports import StdioTransport, child_environment
from mcp_center.transports.sandbox import SandboxSpec, sandbox_environment, sandbox_support
from tests.support.sandbox import escape_command


async def one_round(root: Path, sandboxed: bool) -> tuple[float, float, float]:
    argv, paths = escape_command()
    policy = SandboxPolicy(paths=paths)
    spec = SandboxSpec("bench", policy, root / "sandbox" / "bench", hidden=(str(root),)) if sandboxed else None
    env = sandbox_environment(child_environment({}), {}, policy) if sandboxed else child_environment({})
    transport = StdioTransport(argv, env=env, sandbox=spec)
    started = time.perf_counter()
    client = Client(transport, mode="legacy", cache=None)
    async with client:
        await client.list_tools()
        ready = time.perf_counter()
        await client.call_tool("echo", {"text": "x"})
        called = time.perf_counter()
    closed = time.perf_counter()
    return ready - started, called - ready, closed - called


async def main(rounds: int) -> None:
    probe_started = time.perf_counter()
    support = sandbox_support(refresh=True)
    probe_s = time.perf_counter() - probe_started
    print(f"host probe (trial sandbox, once per process): {probe_s * 1000:.1f} ms; mode {support.mode}")
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
        for _ in range(rounds):
            for sandboxed in (False, True):  # interleaved, so load changes hit both alike
                results[sandboxed].append(await one_round(Path(tmp), sandboxed))
    names = ("spawn+initialize+tools/list", "one tools/call", "close")
    for i, name in enumerate(names):
        plain = statistics.median(r[i] for r in results[False])
        boxed = statistics.median(r[i] for r in results[True])
        print(
            f"{name}: unconfined median {plain * 1000:.1f} ms, sandboxed {boxed * 1000:.1f} ms, "
            f"ratio {boxed / plain:.2f} ({rounds} rounds)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20)
    anyio.run(main, parser.parse_args().rounds)
