"""The tests' fork server (tests/support/zygote.py): a forked child looks to a test as a `subprocess.Popen`
child does — its pid, exit status, signals, fds, cwd, exact environment, session — it ends as an
interpreter does, and neither a killed test process nor a killed fork server leaves anything running.
Its launcher (tests/support/zygote_launcher.py), the stdio command a host execs, looks to the host as
the real command does — argv, environment, cwd, stdio and EOF, exit status, signals — and its server
never outlives it.

Most checks run the same probe (`tests/servers/zygote_probe.py`) both ways, forked and as a Popen child,
and compare; the fork server here imports nothing beforehand (the host is not what is tested).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import Process, alive, stop_process, wait_no_descendants
from tests.support.serve import running_host
from tests.support.waiting import eventually_sync
from tests.support.zygote import LOST_STATUS, ForkedProcess, Zygote

ROOT = Path(__file__).parents[1]
PROBE = "tests.servers.zygote_probe"
PROBE_FILE = ROOT / "tests" / "servers" / "zygote_probe.py"
Spawner = Callable[..., Process]


@pytest.fixture(scope="module")
def bare_zygote() -> Generator[Zygote]:
    zygote = Zygote.start(modules=())
    yield zygote
    zygote.close()


@pytest.fixture(params=["forked", "popen"])
def spawn(request: pytest.FixtureRequest, bare_zygote: Zygote) -> Spawner:
    """Start the probe with Popen's keywords (argv after the module name), forked or as a Popen child."""

    def forked(*args: str, **kwargs: Any) -> Process:
        return bare_zygote.spawn([sys.executable, "-m", PROBE, *args], entry=f"module:{PROBE}", **kwargs)

    def popen(*args: str, **kwargs: Any) -> Process:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen([sys.executable, "-m", PROBE, *args], **kwargs)

    return forked if request.param == "forked" else popen


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "ONLY_THIS": "yes", "LANG": "C.UTF-8"}


def test_a_child_has_its_pid_argv_cwd_exact_env_fds_and_exit_status(spawn: Spawner, tmp_path: Path) -> None:
    out, err, given = tmp_path / "out", tmp_path / "err", tmp_path / "in"
    given.write_text("from the caller\n")
    with out.open("wb") as stdout, err.open("wb") as stderr, given.open("rb") as stdin:
        proc = spawn("exit", "7", env=_env(), cwd=tmp_path, stdin=stdin, stdout=stdout, stderr=stderr)
    assert proc.wait(timeout=60) == 7 == proc.returncode == proc.poll()
    facts_line, *rest = out.read_text().splitlines()
    facts = json.loads(facts_line)
    assert facts["pid"] == proc.pid
    assert facts["env"] == _env()  # exactly: nothing of the fork server's own environment
    probe_file = str(ROOT / "tests" / "servers" / "zygote_probe.py")  # sys.argv[0] of `python -m`
    assert (facts["cwd"], facts["argv"], facts["stdin"]) == (
        str(tmp_path),
        [probe_file, "exit", "7"],
        "from the caller\n",
    )
    assert facts["sigterm_default"]
    assert facts["sid"] != facts["pid"]  # no session of its own unless asked
    # the interpreter's ending: the buffered line flushed, a non-daemon thread waited for, atexit run
    assert rest == ["thread joined", "atexit ran"]
    assert err.read_text() == "to stderr\n"


def test_stdin_is_dev_null_unless_given_and_stderr_can_join_stdout(spawn: Spawner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        proc = spawn("exit", "0", env=_env(), cwd=tmp_path, stdout=stdout, stderr=subprocess.STDOUT)
    assert proc.wait(timeout=60) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "to stderr"  # first: stderr is line-buffered, stdout (a file) is not
    assert json.loads(next(line for line in lines if line.startswith("{")))["stdin"] == ""


@pytest.mark.parametrize(("signum", "how"), [(signal.SIGTERM, "terminate"), (signal.SIGKILL, "kill")])
def test_a_signal_ends_it_with_the_status_popen_reports(
    spawn: Spawner, tmp_path: Path, signum: signal.Signals, how: str
) -> None:
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        proc = spawn("wait", env=_env(), cwd=tmp_path, stdout=stdout, stderr=subprocess.DEVNULL)
    _wait_for_line(out)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.05)
    getattr(proc, how)()
    assert proc.wait(timeout=60) == -signum
    proc.send_signal(signal.SIGTERM)  # ended: nothing to signal, no error
    assert proc.returncode == -signum


