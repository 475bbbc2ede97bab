"""Start `mcp-center serve` with measurement hooks for `tests.bench.profile_gateway` (R-8.3).

`python -c "from tests.bench.serve_hooks import main; main()" serve ...` runs the CLI as usual, with
signal handlers installed first: SIGUSR1 starts a window (garbage collections counted), SIGRTMIN
starts one with cProfile on too (written to `MCP_BENCH_PROFILE`, pstats), SIGUSR2 ends it and writes
a JSON of the collections (`MCP_BENCH_GC`: per generation, count and seconds).
With `MCP_BENCH_SEGMENTS` set, SIGRTMIN counts the Python calls of each segment of a forwarded
call's path instead of profiling (`Segments`), written there as JSON when the window ends; with
`MCP_BENCH_TRACE=N` too, the Python frames of the window's Nth call on the critical path are kept in
order (`trace`: segment, stack depth, file:line:function).
`MCP_BENCH_GC_THRESHOLD=a,b,c` sets `gc.set_threshold` before serve starts, to measure another
setting. Not part of the product; nothing here runs unless a bench starts it.
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

SEGMENT_MARKS: dict[tuple[str, str], str] = {
    ("gateway/wire.py", "on_message_complete"): "agent_read",
    ("runtime/http1.py", "start"): "upstream_write",
    ("runtime/http1.py", "data_received"): "upstream_read",
    ("gateway/wire.py", "write_now"): "agent_write",
    ("gateway/_coalescing.py", "write_now"): "agent_write",  # its module since sec37 (the above: before)
}
"""Functions whose call marks a point of a forwarded call's path: the agent's request read whole (the
host protocol's `on_message_complete`), the upstream request written (`_Connection.start`), its answer
read (the upstream connection's `data_received`), the agent's answer written (`write_now`)."""

SEGMENT_ORDER = {
    "agent_read": "before_send",
    "upstream_write": "waiting",
    "upstream_read": "after_answer",
    "agent_write": "after_reply",
}
"""The segment a mark opens: `before_send` and `after_answer` are the critical path at c=1."""

SEGMENT_NEXT = {
    "after_reply": "agent_read",
    "before_send": "upstream_write",
    "waiting": "upstream_read",
    "after_answer": "agent_write",
}
"""The mark that ends each segment."""


def _depth(frame: FrameType | None) -> int:
    depth = 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


class Segments:
    """Python calls and wall nanoseconds per segment of a forwarded call (`SEGMENT_MARKS`), via
    `sys.setprofile`; a mark counts only in its order (a stray `data_received` does not restart)."""

    def __init__(self, trace_call: int | None = None) -> None:
        self.calls: dict[str, int] = dict.fromkeys(SEGMENT_ORDER.values(), 0)
        self.c_calls: dict[str, int] = dict.fromkeys(SEGMENT_ORDER.values(), 0)
        self.by_function: dict[str, dict[str, int]] = {name: {} for name in SEGMENT_ORDER.values()}
        self.ns: dict[str, int] = dict.fromkeys(SEGMENT_ORDER.values(), 0)
        self.marks: dict[str, int] = dict.fromkeys(SEGMENT_ORDER, 0)
        self.current = "after_reply"
        self.since = time.perf_counter_ns()
        self.codes: dict[Any, str | None] = {}
        self.trace_call = trace_call
        self.trace: list[str] = []

    def mark_of(self, code: Any) -> str | None:
        mark = self.codes.get(code, "")
        if mark == "":
            path = code.co_filename.replace("\\", "/")
            mark = next((m for (f, n), m in SEGMENT_MARKS.items() if path.endswith(f) and code.co_name == n), None)
            self.codes[code] = mark
        return mark

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call":
            self.c_calls[self.current] += 1
            name = f"<{getattr(arg, '__qualname__', '?')}>"
            seen = self.by_function[self.current]
            seen[name] = seen.get(name, 0) + 1
            return
        if event != "call":
            return
        mark = self.mark_of(frame.f_code)
        if mark is not None and mark == SEGMENT_NEXT[self.current]:
            now = time.perf_counter_ns()
            self.ns[self.current] += now - self.since
            self.since = now
            self.marks[mark] += 1
            self.current = SEGMENT_ORDER[mark]
        self.calls[self.current] += 1
        code = frame.f_code
        if self.trace_call == self.marks["agent_read"] and self.current != "after_reply":
            where = code.co_filename.rpartition("/")[2]
            self.trace.append(f"{self.current} {_depth(frame)} {where}:{frame.f_lineno}:{code.co_qualname}")
        where = code.co_filename.rpartition("/")[2]
        name = f"{where}:{code.co_firstlineno}:{code.co_qualname}"
        seen = self.by_function[self.current]
        seen[name] = seen.get(name, 0) + 1

    def dump(self, path: str) -> None:
        with open(path, "w") as handle:
            json.dump(
                {
                    "calls": self.calls,
                    "c_calls": self.c_calls,
                    "ns": self.ns,
                    "marks": self.marks,
                    "by_function": self.by_function,
                    "trace": self.trace,
                },
                handle,
            )


class SegmentTimes:
    """Wall nanoseconds per segment of a forwarded call without a profiler (`MCP_BENCH_SEGMENT_TIMES`):
    the `SEGMENT_MARKS` functions are wrapped to stamp `perf_counter_ns` when called; samples are
    kept per segment so that the median is reported, while a window is open."""

    def __init__(self) -> None:
        self.open = False
        self.current = "after_reply"
        self.since = 0
        self.samples: dict[str, list[int]] = {name: [] for name in SEGMENT_ORDER.values()}

    def mark(self, mark: str) -> None:
        if not self.open or mark != SEGMENT_NEXT[self.current]:
            return
        now = time.perf_counter_ns()
        if self.since:
            self.samples[self.current].append(now - self.since)
        self.since = now
        self.current = SEGMENT_ORDER[mark]

    def install(self) -> None:
        from mcp_center.gateway import wire
        from mcp_center.runtime import http1

        def wrap(cls: Any, name: str, mark: str) -> None:
            original = getattr(cls, name)

            def marked(*args: Any, **kwargs: Any) -> Any:
                self.mark(mark)
                return original(*args, **kwargs)

            setattr(cls, name, marked)

        wrap(wire.CoalescingHttpToolsProtocol, "on_message_complete", "agent_read")
        wrap(http1._Connection, "start", "upstream_write")  # pyright: ignore[reportPrivateUsage]
        wrap(http1._Connection, "data_received", "upstream_read")  # pyright: ignore[reportPrivateUsage]
        wrap(wire.CoalescingTransport, "write_now", "agent_write")

    def dump(self, path: str) -> None:
        with open(path, "w") as handle:
            json.dump(self.samples, handle)
        self.samples = {name: [] for name in SEGMENT_ORDER.values()}
        self.since = 0
        self.current = "after_reply"


class Window:
    """One measuring window: the profiler (if asked) and the collections seen inside it."""

    def __init__(self) -> None:
        self.profile_path = os.environ.get("MCP_BENCH_PROFILE")
        self.gc_path = os.environ.get("MCP_BENCH_GC")
        self.profiler: cProfile.Profile | None = None
        self.segments_path = os.environ.get("MCP_BENCH_SEGMENTS")
        self.segments: Segments | None = None
        self.times_path = os.environ.get("MCP_BENCH_SEGMENT_TIMES")
        self.times = SegmentTimes() if self.times_path else None
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
        if self.times is not None:
            self.times.open = True
        if sig == signal.SIGRTMIN and self.segments_path:
            trace = os.environ.get("MCP_BENCH_TRACE")
            self.segments = Segments(int(trace) if trace else None)
            sys.setprofile(self.segments)
            threading.setprofile(self.segments)
        elif sig == signal.SIGRTMIN and self.profile_path:
            self.profiler = cProfile.Profile(
                time.thread_time_ns, 1e-9
            )  # CPU, not wall: a preempted write is not its cost
            self.profiler.enable()

    def end(self, _sig: int, _frame: FrameType | None) -> None:
        self.open = False
        if self.times is not None:
            self.times.open = False
            assert self.times_path is not None
            self.times.dump(self.times_path)
        if self.segments is not None:
            sys.setprofile(None)
            threading.setprofile(None)  # pyright: ignore[reportArgumentType]
            assert self.segments_path is not None
            self.segments.dump(self.segments_path)
            self.segments = None
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
    if window.times is not None:
        window.times.install()
    from mcp_center.cli import main as cli_main

    cli_main()
