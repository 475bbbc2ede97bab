"""The process guard: no stdio server outlives the process that started it (R-2.6, R-9.3).

A stdio server runs in its own session and process group, and closing its transport signals the
whole group. That covers every orderly stop, but not a host that is SIGKILLed (or crashes) while
servers run: a server that ignores end-of-input, and any grandchild in its group, would live on
with PPID 1. `PR_SET_PDEATHSIG` does not solve it: it is not inherited by grandchildren, it fires
when the *thread* that forked exits (anyio's worker threads come and go), and it would have to be
set between fork and exec, which anyio's `open_process` has no hook for.

So each process that starts stdio servers gets one **watchdog** (`reaper.py watch`), started the
first time it needs one: a detached stdlib-only Python process that is told, through a pipe, the
process group of every server this process starts (`adopt`) and stops (`release`). When this
process dies in any way, the pipe ends and its pidfd turns readable; the watchdog then SIGTERMs the
groups still registered, waits `grace_s`, SIGKILLs what is left and exits. A server's own code
runs only once its group is registered: while a watchdog runs, it is started through the exec gate
(`gate.py`), which `adopt` precedes and which exits without running anything if this process dies
first. Otherwise a SIGKILL between the spawn and `adopt` (the event loop's steps after the exec,
while the server already runs) left that server behind for good. It verifies every group
before signalling (pid *and* start time, see `reaper`), so a reused pid is never hit. If the
watchdog itself dies, the next spawn starts a new one and registers every live group again.

`serve` also keeps a **record** of its groups, `<data dir>/process-groups.json` (written
atomically on every change, mode 0600), for the one case the watchdog cannot cover: host and
watchdog killed together. The next `serve` on that data directory, once it owns it
(`store.owner`), reads the record and stops what is provably left (`take_over`) before it starts
any server, so nothing runs twice. CLI commands (`test`, `call`) have the watchdog but keep no
record: only the owner of a data directory writes in it.

The record names its writer (pid *and* start time) and the directory it was written for
(`store.owner.DirIdentity`). `take_over` stops nothing when the writer still runs (a `cp -a` of a
live data directory carries the live serve's record: its groups are that serve's, not leftovers) or
when the record was written for another directory (a copy has another inode; a renamed directory
keeps its device and inode and stays the same directory). A record of an older mcp-center has
neither: its groups are stopped only when the writer's pid is not alive (issue 16). The record is
written through a descriptor of the directory (`/proc/self/fd/N`): after a `mv` of the directory
while serve runs, it is kept up to date where the directory now is, and the old path is not made
again.

Linux only (/proc, pidfd); elsewhere the guard does nothing and stops at the transports' own closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp_center.models import is_array, is_object
from mcp_center.store.files import atomic_write
from mcp_center.store.owner import DirIdentity
from mcp_center.transports.gate import CLOSED_STATUS, READY, command_line
from mcp_center.transports.reaper import DEFAULT_GRACE_S, GroupRef, Stopped, boot_id, read_stat, stamp, terminate

__all__ = ["PROCESS_GROUPS_FILE", "ProcessGuard", "TakeOver", "process_guard"]

logger = logging.getLogger(__name__)

PROCESS_GROUPS_FILE: Final = "process-groups.json"
"""serve's record of the process groups it runs, in the data directory."""
RECORD_VERSION: Final = 1
"""Version 1 gained `start_ticks` and `directory` in place (issue 16): readers treat them as optional."""
_REAPER: Final = Path(__file__).with_name("reaper.py")
_WATCHDOG_START_S: Final = 10.0
"""Seconds the watchdog gets to start and report its pid."""


