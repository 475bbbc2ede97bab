"""The sandbox as a host that is not root builds it: an unprivileged user namespace (R-11.1).

mcp-center runs as root in these tests, so `StdioTransport` picks the root-host mode. This test
builds the other mode's command line (`build_sandbox_argv` with a `userns` `SandboxSupport`) and
runs it as uid 65534, which is what a host running mcp-center as an ordinary user does; it speaks
raw JSON-RPC to the escape server. It proves the per-sandbox process limit too: RLIMIT_NPROC set
inside the new user namespace counts the sandbox's processes only, even while the same user runs
other processes outside.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from mcp_center.config import SandboxPath, SandboxPolicy
from mcp_center.transports.sandbox import (
    SandboxSpec,
    SandboxSupport,
    build_sandbox_argv,
    sandbox_environment,
    sandbox_support,
)
from mcp_center.transports.stdio import child_environment
from tests.support.sandbox import ESCAPE, SERVERS, SYSTEM_PYTHON, require_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only")

USER = 65534
"""The host user the test plays (nobody): no capabilities, no root-owned files."""


@pytest.fixture(autouse=True)
def _prerequisites() -> None:
    require_sandbox()
    if os.geteuid() != 0:
        pytest.fail("this test plays an unprivileged host from root; run it as root")
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.fail(f"the user-namespace test needs {SYSTEM_PYTHON}, which an unprivileged user may run")


@contextmanager
def host_dir() -> Generator[Path]:
    """A data directory the played user owns (a real user's data dir is in their home)."""
    root = Path(tempfile.mkdtemp(prefix="mcp-userns-"))
    try:
        root.chmod(0o755)
        data = root / "data"
        (data / "mcp").mkdir(parents=True)
        (data / "secret.key").write_text("KEY-MARKER")
        for directory in (data / "sandbox" / "srv" / "home", data / "sandbox" / "srv" / "tmp"):
            directory.mkdir(parents=True, mode=0o700)
        for path in [data, *data.rglob("*")]:
            os.chown(path, USER, USER, follow_symlinks=False)
        yield data
    finally:
        shutil.rmtree(root)


class Peer:
    """Raw JSON-RPC over a child's pipes (the escape server answers requests in order)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._next = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        line = _readline(stdout, timeout_s=60)
        answer: dict[str, Any] = json.loads(line)
        assert answer["id"] == self._next, answer
        return answer["result"]

    def call(self, tool: str, **arguments: Any) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        return not result.get("isError", False), result["content"][0]["text"]


def _readline(stream: IO[bytes], *, timeout_s: float) -> bytes:
    ready, _, _ = select.select([stream], [], [], timeout_s)
    if not ready:
        raise TimeoutError(f"no answer within {timeout_s} s")
    return stream.readline()


@contextmanager
def userns_sandbox(data: Path, policy: SandboxPolicy) -> Generator[Peer]:
    real = sandbox_support()
    support = SandboxSupport("userns", real.bwrap, real.prlimit, None)
    spec = SandboxSpec("srv", policy, data / "sandbox" / "srv", hidden=(str(data),))
    fds: list[int] = []
    for text in (f"mcp:x:{USER}:{USER}::/home/mcp:/bin/sh\n", f"mcp:x:{USER}:\n"):
        fd = os.memfd_create("userns-test")
        os.write(fd, text.encode())
        os.lseek(fd, 0, os.SEEK_SET)
        fds.append(fd)
    argv = build_sandbox_argv(
        spec, [SYSTEM_PYTHON, "-I", str(ESCAPE)], cwd=None, support=support, passwd_fd=fds[0], group_fd=fds[1]
    )
    env = sandbox_environment(child_environment({}), {}, policy)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
        user=USER,
        group=USER,
        extra_groups=[],
        pass_fds=tuple(fds),
    )
    for fd in fds:
        os.close(fd)
    try:
        peer = Peer(proc)
        peer.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}})
        yield peer
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


def test_an_unprivileged_host_confines_its_server_in_a_user_namespace() -> None:
    policy = SandboxPolicy(max_processes=32, paths=[SandboxPath(path=str(SERVERS))])
    with host_dir() as data, userns_sandbox(data, policy) as peer:
        ok, text = peer.call("whoami")
        assert ok, text
        me = json.loads(text)
        assert (me["uid"], me["cap_eff"], me["no_new_privs"]) == (USER, "0000000000000000", "1")
        assert me["pid"] < 10
        ok, text = peer.call("read_file", path=str(data / "secret.key"))
        assert not ok and text.startswith("ENOENT"), text
        ok, text = peer.call("write_file", path="/etc/x")
        assert not ok and text.split(":")[0] in {"EROFS", "EACCES"}, text
        ok, text = peer.call("connect", host="192.0.2.1", port=80)
        assert not ok and text.startswith("ENETUNREACH"), text
        assert peer.call("write_file", path="/home/mcp/kept") == (True, "written")
        ok, text = peer.call("fork_bomb", count=10_000)
        assert not ok and text.startswith("EAGAIN"), text
        assert 0 < int(text.rsplit("after ", 1)[1].split()[0]) < 32
    # (written through the user's own uid, so the host user owns what the server left)


def test_the_process_limit_counts_the_sandbox_alone_not_the_users_other_processes() -> None:
    """RLIMIT_NPROC set inside the user namespace: 40 other processes of the same user do not count."""
    others = [
        subprocess.Popen(["sleep", "60"], user=USER, group=USER, extra_groups=[]) for _ in range(40)
    ]  # the user's other work, outside any sandbox
    try:
        policy = SandboxPolicy(max_processes=32, paths=[SandboxPath(path=str(SERVERS))])
        with host_dir() as data, userns_sandbox(data, policy) as peer:
            ok, text = peer.call("fork_bomb", count=20)
            assert (ok, json.loads(text)) == (True, {"forked": 20})
    finally:
        for proc in others:
            proc.kill()
        for proc in others:
            proc.wait(timeout=10)
