"""Interaction cards as a section of the store (R-6.1, R-9.1): one commit with the rest, bounded history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_center.errors import StorageError
from mcp_center.store import MAX_CLOSED_INTERACTIONS, InteractionRecord, JsonStore, RetryState

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
    store = JsonStore(tmp_path)
    with store.transaction() as state:
        state.interactions["card-0001"] = _card(1)
    assert list(JsonStore(tmp_path).read().interactions) == ["card-0001"]
    assert (tmp_path / "interactions.json").stat().st_mode & 0o777 == 0o600


def test_a_failed_transaction_writes_nothing(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    with pytest.raises(RuntimeError), store.transaction() as state:
        state.interactions["card-0001"] = _card(1)
        raise RuntimeError("abort")
    assert store.read().interactions == {}
    assert not (tmp_path / "interactions.json").exists()


def test_closed_cards_are_bounded_but_cards_that_need_the_user_are_kept(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    with store.transaction() as state:
        for n in range(MAX_CLOSED_INTERACTIONS + 20):
            state.interactions[f"card-{n:04d}"] = _card(n, state="accepted", closed_at=T0 + timedelta(seconds=n))
        state.interactions["pending"] = _card(0, id="pending")
        state.interactions["retry"] = _card(1, id="retry", state="interrupted", retry=RetryState(offered=True))
        state.interactions["relayed"] = _card(2, id="relayed", state="accepted", closed_at=T0, answer="sealed")
    for reader in (store, JsonStore(tmp_path)):
        kept = reader.read().interactions
        assert {"pending", "retry", "relayed"} <= set(kept)
        assert len(kept) == MAX_CLOSED_INTERACTIONS + 3
        assert "card-0000" not in kept
        assert f"card-{MAX_CLOSED_INTERACTIONS + 19:04d}" in kept


@pytest.mark.parametrize(
    ("content", "fault"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema_version": 1, "interactions": [', "truncated JSON"),
        (b"[]", "not a JSON object"),
        (b'{"schema_version": 99, "interactions": []}', "newer mcp-center"),
        (b'{"schema_version": 1, "interactions": [{}]}', "entry 0 is invalid"),
    ],
)
def test_a_damaged_file_is_a_storage_error_naming_it_not_an_empty_list(
    tmp_path: Path, content: bytes, fault: str
) -> None:
    path = tmp_path / "interactions.json"
    path.write_bytes(content)
    with pytest.raises(StorageError) as caught:
        JsonStore(tmp_path).read()
    assert caught.value.details["file"] == str(path)
    assert fault in caught.value.details["fault"]
    assert str(path) in caught.value.message
    assert path.read_bytes() == content
