"""The fork server's own process (`python -m tests.support.zygote_server`): import once, fork on request.

`tests/support/zygote.py` (the client, with the design and the audit) starts this module with one end
of a `SOCK_SEQPACKET` socket pair as its control socket. It imports the modules named on its command
line (the host: `mcp_center.cli`, `mcp_center.app`), freezes what they left out of the garbage
collector (`freeze_imported_heap`), says `ready`, then serves requests in one
single-threaded selectors loop (forking a threaded process is unsafe: no thread ever runs here):

- A request is one message: a JSON job (argv, env, cwd, entry, new session) and, as SCM_RIGHTS, the
  caller's reply socket and its stdin, stdout and stderr. The loop forks; the parent sends the
  child's pid and a pidfd of it on the reply socket and watches that pidfd; once it is readable the
  loop reaps the child (`waitpid`) and sends its exit status as `subprocess.Popen` reports it
  (negative: the signal that ended it).
- In the child the loop *returns* the job to `main` rather than running it: `main` closes every fd
  of the fork server (selector, control socket, other children's sockets and pidfds), resets signal
  dispositions, takes the caller's fds as 0, 1 and 2, its cwd, exactly its environment and argv, and
  runs the entry as this interpreter's `__main__` code: the child ends as a normal interpreter does
  (SystemExit's code, non-daemon threads joined, atexit handlers, stdio flushed).
- Launches: the same request also arrives on a connection to the listening socket the client passed
  (its fd on the command line): that is how `tests/support/zygote_launcher.py`, a stdio command the
  host execs, hands over its fds, argv, environment and cwd. Such a child is *tied* to its launcher:
  the loop watches the launcher's end of the reply socket and SIGKILLs the child when it closes (the
  launcher died, even of SIGKILL), and the child gets SIGKILL when the fork server dies
  (`PR_SET_PDEATHSIG`). A connection from another user is refused.
- EOF on the control socket (the client closed it, or its process died) or the parent's pidfd
  turning readable ends the loop: the fork server exits. Children keep running (tests own them; a
  test process that dies has its process guard stop them, see the client), but for tied ones.

Entries: `console:MODULE:FUNC` (what a console script runs: `sys.exit(FUNC())`, argv as given),
`module:NAME` (`python -m NAME`, for argv `[PYTHON, "-m", NAME, ARGS...]`: sys.argv is the module's
file and ARGS, as that interpreter's would be) or `path:SCRIPT` (`python SCRIPT`, for argv
`[PYTHON, SCRIPT, ARGS...]`: sys.argv is SCRIPT and ARGS, and sys.path[0] the script's directory).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Job", "freeze_imported_heap", "main"]

MAX_MESSAGE = 1 << 20
"""Largest request (bytes); an environment is a few KiB."""
STD_FDS = 3
"""Every request carries stdin, stdout and stderr after its reply socket."""
_PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent dies."""
_RESET_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD)


