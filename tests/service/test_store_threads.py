"""Store work runs in worker threads, never on the event loop; a current cache answers on the loop
(`service/store_threads.py`, R-10.1, R-10.2; storeloop36). On both backends (files, PostgreSQL).

The event loop is the test's thread: a call that ran on it reports the loop's thread id.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

import anyio
import pytest

from mcp_center.service.gateway_tokens import STALE, GatewayTokens
from mcp_center.service.store_threads import READ_THREADS, commit, in_read_thread, in_write_thread, read_state
from mcp_center.store import GatewayTokenRecord, Store, StoreState

pytestmark = pytest.mark.anyio


def _token(state: StoreState, name: str) -> str:
    state.gateway_tokens[name] = GatewayTokenRecord(
        id=name, name=name, sha256=hashlib.sha256(name.encode()).hexdigest(), created_at="2026-01-01T00:00:00+00:00"
    )
    return name


def _counted_reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread ids `store.read()` is called on from now on (the real read still runs)."""
    threads: list[int] = []
    real = store.read

    def read() -> StoreState:
        threads.append(threading.get_ident())
        return real()

    monkeypatch.setattr(store, "read", read)
    return threads


async def test_a_transaction_runs_in_a_worker_thread_and_a_current_cache_is_read_on_the_loop(
    make_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = make_store(), make_store()
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def change(state: StoreState) -> str:
        ran_on.append(threading.get_ident())
        return _token(state, "t1")

    with anyio.fail_after(10):
        assert await commit(store, change) == "t1"
    assert ran_on and ran_on[0] != loop_thread
    reads = _counted_reads(store, monkeypatch)
    assert store.read_if_fresh() is not None  # its own commit left a current snapshot
    assert "t1" in (await read_state(store)).gateway_tokens
    assert reads == []  # answered from the cache, on the loop: no read, no thread hop
    async with store.changes(["gateway_tokens"]) as changes:
        with other.transaction() as state:  # another process (instance) commits: the cache goes stale
            _token(state, "t2")
        with anyio.fail_after(10):
            while store.read_if_fresh() is not None:  # until the feed has it (a poll, or a notification)
                await changes.next()
    assert "t2" in (await read_state(store)).gateway_tokens
    assert len(reads) == 1 and reads[0] != loop_thread  # the database (or files), in a worker thread


async def test_writes_wait_in_memory_behind_a_busy_write_thread_while_reads_go_on(
    make_store: Callable[[], Store],
) -> None:
    """A write that waits (here: holds the one write thread until released) keeps the writes behind it
    waiting without a thread, and more reads than the read pool holds all complete meanwhile."""
    store = make_store()
    release, holding = threading.Event(), anyio.Event()
    second_ran = threading.Event()
    token = anyio.lowlevel.current_token()

    def hold() -> None:
        anyio.from_thread.run_sync(holding.set, token=token)
        release.wait(10)

    def second(state: StoreState) -> str:
        second_ran.set()
        return _token(state, "second")

    async with anyio.create_task_group() as tg:
        with anyio.fail_after(10):
            tg.start_soon(in_write_thread, hold)
            await holding.wait()
            tg.start_soon(commit, store, second)
            async with anyio.create_task_group() as readers:
                for _ in range(READ_THREADS + 2):
                    readers.start_soon(in_read_thread, store.read)
            assert not second_ran.is_set()  # the write behind the busy one has not started
            release.set()
    assert second_ran.is_set()
    assert "second" in store.read().gateway_tokens


async def test_the_gateway_token_check_never_reads_the_store_on_the_loop(
    make_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token another process created: the cached check answers STALE instead of reading, and
    `refresh()` reads in a worker thread; then the token is identified from memory."""
    store, other = make_store(), make_store()
    tokens = GatewayTokens(store)
    assert tokens.identify_cached("mcpg_nobody") is None  # reads the current snapshot: no tokens yet
    reads = _counted_reads(store, monkeypatch)
    record, token = GatewayTokens(other).create("agent")
    async with store.changes(["gateway_tokens"]) as changes:
        with anyio.fail_after(10):
            while store.read_if_fresh() is not None:  # until the feed has the other process's commit
                await changes.next()
    assert tokens.identify_cached(token) == STALE
    assert reads == []
    with anyio.fail_after(10):
        await tokens.refresh()
    assert len(reads) == 1 and reads[0] != threading.get_ident()
    assert tokens.identify_cached(token) == (record.id, "agent")
    assert len(reads) == 1  # from memory now
