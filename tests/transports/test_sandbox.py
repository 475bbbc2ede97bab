"""A hostile stdio server inside the bubblewrap sandbox (R-11.1): every escape attempt fails.

Loopback tier with real processes: `tests/servers/escape_stdio.py` runs in a real sandbox through
`StdioTransport`, tries one forbidden thing per tool call, and reports the kernel's answer. The
tests run as root here, so they also prove the root-host mode: the server runs as its own
unprivileged uid without capabilities (`transports/sandbox.py`). The user-namespace mode of other
hosts is driven directly in `test_sandbox_userns.py`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.client import Client

from mcp_center.config import SandboxPath, SandboxPolicy
from mcp_center.errors import ServerUnreachable
from mcp_center.transports import ProcessGuard, StdioTransport
from mcp_center.transports.sandbox import (
    OFFLINE_ENV,
    SANDBOX_ENV_VARS,
    SANDBOX_HOME,
    SANDBOX_TMP,
    SandboxSpec,
    sandbox_environment,
    sandbox_support,
    sandbox_uid,
)
from mcp_center.transports.stdio import child_environment
from tests.support.groups import wait_gone
from tests.support.processes import alive
from tests.support.sandbox import escape_command, require_sandbox

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only"),
]

SERVER_ID = "escape"


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


@dataclass
class Sandboxed:
    """A running sandboxed escape server and what the test can see of it."""

    client: Client
    transport: StdioTransport
    spec: SandboxSpec
    stderr: list[str] = field(default_factory=list[str])

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        """(ok, text) of one tool call."""
        with anyio.fail_after(60):
            result = await self.client.call_tool(tool, arguments)
        item = result.content[0]
        assert isinstance(item, types.TextContent)
        return not result.is_error, item.text


def data_dir_with_secrets(tmp_path: Path) -> Path:
    """A data directory laid out as mcp-center's, with a key file and secrets.json holding markers."""
    data = tmp_path / "data"
    (data / "mcp").mkdir(parents=True)
    (data / "secret.key").write_text("KEY-MARKER")
    (data / "mcp" / "secrets.json").write_text('{"secrets": {"x": "SECRET-MARKER"}}')
    for path in (data / "secret.key", data / "mcp" / "secrets.json"):
        path.chmod(0o600)
    return data


@asynccontextmanager
async def sandboxed(
    data: Path,
    *,
    paths: list[SandboxPath] | None = None,
    env: dict[str, str] | None = None,
    guard: ProcessGuard | None = None,
    stamp: str = "",
    **policy: Any,
) -> AsyncGenerator[Sandboxed]:
    """Run the escape server in a sandbox whose home lives in `data` and which hides `data`
    (`stamp`: its creation stamp, which names its home's directory and, with the id, its uid)."""
    argv, needed = escape_command()
    sandbox_policy = SandboxPolicy(paths=[*needed, *(paths or [])], **policy)
    root = data / "sandbox" / SERVER_ID / stamp
    spec = SandboxSpec(SERVER_ID, sandbox_policy, root, hidden=(str(data),), stamp=stamp)
    configured = env or {}
    run = Sandboxed(None, None, spec)  # pyright: ignore[reportArgumentType]  # client and transport filled in below
    transport = StdioTransport(
        argv,
        env=sandbox_environment(child_environment(configured), configured, sandbox_policy),
        sandbox=spec,
        on_stderr=run.stderr.append,
        grace_s=1.0,
        kill_timeout_s=0.5,
        guard=guard,
    )
    run.transport = transport
    with anyio.fail_after(120):  # start, the test's calls and the close, together
        async with Client(transport, mode="legacy", cache=None) as client:
            run.client = client
            yield run


@contextmanager
def listener() -> Generator[tuple[int, list[socket.socket], threading.Event]]:
    """A TCP listener on the host's 127.0.0.1 (a stand-in for serve's port); yields (port, accepted,
    an event set at the first accepted connection)."""
    accepted: list[socket.socket] = []
    first = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)
            first.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted, first
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in accepted:
            conn.close()


def let_in(directory: Path) -> None:
    """pytest makes its temp directories 0700; on a root host the server's own uid must be let in."""
    directory.chmod(0o755)


