"""The process guard: no stdio server outlives the process that started it (R-2.6, R-9.3).

Real watchdogs, real process groups, and a real host process SIGKILLed in the middle of its work.
A host's death is played either by closing the guard's pipe (`ProcessGuard.close`) or by killing
a separate Python process that runs a `StdioTransport`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_center.store.owner import DirIdentity
from mcp_center.transports import PROCESS_GROUPS_FILE, ProcessGuard, StdioTransport, child_environment
from mcp_center.transports.reaper import GroupRef, Stopped, boot_id, stamp
from tests.support.groups import group_pids, pid_lines, started_group, wait_gone
from tests.support.processes import alive, descendants
from tests.support.sandbox import python_for_sandbox, require_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc")

SERVERS = Path(__file__).resolve().parent.parent / "servers"


def _ref(pid: int) -> GroupRef:
    ref = stamp(pid)
    assert ref is not None
    return ref


def test_the_watchdog_is_nobodys_child_and_stops_the_registered_groups_when_its_host_goes() -> None:
    guard = ProcessGuard(grace_s=0.5)
    with started_group(sleeps=2, ignore_term=True) as kept, started_group(sleeps=1) as released:
        assert guard.start()
        watchdog = guard.watchdog_pid
        assert watchdog is not None and alive(watchdog)
        assert watchdog not in descendants(os.getpid()), "detached: never counted among the host's processes"
        assert guard.adopt(kept.pgid) == _ref(kept.pgid)
        released_ref = guard.adopt(released.pgid)
        assert released_ref is not None
        guard.release(released_ref)
        assert guard.groups == [_ref(kept.pgid)]
        guard.close()  # what the host's death does to the pipe
        assert wait_gone(kept.pids) == []
        assert all(alive(pid) for pid in released.pids)
        assert wait_gone([watchdog]) == [], "the watchdog exits once it has done its job"


def test_a_lost_watchdog_is_replaced_and_told_every_live_group() -> None:
    guard = ProcessGuard(grace_s=0.5)
    with started_group(sleeps=1) as first, started_group(sleeps=1) as second:
        assert guard.start()
        lost = guard.watchdog_pid
        assert lost is not None
        guard.adopt(first.pgid)
        os.kill(lost, signal.SIGKILL)
        assert wait_gone([lost]) == []
        guard.adopt(second.pgid)  # the write finds the pipe broken: the watchdog is known lost
        assert not guard.watching
        assert guard.start()
        assert guard.watchdog_pid not in (None, lost)
        guard.close()
        assert wait_gone(first.pids + second.pids) == []


HOST_SCRIPT = """
import sys, anyio
from mcp_center.transports import StdioTransport, child_environment

async def main() -> None:
    async with StdioTransport(sys.argv[1:], env=child_environment({})) as (read, write):
        print("spawned", flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


def test_a_sigkilled_host_leaves_no_server_process_and_no_grandchild(tmp_path: Path) -> None:
    """The server ignores end-of-input and SIGTERM and has grandchildren: only the watchdog can stop it."""
    pidfile = tmp_path / "pids"
    server = [sys.executable, str(SERVERS / "stubborn_stdio.py"), "--pidfile", str(pidfile), "--ignore-term"]
    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT, *server], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        ready, _, _ = select.select([host.stdout], [], [], 30)
        assert ready and host.stdout.readline().strip() == "spawned"
        [everything] = pid_lines(pidfile)
        assert all(alive(pid) for pid in everything)
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=10)
        # SIGTERM is ignored by the leader: the watchdog's grace (2 s) and SIGKILL fit in 5 s.
        assert wait_gone(everything, 5.0) == []
    finally:
        if host.poll() is None:
            host.kill()
        host.wait(timeout=10)
        if host.stdout is not None:
            host.stdout.close()


