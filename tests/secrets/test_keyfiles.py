"""Unit tests for the secret key file and the admin token file (R-1.5, R-7.1)."""

from __future__ import annotations

import base64
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from mcp_center.errors import SecretStoreError
from mcp_center.secrets import decode_key, load_or_create_admin_token, load_or_create_key
from mcp_center.secrets.keyfiles import ADMIN_TOKEN_FILE, KEY_FILE

T = TypeVar("T")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def encoded(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


def refused(action: Callable[[], object]) -> SecretStoreError:
    with pytest.raises(SecretStoreError) as caught:
        action()
    assert caught.value.code == "SECRET_STORE_ERROR"
    return caught.value


def race(action: Callable[[], T], threads: int = 8) -> list[T]:
    """Run `action` in `threads` threads released together; return every result (re-raise the first error)."""
    barrier = threading.Barrier(threads)
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait(timeout=5)
        try:
            result = action()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            with lock:
                errors.append(exc)
        else:
            with lock:
                results.append(result)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=10)
    assert not any(worker.is_alive() for worker in workers)
    if errors:
        raise errors[0]
    return results


# ----- the secret key ---------------------------------------------------------------------------


def test_a_new_key_file_is_created_with_mode_0600_and_holds_the_key(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    key = load_or_create_key(data_dir, None)
    path = data_dir / KEY_FILE
    assert len(key) == 32
    assert mode_of(path) == 0o600
    assert decode_key(path.read_text(encoding="ascii")) == key
    assert sorted(p.name for p in data_dir.iterdir()) == [KEY_FILE]


def test_the_key_file_is_reused_on_the_next_call(tmp_path: Path) -> None:
    first = load_or_create_key(tmp_path, None)
    content = (tmp_path / KEY_FILE).read_bytes()
    assert load_or_create_key(tmp_path, None) == first
    assert (tmp_path / KEY_FILE).read_bytes() == content


def _never_exists(self: Path) -> bool:
    return False


def test_a_creator_that_loses_the_race_gets_the_winners_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    winner = load_or_create_key(tmp_path, None)
    with monkeypatch.context() as patched:
        # The loser checked before the winner created the file, so it tries to create it too.
        patched.setattr(Path, "exists", _never_exists)
        loser = load_or_create_key(tmp_path, None)
    assert loser == winner
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]


def test_concurrent_first_starts_all_get_one_complete_key(tmp_path: Path) -> None:
    for round_ in range(5):
        data_dir = tmp_path / str(round_)
        keys = race(lambda d=data_dir: load_or_create_key(d, None))
        assert len(keys) == 8
        assert len(set(keys)) == 1
        assert sorted(p.name for p in data_dir.iterdir()) == [KEY_FILE]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_file_readable_by_others_is_refused_and_left_as_is(tmp_path: Path, mode: int) -> None:
    raw = encoded(os.urandom(32))
    path = tmp_path / KEY_FILE
    path.write_text(raw + "\n", encoding="ascii")
    path.chmod(mode)
    error = refused(lambda: load_or_create_key(tmp_path, None))
    assert raw not in str(error)
    assert path.read_text(encoding="ascii") == raw + "\n"
    assert mode_of(path) == mode


def test_an_owner_only_key_file_written_by_hand_is_used(tmp_path: Path) -> None:
    raw = os.urandom(32)
    path = tmp_path / KEY_FILE
    path.write_text(encoded(raw) + "\n", encoding="ascii")
    path.chmod(0o400)
    assert load_or_create_key(tmp_path, None) == raw


@pytest.mark.parametrize("content", ["", "not a key", "\u00e9" * 44])
def test_a_key_file_with_garbage_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / KEY_FILE
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    refused(lambda: load_or_create_key(tmp_path, None))


def test_a_key_from_the_environment_is_used_and_no_file_is_created(tmp_path: Path) -> None:
    raw = os.urandom(32)
    assert load_or_create_key(tmp_path / "data", encoded(raw)) == raw
    assert not (tmp_path / "data").exists()


def test_a_key_from_the_environment_wins_over_the_key_file(tmp_path: Path) -> None:
    load_or_create_key(tmp_path, None)
    raw = os.urandom(32)
    assert load_or_create_key(tmp_path, encoded(raw)) == raw


def _unpadded(raw: bytes) -> str:
    return encoded(raw).rstrip("=")


def _surrounded(raw: bytes) -> str:
    return f"  {encoded(raw)}\n"


def _standard_alphabet(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(encoded, id="padded"),
        pytest.param(_unpadded, id="unpadded"),
        pytest.param(_surrounded, id="surrounding-whitespace"),
        pytest.param(_standard_alphabet, id="standard-alphabet"),
    ],
)
def test_decode_key_accepts_urlsafe_base64_of_32_bytes(text: Callable[[bytes], str]) -> None:
    raw = os.urandom(32)
    assert decode_key(text(raw)) == raw


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("too-short", id="short"),
        pytest.param(encoded(b"k" * 16), id="16-bytes"),
        pytest.param(encoded(b"k" * 31), id="31-bytes"),
        pytest.param(encoded(b"k" * 33), id="33-bytes"),
        pytest.param("%" * 44, id="not-base64"),
        pytest.param(encoded(b"k" * 32)[:20] + "!" + encoded(b"k" * 32)[20:], id="stray-character"),
        pytest.param(encoded(b"k" * 32)[:20] + " " + encoded(b"k" * 32)[20:], id="inner-space"),
        pytest.param("\u00e9" * 44, id="non-ascii"),
    ],
)
def test_an_environment_key_that_is_not_base64_of_32_bytes_is_refused(tmp_path: Path, text: str) -> None:
    refused(lambda: load_or_create_key(tmp_path, text))
    refused(lambda: decode_key(text))


