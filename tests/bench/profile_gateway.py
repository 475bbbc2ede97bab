"""Per-call counts of the serve process for forwarded `tools/call` (R-8.3, issue 12).

Starts the harness's upstream (`../shared/bench/upstream_server.py`) and one real `mcp-center serve`
per `--host-src` (default: this checkout's src; give two for an A/B in one run), registers the
upstream as `up` in each (echo allowed, as `run_gateway_bench` does), opens one SDK client per serve
(the harness's `mcp.Client`, auto mode: 2026-07-28 sessionless) and sends `tools/call
mcp__up__echo` through `/mcp`, sequentially (`--concurrency` for more in flight). For each serve it reports, per call:

- `cpu_ms`: the serve's user+system CPU (`/proc/<pid>/stat`) over `--calls` calls, median of
  `--rounds` rounds; with two serves the rounds alternate between them (A/B side by side);
- `idle_cpu_ms_per_s`: the serve's CPU per second while nobody calls (`--idle` seconds);
- `gc`: garbage collections per 1,000 calls per generation and their milliseconds per call;
- `py_calls`: Python function calls per call (cProfile, in the serve, via `serve_hooks`), and the
  top frames by own time, and own time grouped by module (`--top`);
- `syscalls`: system calls per call (`strace -c -f -p`), the most frequent by name;
- `instructions` (`--callgrind`, instead of all the above): instructions per call, each serve run
  under valgrind's callgrind with instrumentation off until the `--calls` calls (use a few hundred: the
  serve runs some 50 times slower), then the idle instructions of an equal stretch subtracted;
  `instructions_by_object`: the same per shared object (libpython, uvloop, orjson, libc...).
- `segments` (`--segments`, instead of cProfile): Python and C calls per call in each segment of the
  path (`serve_hooks.SEGMENT_ORDER`): `before_send` (the agent's request read whole .. the upstream
  request written) and `after_answer` (the upstream answer read .. the agent's answer written) are
  the critical path at c=1; `waiting` is free in latency, and so is `after_reply` but for its end (the
  next agent request's bytes parsed up to `on_message_complete`); the top functions of each; with
  `--trace N`, the Python frames of the window's Nth call from `agent_read` to `agent_write` in order;
- `segment_us_p50` (`--segment-times`, instead of all the above): the wall microseconds of each
  segment, unprofiled (the four marks wrapped), median per round, median of the rounds.

The counts do not depend on the machine's load, so they serve for an A/B while it is shared;
`cpu_ms` does, so compare it only within one run. `python -m tests.bench.profile_gateway --help`.
Every process it starts is stopped by pid at the end. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.bench.run_gateway_bench import ADMIN, GATEWAY, _register, _shared_bench, _stop  # pyright: ignore[reportPrivateUsage]
from tests.support.ports import free_port, wait_for_port

CLK_TCK = os.sysconf("SC_CLK_TCK")
HOOKS = "from tests.bench.serve_hooks import main; main()"


@dataclass
class Serve:
    """One serve under measurement: its src, process, client and results."""

    src: str
    proc: subprocess.Popen[bytes]
    port: int
    data: Path
    client: Client | None = None
    cpu_rounds: list[float] = field(default_factory=lambda: list[float]())
    sys_rounds: list[float] = field(default_factory=lambda: list[float]())
    result: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of `pid` and its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of `pid`, by "name/tid"."""
    seen: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name, _, rest = task.joinpath("stat").read_text().partition(" (")[2].rpartition(")")
        except OSError:
            continue
        fields = rest.split()
        seen[f"{name}/{task.name}"] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return seen


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of `pid` and its threads."""
    return sum(cpu_split(pid))


CONCURRENCY = [1]
"""Calls in flight (`--concurrency`): 1, sequential, unless asked."""


async def calls(client: Client, n: int) -> None:
    """`n` echo calls, `CONCURRENCY[0]` at a time; raises if one fails."""
    left = [n]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            result = await client.call_tool("mcp__up__echo", {"text": "hello"})
            if result.is_error:
                raise SystemExit(f"profile: the call failed: {result.content!r}")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY[0])))


async def window(serve: Serve, n: int, watcher: list[str] | None = None, *, profile: bool = False) -> None:
    """`n` calls inside the serve's hooks window (SIGUSR1, or SIGRTMIN to `profile`, .. SIGUSR2), under
    `watcher` if given."""
    assert serve.client is not None
    spy = subprocess.Popen(watcher, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if watcher else None  # noqa: ASYNC220
    if spy is not None:
        await asyncio.sleep(1.0)  # strace attaches to every thread before the calls start
    serve.proc.send_signal(signal.SIGRTMIN if profile else signal.SIGUSR1)
    await calls(serve.client, n)
    serve.proc.send_signal(signal.SIGUSR2)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


async def measure_segment_times(args: argparse.Namespace, serves: list[Serve], work: Path) -> None:
    """`--segment-times`: wall microseconds of each segment (`serve_hooks.SegmentTimes`), the median
    per round, rounds alternating between the serves; reported as the median of the rounds."""
    rounds: dict[str, dict[str, list[float]]] = {serve.src: {} for serve in serves}
    for _ in range(args.rounds):
        for serve in serves:
            out = work / f"times-{serve.port}.json"
            out.unlink(missing_ok=True)
            await window(serve, args.calls)
            wait_file(out)
            for name, samples in json.loads(out.read_text()).items():
                if samples:
                    rounds[serve.src].setdefault(name, []).append(statistics.median(samples) / 1e3)
    for serve in serves:
        serve.result["segment_us_p50"] = {
            name: round(statistics.median(values), 2) for name, values in rounds[serve.src].items()
        }
        serve.result["segment_us_rounds"] = {
            name: [round(v, 2) for v in values] for name, values in rounds[serve.src].items()
        }


def wait_file(path: Path, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not path.exists() or path.stat().st_size == 0:
        if time.monotonic() > end:
            raise SystemExit(f"profile: {path} was not written")
        time.sleep(0.05)
    time.sleep(0.2)  # the writer closes the file


def module_of(filename: str) -> str:
    """A short owner for a profile entry's file: package/module, or the builtin's name."""
    if filename == "~":
        return "builtins"
    for marker in ("site-packages/", "/src/", "/lib/python3.11/"):
        if marker in filename:
            rest = filename.split(marker, 1)[1].removesuffix(".py")
            parts = rest.split("/")
            return "/".join(parts[:3]) if parts[0] in ("mcp_center", "mcp", "anyio") else parts[0]
    return filename


def profile_summary(path: Path, n: int, top: int) -> dict[str, Any]:
    """Calls per call, the top frames by own time and own time by module (ms per call)."""
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = getattr(pstats.Stats(str(path)), "stats")  # noqa: B009
    total_calls = 0
    frames: list[tuple[float, int, str]] = []
    modules: dict[str, float] = {}
    for (filename, line, name), (_cc, ncalls, tottime, _ct, _callers) in raw.items():
        total_calls += ncalls
        label = f"{name} ({Path(filename).name}:{line})" if filename != "~" else name
        frames.append((tottime, ncalls, label))
        owner = "builtins" if filename == "~" else module_of(filename)
        modules[owner] = modules.get(owner, 0.0) + tottime
    frames.sort(reverse=True)
    return {
        "py_calls": total_calls / n,
        "top": [f"{1e3 * t / n:.4f} ms {c / n:5.2f}x {label}" for t, c, label in frames[:top]],
        "modules": {k: round(1e3 * v / n, 4) for k, v in sorted(modules.items(), key=lambda kv: -kv[1])[:top]},
    }


def strace_summary(path: Path, n: int) -> dict[str, Any]:
    """System calls per call, total and the most frequent by name, from `strace -c`'s table."""
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and re.fullmatch(r"[\d.]+", parts[0]) and parts[-1] != "total":
            counts[parts[-1]] = int(parts[3])
    by_name = sorted(counts.items(), key=lambda kv: -kv[1])
    return {"syscalls": sum(counts.values()) / n, "by_name": {k: round(v / n, 2) for k, v in by_name[:8]}}


