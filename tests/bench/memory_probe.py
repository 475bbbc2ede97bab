"""Where an idle `mcp-center serve`'s memory goes, in the bench's state (R-8.3, issue 12).

Not a test: it reports, never asserts.

    .venv/bin/python -m tests.bench.memory_probe [--catalog 1000] [--json FILE]

Starts the bench's two upstreams (`up`, and `big` with `--catalog` extra tools) and a real `serve`
on loopback whose entry installs a SIGUSR1 handler (this script's `_REPORTER`), registers both
exactly as `scripts/bench` does, then asks the host for a report. It prints:

- `rss_bare`, `rss_up`, `rss_bench`: VmRSS (MB) once `/healthz` answers, after `up`, after `big`;
- `anon_mb` / `file_mb`: the private (heap) and file-backed parts of the bench RSS (smaps_rollup);
- `heap_in_use_mb` / `heap_free_mb`: glibc's `mallinfo2` (blocks in use, free blocks kept in the heap);
- `trim_gain_mb`: what `malloc_trim(0)` still hands back at that moment;
- `pymalloc_arenas_mb` / `pymalloc_used_mb` / `pymalloc_free_mb`: CPython's small-object allocator
  (objects up to 512 bytes; 1 MiB arenas outside glibc's heap): arenas held, bytes in live blocks,
  bytes in free blocks of those arenas (an arena goes back to the system only when wholly free);
- `gc_objects` / `gc_frozen`: objects the collector tracks, and those `gc.freeze` moved out of it;
- the packages with the most modules loaded, and the most numerous object types.

Every process it starts is stopped by pid.
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
from typing import Any

from tests.bench.run_gateway_bench import (  # the bench's own helpers: the same registration and RSS reading
    ADMIN,
    GATEWAY,
    _register,  # pyright: ignore[reportPrivateUsage]
    _rss_mb,  # pyright: ignore[reportPrivateUsage]
    _shared_bench,  # pyright: ignore[reportPrivateUsage]
    _stop,  # pyright: ignore[reportPrivateUsage]
)
from tests.support.ports import free_port, wait_for_port

_REPORTER = r"""
import collections, ctypes, gc, json, os, signal, sys

def _report(*_):
    gc.collect()
    objs = gc.get_objects()
    types_ = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objs)
    packages = collections.Counter(name.partition(".")[0] for name in list(sys.modules))
    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    info = libc.mallinfo2()
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    import tempfile
    with tempfile.TemporaryFile("w+") as stats:
        saved = os.dup(2)
        os.dup2(stats.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        stats.seek(0)
        pymalloc = {}
        for line in stats:
            name, _, value = line.partition("=")
            name = name.strip("# \n")
            if name in ("arenas allocated current", "bytes in allocated blocks", "bytes in available blocks"):
                pymalloc[name] = int(value.strip().replace(",", ""))
    before = rss()
    libc.malloc_trim(0)
    report = {
        "heap_in_use_mb": info.uordblks / 2**20, "heap_free_mb": info.fordblks / 2**20,
        "trim_gain_mb": before - rss(),
        "pymalloc_arenas_mb": pymalloc["arenas allocated current"],
        "pymalloc_used_mb": pymalloc["bytes in allocated blocks"] / 2**20,
        "pymalloc_free_mb": pymalloc["bytes in available blocks"] / 2**20,
        "gc_objects": len(objs), "gc_frozen": gc.get_freeze_count(),
        "modules": len(sys.modules), "packages": packages.most_common(15), "types": types_.most_common(15),
    }
    path = os.environ["MEMORY_PROBE_OUT"]
    with open(path + ".tmp", "w") as out:
        json.dump(report, out)
    os.replace(path + ".tmp", path)

signal.signal(signal.SIGUSR1, _report)
from mcp_center.cli import main
main()
"""


def _rollup_mb(pid: int) -> dict[str, float]:
    """`Anonymous` and file-backed (`Rss` - `Anonymous`) MB of `pid`, from /proc/<pid>/smaps_rollup."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0])
    return {"anon_mb": fields["Anonymous"] / 1024, "file_mb": (fields["Rss"] - fields["Anonymous"]) / 1024}


def _quiet(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """Wait (bounded) until the host wrote its report to `path`."""
    end = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit("memory_probe: the host wrote no report")
        time.sleep(0.05)  # polling a file the host writes: there is nothing to wait on


def probe(catalog: int) -> dict[str, Any]:
    """Start the upstreams and a host, register both, and return the figures (see the module docstring)."""
    bench = _shared_bench()
    python = sys.executable
    up_port, big_port, host_port = free_port(), free_port(), free_port()
    started: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as data:
        out = Path(data) / "memory-report.json"
        env = {
            **os.environ,
            "MCP_CENTER_ADMIN_TOKEN": ADMIN,
            "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY,
            "MEMORY_PROBE_OUT": str(out),
        }
        try:
            upstream = [python, str(bench / "upstream_server.py"), "--port"]
            started.append(_quiet([*upstream, str(up_port)]))
            started.append(_quiet([*upstream, str(big_port), "--extra-tools", str(catalog)]))
            serve = [python, "-c", _REPORTER, "serve", "--data-dir", str(Path(data) / "host")]
            host = _quiet([*serve, "--port", str(host_port), "--log-level", "warning"], env)
            started.append(host)
            for port, proc in zip((up_port, big_port, host_port), started, strict=True):
                wait_for_port(port, 60, proc)
            base = f"http://127.0.0.1:{host_port}"
            figures: dict[str, Any] = {"rss_bare": _rss_mb(host.pid)}
            _register(base, "up", up_port, 0)
            figures["rss_up"] = _rss_mb(host.pid)
            _register(base, "big", big_port, catalog)
            figures["rss_bench"] = _rss_mb(host.pid)
            figures.update(_rollup_mb(host.pid))
            host.send_signal(signal.SIGUSR1)
            _wait_for_file(out, host)
            figures.update(json.loads(out.read_text()))
            return figures
        finally:
            for proc in reversed(started):
                _stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", type=int, default=1000, help="tools of the second upstream")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    figures = probe(args.catalog)
    for key, value in figures.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, float):
            print(f"{key:<16} {value:8.1f}")
        elif isinstance(value, int):
            print(f"{key:<16} {value:8d}")
    for key in ("packages", "types"):
        print(f"# {key}: " + ", ".join(f"{name} {count}" for name, count in figures[key]))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
