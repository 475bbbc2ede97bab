"""Unit tests for redaction of secret values from text, JSON-like data and log records (R-1.5)."""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import pytest

from mcp_center.secrets import REDACTED, Redactor, default_redactor, install_log_redaction
from mcp_center.secrets.redact import MIN_LENGTH

SECRET = "sk-live-4f9c2e7a1b3d5f60"


@pytest.fixture
def redactor() -> Redactor:
    fresh = Redactor()
    fresh.add(SECRET)
    return fresh


@pytest.fixture
def registered_secret() -> Generator[str]:
    """SECRET registered in the process-wide redactor that the logging factory reads."""
    default_redactor.add(SECRET)
    try:
        yield SECRET
    finally:
        default_redactor.discard(SECRET)


# ----- text -------------------------------------------------------------------------------------


def test_every_occurrence_of_a_registered_value_is_replaced(redactor: Redactor) -> None:
    text = f"Authorization: Bearer {SECRET}; retry with {SECRET}!"
    assert redactor.redact(text) == f"Authorization: Bearer {REDACTED}; retry with {REDACTED}!"


def test_text_without_a_registered_value_is_returned_unchanged(redactor: Redactor) -> None:
    assert redactor.redact("nothing to hide here") == "nothing to hide here"


@pytest.mark.parametrize("order", ["short-first", "long-first"])
def test_the_longest_value_is_replaced_first_when_one_contains_another(order: str) -> None:
    short, long = "abcdef", "abcdef123456"
    redactor = Redactor()
    for value in [short, long] if order == "short-first" else [long, short]:
        redactor.add(value)
    redacted = redactor.redact(f"x {long} y {short} z")
    assert redacted == f"x {REDACTED} y {REDACTED} z"
    assert "123456" not in redacted


def test_values_shorter_than_the_minimum_length_are_not_registered() -> None:
    redactor = Redactor()
    too_short = "k" * (MIN_LENGTH - 1)
    just_long_enough = "q" * MIN_LENGTH
    redactor.add(too_short)
    redactor.add(just_long_enough)
    assert redactor.redact(f"{too_short} {just_long_enough}") == f"{too_short} {REDACTED}"


def test_a_discarded_value_is_no_longer_redacted(redactor: Redactor) -> None:
    redactor.discard(SECRET)
    redactor.discard("never-registered")
    assert redactor.redact(SECRET) == SECRET


def test_adding_a_value_twice_keeps_one_entry_that_a_single_discard_removes(redactor: Redactor) -> None:
    redactor.add(SECRET)
    redactor.discard(SECRET)
    assert redactor.redact(SECRET) == SECRET


def _stream(redactor: Redactor, pieces: list[str]) -> list[str]:
    """Pass `pieces` through `redact_prefix` as a reader of a stream would; the redacted outputs."""
    out: list[str] = []
    rest = ""
    for index, piece in enumerate(pieces):
        safe, rest = redactor.redact_prefix(rest + piece, final=index == len(pieces) - 1)
        assert len(rest) < 2 * len(SECRET)  # bounded carry, however long the stream
        out.append(safe)
    assert rest == ""
    return out


@pytest.mark.parametrize("size", [1, 2, 5, len(SECRET) - 1, len(SECRET), len(SECRET) + 1, 64])
def test_a_secret_streamed_in_pieces_is_redacted_whole_wherever_the_pieces_are_cut(
    redactor: Redactor, size: int
) -> None:
    """R-1.5: redacting each piece alone would pass both halves of a secret cut in two."""
    text = "a" * 37 + SECRET + "b" * 11 + SECRET + SECRET[:-1]
    for offset in range(size):
        pieces = [text[:offset], *(text[i : i + size] for i in range(offset, len(text), size))]
        out = _stream(redactor, pieces)
        assert "".join(out) == f"{'a' * 37}{REDACTED}{'b' * 11}{REDACTED}{SECRET[:-1]}"
        assert not any(SECRET[:4] in piece or SECRET[-4:] in piece for piece in out[:-1])


def test_redact_prefix_holds_back_only_what_could_start_a_secret(redactor: Redactor) -> None:
    safe, rest = redactor.redact_prefix("x" * 100, final=False)
    assert (safe, rest) == ("x" * (101 - len(SECRET)), "x" * (len(SECRET) - 1))
    assert redactor.redact_prefix("short", final=False) == ("", "short")
    assert redactor.redact_prefix("short", final=True) == ("short", "")
    assert Redactor().redact_prefix("no secrets registered", final=False) == ("no secrets registered", "")