async def open_client(stack: Any, serve: Serve) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {GATEWAY}"}, timeout=1800)
    await stack.enter_async_context(http)
    client = Client(streamable_http_client(f"http://127.0.0.1:{serve.port}/mcp", http_client=http), mode="auto")
    serve.client = await stack.enter_async_context(client)


def control(pid: int, *command: str) -> None:
    """`callgrind_control` for `pid` (blocking: the driver waits for the serve anyway)."""
    subprocess.run(["callgrind_control", *command, str(pid)], check=True, stdout=subprocess.DEVNULL)


def callgrind_dump(pid: int, out: Path) -> dict[str, int]:
    """Dump (and zero) what callgrind collected in `pid` since the last dump; instructions per object
    (`""`: the dump's total)."""
    before = set(out.parent.glob(out.name + "*"))
    control(pid, "--dump")
    end = time.monotonic() + 300
    while time.monotonic() < end:
        fresh = set(out.parent.glob(out.name + "*")) - before
        if fresh and all("\ntotals:" in path.read_text(errors="replace") for path in fresh):
            break
        time.sleep(0.5)
    else:
        raise SystemExit(f"profile: callgrind wrote no dump of {pid}")
    objects: dict[str, int] = {"": 0}
    names: dict[str, str] = {}
    for dump in fresh:
        current = "?"
        inclusive = False  # the cost line after `calls=` is the call's inclusive cost, not own cost
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("ob=", "cob=")):
                ref, _, name = line.partition("=")[2].partition(" ")
                if name:
                    names[ref] = Path(name).name
                if line.startswith("ob="):
                    current = names.get(ref, ref)
            elif line.startswith("calls="):
                inclusive = True
            elif line.startswith("summary:"):
                objects[""] += int(line.split()[1])
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if not inclusive and len(parts) == 2 and parts[1].isdigit():
                    objects[current] = objects.get(current, 0) + int(parts[1])
                inclusive = False
    return objects


