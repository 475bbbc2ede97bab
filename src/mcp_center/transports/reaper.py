"""Find and stop the process groups of stdio servers that outlived their host (R-2.6, R-9.3).

Threat: a stdio server that ignores end-of-input, and the grandchildren in its process group,
surviving a `serve` (or a one-shot CLI command) that was SIGKILLed or crashed: they live on with
PPID 1, and a restarted serve would start second copies beside them. The opposite threat matters
as much: pids are reused (32768 of them by default), so "the pid we once started" may by now be
somebody's editor. Nothing here signals a process without first proving it is ours.

A group is named by a `GroupRef`: its leader's pid (== pgid == session id, because stdio servers
start with `setsid`) and the leader's start time in clock ticks since boot (`/proc/<pid>/stat`
field 22). The pair names one process for the whole boot. A process counts as a member of our
group when it is alive (not a zombie), in process group *and* session `pgid`, and started no
earlier than the leader. If a process with pid `pgid` exists but started at another time, the
pid was reused and the group is not ours: nothing is signalled. If the leader is gone but members
remain (the leader exited, a grandchild did not), the members are signalled one by one through a
pidfd, after re-reading their stat through it, so a pid reused between the scan and the signal is
never hit. Limit: once a leader is gone, a *new* session leader that got the same pid and died in
turn, leaving members behind, would look like ours; that needs a pid wrap-around between the crash
and the next start.

This file is also the watchdog's program (`watch`), run as `python -I -S reaper.py watch PID TICKS`
without importing mcp_center: it must start in milliseconds and keep working whatever state the
host's interpreter is in. So it imports the standard library only (enforced by its test). The
watchdog reads `add PGID TICKS` / `del PGID` lines on stdin; when its parent dies (the pipe ends,
or the parent's pidfd becomes readable), it stops every group still registered: SIGTERM, a grace
period, SIGKILL. Linux only (/proc, pidfd).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_KILL_WAIT_S",
    "GroupRef",
    "ProcStat",
    "Stopped",
    "boot_id",
    "members",
    "read_stat",
    "stamp",
    "terminate",
    "watch",
]

DEFAULT_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL when stopping leftover groups."""
DEFAULT_KILL_WAIT_S = 2.0
"""Seconds to wait for SIGKILLed members to be gone."""
_POLL_FIRST_S = 0.01
_POLL_MAX_S = 0.1
_PARENT_POLL_S = 0.5
"""Without a pidfd (Linux < 5.3), how often the watchdog checks its parent, in seconds."""


@dataclass(frozen=True)
class GroupRef:
    """One process group we started: its leader's pid (== pgid == sid) and start time (clock ticks)."""

    pgid: int
    start_ticks: int


@dataclass(frozen=True)
class ProcStat:
    """The fields of `/proc/<pid>/stat` this module needs."""

    pid: int
    state: str
    pgrp: int
    session: int
    start_ticks: int

    @property
    def live(self) -> bool:
        """False for a zombie (dead, waiting to be reaped: it holds nothing but its pid)."""
        return self.state not in ("Z", "X")


@dataclass(frozen=True)
class Stopped:
    """What `terminate` did: processes it found, how many needed SIGKILL, how many are still there."""

    found: int = 0
    killed: int = 0
    left: int = 0


def read_stat(pid: int) -> ProcStat | None:
    """`/proc/<pid>/stat` of `pid` (zombies included), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            raw = stat_file.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ... starttime ...": comm may hold spaces and ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    try:
        return ProcStat(pid, fields[0].decode("ascii", "replace"), int(fields[2]), int(fields[3]), int(fields[19]))
    except ValueError:
        return None


def stamp(pid: int) -> GroupRef | None:
    """The `GroupRef` of a group leader we just started (pid == pgid), or None if it is gone."""
    stat = read_stat(pid)
    return GroupRef(pid, stat.start_ticks) if stat is not None else None


def boot_id() -> str | None:
    """This boot's id (`/proc/sys/kernel/random/boot_id`): start ticks only compare within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot_file:
            return boot_file.read().strip() or None
    except OSError:
        return None