def test_redact_prefix_follows_values_added_and_discarded_after_it_was_used(redactor: Redactor) -> None:
    """The streaming pattern is compiled when first needed after a change (issue 16): a value
    registered or forgotten after an earlier `redact_prefix` call counts from the next call on,
    longest first, and the held-back length follows the longest value registered now."""
    longer = SECRET + "-rotated-9b1e"
    assert redactor.redact_prefix(f"a {SECRET} b", final=True) == (f"a {REDACTED} b", "")
    redactor.add(longer)
    assert redactor.redact_prefix(f"a {longer} b {SECRET}", final=True) == (f"a {REDACTED} b {REDACTED}", "")
    assert redactor.redact_prefix("x" * 100, final=False)[1] == "x" * (len(longer) - 1)
    redactor.discard(longer)
    assert redactor.redact_prefix(f"a {longer} b", final=True) == (f"a {REDACTED}-rotated-9b1e b", "")
    redactor.discard(SECRET)
    assert redactor.redact_prefix(f"a {SECRET}", final=False) == (f"a {SECRET}", "")


# ----- JSON-like data ---------------------------------------------------------------------------


def test_redact_obj_redacts_strings_in_nested_dicts_and_lists(redactor: Redactor) -> None:
    data: dict[str, Any] = {
        "message": f"bad token {SECRET}",
        "items": [SECRET, {"deep": [f"x{SECRET}x"]}, 7, None, True],
        "pair": ("ok", SECRET),
        "count": 3,
    }
    assert redactor.redact_obj(data) == {
        "message": f"bad token {REDACTED}",
        "items": [REDACTED, {"deep": [f"x{REDACTED}x"]}, 7, None, True],
        "pair": ["ok", REDACTED],
        "count": 3,
    }


@pytest.mark.parametrize(
    "key",
    ["authorization", "Authorization", "access_token", "refresh_token", "client_secret", "code_verifier", "PASSWORD"],
)
def test_redact_obj_masks_values_under_sensitive_keys_even_when_not_registered(key: str) -> None:
    data = {"outer": [{key: "unregistered-value", "other": "kept"}], key: {"nested": 1}}
    assert Redactor().redact_obj(data) == {"outer": [{key: REDACTED, "other": "kept"}], key: REDACTED}


def test_redact_obj_does_not_mutate_its_input(redactor: Redactor) -> None:
    data: dict[str, Any] = {"a": [SECRET], "authorization": "x"}
    redactor.redact_obj(data)
    assert data == {"a": [SECRET], "authorization": "x"}


# ----- log records ------------------------------------------------------------------------------


def assert_secret_absent(caplog: pytest.LogCaptureFixture, secret: str) -> None:
    assert caplog.records
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    for record in caplog.records:
        assert secret not in record.getMessage()
        assert secret not in (record.exc_text or "")
        assert secret not in formatter.format(record)
        assert secret not in str(record.args)
    assert secret not in caplog.text


def test_a_log_argument_holding_a_secret_is_redacted(caplog: pytest.LogCaptureFixture, registered_secret: str) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("x").warning("token=%s", registered_secret)
    assert_secret_absent(caplog, registered_secret)
    assert caplog.records[0].getMessage() == f"token={REDACTED}"


def test_a_secret_inside_a_structured_log_argument_is_redacted(
    caplog: pytest.LogCaptureFixture, registered_secret: str
) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("x.y").info("headers: %r", {"X-Api-Key": registered_secret})
        logging.getLogger("x").error(f"already formatted {registered_secret}")  # noqa: G004 - the case under test
    assert_secret_absent(caplog, registered_secret)
    assert len(caplog.records) == 2


def test_an_exception_message_holding_a_secret_is_redacted_from_the_traceback(
    caplog: pytest.LogCaptureFixture, registered_secret: str
) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        try:
            raise RuntimeError(f"server echoed Authorization: Bearer {registered_secret}")
        except RuntimeError:
            logging.getLogger("x").exception("call failed")
    assert_secret_absent(caplog, registered_secret)
    record = caplog.records[0]
    assert record.exc_text is not None
    assert "RuntimeError: server echoed Authorization: Bearer " + REDACTED in record.exc_text


def test_a_chained_exception_holding_a_secret_is_redacted(
    caplog: pytest.LogCaptureFixture, registered_secret: str
) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        try:
            try:
                raise ValueError(registered_secret)
            except ValueError as inner:
                raise RuntimeError("wrapped") from inner
        except RuntimeError as outer:
            logging.getLogger("x").warning("call failed", exc_info=outer)
    assert_secret_absent(caplog, registered_secret)


def test_installing_log_redaction_twice_redacts_once(caplog: pytest.LogCaptureFixture, registered_secret: str) -> None:
    install_log_redaction()
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("x").warning("token=%s", registered_secret)
    assert caplog.records[0].getMessage() == f"token={REDACTED}"


def test_a_log_record_with_a_broken_format_string_is_kept(
    caplog: pytest.LogCaptureFixture, registered_secret: str
) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO):
        logging.getLogger("x").warning(f"{registered_secret} %d", "not a number")  # noqa: G004 - the case under test
    assert_secret_absent(caplog, registered_secret)
    assert caplog.records[0].getMessage() == f"{REDACTED} %d"
