"""What starting `mcp-center serve` costs, and how large it is idle (R-8.3, issues 12 and 16).

Not a test: it reports, never asserts.

    .venv/bin/python -m tests.bench.start_timing [--rounds 5] [--base-src PATH] [--no-bench-rss]

For each checkout (this one's `src/`, and with `--base-src` another `src/` beside it, e.g. main's
`git archive main src | tar -x -C /tmp/base`), interleaved round by round so that the machine's load
falls on both alike, it starts `serve --port 0` on a fresh data directory and measures:

- `wall_ms` and `cpu_ms`: from `Popen` to the first `/healthz` 200 (the host process's user + system
  CPU from /proc at that moment);
- `rss_bare`: VmRSS once `/healthz` answers, no server registered;
- `rss_bench` (unless `--no-bench-rss`): VmRSS after the bench's two upstreams are registered,
  trusted, tested and enabled exactly as `scripts/bench` does (`up`, and `big` with 1,000 extra
  tools), i.e. the bench's `idle_rss_mb`;
- `cli_*_ms`: CPU of `mcp-center version`, `mcp-center list`, `mcp-center gateway token list` and (with
  the bench's servers) `mcp-center show up` (one-shot verbs; `list` and `show` beside the running
  serve) and `mcp-center gateway --stdio` with empty stdin (a bridge start) as child processes;
- `import_ms`: cumulative `-X importtime` of the serve entry's top modules.

Medians over the rounds are printed, one line per checkout and figure. Every process it starts is
stopped by pid.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

from tests.bench.run_gateway_bench import (  # the bench's own helpers: the same registration and RSS reading
    ADMIN,
    GATEWAY,
    _register,  # pyright: ignore[reportPrivateUsage]
    _rss_mb,  # pyright: ignore[reportPrivateUsage]
    _shared_bench,  # pyright: ignore[reportPrivateUsage]
    _stop,  # pyright: ignore[reportPrivateUsage]
)
from tests.support.ports import free_port, wait_for_port

TICK = os.sysconf("SC_CLK_TCK")
SERVE_ENTRY = "from mcp_center.cli import main; main()"
SERVE_ARGS = ("--port", "0", "--log-level", "warning")
IMPORT_TOP = (
    "mcp_center.app",
    "mcp_center.cli",
    "mcp_center.api",
    "mcp_center.service",
    "mcp_center.runtime",
    "mcp_center.auth",
    "mcp_center.transports",
    "mcp_center.web",
    "mcp",
    "fastapi",
    "uvicorn",
    "typer",
)


def _cpu_ms(pid: int) -> float:
    """User + system CPU of `pid` so far, in ms (from /proc/<pid>/stat; 10 ms resolution)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK


def _env(src: Path) -> dict[str, str]:
    # Without PYTHONDONTWRITEBYTECODE (as scripts/test): every checkout imports its cached bytecode.
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **inherited,
        "PYTHONPATH": str(src),
        "MCP_CENTER_ADMIN_TOKEN": ADMIN,
        "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY,
    }