def members(refs: Iterable[GroupRef]) -> dict[GroupRef, list[ProcStat]]:
    """The live processes of each group that are provably ours (see the module doc); one /proc scan."""
    wanted: dict[int, GroupRef] = {}
    for ref in refs:
        leader = read_stat(ref.pgid)
        if leader is not None and leader.start_ticks != ref.start_ticks:
            continue  # the pid was reused: whatever group it leads now is not ours
        wanted[ref.pgid] = ref
    found: dict[GroupRef, list[ProcStat]] = {ref: [] for ref in wanted.values()}
    if not wanted:
        return found
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        stat = read_stat(int(name))
        if stat is None or not stat.live or stat.pgrp != stat.session:
            continue
        ref = wanted.get(stat.pgrp)
        if ref is not None and stat.start_ticks >= ref.start_ticks:
            found[ref].append(stat)
    return found


def terminate(
    refs: Iterable[GroupRef], *, grace_s: float = DEFAULT_GRACE_S, kill_wait_s: float = DEFAULT_KILL_WAIT_S
) -> Stopped:
    """Stop every provably-ours process of `refs`: SIGTERM, up to `grace_s` seconds, then SIGKILL.

    Blocking, bounded by about `grace_s + kill_wait_s` seconds. Groups whose leader pid was reused
    are skipped untouched.

    Returns:
        How many processes were found, how many needed SIGKILL, and how many are still alive
        (unkillable, e.g. in uninterruptible sleep).
    """
    groups = list(dict.fromkeys(refs))
    found = members(groups)
    count = sum(len(procs) for procs in found.values())
    if count == 0:
        return Stopped()
    for ref, procs in found.items():
        _signal_group(ref, procs, signal.SIGTERM)
    if _wait_gone(groups, grace_s):
        return Stopped(found=count)
    stubborn = members(groups)
    killed = sum(len(procs) for procs in stubborn.values())
    for ref, procs in stubborn.items():
        _signal_group(ref, procs, signal.SIGKILL)
    _wait_gone(groups, kill_wait_s)
    left = sum(len(procs) for procs in members(groups).values())
    return Stopped(found=count, killed=killed, left=left)


def _signal_group(ref: GroupRef, procs: Sequence[ProcStat], signum: signal.Signals) -> None:
    """Signal the group: at once through `killpg` while its verified leader still leads it (the
    leader's pid cannot be reused while it exists, even as a zombie), else member by member."""
    if not procs:
        return
    leader = read_stat(ref.pgid)
    if leader is not None and leader.start_ticks == ref.start_ticks and leader.pgrp == ref.pgid and ref.pgid > 1:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(ref.pgid, signum)
        return
    for proc in procs:
        _signal_member(proc, signum)