# ----- the admin token --------------------------------------------------------------------------


def test_the_admin_token_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    token, created_now = load_or_create_admin_token(tmp_path, None)
    path = tmp_path / ADMIN_TOKEN_FILE
    assert created_now is True
    assert len(token) >= 16
    assert mode_of(path) == 0o600
    assert path.read_text(encoding="ascii").strip() == token
    again, created_again = load_or_create_admin_token(tmp_path, None)
    assert again == token
    assert created_again is False


def test_concurrent_first_starts_create_one_admin_token_and_report_it_once(tmp_path: Path) -> None:
    for round_ in range(5):
        data_dir = tmp_path / str(round_)
        results = race(lambda d=data_dir: load_or_create_admin_token(d, None))
        assert len({token for token, _ in results}) == 1
        assert [created for _, created in results].count(True) == 1
        assert sorted(p.name for p in data_dir.iterdir()) == [ADMIN_TOKEN_FILE]


def test_an_admin_token_from_the_environment_wins_and_creates_no_file(tmp_path: Path) -> None:
    assert load_or_create_admin_token(tmp_path, "env-admin-token-0123") == ("env-admin-token-0123", False)
    assert not (tmp_path / ADMIN_TOKEN_FILE).exists()


def test_an_admin_token_from_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    load_or_create_admin_token(tmp_path, None)
    assert load_or_create_admin_token(tmp_path, "env-admin-token-0123") == ("env-admin-token-0123", False)


def test_an_admin_token_of_exactly_16_characters_from_the_environment_is_accepted(tmp_path: Path) -> None:
    assert load_or_create_admin_token(tmp_path, "a" * 16) == ("a" * 16, False)


def test_an_admin_token_shorter_than_16_characters_from_the_environment_is_refused(tmp_path: Path) -> None:
    error = refused(lambda: load_or_create_admin_token(tmp_path, "short-token-15c"))
    assert "short-token-15c" not in str(error)
    assert not (tmp_path / ADMIN_TOKEN_FILE).exists()


def test_an_admin_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ADMIN_TOKEN_FILE
    path.write_text("mcpc_world-readable-token-0123456789\n", encoding="ascii")
    path.chmod(0o644)
    error = refused(lambda: load_or_create_admin_token(tmp_path, None))
    assert "world-readable-token" not in str(error)


def test_an_empty_admin_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ADMIN_TOKEN_FILE
    path.write_text("\n", encoding="ascii")
    path.chmod(0o600)
    refused(lambda: load_or_create_admin_token(tmp_path, None))


def test_decode_key_refuses_an_empty_key() -> None:
    refused(lambda: decode_key(""))
    refused(lambda: decode_key("  \n"))


def test_an_empty_environment_key_counts_as_unset_and_the_key_file_is_used(tmp_path: Path) -> None:
    from_file = load_or_create_key(tmp_path, None)
    assert load_or_create_key(tmp_path, "") == from_file


def test_a_key_file_is_still_created_once_where_hard_links_are_not_supported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    key = load_or_create_key(tmp_path, None)
    assert mode_of(tmp_path / KEY_FILE) == 0o600
    assert load_or_create_key(tmp_path, None) == key
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]


@pytest.mark.parametrize("content", ["", "\n", "not base64 !!", "c2hvcnQ="])
def test_a_bad_key_file_is_named_by_its_path_and_never_echoed(tmp_path: Path, content: str) -> None:
    """break38: a bad secret.key said `the secret key must be 32 bytes`, as a bad MCP_CENTER_SECRET_KEY
    does: which of the two was wrong, and where, was left to guess."""
    path = tmp_path / KEY_FILE
    path.write_text(content, encoding="ascii")
    path.chmod(0o600)
    error = refused(lambda: load_or_create_key(tmp_path, None))
    assert str(path) in error.message and error.details["key_source"] == "file", error.message
    assert "MCP_CENTER_SECRET_KEY" not in error.message
    if content.strip():
        assert content.strip() not in error.message


def test_a_bad_environment_key_is_named_as_the_variable() -> None:
    error = refused(lambda: decode_key("c2hvcnQ="))
    assert error.message.startswith("the secret key in MCP_CENTER_SECRET_KEY must be 32 bytes"), error.message
    assert error.details["key_source"] == "env"


def test_a_key_file_that_is_a_directory_is_said_to_be_no_file(tmp_path: Path) -> None:
    """It was refused as `readable by other users; run chmod 600` (a directory's mode)."""
    (tmp_path / KEY_FILE).mkdir()
    error = refused(lambda: load_or_create_key(tmp_path, None))
    assert "is not a file" in error.message and "chmod" not in error.message
