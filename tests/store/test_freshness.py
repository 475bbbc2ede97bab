"""Stamps shared within a gateway request batch (`store/freshness.py`, R-1.2, R-8.3, issue 12).

The guarantee under test: a change another process committed before a request arrived is seen by
that request, even in the same event-loop step as an earlier look; looks that may share a `stat`
share it; a commit of this process is seen by its next look; outside a request every look stats.
The other process is a real one (`python -c` committing through its own `JsonStore`).
"""

from __future__ import annotations

import asyncio
import errno
import subprocess
import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_center.service import GatewayTokens
from mcp_center.store import JsonStore, freshness
from mcp_center.store.files import Disk, Stamp
from mcp_center.store.freshness import request_arrived, serving_request
from mcp_center.store.journal import JOURNAL_FILE

pytestmark = pytest.mark.anyio

_CREATE_TOKEN = """
import sys
from pathlib import Path
from mcp_center.service import GatewayTokens
from mcp_center.store import JsonStore
store = JsonStore(Path(sys.argv[1]))
store.open()
GatewayTokens(store).create("from-another-process")
"""


def _other_process_creates_a_token(directory: Path) -> None:
    """Commit a change to gateway_tokens.json from another process; returns once that process has."""
    done = subprocess.run([sys.executable, "-c", _CREATE_TOKEN, str(directory)], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every `stat` the fresh stamps make (paths), in order."""
    made: list[str] = []
    for name in ("file_stamp", "rare_file_stamp"):  # the journal's look is `rare_file_stamp`
        monkeypatch.setattr(freshness, name, _counting(getattr(freshness, name), made))
    return made


def _counting(real: Callable[[str | Path], Stamp], made: list[str]) -> Callable[[str | Path], Stamp]:
    def counting(path: str | Path) -> Stamp:
        made.append(str(path))
        return real(path)

    return counting


@contextmanager
def _patched(target: object, name: str, value: object) -> Generator[None]:
    """`target.name` is `value` within the block (an instance attribute, removed afterwards)."""
    setattr(target, name, value)
    try:
        yield
    finally:
        delattr(target, name)


def _store(tmp_path: Path) -> JsonStore:
    store = JsonStore(tmp_path / "mcp")
    store.open()
    GatewayTokens(store).create("here")
    return store


async def test_looks_of_one_request_in_one_step_share_their_stats(tmp_path: Path, stats: list[str]) -> None:
    """A batch: another request arrived after the one looking, so its stamps are kept for the turn."""
    store = _store(tmp_path)
    stats.clear()
    mark = request_arrived()
    request_arrived()  # a later request of the same batch
    with serving_request(mark):
        first = store.stamp("gateway_tokens")
        assert len(stats) == 2  # the section's file and the journal
        assert store.stamp("gateway_tokens") == first
        store.stamp("servers")
        assert len(stats) == 3  # only servers.json is new: the journal's stat is shared
        await anyio.lowlevel.checkpoint()  # a later step of the loop: stats again
        assert store.stamp("gateway_tokens") == first
        assert len(stats) == 5


async def test_the_request_that_arrived_last_keeps_nothing_and_schedules_no_end_of_turn(
    tmp_path: Path, stats: list[str]
) -> None:
    """A lone request (concurrency 1) stats at every look and leaves no callback on the loop: its
    call costs no event-loop iteration of the freshness turn's own (issue 12). Once a later request
    arrived, the same request's looks are kept again (and the turn's end is scheduled)."""
    store = _store(tmp_path)
    loop = asyncio.get_running_loop()
    scheduled: list[object] = []
    real_call_soon = loop.call_soon

    def counting_call_soon(callback: Callable[..., object], *args: object, **kwargs: Any) -> asyncio.Handle:
        scheduled.append(callback)
        return real_call_soon(callback, *args, **kwargs)

    stats.clear()
    mark = request_arrived()
    with serving_request(mark), _patched(loop, "call_soon", counting_call_soon):
        first = store.stamp("gateway_tokens")
        assert store.stamp("gateway_tokens") == first
        assert len(stats) == 4  # nothing kept: both looks made their own stats
        assert scheduled == []
        request_arrived()  # a later request: a batch, worth keeping for
        assert store.stamp("gateway_tokens") == first
        assert store.stamp("gateway_tokens") == first
        assert len(stats) == 6
        assert len(scheduled) == 1  # the turn's end


async def test_a_change_by_another_process_before_a_request_arrived_is_seen_by_it_in_the_same_step(
    tmp_path: Path, stats: list[str]
) -> None:
    """The direct route checks the token inside the loop step that read the request (no await
    between an earlier request's look and this one's): its arrival mark keeps it fresh."""
    store = _store(tmp_path)
    with serving_request(request_arrived()):
        before = store.stamp("gateway_tokens")
    _other_process_creates_a_token(store.directory)  # the writer returned; then the next request arrives
    with serving_request(request_arrived()):
        assert store.stamp("gateway_tokens") != before
    # A request served across steps (it arrived before the change) sees it from its next step on.
    with serving_request(request_arrived()):
        seen = store.stamp("gateway_tokens")
        _other_process_creates_a_token(store.directory)
        await anyio.lowlevel.checkpoint()
        assert store.stamp("gateway_tokens") != seen
    assert stats  # the looks above went through the fresh stamps


async def test_a_commit_of_this_process_is_seen_by_its_next_look_in_the_same_step(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with serving_request(request_arrived()):
        before = store.stamp("gateway_tokens")
        assert store.read_if_fresh() is not None
        GatewayTokens(store).create("another")
        assert store.stamp("gateway_tokens") != before
        fresh = store.read_if_fresh()
        assert fresh is not None
        assert sorted(record.name for record in fresh.gateway_tokens.values()) == ["another", "here"]


async def test_outside_a_request_every_look_stats(tmp_path: Path, stats: list[str]) -> None:
    store = _store(tmp_path)
    stats.clear()
    store.stamp("servers")
    store.stamp("servers")
    assert len(stats) == 4
    before = store.stamp("gateway_tokens")
    _other_process_creates_a_token(store.directory)
    assert store.stamp("gateway_tokens") != before


def test_a_worker_thread_keeps_nothing(tmp_path: Path, stats: list[str]) -> None:
    """No running loop marks a thread's steps: within a request's context there, every look stats."""
    store = _store(tmp_path)
    stats.clear()
    with serving_request(request_arrived()):
        store.stamp("servers")
        store.stamp("servers")
    assert len(stats) == 4


def test_a_turn_its_closed_loop_never_ended_keeps_nothing_on_the_next_loop(tmp_path: Path) -> None:
    """A library may close a loop whose step kept a stamp before the step's end ran, then serve on a
    new loop in the same context: the stamp kept there is not reused."""
    store = _store(tmp_path)
    first = asyncio.new_event_loop()
    seen: list[object] = []
    with serving_request(request_arrived()):
        first.call_soon(lambda: seen.append(store.stamp("gateway_tokens")))
        first.call_soon(first.stop)  # stops before the end of the step the look scheduled
        first.run_forever()
        first.close()
        _other_process_creates_a_token(store.directory)

        async def look() -> object:
            return store.stamp("gateway_tokens")

        assert asyncio.run(look()) != seen[0]


class _KilledAfterCommitPoint(Disk):
    """Fails every rename after the journal's own (the commit point): a writer killed there."""

    def __init__(self) -> None:
        self.renames = 0

    def replace(self, source: Path, target: Path) -> None:
        self.renames += 1
        if self.renames > 1:
            raise OSError(errno.EIO, "injected after the commit point", str(target))
        super().replace(source, target)


async def test_a_journal_left_after_its_commit_point_is_seen_by_the_next_look_and_rolled_forward(
    tmp_path: Path,
) -> None:
    """The journal's look (`rare_file_stamp`, an `access`) sees a commit whose renames never ran:
    the warm cache is refused, inside a request too, and the next read completes the change."""
    reader = _store(tmp_path)
    reader.read()
    with serving_request(request_arrived()):
        assert reader.read_if_fresh() is not None
    writer = JsonStore(tmp_path / "mcp", disk=_KilledAfterCommitPoint())
    writer.open()
    GatewayTokens(writer).create("committed-not-renamed")
    assert (tmp_path / "mcp" / JOURNAL_FILE).exists()
    with serving_request(request_arrived()):
        assert reader.read_if_fresh() is None
    names = {t.name for t in GatewayTokens(reader).list()}
    assert "committed-not-renamed" in names
    assert not (tmp_path / "mcp" / JOURNAL_FILE).exists()
