"""A fork server ("zygote") for the tests' `mcp-center serve` processes (issue 16: suite time).

A serve start costs about 2.6 s of CPU, 2.5 s of it importing the host (`mcp_center.app`: the SDK's
pydantic models, fastapi, uvicorn...), and the suite starts dozens. The zygote
(`tests/support/zygote_server.py`) imports the host once per pytest process and forks a child per
start, which runs `mcp-center serve ...` (`mcp_center.cli:main`, the console script's entry) without
importing anything again. `spawn_serve` (`tests/support/serve.py`) goes through it unless
`MCP_CENTER_TEST_FORK=0`, which makes it a plain subprocess again.

What a test sees is a real process (`ForkedProcess`, a `tests.support.processes.Process` as a
`subprocess.Popen` is): its own pid; signals delivered through a pidfd (no pid reuse); the exit status
Popen would report (-15 after SIGTERM, as uvicorn re-raises it; -9 after SIGKILL), reaped by the
zygote and sent back; stdout/stderr where the caller said (its fds travel as SCM_RIGHTS and become
the child's 0, 1, 2), stdin /dev/null unless given; the caller's cwd, argv and exactly its
environment; `start_new_session` when asked. The child ends as an interpreter does (atexit, threads
joined, stdio flushed).

Lifetime: one zygote per pytest process (xdist worker), started by the first spawn, stopped at session
end (`close_zygote`, from `tests/conftest.py`; a child a test left running is stopped then). It dies
with its worker: EOF on its control socket, and it watches a pidfd of the worker. It leads a process
group of its own with its children (those not in a session of their own); that group and each
child's own session are registered with a process guard's watchdog of the worker
(`mcp_center.transports.guard.ProcessGuard`, as `tests/support/postgres.py` does): a worker that is
killed takes the zygote and every serve with it. A zygote that dies alone does not take its children
(tests own them and stop them); their handles then wait on the pidfd, and an exit status nobody
reaped is reported as `LOST_STATUS`.

Audit: what the pre-import could make stale in a child. Done by importing `mcp_center.cli` and
`mcp_center.app` with `os.environ` and `os.getcwd` recording every read, then listing threads, atexit
hooks and loggers, and by reading `src/` for module-level reads:

- `src/mcp_center`: no module-level read of os.environ, sys.argv, cwd, time or pids (Settings reads
  the environment when built; `serve` reads argv in `main`). One finding: `mcp_center.cli._shared`
  builds its rich consoles `out` and `err` at import, and a rich Console reads NO_COLOR, FORCE_COLOR,
  COLUMNS, LINES, TTY_* and whether its stream is a terminal when built: the child builds both again
  in place (`_refresh_consoles`).
- Libraries, read at import: typer `TYPER_USE_RICH`; gettext `LANG`/`LANGUAGE`/`LC_*` (click's
  messages); opentelemetry `OTEL_PYTHON_CONTEXT`, `OTEL_PROPAGATORS`, `OTEL_PYTHON_TRACER_PROVIDER`;
  pydantic `PYDANTIC_DISABLE_PLUGINS`; zoneinfo `PYTHONTZPATH`; platformdirs, sysconfig `HOME`,
  `PYTHONUSERBASE`; rich `_IMPORT_CWD` and multiprocessing `ORIGINAL_DIR` (the cwd, used only to
  shorten paths in tracebacks). The tests set none of them per serve (their environment is the
  worker's, `serve_env()`), so they stay as the zygote read them. `TZ` is re-read (`time.tzset`).
- Interpreter state set at start-up stays the zygote's: the str hash seed (all children of one zygote
  share it), the locale, `sys.flags`, `sys.orig_argv`, `sys.path` (its first entry is the repository,
  where the console script's is the venv's bin; PYTHONPATH in a caller's environment changes
  nothing). `random` reseeds itself in a forked child, and `tempfile`'s name sequence checks the
  pid; uuid4, secrets and ssl use the OS's randomness.
- No thread is started by the imports (the zygote asserts it before every fork); the atexit hooks
  registered (logging's, multiprocessing's) are the ones any serve has; no logging is configured at
  import (the root logger has no handler; `mcp_center` has a NullHandler).
- The garbage collector: the zygote collects and freezes (`gc.freeze`) what its imports left before it
  forks (`zygote_server.freeze_imported_heap`), so a child's collections skip the inherited heap; a
  serve ends up frozen as a console-script one does after its `freeze_startup_heap` (R-8.3).

Stdio servers the host starts (issue 16): `launch_command(SCRIPT, ARGS...)` is a stdio command for the
host (`python -I -S tests/support/zygote_launcher.py ADDRESS SCRIPT ARGS...`) that runs `python SCRIPT
ARGS...` as a child of the zygote, which listens for such launches on an abstract Unix socket and
serves only its own user (see the launcher for what the host sees and what differs). Tests about the server's own
process (its pid, group or session, grandchildren, a sandbox) give the host the real command.

Not through the zygote, on purpose: the tests *about* a real process start (the console script, a
refused start that must not import the host, start-up imports and timing: tests/cli/test_startup_imports,
tests/cli/test_scripts_serve, tests/cli/test_serve_log, tests/e2e/test_lifecycle's second start, a
closed standard input, a terminal) spawn `VENV_BIN / "mcp-center"` themselves. The CLI runs that are only
another process (`tests.support.cli.run_cli_process`) and the several-instances tests' instances
(tests/e2e/cluster) are forked by `spawn` like the serves.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from mcp_center.transports.guard import ProcessGuard
from mcp_center.transports.reaper import GroupRef

__all__ = [
    "LOST_STATUS",
    "SERVE_ENTRY",
    "ForkedProcess",
    "Zygote",
    "close_zygote",
    "fork_enabled",
    "launch_command",
    "zygote",
]

REPO = Path(__file__).parents[2]
SERVE_ENTRY = "console:mcp_center.cli:main"
"""What the `mcp-center` console script runs."""
HOST_MODULES = ("mcp_center.cli", "mcp_center.app", "mcp.server.mcpserver")
"""What the zygote imports before its first fork (the host; the SDK's server, for the test servers)."""
LAUNCHER = REPO / "tests" / "support" / "zygote_launcher.py"
LOST_STATUS = 255
"""`returncode` of a child whose zygote died before it could report the child's exit status."""
START_TIMEOUT_S = 120.0
"""Seconds a zygote gets to import the host (10-40 s on a loaded 2-core machine)."""

Redirect = int | IO[Any] | None


def fork_enabled() -> bool:
    """False when `MCP_CENTER_TEST_FORK=0`: spawn plain subprocesses instead."""
    return os.environ.get("MCP_CENTER_TEST_FORK", "1") != "0"


class ForkedProcess:
    """A process the zygote forked, with the part of `subprocess.Popen`'s interface tests use.

    Thread-safe. `returncode` is None while it runs, then its exit code, or minus the signal that
    ended it (as Popen), or `LOST_STATUS` when the zygote died before reporting it.
    """

    def __init__(
        self, args: Sequence[str], pid: int, pidfd: int, reply: socket.socket, on_exit: Callable[[], None]
    ) -> None:
        self.args = list(args)
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._reply: socket.socket | None = reply
        self._on_exit = on_exit
        self._waiting = threading.Lock()  # one collector at a time
        self._pidfd_lock = threading.Lock()  # signals never race the pidfd's close

    def __repr__(self) -> str:
        return f"<ForkedProcess pid={self.pid} returncode={self.returncode} args={self.args!r}>"

    def poll(self) -> int | None:
        """The exit status if it has ended, else None (never blocks)."""
        return self._collect(0.0)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to end and return its exit status.

        Raises:
            subprocess.TimeoutExpired: still running after `timeout` seconds.
        """
        code = self._collect(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        """Signal it (through its pidfd: never another process); nothing once it has ended. Does not
        wait for a `wait` running in another thread."""
        with self._pidfd_lock:
            if self.returncode is None:
                with suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)

    def _collect(self, timeout: float | None) -> int | None:
        with self._waiting:
            deadline = None if timeout is None else time.monotonic() + timeout
            while self.returncode is None:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                watched = self._reply if self._reply is not None else self._pidfd
                ready, _, _ = select.select([watched], [], [], remaining)
                if not ready:
                    return None
                if self._reply is None:  # the zygote is gone, and the child has ended too
                    self._finish(LOST_STATUS)
                    break
                data = self._reply.recv(4096)
                self._reply.close()
                self._reply = None
                if data:
                    self._finish(int(json.loads(data)["returncode"]))
            return self.returncode

    def _finish(self, code: int) -> None:
        with self._pidfd_lock:
            self.returncode = code
            os.close(self._pidfd)
        self._on_exit()


class Zygote:
    """One fork server (see the module doc): `spawn()` forks a child of it; `close()` ends it.

    Thread-safe. Build it with `start()`; `HOST_MODULES` are imported once, there.
    """

    def __init__(
        self, control: socket.socket, proc: subprocess.Popen[bytes], guard: ProcessGuard, launch_address: str
    ) -> None:
        self._control = control
        self._proc = proc
        self._guard = guard
        self.launch_address = launch_address
        """The socket `tests/support/zygote_launcher.py` hands its job to: `@NAME`, an abstract Unix socket
        (`\\0NAME`, no file: nothing is left in the temp dir when a killed worker's zygote is stopped by
        its watchdog); the zygote refuses connections from other users (SO_PEERCRED)."""
        guard.adopt(proc.pid)  # released never: `close` has the watchdog stop what is left in it
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The zygote's pid (it leads its own process group)."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """True until the zygote has exited."""
        return self._proc.poll() is None

    @classmethod
    def start(cls, modules: Sequence[str] = HOST_MODULES) -> Zygote:
        """Start a zygote that imports `modules`; returns once they are imported.

        Raises:
            RuntimeError: it exited or said nothing within `START_TIMEOUT_S` seconds.
        """
        guard = ProcessGuard(grace_s=2.0)  # its own: the process-wide guard's groups are the tests'
        guard.start()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        launch_address = f"@mcp-center-zygote-{os.getpid()}-{secrets.token_hex(8)}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs, listener:
            listener.bind("\0" + launch_address[1:])
            listener.listen(64)
            fds = [theirs.fileno(), listener.fileno()]
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.zygote_server", *map(str, fds), str(os.getpid()), *modules],
                pass_fds=fds,
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # its own group, registered with the guard below
            )
        zygote = cls(ours, proc, guard, launch_address)
        ready, _, _ = select.select([ours], [], [], START_TIMEOUT_S)
        if not ready or ours.recv(4096) != b'{"ready": true}':
            zygote.close()
            raise RuntimeError(f"the test fork server did not start (exit status {proc.poll()})")
        return zygote

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str] | None = None,
        stdin: Redirect = None,
        stdout: Redirect = None,
        stderr: Redirect = None,
        start_new_session: bool = False,
        entry: str = SERVE_ENTRY,
    ) -> ForkedProcess:
        """Fork a child that runs `entry` with `sys.argv = argv` (as `subprocess.Popen(argv, ...)` would
        run the program), exactly `env`, `cwd` (default: this process's). `stdin`/`stdout`/`stderr`: a
        file, an fd, `subprocess.DEVNULL`, None (stdin /dev/null; stdout, stderr this process's), and
        `stderr=subprocess.STDOUT`. `entry`: `console:MODULE:FUNC` or `module:NAME` (`python -m NAME`).

        Raises:
            ValueError: `subprocess.PIPE` (not supported). RuntimeError: the zygote is gone or refused.
        """
        with open(os.devnull, "r+b") as devnull:
            fd_in = _fd(stdin, devnull, default=devnull.fileno())
            fd_out = _fd(stdout, devnull, default=1)
            fd_err = fd_out if stderr == subprocess.STDOUT else _fd(stderr, devnull, default=2)
            job = {
                "argv": list(argv),
                "env": dict(env),
                "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
                "entry": entry,
                "new_session": start_new_session,
            }
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with theirs, self._lock:
                try:
                    socket.send_fds(self._control, [json.dumps(job).encode()], [theirs.fileno(), fd_in, fd_out, fd_err])
                except OSError as exc:
                    ours.close()
                    raise RuntimeError(f"the test fork server is gone: {exc}") from exc
        data, fds, _flags, _addr = socket.recv_fds(ours, 4096, 1)
        answer: dict[str, Any] = json.loads(data) if data else {"error": "no answer"}
        if "pid" not in answer or not fds:
            ours.close()
            raise RuntimeError(f"the test fork server did not start {list(argv)!r}: {answer.get('error')}")
        session: GroupRef | None = self._guard.adopt(answer["pid"]) if start_new_session else None

        def forget() -> None:
            if session is not None:
                self._guard.release(session)

        return ForkedProcess(argv, answer["pid"], fds[0], ours, forget)

    def close(self) -> None:
        """End the zygote (EOF on its control socket), wait for it, and close its guard: the watchdog
        then stops whatever a test left running in its group or in a session the guard registered."""
        self._control.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._guard.close()

    def launch_command(self, script: str | os.PathLike[str], *args: str) -> list[str]:
        """A stdio command (argv) that runs `python SCRIPT ARGS...` as a child of this zygote, through
        `tests/support/zygote_launcher.py` (see there for what the host sees)."""
        return [sys.executable, "-I", "-S", str(LAUNCHER), self.launch_address, os.fspath(script), *args]


def _fd(target: Redirect, devnull: IO[bytes], *, default: int) -> int:
    if target is None:
        return default
    if target == subprocess.PIPE:
        raise ValueError("the test fork server does not make pipes; pass a file or an fd")
    if target == subprocess.DEVNULL:
        return devnull.fileno()
    return target if isinstance(target, int) else target.fileno()


_zygote: Zygote | None = None
_retired: list[Zygote] = []
"""Zygotes that died (killed) while this process runs: their children may still run, owned by tests."""
_zygote_lock = threading.Lock()


def zygote() -> Zygote:
    """This process's zygote, started by the first call (blocking until it has imported the host)."""
    global _zygote
    with _zygote_lock:
        if _zygote is not None and not _zygote.alive:  # killed: a new one; its guard stays until the end
            _retired.append(_zygote)
            _zygote = None
        if _zygote is None:
            _zygote = Zygote.start()
        return _zygote


def launch_command(script: str | os.PathLike[str], *args: str) -> list[str]:
    """The stdio command (argv: the command, then its args) for a host to run `python SCRIPT ARGS...`:
    through this process's zygote (`Zygote.launch_command`, the SDK imported once), or the real
    command with `MCP_CENTER_TEST_FORK=0`. For tests whose server's own process does not matter."""
    if fork_enabled():
        return zygote().launch_command(script, *args)
    return [sys.executable, os.fspath(script), *args]


def close_zygote() -> None:
    """Stop this process's zygote, if one was started, and what its children left (pytest session end)."""
    global _zygote
    with _zygote_lock:
        for each in [*_retired, *([_zygote] if _zygote is not None else [])]:
            each.close()
        _retired.clear()
        _zygote = None
