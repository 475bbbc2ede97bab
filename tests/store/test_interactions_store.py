"""The interaction card file (R-6.1): atomic writes, bounded history, one owner at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_center.errors import StorageError
from mcp_center.store import InteractionRecord, JsonInteractionStore, RetryState
from mcp_center.store.interactions import MAX_CLOSED_INTERACTIONS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _card(n: int, **update: object) -> InteractionRecord:
    record = InteractionRecord(
        id=f"card-{n:04d}",
        server_id="srv",
        host_instance="run-1",
        message=f"question {n}",
        created_at=T0 + timedelta(seconds=n),
        expires_at=T0 + timedelta(seconds=n + 600),
    )
    return record.model_copy(update=update)


def test_cards_written_in_a_transaction_are_read_back(tmp_path: Path) -> None:
    store = JsonInteractionStore(tmp_path)
    with store.transaction() as records:
        records["card-0001"] = _card(1)
    assert [r.id for r in JsonInteractionStore(tmp_path).read()] == ["card-0001"]
    assert (tmp_path / "interactions.json").stat().st_mode & 0o777 == 0o600


def test_a_failed_transaction_writes_nothing(tmp_path: Path) -> None:
    store = JsonInteractionStore(tmp_path)
    with pytest.raises(RuntimeError), store.transaction() as records:
        records["card-0001"] = _card(1)
        raise RuntimeError("abort")
    assert store.read() == []


def test_closed_cards_are_bounded_but_cards_that_need_the_user_are_kept(tmp_path: Path) -> None:
    store = JsonInteractionStore(tmp_path)
    with store.transaction() as records:
        for n in range(MAX_CLOSED_INTERACTIONS + 20):
            records[f"card-{n:04d}"] = _card(n, state="accepted", closed_at=T0 + timedelta(seconds=n))
        records["pending"] = _card(0, id="pending")
        records["retry"] = _card(1, id="retry", state="interrupted", retry=RetryState(offered=True))
    kept = store.read()
    ids = {r.id for r in kept}
    assert {"pending", "retry"} <= ids
    assert len(kept) == MAX_CLOSED_INTERACTIONS + 2
    assert "card-0000" not in ids
    assert f"card-{MAX_CLOSED_INTERACTIONS + 19:04d}" in ids


def test_only_one_store_owns_the_cards_at_a_time(tmp_path: Path) -> None:
    first, second = JsonInteractionStore(tmp_path), JsonInteractionStore(tmp_path)
    assert first.claim() is True
    assert second.claim() is False
    first.release()
    assert second.claim() is True
    second.release()


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"schema_version": 99, "interactions": []}',
        b'{"schema_version": 1, "interactions": [{}]}',
    ],
)
def test_a_damaged_file_is_a_storage_error_not_an_empty_list(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "interactions.json").write_bytes(content)
    with pytest.raises(StorageError):
        JsonInteractionStore(tmp_path).read()
