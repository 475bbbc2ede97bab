"""Start `mcp-center serve` with measurement hooks for `tests.bench.profile_gateway` (R-8.3).

`python -c "from tests.bench.serve_hooks import main; main()" serve ...` runs the CLI as usual, with
signal handlers installed first: SIGUSR1 starts a window (garbage collections counted), SIGRTMIN
starts one with cProfile on too (written to `MCP_BENCH_PROFILE`, pstats), SIGUSR2 ends it and writes
a JSON of the collections (`MCP_BENCH_GC`: per generation, count and seconds).
`MCP_BENCH_GC_THRESHOLD=a,b,c` sets `gc.set_threshold` before serve starts, to measure another
setting. Not part of the product; nothing here runs unless a bench starts it.
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import signal
import time
from types import FrameType
from typing import Any


class Window:
    """One measuring window: the profiler (if asked) and the collections seen inside it."""

    def __init__(self) -> None:
        self.profile_path = os.environ.get("MCP_BENCH_PROFILE")
        self.gc_path = os.environ.get("MCP_BENCH_GC")
        self.profiler: cProfile.Profile | None = None
        self.open = False
        self.started: dict[int, float] = {}
        self.counts = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if not self.open:
            return
        generation = int(info["generation"])
        if phase == "start":
            self.started[generation] = time.perf_counter()
        elif generation in self.started:
            self.counts[generation] += 1
            self.seconds[generation] += time.perf_counter() - self.started.pop(generation)

    def begin(self, sig: int, _frame: FrameType | None) -> None:
        self.counts, self.seconds, self.open = [0, 0, 0], [0.0, 0.0, 0.0], True
        if sig == signal.SIGRTMIN and self.profile_path:
            self.profiler = cProfile.Profile(
                time.thread_time_ns, 1e-9
            )  # CPU, not wall: a preempted write is not its cost
            self.profiler.enable()

    def end(self, _sig: int, _frame: FrameType | None) -> None:
        self.open = False
        if self.profiler is not None:
            self.profiler.disable()
            assert self.profile_path is not None
            self.profiler.dump_stats(self.profile_path)
            self.profiler = None
        if self.gc_path:
            with open(self.gc_path, "w") as handle:
                json.dump({"counts": self.counts, "seconds": self.seconds, "threshold": gc.get_threshold()}, handle)


def main() -> None:
    threshold = os.environ.get("MCP_BENCH_GC_THRESHOLD")
    if threshold:
        gc.set_threshold(*(int(part) for part in threshold.split(",")))
    window = Window()
    gc.callbacks.append(window.on_gc)
    signal.signal(signal.SIGUSR1, window.begin)
    signal.signal(signal.SIGRTMIN, window.begin)
    signal.signal(signal.SIGUSR2, window.end)
    from mcp_center.cli import main as cli_main

    cli_main()