PAUSED_HOST_SCRIPT = """
import json, sys, anyio
from pathlib import Path
from mcp_center.config import SandboxPath, SandboxPolicy
from mcp_center.transports import ProcessGuard, SandboxSpec, StdioTransport, child_environment

class PausedAtAdopt(ProcessGuard):
    def adopt(self, pid):  # the host stops here for good: as if SIGKILLed before it registered
        print("adopting", pid, flush=True)
        sys.stdin.read()
        return super().adopt(pid)

async def main() -> None:
    sandbox = json.loads(sys.argv[1])
    spec = None if sandbox is None else SandboxSpec(
        "paused", SandboxPolicy(paths=[SandboxPath(**entry) for entry in sandbox["paths"]]), Path(sandbox["root"])
    )
    stdio = StdioTransport(sys.argv[2:], env=child_environment({}), guard=PausedAtAdopt(grace_s=0.2), sandbox=spec)
    async with stdio:
        await anyio.sleep_forever()

anyio.run(main)
"""


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unconfined", "sandboxed"])
def test_a_host_killed_before_it_registered_its_server_leaves_no_process_and_the_server_never_ran(
    tmp_path: Path, sandboxed: bool
) -> None:
    """The host dies between starting the server (bubblewrap, when sandboxed) and telling its
    watchdog (issue 16, R-9.3): the process is held at the exec gate until then, so it exits
    without running the server's code. The server ignores end-of-input and SIGTERM."""
    pidfile = tmp_path / "out" / "pids"
    pidfile.parent.mkdir()
    python, paths = python_for_sandbox()
    server = [python, str(SERVERS / "stubborn_stdio.py"), "--pidfile", str(pidfile), "--ignore-term"]
    sandbox = None
    if sandboxed:
        require_sandbox()
        readable = [{"path": entry.path} for entry in paths] + [{"path": str(SERVERS)}]
        sandbox = {
            "root": str(tmp_path / "sandbox"),
            "paths": [*readable, {"path": str(pidfile.parent), "writable": True}],
        }
    host = subprocess.Popen(
        [sys.executable, "-c", PAUSED_HOST_SCRIPT, json.dumps(sandbox), *server],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    leader = 0
    try:
        assert host.stdout is not None
        ready, _, _ = select.select([host.stdout], [], [], 30)
        word, pid = host.stdout.readline().split() if ready else ("", "0")
        assert word == "adopting", "the host never reached adopt"
        leader = int(pid)
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=10)
        assert wait_gone([leader], 5.0) == [], "the server outlived its host"
        assert group_pids(leader) == []
        assert not pidfile.exists(), "the server's own code ran before its group was registered"
    finally:
        if host.poll() is None:
            host.kill()
        host.wait(timeout=10)
        for stream in (host.stdin, host.stdout):
            if stream is not None:
                stream.close()
        for member in group_pids(leader) if leader else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(member, signal.SIGKILL)


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=10)
    return child.pid


def _record(
    path: Path,
    *groups: GroupRef,
    boot: str | None = None,
    writer: GroupRef | None = None,
    directory: Path | None = None,
) -> None:
    """A previous owner's record at `path`: written by `writer` (pid, start ticks; None: an older
    mcp-center's record with a dead writer's pid only) for `directory` (None: no directory)."""
    doc: dict[str, object] = {
        "version": 1,
        "pid": writer.pgid if writer is not None else _dead_pid(),
        "boot_id": boot_id() if boot is None else boot,
        "groups": [{"pgid": g.pgid, "start_ticks": g.start_ticks} for g in groups]
        + [{"pgid": "x"}, {"pgid": 1, "start_ticks": 0}, "junk"],
    }
    if writer is not None:
        doc["start_ticks"] = writer.start_ticks
    if directory is not None:
        identity = DirIdentity.of(directory)
        assert identity is not None
        doc["directory"] = identity.to_doc()
    path.write_text(json.dumps(doc))


def test_take_over_stops_leftovers_of_a_dead_owner_but_never_a_reused_pid(tmp_path: Path) -> None:
    record = tmp_path / PROCESS_GROUPS_FILE
    guard = ProcessGuard(grace_s=0.5)
    with started_group(sleeps=2, ignore_term=True) as leftover, started_group(sleeps=1) as unrelated:
        real = _ref(unrelated.pgid)
        _record(record, _ref(leftover.pgid), GroupRef(real.pgid, real.start_ticks - 1))
        writer = json.loads(record.read_text())["pid"]
        taken = guard.take_over(record)
        assert (taken.previous_pid, taken.groups, taken.stopped) == (writer, 2, Stopped(found=3, killed=3))
        assert wait_gone(leftover.pids, 0.1) == []
        assert all(alive(pid) for pid in unrelated.pids)
        mine = json.loads(record.read_text())  # now it is this process's record
        assert (mine["groups"], mine["pid"], mine["start_ticks"]) == ([], os.getpid(), _ref(os.getpid()).start_ticks)
        assert DirIdentity.from_doc(mine["directory"]) == DirIdentity.of(tmp_path)
        guard.stop_recording()
        assert not record.exists()


def test_take_over_leaves_alone_the_groups_of_a_live_owner_named_by_a_copied_record(tmp_path: Path) -> None:
    """`cp -a` of a live serve's directory: its record names groups of a serve that still runs (issue 16)."""
    record = tmp_path / PROCESS_GROUPS_FILE
    with started_group(sleeps=1) as owner, started_group(sleeps=1) as servers:
        _record(record, _ref(servers.pgid), writer=_ref(owner.pgid), directory=tmp_path)
        taken = ProcessGuard(grace_s=0.2).take_over(record)
        assert (taken.previous_pid, taken.groups, taken.stopped, taken.skipped) == (
            owner.pgid,
            0,
            Stopped(),
            "owner_alive",
        )
        assert all(alive(pid) for pid in servers.pids)
        assert json.loads(record.read_text())["pid"] == os.getpid()