def _signal_member(proc: ProcStat, signum: signal.Signals) -> None:
    """Signal one member through a pidfd, after checking through it that it is still the same process."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:  # gone already (ESRCH), or no pidfd support: do not guess with a bare pid
        return
    try:
        # Read after opening: the same start time proves the pidfd refers to the process we scanned.
        again = read_stat(proc.pid)
        if again is None or again.start_ticks != proc.start_ticks or again.pgrp != proc.pgrp or not again.live:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal.pidfd_send_signal(pidfd, signum)
    finally:
        os.close(pidfd)


def _wait_gone(refs: Sequence[GroupRef], timeout_s: float) -> bool:
    """Poll until no group has a live member, at most `timeout_s` seconds (no OS event exists for
    "process group empty" of processes that are not our children). True when they are all gone."""
    deadline = time.monotonic() + timeout_s
    interval = _POLL_FIRST_S
    while any(members(refs).values()):
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
        interval = min(interval * 2, _POLL_MAX_S)
    return True


# -- the watchdog ------------------------------------------------------------------------------------


def watch(parent_pid: int, parent_ticks: int, commands_fd: int = 0, *, grace_s: float = DEFAULT_GRACE_S) -> Stopped:
    """Run the watchdog of one host process until that process dies; then stop its groups.

    Args:
        parent_pid: The host process.
        parent_ticks: Its start time (`read_stat(pid).start_ticks`): if that pid is already another
            process, the host is gone and the groups it registered are stopped at once.
        commands_fd: Where `add PGID TICKS` and `del PGID` lines arrive (the host holds the other
            end of the pipe; its death ends the stream).
        grace_s: Seconds between SIGTERM and SIGKILL for the groups left at the end.
    Returns:
        What was stopped (for tests; the program exits afterwards).
    """
    groups: dict[int, GroupRef] = {}
    pending = bytearray()
    pidfd = _open_parent(parent_pid, parent_ticks)
    alive = pidfd is not None or _is_running(parent_pid, parent_ticks)
    while alive:
        watched = [commands_fd] if pidfd is None else [commands_fd, pidfd]
        ready, _, _ = select.select(watched, [], [], None if pidfd is not None else _PARENT_POLL_S)
        if commands_fd in ready:
            chunk = os.read(commands_fd, 65536)
            if not chunk:
                break
            pending += chunk
            _apply(groups, pending)
        # A pidfd turns readable when its process exits; without one, look every half second.
        alive = pidfd not in ready if pidfd is not None else _is_running(parent_pid, parent_ticks)
    if pidfd is not None:
        os.close(pidfd)
    _drain(commands_fd, groups, pending)
    return terminate(groups.values(), grace_s=grace_s)


def _open_parent(pid: int, start_ticks: int) -> int | None:
    """A pidfd of the parent, if it is still the process we were started by; else None."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    if _is_running(pid, start_ticks):
        return pidfd
    os.close(pidfd)
    return None


def _is_running(pid: int, start_ticks: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.live and stat.start_ticks == start_ticks


def _drain(commands_fd: int, groups: dict[int, GroupRef], pending: bytearray) -> None:
    """Apply whatever the parent wrote before it died (a pipe keeps it after its writer is gone)."""
    with contextlib.suppress(OSError):
        os.set_blocking(commands_fd, False)
        while chunk := os.read(commands_fd, 65536):
            pending += chunk
            _apply(groups, pending)
    pending += b"\n"
    _apply(groups, pending)


def _apply(groups: dict[int, GroupRef], pending: bytearray) -> None:
    """Apply the complete lines of `pending` (and remove them); malformed lines are ignored."""
    while (end := pending.find(b"\n")) >= 0:
        words = bytes(pending[:end]).split()
        del pending[: end + 1]
        try:
            if len(words) == 3 and words[0] == b"add":
                ref = GroupRef(int(words[1]), int(words[2]))
                if ref.pgid > 1:
                    groups[ref.pgid] = ref
            elif len(words) == 2 and words[0] == b"del":
                groups.pop(int(words[1]), None)
        except ValueError:
            continue


def _main(argv: Sequence[str]) -> int:
    """`watch PARENT_PID PARENT_TICKS [GRACE_S]`: detach, print our pid on stdout, then watch stdin."""
    if len(argv) not in (3, 4) or argv[0] != "watch":
        sys.stderr.write("usage: reaper.py watch PARENT_PID PARENT_TICKS [GRACE_S]\n")
        return 2
    parent_pid, parent_ticks = int(argv[1]), int(argv[2])
    grace_s = float(argv[3]) if len(argv) == 4 else DEFAULT_GRACE_S
    for signum in (signal.SIGINT, signal.SIGHUP):  # a terminal's signals are not for us
        signal.signal(signum, signal.SIG_IGN)
    # Detach: the launcher reaps the intermediate at once, so the watchdog is nobody's child (it
    # is not counted among the host's processes, and outlives it by design).
    if os.fork() > 0:
        os._exit(0)
    os.write(1, f"{os.getpid()}\n".encode("ascii"))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    with contextlib.suppress(OSError):
        os.chdir("/")  # hold no directory busy
    watch(parent_pid, parent_ticks, 0, grace_s=grace_s)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