@dataclass
class Job:
    """One child's work, as the loop hands it to `main` in the forked child.

    Attributes:
        argv: `sys.argv` for the entry. env: the whole environment. cwd: the working directory.
        entry: `console:MODULE:FUNC` or `module:NAME`. new_session: `setsid()` first.
        fds: the caller's stdin, stdout, stderr (fds of this process, to become 0, 1, 2).
        tied: it came from a launcher (a connection to the listening socket): it dies with it.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str
    entry: str
    new_session: bool
    fds: list[int]
    tied: bool = False


@dataclass
class _Child:
    pid: int
    pidfd: int
    reply: socket.socket


def _serve(control: socket.socket, parent_pidfd: int, listener: socket.socket | None) -> Job | None:
    """The loop: None when it should end (this is the fork server), a Job in a forked child."""
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ, "control")
    selector.register(parent_pidfd, selectors.EVENT_READ, "parent")
    if listener is not None:
        selector.register(listener, selectors.EVENT_READ, "listener")
    children: dict[int, _Child] = {}  # by pidfd
    ties: dict[int, _Child] = {}  # tied children still watched, by their reply socket's fd
    launches: dict[int, socket.socket] = {}  # accepted launcher connections, by fd, until their request
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                return None
            if key.data == "listener" and listener is not None:
                _accept(listener, selector, launches)
                continue
            if key.data == "tie":  # the launcher's end of the reply socket closed: it died
                child = ties.get(key.fd)
                if child is None or child.reply is not key.fileobj:
                    continue  # reaped earlier in this batch (its fd may be another launch's reply by now)
                del ties[key.fd]
                selector.unregister(child.reply)
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)
                continue
            if key.data == "child":
                child = children.pop(key.fd)
                selector.unregister(child.pidfd)
                if ties.pop(child.reply.fileno(), None) is not None:
                    selector.unregister(child.reply)
                _, status = os.waitpid(child.pid, 0)
                _send(child.reply, {"returncode": os.waitstatus_to_exitcode(status)})
                _close_all([child.pidfd], [child.reply])
                continue
            if key.data == "control":
                try:
                    request = _receive(control)
                except _BadRequest:
                    continue
                if request is None:
                    return None
            else:  # a launcher's connection: one request, then it is closed
                conn = launches.pop(key.fd)
                selector.unregister(conn)
                with conn:
                    try:
                        request = _receive(conn, tied=True)
                    except (_BadRequest, OSError):
                        continue
                if request is None:
                    continue
            job, reply = request
            assert threading.active_count() == 1, "the fork server must stay single-threaded"
            session_r, session_w = os.pipe() if job.new_session else (-1, -1)
            zygote_pid = os.getpid()
            try:
                pid = os.fork()
            except OSError as exc:
                _send(reply, {"error": f"fork failed: {exc}"})
                _close_all([*job.fds, session_r, session_w], [reply])
                continue
            if pid == 0 and job.new_session:
                os.setsid()  # before the caller learns the pid: its process guard registers this group
                _close_all([session_r, session_w], [])
            if pid == 0:  # the child: drop what belongs to the fork server (main closes `control`)
                selector.close()
                owned = [reply, *(c.reply for c in children.values()), *launches.values()]
                _close_all([parent_pidfd, *children], [*owned, *([listener] if listener else [])])
                if job.tied:
                    _die_with(zygote_pid)
                return job
            _close_all(job.fds, [])
            if job.new_session:
                os.close(session_w)
                os.read(session_r, 1)  # EOF once the child has called setsid (or died)
                os.close(session_r)
            pidfd = os.pidfd_open(pid)
            children[pidfd] = _Child(pid, pidfd, reply)
            selector.register(pidfd, selectors.EVENT_READ, "child")
            _send(reply, {"pid": pid}, [pidfd])
            if job.tied:
                ties[reply.fileno()] = children[pidfd]
                selector.register(reply, selectors.EVENT_READ, "tie")


class _BadRequest(Exception):
    """A request that was answered with an error; the loop goes on."""


def _accept(listener: socket.socket, selector: selectors.BaseSelector, launches: dict[int, socket.socket]) -> None:
    """Take a launcher's connection; its one request is read when it arrives. Other users are refused."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
        conn.close()
        return
    launches[conn.fileno()] = conn
    selector.register(conn, selectors.EVENT_READ, "launch")


def _die_with(zygote_pid: int) -> None:
    """In a tied child: SIGKILL when the fork server dies (and at once if it already has)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != zygote_pid:
        os.kill(os.getpid(), signal.SIGKILL)


def _receive(control: socket.socket, *, tied: bool = False) -> tuple[Job, socket.socket] | None:
    """The next request, or None on EOF. A malformed one is answered with an error on its reply socket.
    `tied`: it came from a launcher (see the module doc)."""
    data, fds, _flags, _addr = socket.recv_fds(control, MAX_MESSAGE, STD_FDS + 1)
    if not data and not fds:
        return None
    if not fds:
        raise _BadRequest("a request without its reply socket")
    reply = socket.socket(fileno=fds[0])
    try:
        doc: dict[str, Any] = json.loads(data)
        job = Job(
            argv=[str(a) for a in doc["argv"]],
            env={str(k): str(v) for k, v in doc["env"].items()},
            cwd=str(doc["cwd"]),
            entry=str(doc["entry"]),
            new_session=bool(doc["new_session"]),
            fds=list(fds[1:]),
            tied=tied,
        )
        if len(job.fds) != STD_FDS:
            raise ValueError(f"expected {STD_FDS} std fds, got {len(job.fds)}")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        _send(reply, {"error": f"bad request: {exc!r}"})
        _close_all(list(fds[1:]), [reply])
        raise _BadRequest from exc
    return job, reply


def _send(reply: socket.socket, doc: dict[str, Any], fds: list[int] | None = None) -> None:
    """One JSON message on a reply socket; a caller that has gone away is ignored."""
    with contextlib.suppress(OSError):
        socket.send_fds(reply, [json.dumps(doc).encode()], fds or [])


def _close_all(fds: list[int], sockets: list[socket.socket]) -> None:
    for fd in (fd for fd in fds if fd >= 0):
        with contextlib.suppress(OSError):
            os.close(fd)
    for sock in sockets:
        sock.close()


def _become(job: Job) -> None:
    """In the forked child: drop the fork server's fds and state, take the caller's (see the module doc)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in _RESET_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as every Python interpreter starts
    for target, fd in enumerate(job.fds):
        os.dup2(fd, target)  # the copies are inheritable, as a Popen child's 0, 1, 2 are
    for fd in set(job.fds):
        if fd > 2:
            os.close(fd)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.env)
    time.tzset()  # TZ of the caller's environment
    sys.argv = list(job.argv)
    _reopen_stdio(unbuffered=bool(job.env.get("PYTHONUNBUFFERED")))
    _refresh_consoles()