def _serve_once(src: Path, ports: tuple[int, int] | None) -> dict[str, float]:
    """Start serve from `src`, measure it (see the module docstring), stop it."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="start-timing-") as data:
        log = Path(data) / "serve.log"
        data_dir = Path(data) / "data"
        with log.open("wb") as sink:
            started = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, "-c", SERVE_ENTRY, "serve", "--data-dir", str(data_dir), *SERVE_ARGS],
                env=_env(src),
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        try:
            base = _wait_banner(log, proc)
            with httpx2.Client(base_url=base, timeout=10) as http:
                while True:
                    try:
                        if http.get("/healthz").status_code == 200:
                            break
                    except httpx2.TransportError:
                        pass
                    if proc.poll() is not None:
                        raise SystemExit(f"serve exited with {proc.returncode}: {log.read_text()}")
                    time.sleep(0.01)
            figures["wall_ms"] = (time.monotonic() - started) * 1000
            figures["cpu_ms"] = _cpu_ms(proc.pid)
            figures["rss_bare"] = _rss_mb(proc.pid) or 0.0
            if ports is not None:
                _register(base, "up", ports[0], 0)
                _register(base, "big", ports[1], 1000)
                figures["rss_bench"] = _rss_mb(proc.pid) or 0.0
            bridge = ["gateway", "--stdio", "--url", f"{base}/mcp"]  # empty stdin: starts, sends nothing, ends
            verbs = [["version"], ["list", "--data-dir", str(data_dir)], bridge]
            verbs.append(["gateway", "token", "list", "--data-dir", str(data_dir)])  # the store, not the host
            if ports is not None:  # a server to show (the serve answers it, as it does `list`)
                verbs.append(["show", "up", "--data-dir", str(data_dir)])
            for verb in verbs:
                name = "_".join(verb[:3]) if verb[0] == "gateway" and verb[1] == "token" else verb[0]
                figures[f"cli_{name}_ms"] = _child_cpu_ms(src, verb)
        finally:
            _stop(proc)
    return figures


def _wait_banner(log: Path, proc: subprocess.Popen[bytes]) -> str:
    """The base URL from serve's banner line (`mcp-center X on http://127.0.0.1:PORT`)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r" on (http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}: {log.read_text()}")
        time.sleep(0.01)
    raise SystemExit("serve printed no banner within 120 s")


def _child_cpu_ms(src: Path, verb: list[str]) -> float:
    """CPU (user + system, ms) of one `mcp-center <verb>` run as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", SERVE_ENTRY, *verb],
        env={**_env(src), "MCP_CENTER_GATEWAY_TOKEN": GATEWAY},
        stdin=subprocess.DEVNULL,
        check=False,
        capture_output=True,
        timeout=120,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def _import_ms(src: Path) -> dict[str, float]:
    """Cumulative import time (ms, `-X importtime`) of `IMPORT_TOP` when serve's modules load."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import mcp_center.cli, mcp_center.app, mcp_center.gateway.wire"],
        env=_env(src),
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() in IMPORT_TOP:
            found.setdefault(parts[2].strip(), int(parts[1]) / 1000)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base-src", default=None, help="another checkout's src/ measured beside this one")
    parser.add_argument("--no-bench-rss", action="store_true", help="skip the registered-upstreams RSS")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[2] / "src"
    checkouts = {"branch": here} if args.base_src is None else {"base": Path(args.base_src).resolve(), "branch": here}
    upstreams: list[subprocess.Popen[bytes]] = []
    ports: tuple[int, int] | None = None
    if not args.no_bench_rss:
        bench = _shared_bench()
        ports = (free_port(), free_port())
        for port, extra in zip(ports, ([], ["--extra-tools", "1000"]), strict=True):
            upstreams.append(
                subprocess.Popen(
                    [sys.executable, str(bench / "upstream_server.py"), "--port", str(port), *extra],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port, proc in zip(ports, upstreams, strict=True):
            wait_for_port(port, 60, proc)
    for src in checkouts.values():  # bytecode for both alike before the first round
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], env=_env(src), check=True)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    try:
        for round_no in range(args.rounds):
            for name, src in checkouts.items():
                figures = {**_serve_once(src, ports), **{f"import_{k}": v for k, v in _import_ms(src).items()}}
                results[name].append(figures)
                shown = " ".join(f"{k}={v:.0f}" for k, v in figures.items() if not k.startswith("import_"))
                print(f"# round {round_no + 1} {name}: {shown}", file=sys.stderr, flush=True)
    finally:
        for proc in upstreams:
            _stop(proc)
    keys = list(dict.fromkeys(k for runs in results.values() for run in runs for k in run))
    print("figure " + " ".join(f"{name:>8}" for name in checkouts) + f"   (medians of {args.rounds} rounds)")
    for key in keys:
        values = [statistics.median(run.get(key, float("nan")) for run in results[name]) for name in checkouts]
        print(f"{key:28s} " + " ".join(f"{v:8.1f}" for v in values))
    print(f"# load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.exit(main())
