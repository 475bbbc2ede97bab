"""The official conformance *server* scenarios, against the fixture directly and through `/mcp/{id}` (R-8.4).

`scripts/conformance --server` calls this. It starts `fixture_server.py` on loopback, a real
mcp-center host (`gateway_host.py`) with the fixture registered as server `fixture` (trusted,
tested, enabled, every tool `allow`), and runs each server scenario of
`@modelcontextprotocol/conformance` 0.1.16 twice: `conformance server --url <fixture>/mcp` and
`--url <host>/mcp/fixture`. The harness sends no credentials, so the host's gateway token is added
to each request by `gateway_host.py` (only the `Authorization` header; Host and Origin reach the
gateway as the harness sent them, so its DNS-rebinding checks meet the host's own guard).

Verdicts: a scenario passes on a path when its checks were recorded and none is `FAILURE`.
The suite fails when a scenario passes directly but not through the gateway, unless it is listed
(`server:` in the expected-failures YAML, with its reason) — and when a listed one passes (stale).
A scenario failing directly is the fixture's limit, reported and not counted.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conformance.runner import DEFAULT_HOME, REPO, Outcome, SetupError, install, load_expected_key, run_harness
from tests.support.ports import free_port, wait_for_port

FIXTURE_ID = "fixture"


def list_server_scenarios(node: str, harness: Path) -> list[str]:
    """The harness's server scenario names, in its order."""
    out = subprocess.run(
        [node, str(harness), "list", "--server"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return re.findall(r"^\s+- (\S+)", out, flags=re.MULTILINE)


def run_server_scenario(node: str, harness: Path, name: str, url: str, results: Path, timeout_s: int) -> Outcome:
    """Run one server scenario against `url` and read back its checks."""
    out_dir = results / name
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    argv = [node, str(harness), "server", "--url", url, "--scenario", name, "-o", str(out_dir)]
    return run_harness(name, argv, out_dir, timeout_s)


def _said(outcome: Outcome) -> str:
    return "pass" if outcome.passed else ",".join(outcome.failing) or "fail"


def judge(direct: list[Outcome], via: list[Outcome], expected: set[str]) -> int:
    """Print one line per scenario and the `N passed, N failed` line (through the gateway); return the exit code."""
    width = max((len(o.name) for o in direct), default=10)
    passed = failed = 0
    unexpected: list[str] = []
    stale: list[str] = []
    for d, v in zip(direct, via, strict=True):
        listed = d.name in expected
        if not d.passed:
            verdict = "SKIP"  # the fixture (or the harness) fails it directly: nothing to compare
        elif v.passed:
            verdict = "XPASS" if listed else "PASS"
        else:
            verdict = "XFAIL" if listed else "FAIL"
        if v.passed:
            passed += 1
        else:
            failed += 1
        if verdict == "FAIL":
            unexpected.append(d.name)
        if verdict == "XPASS":
            stale.append(d.name)
        detail = f"direct: {_said(d)}; via: {_said(v)}"
        notes = v.notes + [f"warn: {','.join(v.warnings)}"] * bool(v.warnings)
        print(f"{d.name.ljust(width)}  {verdict.ljust(5)}  {detail}{'  (' + '; '.join(notes) + ')' if notes else ''}")
    if unexpected:
        print(f"unexpected failures through the gateway: {' '.join(unexpected)}")
    if stale:
        print(f"stale expected-failures entries (now passing): {' '.join(stale)}")
    print(f"{passed} passed, {failed} failed")
    return 1 if unexpected or stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all server scenarios)")
    parser.add_argument("--expected-failures", type=Path, help="YAML whose server: list names scenarios")
    parser.add_argument("--results", type=Path, default=REPO / "conformance-results" / "server")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per scenario run")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    args = parser.parse_args(argv)
    try:
        node, harness = install(args.home)
        every = list_server_scenarios(node, harness)
        expected = load_expected_key(node, args.home, args.expected_failures, "server")
    except (SetupError, OSError, subprocess.SubprocessError, ValueError) as exc:
        print(f"conformance: setup failed: {exc}", file=sys.stderr)
        return 2
    selected = [s for s in args.scenarios.split(",") if s] if args.scenarios else every
    python = sys.executable
    fixture_port, host_port = free_port(), free_port()
    fixture = subprocess.Popen(
        [python, "-m", "tests.conformance.fixture_server", "--port", str(fixture_port)], cwd=REPO
    )
    wait_for_port(fixture_port, 60, fixture)
    ready = args.results.resolve() / "host-ready"
    ready.unlink(missing_ok=True)
    ready.parent.mkdir(parents=True, exist_ok=True)
    upstream = ["--upstream", f"http://127.0.0.1:{fixture_port}/mcp", "--ready", str(ready)]
    host = subprocess.Popen(
        [python, "-m", "tests.conformance.gateway_host", "--port", str(host_port), *upstream], cwd=REPO
    )
    started = time.monotonic()
    try:
        while not ready.exists():
            if host.poll() is not None or time.monotonic() - started > 120:
                print("conformance: the mcp-center host did not come up", file=sys.stderr)
                return 2
            time.sleep(0.1)
        results = args.results.resolve()
        direct: list[Outcome] = []
        via: list[Outcome] = []
        for name in selected:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            direct.append(
                run_server_scenario(
                    node, harness, name, f"http://localhost:{fixture_port}/mcp", results / "direct", args.timeout
                )
            )
            via.append(
                run_server_scenario(
                    node, harness, name, f"http://localhost:{host_port}/mcp/{FIXTURE_ID}", results / "via", args.timeout
                )
            )
    finally:
        for proc in (host, fixture):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"suite time: {time.monotonic() - started:.0f}s (results in {args.results})", file=sys.stderr)
    return judge(direct, via, expected)


if __name__ == "__main__":
    sys.exit(main())
