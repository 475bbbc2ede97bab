"""Process facts and endings for tests (Linux /proc): is a pid alive, what descends from it, stop one;
`Process`, what a test may do with a process it started (a `subprocess.Popen` or a fork server's
`tests.support.zygote.ForkedProcess`)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Protocol

__all__ = ["Process", "alive", "descendants", "stop_process", "wait_no_descendants"]


class Process(Protocol):
    """A child process a test started: what `subprocess.Popen` and `ForkedProcess` both offer.

    `returncode` is None while it runs, then its exit code, or minus the signal that ended it.
    `wait` raises `subprocess.TimeoutExpired` after `timeout` seconds.
    """

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """Every live descendant of `pid`."""
    found: set[int] = set()
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in children:
                child_pid = int(child)
                if child_pid not in found and alive(child_pid):
                    found.add(child_pid)
                    stack.append(child_pid)
    return found


def wait_no_descendants(pid: int, timeout_s: float = 15.0) -> set[int]:
    """Wait until `pid` has no live descendants; return what is left after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    left = descendants(pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = descendants(pid)
    return left


def stop_process(proc: Process, timeout_s: float = 20.0) -> None:
    """SIGTERM (a graceful stop), then SIGKILL after `timeout_s` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