def _reopen_stdio(*, unbuffered: bool) -> None:
    """New sys.stdin/stdout/stderr over fds 0, 1, 2 with the buffering an interpreter starting on them picks."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old: io.TextIOWrapper = getattr(sys, name)
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        tty = raw.isatty()
        buffered: io.BufferedIOBase = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            buffered,
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=fd == 2 or (tty and fd == 1),
            write_through=unbuffered and fd != 0,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _refresh_consoles() -> None:
    """The CLI's rich consoles (`mcp_center.cli._shared.out`/`err`, built at import) read NO_COLOR,
    COLUMNS, ... and whether stdout is a terminal when built: build them again in place, now."""
    shared = sys.modules.get("mcp_center.cli._shared")
    if shared is None:
        return
    from rich.console import Console  # imported by then, through the CLI

    for console, stderr in ((shared.out, False), (shared.err, True)):
        assert isinstance(console, Console)
        Console.__init__(console, stderr=stderr, **shared.CONSOLE_OPTIONS)


def _run(entry: str) -> None:
    kind, _, target = entry.partition(":")
    if kind == "console":
        module, _, func = target.partition(":")
        sys.exit(getattr(importlib.import_module(module), func)())
    if kind == "module":
        if sys.argv[1:3] != ["-m", target]:
            raise SystemExit(f"zygote: argv must be [PYTHON, '-m', {target!r}, ...], not {sys.argv!r}")
        sys.argv = [target, *sys.argv[3:]]  # as `python -m`: argv[0] becomes the module's file (runpy)
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return
    if kind == "path":
        if sys.argv[1:2] != [target]:
            raise SystemExit(f"zygote: argv must be [PYTHON, {target!r}, ...], not {sys.argv!r}")
        sys.argv = sys.argv[1:]
        sys.path[0] = os.path.dirname(os.path.realpath(target))  # as `python SCRIPT` puts it first
        runpy.run_path(target, run_name="__main__")
        return
    raise SystemExit(f"zygote: unknown entry {entry!r}")


def freeze_imported_heap() -> None:
    """Collect the imports' garbage, then move every object left (the imported host: modules, the SDK's
    and our pydantic models, most of a serve's heap) out of the collector's generations (`gc.freeze`),
    before any fork: CPython's advice for a fork server (see `gc.freeze`).

    Every child inherits these objects. Without this, each child's full collection walked all of them
    again, touching (and so copying) every page they live on: a serve's `freeze_startup_heap` (R-8.3)
    did that once per start, about 0.3 s of CPU each, and an echo or capability server forked from here
    (they never freeze) at each of its full collections. A serve started from here ends up as one
    started by the console script does: everything alive after its start frozen (the imports by the
    fork server, the rest by `freeze_startup_heap`); a child's later garbage is collected as before.
    """
    gc.collect()
    gc.freeze()


def main() -> None:
    """`python -m tests.support.zygote_server CONTROL_FD LISTEN_FD PARENT_PID MODULE...` (see the module
    doc; LISTEN_FD -1: no launches)."""
    control_fd, listen_fd, parent_pid, *modules = sys.argv[1:]
    if os.getppid() != int(parent_pid):
        return  # the parent is gone already
    parent_pidfd = os.pidfd_open(int(parent_pid))
    control = socket.socket(fileno=int(control_fd))
    listener = socket.socket(fileno=int(listen_fd)) if int(listen_fd) >= 0 else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the tests
    for module in modules:
        importlib.import_module(module)
    freeze_imported_heap()
    socket.send_fds(control, [b'{"ready": true}'], [])
    job = _serve(control, parent_pidfd, listener)
    if job is None:
        return
    control.close()
    _become(job)
    _run(job.entry)


if __name__ == "__main__":
    main()
