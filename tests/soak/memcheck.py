"""Memory check (issue 14, item 2): how much one huge result grows the host's memory, per transport.

Not a timed test and not part of the default run; `scripts/memcheck` runs it. Each case runs in a
fresh process of its own (the measuring host), against a server in another process (a stdio server,
or a Streamable HTTP server answering with a JSON body or one SSE event), so only the host's memory
is measured. The host connects, makes one small warm-up call, resets its peak-RSS counter
(`/proc/self/clear_refs`), makes the huge call, and reports the growth of its peak RSS (`VmHWM`) over
the RSS before the call. A case runs the call as the web UI does (`call_tool`, the SDK session) or as
the gateway does (`forward`, the lean path: its own HTTP/1.1 client for a plain-HTTP server). Prints
one line per case and a final `memcheck:` line; exits 1 if a result larger than the read cap grew
memory by more than twice the cap.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from mcp_center.models import TransportKind
from mcp_center.runtime import ConnectionManager
from mcp_center.transports import ConnectionSpec
from mcp_center.transports.clip import read_limits
from tests.support.wire import is_object

QUIRKY = str(Path(__file__).parents[1] / "servers" / "quirky_stdio.py")
MIB = 1024 * 1024
DEFAULT_CASES = [
    "json:text:40",
    "sse:text:10",
    "sse:text:40",
    "stdio:text:40",
    "stdio:text:400",
    "json:strings:15",
    "sse:strings:15",
    "stdio:strings:15",
    "json:strings:40",
    "json:blocks:40",
    "sse:blocks:40",
    "stdio:blocks:40",
    "json:text:40:lean",
    "sse:text:40:lean",
    "stdio:text:40:lean",
    "json:strings:40:lean",
    "sse:blocks:40:lean",
]
"""transport:shape:MiB[:lean] — a case runs through `call_tool` unless it says `lean` (`forward`)."""


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _arguments(shape: str, size_mib: int) -> dict[str, int]:
    if shape == "text":
        return {"text_bytes": size_mib * MIB}
    if shape == "strings":  # strings just under the string cut, as many as the size asks for
        string_bytes = read_limits(1024 * 1024).max_string_bytes - 1024
        return {"strings": max(1, size_mib * MIB // string_bytes), "string_bytes": string_bytes}
    return {"blocks": size_mib * MIB // 48}  # each block is ~48 bytes of JSON


async def _call(manager: ConnectionManager, path: str, arguments: dict[str, int]) -> dict[str, Any]:
    """The result's `_meta`, called through `call_tool` ("sdk") or the gateway's `forward` ("lean")."""
    if path == "lean":
        result = await manager.forward("big", "tools/call", {"name": "big", "arguments": arguments})
        meta = result.get("_meta")
        return dict(meta) if is_object(meta) else {}
    return dict((await manager.call_tool("big", "big", arguments)).meta or {})


async def _measure(transport: str, shape: str, size_mib: int, path: str, url: str | None) -> dict[str, Any]:
    if transport == "stdio":
        scenario = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}], "calls": {"big": {"big": True}}}
        spec = ConnectionSpec(
            server_id="big",
            transport=TransportKind.STDIO,
            digest="memcheck",
            argv=(sys.executable, QUIRKY, json.dumps(scenario)),
            env={"PATH": os.environ.get("PATH", "")},
            call_timeout_s=300,
        )
    else:
        assert url is not None
        spec = ConnectionSpec(
            server_id="big", transport=TransportKind.STREAMABLE_HTTP, digest="memcheck", url=url, call_timeout_s=300
        )
    async with ConnectionManager() as manager:
        await manager.configure("big", spec)
        await _call(manager, path, {"text_bytes": 1000})  # warm-up: every code path loaded once
        gc.collect()
        exact_peak = _reset_peak()
        before = _status("VmRSS")
        started = time.monotonic()
        outcome: dict[str, Any]
        try:
            meta = await _call(manager, path, _arguments(shape, size_mib))
            outcome = {"outcome": "truncated" if "mcp-center/truncated" in meta else "complete"}
        except Exception as exc:  # noqa: BLE001 - the error code is part of the report
            outcome = {"outcome": getattr(exc, "code", type(exc).__name__)}
        elapsed = time.monotonic() - started
        peak = _status("VmHWM") if exact_peak else _status("VmRSS")
    cap = read_limits(spec.max_result_bytes).read_cap_bytes
    return {
        "transport": transport,
        "shape": shape,
        "size_mib": size_mib,
        "path": path,
        "cap_mib": round(cap / MIB, 1),
        "growth_mib": round(peak - before, 1),
        "peak_measured": exact_peak,
        "elapsed_s": round(elapsed, 1),
        **outcome,
    }


def _child(case: dict[str, Any]) -> None:
    server: subprocess.Popen[str] | None = None
    url = None
    if case["transport"] in ("json", "sse"):
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.soak.big_http", case["transport"]], stdout=subprocess.PIPE, text=True
        )
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/mcp"
        time.sleep(0.5)
    try:
        report = anyio.run(_measure, case["transport"], case["shape"], case["size_mib"], case["path"], url)
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    print(json.dumps(report), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="How much one huge result grows the host's memory.")
    parser.add_argument("--case", help="(internal) run one case in this process")
    parser.add_argument(
        "--cases",
        help="comma-separated transport:shape:MiB[:lean], e.g. json:text:40,stdio:text:400:lean (default: all)",
    )
    args = parser.parse_args()
    if args.case:
        _child(json.loads(args.case))
        return 0
    cases = args.cases.split(",") if args.cases else DEFAULT_CASES
    worst = 0.0
    failed = False
    for transport, shape, size, *rest in (c.split(":") for c in cases):
        size_mib, path = int(size), (rest[0] if rest else "sdk")
        case = json.dumps({"transport": transport, "shape": shape, "size_mib": size_mib, "path": path})
        run = subprocess.run(
            [sys.executable, "-m", "tests.soak.memcheck", "--case", case],
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
        lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
        if run.returncode != 0 or not lines:
            print(f"{transport:5} {path:4} {shape:6} {size_mib:4} MiB  FAILED\n{run.stderr[-2000:]}")
            failed = True
            continue
        report = json.loads(lines[-1])
        ratio = report["growth_mib"] / report["cap_mib"]
        worst = max(worst, ratio)
        over_cap = size_mib > report["cap_mib"]
        bad = over_cap and ratio > 2.0
        failed = failed or bad
        print(
            f"{transport:5} {path:4} {shape:6} {size_mib:4} MiB  cap {report['cap_mib']:5} MiB  "
            f"RSS +{report['growth_mib']:6} MiB  ({ratio:.2f} x cap)  {report['outcome']:22} "
            f"{report['elapsed_s']:5} s{'  OVER 2 x CAP' if bad else ''}"
        )
    print(f"memcheck: worst growth {worst:.2f} x the read cap; {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