async def measure_callgrind(args: argparse.Namespace, serves: list[Serve], work: Path) -> None:
    """Instructions per call of each serve (started under callgrind, collection off)."""
    for serve in serves:
        assert serve.client is not None
        out = work / f"callgrind.out.{serve.port}"
        control(serve.proc.pid, "-i", "on")
        callgrind_dump(serve.proc.pid, out)  # zero what the switch itself cost
        started = time.monotonic()
        await calls(serve.client, args.calls)
        busy = callgrind_dump(serve.proc.pid, out)
        took = time.monotonic() - started
        await asyncio.sleep(took)
        idle = callgrind_dump(serve.proc.pid, out)
        control(serve.proc.pid, "-i", "off")
        per_object = {k: (v - idle.get(k, 0)) / args.calls for k, v in busy.items()}
        serve.result["instructions"] = round(per_object.pop(""))
        serve.result["idle_instructions_per_s_under_valgrind"] = round(idle[""] / took)
        serve.result["instructions_by_object"] = {
            k: round(v) for k, v in sorted(per_object.items(), key=lambda kv: -kv[1])[:8]
        }


async def measure(args: argparse.Namespace, serves: list[Serve], work: Path) -> None:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        for serve in serves:
            await open_client(stack, serve)
            assert serve.client is not None
            await calls(serve.client, args.warmup)
        if args.callgrind:
            await measure_callgrind(args, serves, work)
            return
        if args.segment_times:
            await measure_segment_times(args, serves, work)
            return
        for serve in serves:
            before = cpu_seconds(serve.proc.pid)
            await asyncio.sleep(args.idle)
            serve.result["idle_cpu_ms_per_s"] = round(1e3 * (cpu_seconds(serve.proc.pid) - before) / args.idle, 3)
        for _ in range(args.rounds):
            for serve in serves:
                assert serve.client is not None
                gc_file = work / f"gc-{serve.port}.json"
                gc_file.unlink(missing_ok=True)
                user, system = cpu_split(serve.proc.pid)
                threads = thread_cpu(serve.proc.pid)
                await window(serve, args.calls)
                after = thread_cpu(serve.proc.pid)
                serve.result["thread_ms_per_call"] = {
                    k: round(1e3 * (v - threads.get(k, 0.0)) / args.calls, 4)
                    for k, v in after.items()
                    if v > threads.get(k, 0.0)
                }
                user_after, system_after = cpu_split(serve.proc.pid)
                serve.cpu_rounds.append(1e3 * (user_after + system_after - user - system) / args.calls)
                serve.sys_rounds.append(1e3 * (system_after - system) / args.calls)
                wait_file(gc_file)
                seen = json.loads(gc_file.read_text())
                serve.result["gc"] = {
                    "per_1000_calls": [round(1e3 * c / args.calls, 2) for c in seen["counts"]],
                    "ms_per_call": round(1e3 * sum(seen["seconds"]) / args.calls, 4),
                    "threshold": seen["threshold"],
                }
        for serve in serves:
            serve.result["cpu_ms"] = round(statistics.median(serve.cpu_rounds), 4)
            serve.result["cpu_ms_rounds"] = [round(x, 4) for x in serve.cpu_rounds]
            serve.result["sys_ms"] = round(statistics.median(serve.sys_rounds), 4)
        if not args.no_strace:
            for serve in serves:
                out = work / f"strace-{serve.port}.txt"
                watcher = ["strace", "-c", "-f", "-p", str(serve.proc.pid), "-o", str(out)]
                await window(serve, args.calls, watcher)
                serve.result.update(strace_summary(out, args.calls))
        if args.segments:
            for serve in serves:
                seg = work / f"segments-{serve.port}.json"
                await window(serve, args.calls, profile=True)
                wait_file(seg)
                seen = json.loads(seg.read_text())
                serve.result["segments"] = {
                    name: {
                        "py_calls": round(seen["calls"][name] / args.calls, 1),
                        "c_calls": round(seen["c_calls"][name] / args.calls, 1),
                        "top": {
                            function: round(count / args.calls, 2)
                            for function, count in sorted(seen["by_function"][name].items(), key=lambda kv: -kv[1])[
                                : args.top
                            ]
                        },
                        "us_profiled": round(seen["ns"][name] / args.calls / 1e3, 1),
                    }
                    for name in seen["calls"]
                }
                serve.result["segment_marks"] = seen["marks"]
                if args.trace:
                    serve.result["trace"] = seen["trace"]
        elif not args.no_cprofile:
            for serve in serves:
                prof = work / f"profile-{serve.port}.pstats"
                await window(serve, args.calls, profile=True)
                wait_file(prof)
                serve.result.update(profile_summary(prof, args.calls, args.top))
                if args.keep_pstats:
                    kept = Path(args.keep_pstats) / f"profile-{serves.index(serve)}.pstats"
                    kept.write_bytes(prof.read_bytes())


