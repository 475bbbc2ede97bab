"""Process groups for reaper and guard tests: start one, wait for its members, wait for pids to go.

Waits poll /proc with a bounded deadline (there is no event for "a process that is not our child
exited"); "gone" means gone or a zombie (some container inits reap orphans late).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Generator, Iterable
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import alive


@dataclass
class Group:
    """A process group started by a test: its leader (a shell) and the `sleep`s it started."""

    leader: subprocess.Popen[bytes]
    members: list[int]

    @property
    def pgid(self) -> int:
        return self.leader.pid

    @property
    def pids(self) -> list[int]:
        return [self.leader.pid, *self.members]


def group_pids(pgid: int) -> list[int]:
    """Live processes whose process group is `pgid`."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            found.append(int(name))
    return found


@contextmanager
def started_group(*, sleeps: int = 2, ignore_term: bool = False, leader_exits: bool = False) -> Generator[Group]:
    """A new session and process group: `sh` starting `sleeps` x `sleep 600`; everything is killed at exit.

    Args:
        ignore_term: Every member ignores SIGTERM (only SIGKILL stops them).
        leader_exits: The shell exits (and is reaped) once the sleeps run: members without a leader.
    """
    script = (
        ("trap '' TERM; " if ignore_term else "") + "sleep 600 & " * sleeps + ("exit 0" if leader_exits else "wait")
    )
    leader = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        expected = sleeps if leader_exits else sleeps + 1
        while len(group_pids(leader.pid)) < expected or (leader_exits and leader.poll() is None):
            assert time.monotonic() < deadline, "the group did not start within 10 s"
            time.sleep(0.01)
        if leader_exits:
            leader.wait()
        members = [pid for pid in group_pids(leader.pid) if pid != leader.pid]
        yield Group(leader, members)
    finally:
        for pid in group_pids(leader.pid):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if leader.poll() is None:
            leader.kill()
        leader.wait()


def wait_gone(pids: Iterable[int], timeout_s: float = 5.0) -> list[int]:
    """Wait until none of `pids` is alive, at most `timeout_s` seconds; return those still alive."""
    pids = list(pids)
    deadline = time.monotonic() + timeout_s
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if alive(pid)]
    return left


def pid_lines(pidfile: Path, at_least: int = 1, timeout_s: float = 30.0) -> list[list[int]]:
    """The pid lines `tests/servers/stubborn_stdio.py` appended to `pidfile` (one per start, leader
    first), once there are `at_least` of them (bounded wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lines = [json.loads(line) for line in pidfile.read_text().splitlines() if line.endswith("}")]
        except (FileNotFoundError, ValueError):
            lines = []
        if len(lines) >= at_least:
            return [[line["leader"], *line["grandchildren"]] for line in lines]
        assert time.monotonic() < deadline, f"{at_least} server start(s) not seen in {pidfile} within {timeout_s} s"
        time.sleep(0.05)
