"""The store's coordination primitives across real processes (R-9.2): the keyed lock (single flight),
the presence of process runs (SIGKILL included), the change feed and the cheap freshness check."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from mcp_center.errors import DataDirInUse, StorageError
from mcp_center.store import FileOwnerLock, GatewayTokenRecord, JsonStore, ServeOwner
from tests.store.test_files import read_line

pytestmark = pytest.mark.anyio

# Another process that takes a keyed lock or announces a run, says "ready", and holds on until stdin closes.
HOLDER = """
import sys, anyio
from pathlib import Path
from mcp_center.store import JsonStore

store = JsonStore(Path(sys.argv[1]))
what, name = sys.argv[2], sys.argv[3]

async def main() -> None:
    if what == "lock":
        async with store.lock(name):
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
    else:
        store.join_instance(name)
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        store.leave_instance(name)

anyio.run(main)
"""


@contextmanager
def holder(directory: Path, what: str, name: str) -> Generator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory), what, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert proc.stdout is not None
        assert read_line(proc.stdout, 20) == "ready\n"
        yield proc
    finally:
        for stream in (proc.stdin, proc.stdout):  # EOF on stdin also ends the holder
            if stream is not None:
                with suppress(BrokenPipeError):
                    stream.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=10)


async def test_a_keyed_lock_held_by_another_process_is_waited_for_and_then_taken(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    with holder(tmp_path, "lock", "oauth-renewal:x") as proc:
        with pytest.raises(StorageError) as caught:
            async with store.lock("oauth-renewal:x", timeout_s=0.3):
                pytest.fail("took a lock another process holds")
        assert caught.value.details["fault"] == "lock_timeout"
        async with store.lock("oauth-renewal:other", timeout_s=1):
            pass  # another key is free
        entered = anyio.Event()

        async def take() -> None:
            async with store.lock("oauth-renewal:x", timeout_s=10):
                entered.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(take)
            await anyio.to_thread.run_sync(_release, proc)
            with anyio.fail_after(10):
                await entered.wait()


async def test_two_tasks_of_one_process_take_a_keyed_lock_one_after_the_other(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    inside: list[str] = []
    overlaps: list[bool] = []

    async def worker(name: str) -> None:
        async with store.lock("k"):
            overlaps.append(bool(inside))
            inside.append(name)
            await anyio.sleep(0.05)  # hold it while the other task tries (the point of the test)
            inside.remove(name)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for name in ("a", "b", "c"):
                tg.start_soon(worker, name)
    assert overlaps == [False, False, False]


async def test_a_cancelled_waiter_stops_waiting_and_leaves_the_lock_free(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    with holder(tmp_path, "lock", "k") as proc:
        with anyio.move_on_after(0.2):
            async with store.lock("k", timeout_s=30):
                pytest.fail("took a held lock")
        await anyio.to_thread.run_sync(_release, proc)
    with anyio.fail_after(5):
        async with store.lock("k", timeout_s=5):
            pass


def test_a_run_is_alive_while_its_process_lives_and_dead_at_once_after_sigkill(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    assert store.instance_alive("never-joined") is False
    assert store.instance_alive("../../etc/passwd") is False
    with holder(tmp_path, "instance", "script-run") as proc:
        assert store.instance_alive("script-run") is True
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert store.instance_alive("script-run") is False
    assert not (tmp_path / ".instances" / "script-run").exists()  # tidied by the one who found it dead


def test_a_run_that_leaves_is_no_longer_alive(tmp_path: Path) -> None:
    with holder(tmp_path, "instance", "cli-run") as proc:
        assert JsonStore(tmp_path).instance_alive("cli-run") is True
        _release(proc)
    assert JsonStore(tmp_path).instance_alive("cli-run") is False


def test_one_run_id_cannot_be_alive_twice(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    store.join_instance("r1")
    try:
        with pytest.raises(ValueError, match="already alive"):
            JsonStore(tmp_path).join_instance("r1")
        with pytest.raises(ValueError, match="instance ids"):
            store.join_instance("no/slashes")
        assert JsonStore(tmp_path).instance_alive("r1") is True
    finally:
        store.leave_instance("r1")


def _token(n: int) -> GatewayTokenRecord:
    return GatewayTokenRecord(id=f"t{n}", name=f"n{n}", sha256="0" * 64, created_at=datetime.now(UTC).isoformat())


async def test_the_change_feed_wakes_for_the_sections_another_process_changed(tmp_path: Path) -> None:
    watcher = JsonStore(tmp_path, poll_s=0.01)
    writer = JsonStore(tmp_path)
    async with watcher.changes(["gateway_tokens", "approvals"]) as changes:
        with writer.transaction() as state:
            state.secrets["mcp.env.x.0123456789abcdef"] = "c"  # not watched
        with writer.transaction() as state:
            state.gateway_tokens["t1"] = _token(1)
        with anyio.fail_after(5):
            assert await changes.next() == frozenset({"gateway_tokens"})


async def test_read_if_fresh_serves_the_cache_until_another_process_commits(tmp_path: Path) -> None:
    mine, theirs = JsonStore(tmp_path), JsonStore(tmp_path)
    with mine.transaction() as state:
        state.gateway_tokens["t1"] = _token(1)
    cached = mine.read_if_fresh()
    assert cached is not None
    assert list(cached.gateway_tokens) == ["t1"]
    stamp = mine.stamp("gateway_tokens")
    for n in range(2, 12):  # commits within one clock tick, the same size each time
        with theirs.transaction() as state:
            state.gateway_tokens = {f"t{n}": _token(n)}
        assert mine.read_if_fresh() is None, f"commit {n} went unnoticed"
        assert list(mine.read().gateway_tokens) == [f"t{n}"]
        assert mine.stamp("gateway_tokens") != stamp
        stamp = mine.stamp("gateway_tokens")


def test_the_store_hands_out_the_owner_lock_of_its_data_directory(tmp_path: Path) -> None:
    """`Store.owner_lock()` is the same lock `serve` claims (`<data dir>/serve.lock`), not a second one."""
    data_dir = tmp_path / "data"
    store = JsonStore(data_dir / "mcp")
    mine = store.owner_lock()
    mine.claim(ServeOwner.this_process())
    try:
        with pytest.raises(DataDirInUse):
            FileOwnerLock(data_dir).claim(ServeOwner.this_process())
        current = store.owner_lock().current()
        assert current is not None
        assert current.pid == os.getpid()
    finally:
        mine.release()
    assert store.owner_lock().current() is None