async def wait_for_pids_with(marker: str, timeout_s: float = 10.0) -> list[int]:
    """Host pids of live processes whose command line holds `marker`, once there is at least one
    (bounded by `timeout_s`; the process was started by the sandboxed server a moment ago)."""

    def poll() -> list[int]:
        deadline = time.monotonic() + timeout_s
        while not (found := host_pids_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return found

    found = await anyio.to_thread.run_sync(poll)
    assert found, f"no process with {marker} within {timeout_s} s"
    return found


def host_pids_with(marker: str) -> list[int]:
    """Host pids of live processes whose command line holds `marker`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


# ----- no view of the data directory -----------------------------------------------------------------


async def test_the_key_file_and_secrets_json_cannot_be_read_or_even_found(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    async with sandboxed(data) as box:
        for path in (data / "secret.key", data / "mcp" / "secrets.json"):
            ok, text = await box.call("read_file", path=str(path))
            assert not ok and text.startswith("ENOENT"), text
        ok, text = await box.call("list_dir", path=str(tmp_path))
        assert not ok and text.startswith("ENOENT"), "not even the data directory's parent is there"


async def test_a_bound_parent_of_the_data_directory_shows_it_empty(tmp_path: Path) -> None:
    """A policy path that contains the data directory cannot reveal it: a tmpfs covers it."""
    data = data_dir_with_secrets(tmp_path)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "README").write_text("visible")
    let_in(tmp_path)
    async with sandboxed(data, paths=[SandboxPath(path=str(tmp_path))]) as box:
        assert await box.call("read_file", path=str(tmp_path / "project" / "README")) == (True, "visible")
        assert await box.call("list_dir", path=str(data)) == (True, "[]")
        ok, text = await box.call("read_file", path=str(data / "secret.key"))
        assert not ok and text.startswith("ENOENT"), text


async def test_another_servers_home_is_not_visible(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    other_home = data / "sandbox" / "other" / "home"
    other_home.mkdir(parents=True)
    (other_home / "notes").write_text("OTHER-MARKER")
    async with sandboxed(data) as box:
        ok, text = await box.call("read_file", path=str(other_home / "notes"))
        assert not ok and text.startswith("ENOENT"), text
        ok, listing = await box.call("list_dir", path="/home")
        assert ok and json.loads(listing) == ["mcp"]


# ----- writes ----------------------------------------------------------------------------------------


async def test_writes_outside_the_home_fail_and_the_home_is_private_and_kept(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    outside = tmp_path / "outside.txt"
    async with sandboxed(data) as box:
        for path in ("/usr/escape", "/etc/escape", "/escape", str(outside), str(data / "mcp" / "servers.json")):
            ok, text = await box.call("write_file", path=path, text="x")
            assert not ok and text.split(":")[0] in {"EROFS", "EACCES", "ENOENT"}, (path, text)
        assert await box.call("write_file", path=f"{SANDBOX_HOME}/notes", text="kept") == (True, "written")
        assert await box.call("write_file", path=f"{SANDBOX_TMP}/scratch", text="tmp") == (True, "written")
    assert not outside.exists()
    assert (box.spec.home_dir / "notes").read_text() == "kept"
    assert (box.spec.tmp_dir / "scratch").read_text() == "tmp"
    assert not (data / "mcp" / "servers.json").exists()
    async with sandboxed(data) as again:  # the next run of the same server finds its home as it left it
        assert await again.call("read_file", path=f"{SANDBOX_HOME}/notes") == (True, "kept")


async def test_a_read_only_path_is_readable_and_a_writable_one_writable(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    shared, output = tmp_path / "shared", tmp_path / "output"
    shared.mkdir()
    (shared / "in.txt").write_text("input")
    output.mkdir()
    if os.geteuid() == 0:  # the server runs as its own uid: the writable directory must be its
        os.chown(output, sandbox_uid(SERVER_ID), sandbox_uid(SERVER_ID))
    paths = [SandboxPath(path=str(shared)), SandboxPath(path=str(output), writable=True)]
    async with sandboxed(data, paths=paths) as box:
        assert await box.call("read_file", path=str(shared / "in.txt")) == (True, "input")
        ok, text = await box.call("write_file", path=str(shared / "new.txt"))
        assert not ok and text.startswith("EROFS"), text
        assert await box.call("write_file", path=str(output / "out.txt"), text="done") == (True, "written")
    assert (output / "out.txt").read_text() == "done"
    assert not (shared / "new.txt").exists()


ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="servers run as uids of their own on root hosts only")
STAMP_A, STAMP_B = "20261206T010000000000Z", "20261206T020000000000Z"


@ROOT_ONLY
async def test_a_server_added_again_under_its_id_cannot_write_what_the_old_one_left_in_its_paths(
    tmp_path: Path,
) -> None:
    """R-11.1 (inst36): the old and the new server of one id run as different uids (id and stamp),
    so the new one cannot overwrite a file the old one wrote into their shared writable path."""
    data = data_dir_with_secrets(tmp_path)
    output = tmp_path / "output"
    output.mkdir(mode=0o777)
    output.chmod(0o777)  # both uids may create files here; each file stays its writer's
    paths = [SandboxPath(path=str(output), writable=True)]
    async with sandboxed(data, paths=paths, stamp=STAMP_A) as old:
        assert await old.call("write_file", path=str(output / "old.txt"), text="old") == (True, "written")
    assert (output / "old.txt").stat().st_uid == sandbox_uid(SERVER_ID, STAMP_A)
    async with sandboxed(data, paths=paths, stamp=STAMP_B) as new:
        ok, text = await new.call("write_file", path=str(output / "old.txt"), text="new")
        assert not ok and text.startswith("EACCES"), text
        assert await new.call("write_file", path=str(output / "new.txt"), text="new") == (True, "written")
    assert (output / "old.txt").read_text() == "old"
    assert (output / "new.txt").stat().st_uid == sandbox_uid(SERVER_ID, STAMP_B) != sandbox_uid(SERVER_ID, STAMP_A)


@ROOT_ONLY
async def test_at_the_upgrade_a_servers_home_and_its_files_in_its_paths_follow_its_new_uid(tmp_path: Path) -> None:
    """R-11.1 (inst36): a home (and files in a writable path) of the uid of the id alone, as before
    the stamp counted: the first start with the stamped uid gives them to it, so the server reads and
    writes what it left; a file of another uid in the path stays that uid's."""
    data = data_dir_with_secrets(tmp_path)
    legacy, new_uid = sandbox_uid(SERVER_ID), sandbox_uid(SERVER_ID, STAMP_A)
    home = data / "sandbox" / SERVER_ID / STAMP_A / "home"
    (home / ".cache" / "pkg").mkdir(parents=True, mode=0o700)
    (home / ".cache" / "pkg" / "index").write_text("cached")
    output = tmp_path / "output"
    output.mkdir()
    (output / "mine.txt").write_text("mine")
    (output / "other.txt").write_text("other")
    for path in (home, home / ".cache", home / ".cache" / "pkg", home / ".cache" / "pkg" / "index"):
        os.chown(path, legacy, legacy)
        path.chmod(0o700 if path.is_dir() else 0o600)
    for path in (output, output / "mine.txt"):
        os.chown(path, legacy, legacy)
    (output / "other.txt").chmod(0o644)  # root's
    paths = [SandboxPath(path=str(output), writable=True)]
    async with sandboxed(data, paths=paths, stamp=STAMP_A) as box:
        assert await box.call("read_file", path=f"{SANDBOX_HOME}/.cache/pkg/index") == (True, "cached")
        assert await box.call("write_file", path=f"{SANDBOX_HOME}/.cache/pkg/index", text="again") == (True, "written")
        assert await box.call("write_file", path=str(output / "mine.txt"), text="still mine") == (True, "written")
        ok, text = await box.call("write_file", path=str(output / "other.txt"), text="x")
        assert not ok and text.startswith("EACCES"), text
    assert (output / "mine.txt").read_text() == "still mine"
    assert {p.stat().st_uid for p in (output, output / "mine.txt", home / ".cache" / "pkg")} == {new_uid}
    assert (output / "other.txt").stat().st_uid == 0


# ----- network ---------------------------------------------------------------------------------------


async def test_without_network_the_hosts_loopback_and_the_outside_are_unreachable(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    with listener() as (port, accepted, _):
        async with sandboxed(data, network="none") as box:
            ok, text = await box.call("connect", host="127.0.0.1", port=port)
            assert not ok and text.startswith("ECONNREFUSED"), "127.0.0.1 inside is the sandbox's own loopback"
            ok, text = await box.call("connect", host="192.0.2.1", port=80)  # TEST-NET-1: routable nowhere
            assert not ok and text.startswith("ENETUNREACH"), text
        assert accepted == [], "nothing reached the host's port"


async def test_with_egress_the_server_reaches_the_hosts_network(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    with listener() as (port, _, first):
        async with sandboxed(data, network="egress") as box:
            assert await box.call("connect", host="127.0.0.1", port=port) == (True, "connected")
        assert await anyio.to_thread.run_sync(first.wait, 5.0), "the host's listener accepted it"


# ----- resource limits -------------------------------------------------------------------------------


async def test_a_fork_bomb_stops_at_the_process_limit_and_the_server_keeps_serving(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    async with sandboxed(data, max_processes=32) as box:
        ok, text = await box.call("fork_bomb", count=10_000)
        assert not ok and text.startswith("EAGAIN"), text
        forked = int(text.rsplit("after ", 1)[1].split()[0])
        assert 0 < forked < 32, text
        assert await box.call("echo", text="still here") == (True, "still here")


async def test_memory_beyond_the_limit_fails_and_the_server_keeps_serving(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    async with sandboxed(data, memory_mb=256) as box:
        ok, text = await box.call("allocate", mb=512)
        assert not ok and text.startswith("MemoryError"), text
        assert await box.call("allocate", mb=16) == (True, f"allocated {16 * 1024 * 1024} bytes")


async def test_open_files_beyond_the_limit_fail(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    async with sandboxed(data, max_open_files=64) as box:
        ok, text = await box.call("open_files", count=100)
        assert not ok and text.startswith("EMFILE"), text
        assert await box.call("open_files", count=10) == (True, "opened 10")


# ----- identity, environment, process tree -------------------------------------------------------------


async def test_the_server_runs_without_rights_in_its_own_namespaces_with_a_minimal_environment(
    tmp_path: Path,
) -> None:
    data = data_dir_with_secrets(tmp_path)
    async with sandboxed(data, env={"CONFIGURED": "yes"}) as box:
        ok, text = await box.call("whoami")
    assert ok, text
    me = json.loads(text)
    if sandbox_support().mode == "setuid":  # mcp-center runs as root: the server does not
        assert (me["uid"], me["gid"]) == (sandbox_uid(SERVER_ID), sandbox_uid(SERVER_ID))
        assert me["cap_bnd"] == "0000000000000000"
    assert me["uid"] != 0 and me["cap_eff"] == "0000000000000000"
    assert me["no_new_privs"] == "1"
    assert me["pid"] < 10, "a PID namespace of its own"
    assert me["hostname"] == "mcp-sandbox"
    assert (me["home"], me["cwd"]) == (SANDBOX_HOME, SANDBOX_HOME)
    allowed = {*SANDBOX_ENV_VARS, *OFFLINE_ENV, "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "CONFIGURED"}
    assert set(me["env"]) <= allowed | {"PWD", "LC_CTYPE", "SHLVL", "_"}, set(me["env"]) - allowed
    assert "CONFIGURED" in me["env"] and "HOSTNAME" not in me["env"]


async def test_a_process_that_leaves_the_group_still_dies_with_the_sandbox(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    marker = f"escape-marker-{uuid.uuid4().hex}"
    async with sandboxed(data) as box:
        ok, text = await box.call("escape_group", marker=marker)
        assert ok, text
        escaped = await wait_for_pids_with(marker)
        assert len(escaped) == 1
        assert os.getpgid(escaped[0]) != box.transport.pid, "it left the server's process group"
    assert wait_gone(escaped) == [], "the PID namespace ended with bubblewrap"


async def test_a_dead_host_takes_the_sandbox_with_it(tmp_path: Path) -> None:
    """The watchdog (R-9.3) stops bubblewrap's group; the kernel ends the namespace behind it."""
    data = data_dir_with_secrets(tmp_path)
    marker = f"escape-marker-{uuid.uuid4().hex}"
    guard = ProcessGuard(grace_s=0.5)
    async with sandboxed(data, guard=guard) as box:
        ok, _ = await box.call("escape_group", marker=marker)
        assert ok
        escaped = await wait_for_pids_with(marker)
        leader = box.transport.pid
        assert leader is not None and guard.watching
        guard.close()  # what the host's death does to the watchdog's pipe
        assert wait_gone([leader, *escaped]) == []


# ----- set-up errors ----------------------------------------------------------------------------------


async def test_a_command_or_path_the_sandbox_cannot_show_is_refused_before_anything_runs(tmp_path: Path) -> None:
    data = data_dir_with_secrets(tmp_path)
    hidden_program = tmp_path / "tool"
    hidden_program.write_text("#!/bin/sh\n")
    hidden_program.chmod(0o755)
    spec = SandboxSpec(SERVER_ID, SandboxPolicy(), data / "sandbox" / SERVER_ID, hidden=(str(data),))
    transport = StdioTransport([str(hidden_program)], env={}, sandbox=spec)
    with anyio.fail_after(30), pytest.raises(ServerUnreachable) as caught:
        async with transport:
            pass
    assert caught.value.details["reason"] == "spawn_failed"
    assert caught.value.details["sandbox_path"] == str(hidden_program)
    missing = SandboxSpec(
        SERVER_ID, SandboxPolicy(paths=[SandboxPath(path=str(tmp_path / "absent"))]), spec.root, spec.hidden
    )
    with anyio.fail_after(30), pytest.raises(ServerUnreachable) as caught:
        async with StdioTransport(["/usr/bin/true"], env={}, sandbox=missing):
            pass
    assert caught.value.details["sandbox_path"] == str(tmp_path / "absent")