@dataclass(frozen=True)
class TakeOver:
    """What `ProcessGuard.take_over` found in a previous owner's record and stopped.

    Attributes:
        previous_pid: The pid of the serve that wrote the record, or None when there was none.
        groups: Groups the record listed for this boot (others are gone with the reboot) and that
            were taken over (0 when `skipped`).
        stopped: Processes found alive and provably ours, and what it took to stop them.
        skipped: Why the record's groups were left alone, or None: `"owner_alive"` (its writer
            still runs: a copied record of a live serve) or `"other_directory"` (it was written for
            another data directory) (R-9.3, issue 16).
    """

    previous_pid: int | None = None
    groups: int = 0
    stopped: Stopped = field(default_factory=Stopped)
    skipped: str | None = None


class ProcessGuard:
    """Registers the process groups this process starts with its watchdog (and, for serve, a record).

    Thread-safe; every method is synchronous and quick except `start` (once, about 30 ms: it
    starts the watchdog) and `take_over` (bounded by `grace_s` + 2 s when leftovers resist).
    Use the process-wide instance, `process_guard()`; tests may build their own.

    Args:
        grace_s: Seconds the watchdog (and `take_over`) wait between SIGTERM and SIGKILL.
    """

    def __init__(self, *, grace_s: float = DEFAULT_GRACE_S) -> None:
        self._grace_s = grace_s
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._groups: dict[int, GroupRef] = {}
        self._write_fd: int | None = None
        self._watchdog_pid: int | None = None
        self._unavailable = not sys.platform.startswith("linux")
        self._gated: bool | None = None  # the exec gate's check: not run yet
        self._record: Path | None = None
        self._record_dir: DirIdentity | None = None
        self._record_ticks: int | None = None
        self._record_fd: int | None = None

    def set_grace(self, grace_s: float) -> None:
        """Wait `grace_s` seconds between SIGTERM and SIGKILL from now on: in `take_over`, and in the
        watchdog started next (one already running keeps its own), R-9.3. Hosts call it with
        `Settings.stop_grace_s` (`MCP_CENTER_STOP_GRACE_S`) before they start a server.

        Raises:
            ValueError: `grace_s` is negative.
        """
        if grace_s < 0:
            raise ValueError("grace_s must not be negative")
        self._grace_s = grace_s

    @property
    def watching(self) -> bool:
        """True while a watchdog runs for this process."""
        return self._write_fd is not None

    @property
    def watchdog_pid(self) -> int | None:
        """The watchdog's pid while one runs, else None."""
        return self._watchdog_pid if self._write_fd is not None else None

    @property
    def groups(self) -> list[GroupRef]:
        """The groups registered now (started and not yet released)."""
        with self._lock:
            return list(self._groups.values())

    def start(self) -> bool:
        """Start the watchdog unless one runs; register every known group with a new one.

        Blocking (call it through `anyio.to_thread.run_sync` from async code). Never raises: if
        the watchdog cannot start, that is logged once (`guard.watchdog_unavailable`) and servers
        still run, protected by their transports' own closes only.

        Returns:
            True when a watchdog runs.
        """
        with self._start_lock:  # one start at a time; `adopt` and `release` stay free meanwhile
            if self._write_fd is not None:
                return True
            if self._unavailable:
                return False
            check = _start_gate_check() if self._gated is None else None  # runs while the watchdog starts
            started = self._spawn_watchdog()
            if check is not None:
                self._gated = _gate_started(*check)
            if started is None:
                self._unavailable = True
                return False
            with self._lock:
                self._write_fd, self._watchdog_pid = started
                for ref in self._groups.values():
                    self._send_locked(f"add {ref.pgid} {ref.start_ticks}\n")
                return self.watching

    @property
    def gated(self) -> bool:
        """True when servers start through the exec gate (`gate.py`) while a watchdog runs: `start()`
        checked once that the gate's interpreter starts here. If it does not (say, the host's
        Python needs something `-I -S` leaves out), servers are started directly and adopted after
        (logged once as `guard.gate_unavailable`): a host killed in between leaves them (R-9.3)."""
        return bool(self._gated)

    @property
    def startable(self) -> bool:
        """True when `start()` has work to do: no watchdog runs, and one can run on this system."""
        return self._write_fd is None and not self._unavailable

    def adopt(self, pid: int) -> GroupRef | None:
        """Register the group led by `pid`, a server this process just started with `setsid`.

        Call `start()` first (before the spawn), then this at once after the spawn and before the
        server's code may run (the exec gate's go, `_guarded_spawn`): the watchdog learns of the
        group before the server does anything. Then `save()` (off the event loop).

        Returns:
            The group's reference for `release`, or None when the leader is already gone
            (or not on Linux).
        """
        ref = stamp(pid)
        if ref is None:
            return None
        with self._lock:
            self._groups[ref.pgid] = ref
            self._send_locked(f"add {ref.pgid} {ref.start_ticks}\n")
        return ref

    def release(self, ref: GroupRef) -> None:
        """Forget a group once it is gone (its transport closed); then `save()`."""
        with self._lock:
            if self._groups.get(ref.pgid) == ref:
                del self._groups[ref.pgid]
                self._send_locked(f"del {ref.pgid}\n")

    @property
    def recording(self) -> bool:
        """True while the groups are recorded in a data directory (serve only)."""
        return self._record is not None

    def save(self) -> None:
        """Write the record (if recording) as it is now; blocking (fsync), never raises."""
        with self._save_lock:
            with self._lock:
                path, groups, watchdog = self._record, list(self._groups.values()), self.watchdog_pid
                directory, ticks = self._record_dir, self._record_ticks
            if path is None:
                return
            doc: dict[str, Any] = {
                "version": RECORD_VERSION,
                "pid": os.getpid(),
                "start_ticks": ticks,
                "directory": directory.to_doc() if directory is not None else None,
                "boot_id": boot_id(),
                "watchdog_pid": watchdog,
                "groups": [{"pgid": ref.pgid, "start_ticks": ref.start_ticks} for ref in groups],
            }
            try:
                atomic_write(path, (json.dumps(doc) + "\n").encode("utf-8"), mode=0o600)
            except OSError:
                logger.warning("guard.record_failed", extra={"path": str(path)}, exc_info=True)

    def take_over(self, path: Path) -> TakeOver:
        """Stop what a previous owner's record at `path` left running, then record there ourselves.

        Call it only while owning the data directory (`store.owner`), before any server starts.
        Owning it does not prove the record's writer dead: a copy of a live serve's directory
        carries that serve's record. So the record's groups are left alone (logged as
        `guard.record_skipped`) when its writer still runs (same pid and start time; for a record
        of an older mcp-center without a start time, any live process with that pid) or when it
        was written for another directory than `path`'s (`DirIdentity`: device and inode). Else
        what it names either is gone, was reused (skipped: `reaper.members`) or is a leftover to
        stop (R-9.3, issue 16). Blocking, bounded by about `grace_s` + 2 s; never raises (an
        unreadable record counts as empty, logged).

        Returns:
            What the record held and what was stopped (logged as `guard.reaped` when anything was).
        """
        record = _read_record(path)
        here = DirIdentity.of(path.parent)
        skipped = _skip_reason(record, here)
        previous_pid, refs = record.pid, record.refs
        if skipped is not None:
            if refs:
                logger.warning(
                    "guard.record_skipped",
                    extra={"previous_pid": previous_pid, "groups": len(refs), "reason": skipped, "path": str(path)},
                )
            refs = []
        mine = set(self.groups)
        refs = [ref for ref in refs if ref not in mine]
        stopped = terminate(refs, grace_s=self._grace_s) if refs else Stopped()
        if stopped.found:
            logger.warning(
                "guard.reaped",
                extra={
                    "previous_pid": previous_pid,
                    "groups": len(refs),
                    "processes": stopped.found,
                    "killed": stopped.killed,
                    "left": stopped.left,
                },
            )
        me = read_stat(os.getpid())
        fd, target = _follow(path)
        with self._lock:
            old_fd, self._record_fd = self._record_fd, fd
            self._record, self._record_dir = target, here
            self._record_ticks = me.start_ticks if me is not None else None
        if old_fd is not None:
            os.close(old_fd)
        self.save()
        return TakeOver(previous_pid=previous_pid, groups=len(refs), stopped=stopped, skipped=skipped)

    def stop_recording(self) -> None:
        """End the record (serve stops): remove it when no group is left, else leave it for the next owner."""
        with self._save_lock:
            with self._lock:
                path, self._record, self._record_dir = self._record, None, None
                fd, self._record_fd = self._record_fd, None
                empty = not self._groups
            if path is not None and empty:
                with contextlib.suppress(OSError):
                    path.unlink()
            if fd is not None:
                os.close(fd)

    def close(self) -> None:
        """Close the pipe to the watchdog: it stops every group still registered and exits.

        What happens anyway when this process exits; tests use it to play a host's death.
        """
        with self._lock:
            fd, self._write_fd = self._write_fd, None
            self._watchdog_pid = None
        if fd is not None:
            os.close(fd)

    # -- internals -------------------------------------------------------------------------------

    def _send_locked(self, line: str) -> None:
        """Tell the watchdog one line; a dead or stuck one is dropped (the next `start` replaces it)."""
        fd = self._write_fd
        if fd is None:
            return
        try:
            os.write(fd, line.encode("ascii"))
        except OSError:  # BrokenPipeError: the watchdog died; BlockingIOError: it stopped reading
            logger.warning("guard.watchdog_lost", extra={"watchdog_pid": self._watchdog_pid})
            self._write_fd, self._watchdog_pid = None, None
            os.close(fd)

    def _spawn_watchdog(self) -> tuple[int, int] | None:
        """Start `reaper.py watch` for this process; (write end of its pipe, its pid), or None."""
        me = read_stat(os.getpid())
        if me is None or not hasattr(os, "pidfd_open"):
            logger.warning("guard.watchdog_unavailable", extra={"reason": "no /proc or pidfd"})
            return None
        read_fd, write_fd = os.pipe()  # both close-on-exec: no server inherits the write end
        argv = [sys.executable, "-I", "-S", str(_REAPER), "watch", str(me.pid), str(me.start_ticks)]
        argv.append(repr(self._grace_s))
        try:
            launcher = subprocess.Popen(  # noqa: S603 - our own interpreter and file, no shell
                argv,
                stdin=read_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C for this process is not for it
                cwd="/",
            )
        except OSError:
            os.close(write_fd)
            logger.warning("guard.watchdog_unavailable", extra={"reason": "spawn_failed"}, exc_info=True)
            return None
        finally:
            os.close(read_fd)
        pid = _read_pid(launcher)
        if pid is None:
            os.close(write_fd)
            logger.warning("guard.watchdog_unavailable", extra={"reason": "no_report"})
            return None
        os.set_blocking(write_fd, False)  # a stuck watchdog must never block the event loop
        logger.debug("guard.watchdog_started", extra={"watchdog_pid": pid})
        return write_fd, pid