def test_take_over_of_an_older_record_without_a_start_time_spares_a_live_pid(tmp_path: Path) -> None:
    """A record of an mcp-center before issue 16 names its writer by pid only: a live pid may be that
    serve, so nothing is stopped (a dead one: see the first take-over test)."""
    record = tmp_path / PROCESS_GROUPS_FILE
    with started_group(sleeps=1) as owner, started_group(sleeps=1) as servers:
        _record(record, _ref(servers.pgid), writer=_ref(owner.pgid))
        doc = json.loads(record.read_text())
        del doc["start_ticks"]
        record.write_text(json.dumps(doc))
        taken = ProcessGuard(grace_s=0.2).take_over(record)
        assert (taken.stopped, taken.skipped) == (Stopped(), "owner_alive")
        assert all(alive(pid) for pid in servers.pids)


def test_take_over_reaps_when_the_writers_pid_now_names_another_process(tmp_path: Path) -> None:
    record = tmp_path / PROCESS_GROUPS_FILE
    with started_group(sleeps=1) as reused, started_group(sleeps=1) as leftover:
        then = _ref(reused.pgid)
        _record(record, _ref(leftover.pgid), writer=GroupRef(then.pgid, then.start_ticks - 1), directory=tmp_path)
        taken = ProcessGuard(grace_s=0.2).take_over(record)
        assert (taken.skipped, taken.stopped.found) == (None, 2)
        assert wait_gone(leftover.pids, 2.0) == []
        assert all(alive(pid) for pid in reused.pids)


def test_take_over_leaves_alone_a_record_written_for_another_directory_but_follows_a_renamed_one(
    tmp_path: Path,
) -> None:
    copy, original = tmp_path / "copy", tmp_path / "original"
    copy.mkdir()
    original.mkdir()
    record = copy / PROCESS_GROUPS_FILE
    with started_group(sleeps=1) as servers:
        _record(record, _ref(servers.pgid), directory=original)  # its writer is dead: still not ours
        taken = ProcessGuard(grace_s=0.2).take_over(record)
        assert (taken.groups, taken.stopped, taken.skipped) == (0, Stopped(), "other_directory")
        assert all(alive(pid) for pid in servers.pids)

        _record(original / PROCESS_GROUPS_FILE, _ref(servers.pgid), directory=original)
        moved = tmp_path / "moved"
        original.rename(moved)  # same device and inode: the same directory under another name
        taken = ProcessGuard(grace_s=0.2).take_over(moved / PROCESS_GROUPS_FILE)
        assert (taken.skipped, taken.stopped.found) == (None, 2)
        assert wait_gone(servers.pids, 2.0) == []


def test_take_over_ignores_a_record_of_another_boot(tmp_path: Path) -> None:
    record = tmp_path / PROCESS_GROUPS_FILE
    with started_group(sleeps=1) as group:
        _record(record, _ref(group.pgid), boot="another-boot")
        taken = ProcessGuard().take_over(record)
        assert (taken.groups, taken.stopped) == (0, Stopped())
        assert all(alive(pid) for pid in group.pids)


@pytest.mark.anyio
async def test_a_recording_guard_lists_each_server_group_while_it_runs(tmp_path: Path) -> None:
    record = tmp_path / PROCESS_GROUPS_FILE
    guard = ProcessGuard(grace_s=0.5)
    guard.take_over(record)
    stdio = StdioTransport(
        [sys.executable, str(SERVERS / "silent_stdio.py"), "--grandchild"],
        env=child_environment({}),
        grace_s=0.2,
        kill_timeout_s=0.5,
        guard=guard,
    )
    try:
        with anyio.fail_after(15):
            async with stdio:
                assert stdio.pid is not None
                listed = json.loads(record.read_text())
                assert listed["groups"] == [{"pgid": stdio.pid, "start_ticks": _ref(stdio.pid).start_ticks}]
                assert listed["watchdog_pid"] == guard.watchdog_pid is not None
            assert json.loads(record.read_text())["groups"] == []
            assert guard.groups == []
    finally:
        guard.stop_recording()
        guard.close()
    assert not record.exists()


def test_the_record_follows_a_data_directory_renamed_while_it_runs_and_never_makes_the_old_path(
    tmp_path: Path,
) -> None:
    data, moved = tmp_path / "data", tmp_path / "moved"
    data.mkdir()
    guard = ProcessGuard(grace_s=0.2)
    guard.take_over(data / PROCESS_GROUPS_FILE)
    try:
        data.rename(moved)
        with started_group(sleeps=1) as group:
            ref = guard.adopt(group.pgid)
            assert ref is not None
            guard.save()
            assert not data.exists(), "the old path was made again"
            listed = json.loads((moved / PROCESS_GROUPS_FILE).read_text())
            assert listed["groups"] == [{"pgid": ref.pgid, "start_ticks": ref.start_ticks}]
            assert DirIdentity.from_doc(listed["directory"]) == DirIdentity(str(data), *_dev_ino(moved))
            guard.release(ref)
            guard.save()
    finally:
        guard.stop_recording()
    assert not (moved / PROCESS_GROUPS_FILE).exists()
    assert not data.exists()


def _dev_ino(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino
