"""A following instance's warm-ups (R-11.1, R-10.2; fixa36 F5): a mark that cannot be written is
remembered for its stamp (not re-run at every change, logged once without a traceback, naming the
server and the cause; tried again at the next start); a server deleted while its follow ran leaves
no home or mark behind; a warm-up answered beside a serve of the same data directory does not list
that serve among the instances that warm their own homes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from mcp_center.config import Settings, parse_server_config
from mcp_center.models import TransportKind
from mcp_center.secrets import Redactor
from mcp_center.service.sandboxing import sandbox_root
from mcp_center.service.warm_ups import WARMED_FILE, WarmUpFollower, others_warming, warmed_at
from mcp_center.store import FileOwnerLock, JsonStore, ServeOwner, ServerRecord, store_for
from mcp_center.transports import ConnectionSpec

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 6, 5, 0, tzinfo=UTC)


@pytest.fixture
def store(settings: Settings) -> Iterator[JsonStore]:
    opened = store_for(settings)
    assert isinstance(opened, JsonStore)
    opened.open()
    yield opened
    opened.close()


def _add_warmed(store: JsonStore, server_id: str) -> ServerRecord:
    config = parse_server_config(
        {"id": server_id, "name": server_id, "transport": "stdio", "command": "cat", "sandbox": {}}
    )
    record = ServerRecord(config=config, version=1, created_at=NOW, updated_at=NOW, warmed_up_at=NOW)
    with store.transaction() as state:
        state.servers[server_id] = record
    return record


def _spec(server_id: str) -> ConnectionSpec:
    """No sandbox: the real warm-up refuses it at once (`sandbox.follow_failed`), no process runs."""
    return ConnectionSpec(server_id=server_id, transport=TransportKind.STDIO, digest="d", argv=("/bin/cat",))


async def test_a_mark_that_cannot_be_written_is_remembered_and_logged_once_without_a_traceback(
    settings: Settings, store: JsonStore, caplog: pytest.LogCaptureFixture
) -> None:
    record = _add_warmed(store, "files")
    root = sandbox_root(settings, record.id, record.created_at)
    (root / WARMED_FILE).mkdir(parents=True)  # the mark's path is a directory: it cannot be written
    runs: list[str] = []

    def spec_of(server_id: str) -> ConnectionSpec:
        runs.append(server_id)
        return _spec(server_id)

    follower = WarmUpFollower(store, settings, spec_of, Redactor())
    with caplog.at_level(logging.INFO, logger="mcp_center.service.warm_ups"):
        assert await follower.catch_up() == ["files"]
        assert await follower.catch_up() == []  # another change of any server: not run again
        assert await follower.catch_up() == []
    assert runs == ["files"]
    unmarked = [r for r in caplog.records if r.getMessage() == "sandbox.follow_unmarked"]
    assert len(unmarked) == 1
    assert unmarked[0].exc_info is None
    assert getattr(unmarked[0], "server_id", None) == "files"
    assert getattr(unmarked[0], "fault", None) == "Is a directory"
    failed = [r for r in caplog.records if r.getMessage() == "sandbox.follow_failed"]
    assert [(getattr(r, "server_id", None), getattr(r, "code", None)) for r in failed] == [
        ("files", "MCP_SANDBOX_WARM_UP_UNSUPPORTED")
    ]
    assert "only sandboxed servers are warmed up" in str(getattr(failed[0], "reason", ""))
    assert warmed_at(root) is None
    # The next start tries again (memory only).
    assert await WarmUpFollower(store, settings, spec_of, Redactor()).catch_up() == ["files"]
    assert runs == ["files", "files"]


async def test_a_server_deleted_while_its_follow_runs_leaves_no_home_or_mark(
    settings: Settings, store: JsonStore
) -> None:
    record = _add_warmed(store, "gone")
    root = sandbox_root(settings, record.id, record.created_at)
    (root / "home").mkdir(parents=True)

    def spec_of(server_id: str) -> ConnectionSpec:  # the follow has begun: the server is deleted now
        with store.transaction() as state:
            del state.servers[server_id]
        return _spec(server_id)

    follower = WarmUpFollower(store, settings, spec_of, Redactor())
    assert await follower.catch_up() == ["gone"]
    assert not root.exists()
    assert not root.parent.exists()


def test_the_serve_of_the_data_directory_just_warmed_is_not_among_the_others(
    settings: Settings, store: JsonStore
) -> None:
    store.join_instance("cli-run")
    store.join_instance("serve-run")
    try:
        assert store.describe_instance("serve-run", name="k1", url="http://127.0.0.1:1") is None
        assert others_warming(store, "cli-run", settings.data_dir) == ("k1",)  # no serve owns the directory
        lock = FileOwnerLock(settings.data_dir)
        lock.claim(ServeOwner.this_process("http://127.0.0.1:1"))  # serve k1 owns it (this process's pid)
        try:
            assert others_warming(store, "cli-run", settings.data_dir) == ()
        finally:
            lock.release()
    finally:
        store.leave_instance("serve-run")
        store.leave_instance("cli-run")