def _start_gate_check() -> tuple[subprocess.Popen[bytes], socket.socket] | None:
    """Start the exec gate without a go (`_gate_started` tells whether it works); None when even
    its spawn failed (logged)."""
    ours, theirs = socket.socketpair()
    try:
        gate = subprocess.Popen(  # noqa: S603 - our own interpreter and file, no shell
            command_line(theirs.fileno(), ["true"]),
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd="/",
        )
    except OSError:
        ours.close()
        logger.warning("guard.gate_unavailable", extra={"reason": "spawn_failed"}, exc_info=True)
        return None
    finally:
        theirs.close()
    return gate, ours


def _gate_started(gate: subprocess.Popen[bytes], ours: socket.socket) -> bool:
    """True when the gate reported it started and exited with `CLOSED_STATUS` at our end of file
    (about 10 ms, overlapping the watchdog's start), else False (logged as `guard.gate_unavailable`)."""
    with ours:
        ours.settimeout(_WATCHDOG_START_S)
        try:
            ready = ours.recv(len(READY))
        except OSError:
            ready = b""
    try:
        _, error = gate.communicate(timeout=_WATCHDOG_START_S)
    except subprocess.TimeoutExpired:
        gate.kill()
        _, error = gate.communicate()
    if ready == READY and gate.returncode == CLOSED_STATUS:
        return True
    logger.warning(
        "guard.gate_unavailable",
        extra={"status": gate.returncode, "stderr": error.decode("utf-8", "replace")[-500:]},
    )
    return False