def start(args: argparse.Namespace, src: str, up_port: int, work: Path, started: list[Any]) -> Serve:
    port = free_port()
    data = Path(tempfile.mkdtemp(dir=work))
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(src).resolve()),
        "MCP_CENTER_ADMIN_TOKEN": ADMIN,
        "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY,
        "MCP_BENCH_GC": str(work / f"gc-{port}.json"),
        "MCP_BENCH_PROFILE": str(work / f"profile-{port}.pstats"),
    }
    if args.segment_times:
        env["MCP_BENCH_SEGMENT_TIMES"] = str(work / f"times-{port}.json")
    if args.segments:
        env["MCP_BENCH_SEGMENTS"] = str(work / f"segments-{port}.json")
        if args.trace:
            env["MCP_BENCH_TRACE"] = str(args.trace)
    if args.gc_threshold:
        env["MCP_BENCH_GC_THRESHOLD"] = args.gc_threshold
    argv = [
        sys.executable,
        "-c",
        HOOKS,
        "serve",
        "--data-dir",
        str(data),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    if args.callgrind:
        out = work / f"callgrind.out.{port}"
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *argv]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(Path.cwd()))
    started.append(proc)
    wait_for_port(port, 900 if args.callgrind else 90, proc)
    _register(f"http://127.0.0.1:{port}", "up", up_port, 0, 1800 if args.callgrind else 120)
    return Serve(src, proc, port, data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host-src", action="append", default=None, help="serve from this src/ (repeat for A/B)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight (one client)")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="CPU rounds (alternating between serves)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measured")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--gc-threshold", default=None, help="a,b,c for gc.set_threshold in serve")
    parser.add_argument("--no-strace", action="store_true")
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument(
        "--segments",
        action="store_true",
        help="Python calls per segment of the path (serve_hooks.SEGMENT_ORDER) instead of cProfile",
    )
    parser.add_argument(
        "--trace",
        type=int,
        default=0,
        help="with --segments: the ordered Python frames (segment, depth, file:line:function) of the Nth call",
    )
    parser.add_argument(
        "--segment-times",
        action="store_true",
        help="wall microseconds per segment of the path (median per round), instead of all the above",
    )
    parser.add_argument("--callgrind", action="store_true", help="count instructions per call instead (slow)")
    parser.add_argument("--json", default=None, help="write the results here too")
    parser.add_argument("--keep-pstats", default=None, help="copy each serve's pstats here (profile-<i>.pstats)")
    args = parser.parse_args()
    CONCURRENCY[0] = args.concurrency
    srcs = args.host_src or [str(Path(__file__).resolve().parents[2] / "src")]
    bench = _shared_bench()
    started: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            up_port = free_port()
            upstream = subprocess.Popen(
                [sys.executable, str(bench / "upstream_server.py"), "--port", str(up_port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append(upstream)
            wait_for_port(up_port, 60, upstream)
            serves = [start(args, src, up_port, work, started) for src in srcs]
            asyncio.run(measure(args, serves, work))
        finally:
            for proc in reversed(started):
                _stop(proc)
    report = {serve.src: serve.result for serve in serves}
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
