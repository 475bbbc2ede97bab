"""The reaper finds and stops only what is provably ours (R-9.3): real process groups, real reused pids.

A "reused pid" is played by a live unrelated process whose pid is recorded with another start
time; "members left by a dead leader" by a shell that started `sleep`s and exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_center.transports import reaper
from mcp_center.transports.reaper import GroupRef, Stopped, members, read_stat, stamp, terminate, watch
from tests.support.groups import started_group, wait_gone
from tests.support.processes import alive
from tests.support.stdlib_program import assert_stdlib_program

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper reads /proc")


def _ref(pid: int) -> GroupRef:
    ref = stamp(pid)
    assert ref is not None
    return ref


def test_read_stat_survives_a_command_name_with_spaces_and_parentheses(tmp_path: Path) -> None:
    odd = tmp_path / "x) (y z"
    odd.symlink_to("/bin/sleep")
    proc = subprocess.Popen([str(odd), "600"], start_new_session=True)
    try:
        stat = read_stat(proc.pid)
        assert stat is not None
        assert (stat.pid, stat.pgrp, stat.session, stat.live) == (proc.pid, proc.pid, proc.pid, True)
        assert stat.start_ticks >= 0
    finally:
        proc.kill()
        proc.wait()
    assert read_stat(proc.pid) is None


def test_members_are_the_live_processes_of_the_group_and_nothing_else() -> None:
    with started_group(sleeps=2) as group, started_group(sleeps=1) as other:
        found = members([_ref(group.pgid)])
        assert sorted(p.pid for p in found[_ref(group.pgid)]) == sorted(group.pids)
        assert not set(group.pids) & set(other.pids)


def test_terminate_stops_a_whole_group_with_sigterm() -> None:
    with started_group(sleeps=2) as group:
        stopped = terminate([_ref(group.pgid)], grace_s=5)
        assert stopped == Stopped(found=3, killed=0, left=0)
        assert wait_gone(group.pids, 0.1) == []


def test_terminate_escalates_to_sigkill_for_members_that_ignore_sigterm() -> None:
    with started_group(sleeps=2, ignore_term=True) as group:
        stopped = terminate([_ref(group.pgid)], grace_s=0.3)
        assert stopped == Stopped(found=3, killed=3, left=0)
        assert wait_gone(group.pids, 0.1) == []


@pytest.mark.parametrize("skew", [-1, 1])
def test_a_group_whose_leader_pid_was_reused_is_never_signalled(skew: int) -> None:
    """The record names a pid that is now someone else's group leader (start time differs)."""
    with started_group(sleeps=1) as unrelated:
        real = _ref(unrelated.pgid)
        planted = GroupRef(real.pgid, real.start_ticks + skew)
        assert members([planted]) == {}
        assert terminate([planted], grace_s=0.3) == Stopped()
        assert all(alive(pid) for pid in unrelated.pids)


def test_members_left_by_a_dead_leader_are_stopped_one_by_one() -> None:
    with started_group(sleeps=2, leader_exits=True) as group:
        ref = GroupRef(group.pgid, _leader_ticks(group.members))
        assert read_stat(group.pgid) is None  # the leader is gone (reaped): no killpg, pidfds per member
        assert sorted(p.pid for p in members([ref])[ref]) == sorted(group.members)
        assert terminate([ref], grace_s=5) == Stopped(found=2)
        assert wait_gone(group.members, 0.1) == []


def test_processes_older_than_the_recorded_leader_are_not_ours() -> None:
    """A group id whose leader is gone, holding processes that started before our leader did: not ours."""
    with started_group(sleeps=2, leader_exits=True) as group:
        later = GroupRef(group.pgid, _leader_ticks(group.members) + 10**6)
        assert members([later]) == {later: []}
        assert terminate([later], grace_s=0.3) == Stopped()
        assert all(alive(pid) for pid in group.members)


def test_the_watchdog_stops_what_is_registered_when_its_commands_end() -> None:
    with started_group(sleeps=1) as kept, started_group(sleeps=1) as released:
        me = _ref(os.getpid())
        read_fd, write_fd = os.pipe()
        result: list[Stopped] = []
        watcher = threading.Thread(target=lambda: result.append(watch(me.pgid, me.start_ticks, read_fd, grace_s=1)))
        watcher.start()
        try:
            for ref in (_ref(kept.pgid), _ref(released.pgid)):
                os.write(write_fd, f"add {ref.pgid} {ref.start_ticks}\n".encode())
            os.write(write_fd, f"garbage line\nadd 1 0\ndel {released.pgid}\nadd {kept.pgid}".encode())
        finally:
            os.close(write_fd)  # the host "dies": the pipe ends
            watcher.join(timeout=10)
            os.close(read_fd)
        assert not watcher.is_alive()
        assert result == [Stopped(found=2)]
        assert wait_gone(kept.pids, 0.1) == []
        assert all(alive(pid) for pid in released.pids)


def test_the_watchdog_of_a_parent_already_gone_stops_at_once_without_waiting_for_the_pipe() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with started_group(sleeps=1) as group:
        read_fd, write_fd = os.pipe()
        try:
            ref = _ref(group.pgid)
            os.write(write_fd, f"add {ref.pgid} {ref.start_ticks}\n".encode())
            stopped = watch(dead.pid, 0, read_fd, grace_s=1)  # the write end stays open: no EOF
        finally:
            os.close(write_fd)
            os.close(read_fd)
        assert stopped == Stopped(found=2)


def test_the_watchdog_program_imports_only_the_standard_library() -> None:
    """It runs as `python -I -S reaper.py`: no site-packages, no mcp_center."""
    assert_stdlib_program(reaper.__file__, "usage: reaper.py watch")


def _leader_ticks(member_pids: list[int]) -> int:
    """A start time no later than every member's (the dead leader's is not readable any more)."""
    stats = [read_stat(pid) for pid in member_pids]
    return min(stat.start_ticks for stat in stats if stat is not None)