def _read_pid(launcher: subprocess.Popen[bytes]) -> int | None:
    """The pid the detached watchdog reports on stdout; reap the launcher (it exits at once)."""
    stdout = launcher.stdout
    assert stdout is not None
    try:
        ready, _, _ = select.select([stdout], [], [], _WATCHDOG_START_S)
        line = stdout.readline() if ready else b""
    finally:
        stdout.close()
        try:
            launcher.wait(timeout=_WATCHDOG_START_S)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
    try:
        pid = int(line.strip())
    except ValueError:
        return None
    return pid if pid > 1 else None


def _follow(path: Path) -> tuple[int | None, Path]:
    """(descriptor of `path`'s directory, the record's path through it): a data directory renamed
    while serve runs keeps its record up to date, and its old path is never created again (an
    `atomic_write` there would make it). Off Linux, or when the directory cannot be opened: (None, path).
    """
    if not sys.platform.startswith("linux"):
        return None, path
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None, path
    return fd, Path(f"/proc/self/fd/{fd}") / path.name


@dataclass(frozen=True)
class _Record:
    """A previous owner's record as read: its writer (pid, start ticks), directory and groups of this boot."""

    pid: int | None = None
    start_ticks: int | None = None
    directory: DirIdentity | None = None
    refs: list[GroupRef] = field(default_factory=list[GroupRef])


