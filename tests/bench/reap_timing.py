"""What the process guard costs and how fast orphans go (R-9.3). Not a test: it reports, never asserts.

    .venv/bin/python -m tests.bench.reap_timing [--rounds N]

Prints one line per figure: the watchdog's start-up (once per host process), what registering a
group costs at each spawn (`adopt`: a /proc read and a pipe write; `save`: serve's atomic record
write with two fsyncs), and the time from SIGKILL of a host to the moment its stdio server and
grandchildren are gone, for a server that obeys SIGTERM and for one that ignores it (then the
watchdog's 2 s grace and SIGKILL are what count).
"""

from __future__ import annotations

import argparse
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp_center.transports import PROCESS_GROUPS_FILE, ProcessGuard
from tests.support.groups import pid_lines, started_group, wait_gone

STUBBORN = Path(__file__).resolve().parent.parent / "servers" / "stubborn_stdio.py"
HOST = """
import sys, anyio
from mcp_center.transports import StdioTransport, child_environment

async def main() -> None:
    async with StdioTransport(sys.argv[1:], env=child_environment({})):
        print("spawned", flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


def _ms(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds) * 1000:.2f} ms, max {max(seconds) * 1000:.2f} ms"


def watchdog_start(rounds: int) -> list[float]:
    times: list[float] = []
    for _ in range(rounds):
        guard = ProcessGuard()
        started = time.perf_counter()
        assert guard.start()
        times.append(time.perf_counter() - started)
        guard.close()
    return times


def registration(rounds: int) -> tuple[list[float], list[float]]:
    adopt: list[float] = []
    save: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, started_group(sleeps=1) as group:
        guard = ProcessGuard()
        guard.start()
        guard.take_over(Path(tmp) / PROCESS_GROUPS_FILE)
        for _ in range(rounds):
            started = time.perf_counter()
            ref = guard.adopt(group.pgid)
            adopt.append(time.perf_counter() - started)
            started = time.perf_counter()
            guard.save()
            save.append(time.perf_counter() - started)
            assert ref is not None
            guard.release(ref)
        guard.stop_recording()
        guard.close()
    return adopt, save


def sigkill_to_gone(ignore_term: bool, rounds: int) -> list[float]:
    times: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp) / "pids"
            server = [sys.executable, str(STUBBORN), "--pidfile", str(pidfile)] + (["--ignore-term"] * ignore_term)
            host = subprocess.Popen([sys.executable, "-c", HOST, *server], stdout=subprocess.PIPE, text=True)
            assert host.stdout is not None
            select.select([host.stdout], [], [], 30)
            assert host.stdout.readline().strip() == "spawned"
            [pids] = pid_lines(pidfile)
            started = time.perf_counter()
            host.send_signal(signal.SIGKILL)
            left = wait_gone(pids, 10.0)
            times.append(time.perf_counter() - started)
            host.wait()
            host.stdout.close()
            assert not left, left
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(f"watchdog start (once per host process): {_ms(watchdog_start(rounds))}", flush=True)
    adopt, save = registration(rounds * 20)
    print(f"per spawn: adopt {_ms(adopt)}; serve's record save {_ms(save)}", flush=True)
    print(f"SIGKILL of host -> server gone (obeys SIGTERM): {_ms(sigkill_to_gone(False, rounds))}", flush=True)
    print(f"SIGKILL of host -> server gone (ignores SIGTERM): {_ms(sigkill_to_gone(True, rounds))}", flush=True)


if __name__ == "__main__":
    main()