def test_a_signal_reaches_it_while_another_thread_waits_for_it(spawn: Spawner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        proc = spawn("wait", env=_env(), cwd=tmp_path, stdout=stdout, stderr=subprocess.DEVNULL)
    _wait_for_line(out)
    with ThreadPoolExecutor(1) as pool:
        waited = pool.submit(proc.wait, 60)
        proc.terminate()
        assert waited.result(timeout=60) == -signal.SIGTERM


def test_a_new_session_when_asked(spawn: Spawner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        proc = spawn("exit", "0", env=_env(), cwd=tmp_path, stdout=stdout, start_new_session=True)
    assert proc.wait(timeout=60) == 0
    facts = json.loads(out.read_text().splitlines()[0])
    assert facts["sid"] == facts["pgid"] == proc.pid


def test_a_killed_fork_server_leaves_its_child_to_the_test(tmp_path: Path) -> None:
    zygote = Zygote.start(modules=())
    out = tmp_path / "out"
    try:
        with out.open("wb") as stdout:
            child = zygote.spawn(
                [sys.executable, "-m", PROBE, "wait"], env=_env(), entry=f"module:{PROBE}", stdout=stdout
            )
        _wait_for_line(out)
        os.kill(zygote.pid, signal.SIGKILL)
        assert _gone(zygote.pid)
        assert not zygote.alive
        with pytest.raises(RuntimeError, match="fork server"):
            zygote.spawn([sys.executable, "-m", PROBE, "wait"], env=_env(), entry=f"module:{PROBE}")
        assert child.poll() is None and alive(child.pid)  # the test still owns it
        child.terminate()
        assert child.wait(timeout=60) == LOST_STATUS  # nobody was left to reap it and report its status
        assert not alive(child.pid)
    finally:
        zygote.close()


def test_closing_the_fork_server_stops_what_a_test_left_running(tmp_path: Path) -> None:
    zygote = Zygote.start(modules=())
    out = tmp_path / "out"
    try:
        with out.open("wb") as stdout:
            left = zygote.spawn(
                [sys.executable, "-m", PROBE, "wait"], env=_env(), entry=f"module:{PROBE}", stdout=stdout
            )
        _wait_for_line(out)
    finally:
        zygote.close()
    assert not zygote.alive
    assert left.wait(timeout=30) == LOST_STATUS  # stopped by the guard's watchdog; no zygote left to reap it


HOLDER = f"""
import os, sys
from tests.support.zygote import Zygote
zygote = Zygote.start(modules=())
env = {{"PYTHONPATH": os.getcwd()}}
argv = [sys.executable, "-m", "{PROBE}", "wait"]
same = zygote.spawn(argv, env=env, entry="module:{PROBE}", stdout=2)
own = zygote.spawn(argv, env=env, entry="module:{PROBE}", stdout=2, start_new_session=True)
print(zygote.pid, same.pid, own.pid, flush=True)
print(zygote.launch_address, flush=True)
sys.stdin.read()  # until killed
"""


def test_a_killed_test_process_takes_its_fork_server_and_every_child_with_it() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            pids = [int(pid) for pid in holder.stdout.readline().split()]
            launch_address = holder.stdout.readline().strip()
            assert len(pids) == 3 and all(alive(pid) for pid in pids)
            assert launch_address.startswith("@")  # an abstract socket: no file a killed worker leaves behind
            fds = [os.pidfd_open(pid) for pid in pids]
            try:
                holder.send_signal(signal.SIGKILL)
                holder.wait(timeout=30)
                left = [pid for pid, fd in zip(pids, fds, strict=True) if not _readable(fd, 30.0)]
            finally:
                for fd in fds:
                    os.close(fd)
            assert left == [], f"outlived the killed test process: {left} (of fork server, child, own session)"
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe, pytest.raises(ConnectionRefusedError):
                probe.connect("\0" + launch_address[1:])  # its name went with the fork server
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait(timeout=30)


@pytest.mark.parametrize("fork", ["1", "0"])
def test_spawn_serve_forks_a_serve_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork: str
) -> None:
    monkeypatch.setenv("MCP_CENTER_TEST_FORK", fork)
    with running_host(tmp_path) as host:
        assert isinstance(host.proc, ForkedProcess) == (fork == "1")
        assert host.client.get("/api/mcp/servers").status_code == 200
        cmdline = Path(f"/proc/{host.proc.pid}/cmdline").read_bytes().split(b"\0")
        # a forked serve still runs the fork server's command line; a plain one the console script's
        assert (b"tests.support.zygote_server" in cmdline) == (fork == "1")
    assert host.proc.returncode == -signal.SIGTERM  # uvicorn re-raises SIGTERM after its graceful stop


def test_a_launched_script_sees_and_does_what_the_real_command_would(bare_zygote: Zygote, tmp_path: Path) -> None:
    runs: dict[str, tuple[int, dict[str, Any], list[str], bytes]] = {}
    for how, argv in (
        ("real", [sys.executable, str(PROBE_FILE), "exit", "7"]),
        ("launched", bare_zygote.launch_command(PROBE_FILE, "exit", "7")),
    ):
        with subprocess.Popen(
            argv, env=_env(), cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as proc:
            out, err = proc.communicate(b"from the caller\n", timeout=60)  # its EOF ends the probe's read
        facts_line, *rest = out.decode().splitlines()
        facts = json.loads(facts_line)
        if how == "launched":
            assert facts["ppid"] == bare_zygote.pid != facts["pid"] != proc.pid  # forked, not run in place
        for key in ("pid", "ppid", "sid", "pgid"):
            del facts[key]
        runs[how] = (proc.returncode, facts, rest, err)
    assert runs["launched"] == runs["real"]
    code, facts, rest, err = runs["real"]
    assert (code, facts["argv"], facts["env"], facts["stdin"]) == (
        7,
        [str(PROBE_FILE), "exit", "7"],
        _env(),
        "from the caller\n",
    )
    assert (rest, err) == (["thread joined", "atexit ran"], b"to stderr\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1])
@pytest.mark.parametrize("to", ["launcher", "group"])
def test_a_signal_to_the_launcher_or_its_group_ends_its_server_with_that_status(
    bare_zygote: Zygote, signum: signal.Signals, to: str
) -> None:
    with _launched(bare_zygote) as (launcher, server):
        if to == "group":
            os.killpg(launcher.pid, signum)
        else:
            launcher.send_signal(signum)
        assert launcher.wait(timeout=60) == -signum  # SIGINT too: an unhandled KeyboardInterrupt re-raises it
        assert _gone(server)


@pytest.mark.parametrize("to", ["launcher", "group"])
def test_a_killed_launcher_takes_its_server_with_it(bare_zygote: Zygote, to: str) -> None:
    with _launched(bare_zygote) as (launcher, server):
        if to == "group":
            os.killpg(launcher.pid, signal.SIGKILL)
        else:
            launcher.kill()
        assert launcher.wait(timeout=60) == -signal.SIGKILL
        assert _gone(server)


def test_the_launcher_keeps_none_of_its_servers_stdio(bare_zygote: Zygote) -> None:
    """The host's pipes are the server's alone: their EOF is the server's doing, as with the real command."""
    with _launched(bare_zygote) as (launcher, _server):
        eventually_sync(
            lambda: all(os.readlink(f"/proc/{launcher.pid}/fd/{fd}") == os.devnull for fd in (0, 1, 2)), timeout_s=60
        )


def test_a_signal_before_the_server_exists_reaches_it_once_it_does() -> None:
    zygote = Zygote.start(modules=())
    os.kill(zygote.pid, signal.SIGSTOP)  # it takes no request: the launcher waits for its server
    launcher = subprocess.Popen(zygote.launch_command(PROBE_FILE, "wait"), env=_env(), stdout=subprocess.DEVNULL)
    try:
        eventually_sync(lambda: _catches(launcher.pid, signal.SIGTERM), timeout_s=60)
        launcher.terminate()
        os.kill(zygote.pid, signal.SIGCONT)
        assert launcher.wait(timeout=60) == -signal.SIGTERM
        assert wait_no_descendants(zygote.pid, timeout_s=30) == set()
    finally:
        os.kill(zygote.pid, signal.SIGCONT)
        stop_process(launcher, timeout_s=30)
        zygote.close()


def test_a_killed_fork_server_takes_launched_servers_with_it() -> None:
    zygote = Zygote.start(modules=())
    try:
        with _launched(zygote) as (launcher, server):
            os.kill(zygote.pid, signal.SIGKILL)
            assert _gone(server)
            assert launcher.wait(timeout=60) == LOST_STATUS  # nobody was left to report the status
    finally:
        zygote.close()


def test_without_its_fork_server_the_launcher_runs_the_real_command(tmp_path: Path) -> None:
    zygote = Zygote.start(modules=())
    zygote.close()
    command = zygote.launch_command(PROBE_FILE, "exit", "3")
    with subprocess.Popen(command, env=_env(), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE) as proc:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert json.loads(out.splitlines()[0])["pid"] == proc.pid  # the launcher became the real command


@contextmanager
def _launched(zygote: Zygote) -> Generator[tuple[subprocess.Popen[bytes], int]]:
    """The probe in `wait` mode through the launcher (in a session of its own, as a host starts a stdio
    server); yields the launcher and its server's pid, and stops both if the test did not."""
    launcher = subprocess.Popen(
        zygote.launch_command(PROBE_FILE, "wait"), env=_env(), stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert launcher.stdout is not None
        ready, _, _ = select.select([launcher.stdout], [], [], 60)
        assert ready, "the launched probe said nothing"
        yield launcher, json.loads(launcher.stdout.readline())["pid"]
    finally:
        stop_process(launcher, timeout_s=30)
        if launcher.stdout is not None:
            launcher.stdout.close()


def _catches(pid: int, signum: int) -> bool:
    """True once `pid` has a handler for `signum` (/proc's SigCgt mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(mask >> (signum - 1) & 1)


def _wait_for_line(path: Path) -> None:
    """Until the probe has written its first line (it flushes it in `wait` mode before it pauses)."""
    eventually_sync(lambda: path.read_text().endswith("\n"), timeout_s=60)


def _readable(fd: int, timeout_s: float) -> bool:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    return bool(ready)


def _gone(pid: int) -> bool:
    """True once `pid` has ended (within 30 s)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return _readable(fd, 30.0)
    finally:
        os.close(fd)