def _skip_reason(record: _Record, here: DirIdentity | None) -> str | None:
    """Why `take_over` must leave `record`'s groups alone, or None when they are a dead owner's leftovers."""
    if record.pid is not None and record.pid > 0:
        writer = read_stat(record.pid)
        if writer is not None and writer.live and record.start_ticks in (None, writer.start_ticks):
            return "owner_alive"  # a start time that differs: the pid was reused, the writer is gone
    if record.directory is not None and (
        here is None or (record.directory.device, record.directory.inode) != (here.device, here.inode)
    ):
        return "other_directory"
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read_record(path: Path) -> _Record:
    """A record at `path`; no groups when absent, unreadable or of another boot."""
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return _Record()
    except (OSError, ValueError, UnicodeDecodeError):
        logger.warning("guard.record_unreadable", extra={"path": str(path)})
        return _Record()
    if not is_object(doc):
        return _Record()
    writer, ticks = _int(doc.get("pid")), _int(doc.get("start_ticks"))
    directory = DirIdentity.from_doc(doc.get("directory"))
    if doc.get("boot_id") != boot_id():
        return _Record(writer)  # start ticks only compare within one boot; a reboot ended those groups
    refs: list[GroupRef] = []
    entries = doc.get("groups")
    for entry in entries if is_array(entries) else []:
        if not is_object(entry):
            continue
        pgid, start = _int(entry.get("pgid")), _int(entry.get("start_ticks"))
        if pgid is not None and start is not None and pgid > 1 and start >= 0:
            refs.append(GroupRef(pgid, start))
    return _Record(writer, ticks, directory, refs)


_guard_lock = threading.Lock()
_guard: ProcessGuard | None = None


def process_guard() -> ProcessGuard:
    """The guard of this process (created on first use; its watchdog starts on the first `start()`)."""
    global _guard
    with _guard_lock:
        if _guard is None:
            _guard = ProcessGuard()
        return _guard
