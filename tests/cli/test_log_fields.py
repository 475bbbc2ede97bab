"""The default log format shows each line's `extra=` fields as key=value after the message, with
secrets redacted (fixa36 F5: `sandbox.follow_failed` and `store.feed_lost` named no server, exit
code or reason; R-11.1, R-10.1)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from mcp_center.cli._log_format import LOG_FORMAT, FieldsFormatter
from mcp_center.secrets.redact import install_log_redaction


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    install_log_redaction()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(FieldsFormatter(LOG_FORMAT))
    log = logging.getLogger("tests.fixa36.fields")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    yield log, out
    log.removeHandler(handler)


def test_extra_fields_follow_the_message_as_key_value(logged: tuple[logging.Logger, io.StringIO]) -> None:
    log, out = logged
    log.warning("sandbox.follow_failed", extra={"server_id": "files", "exit_code": 3, "reason": "no space left"})
    line = out.getvalue().rstrip("\n")
    assert line.endswith(
        ' WARNING tests.fixa36.fields sandbox.follow_failed server_id=files exit_code=3 reason="no space left"'
    )


def test_fields_named_like_secrets_are_redacted_and_a_traceback_stays_below(
    logged: tuple[logging.Logger, io.StringIO],
) -> None:
    log, out = logged
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("store.feed_lost", extra={"fault": "connection refused", "password": "hunter2-secret"})
    first, *rest = out.getvalue().splitlines()
    assert first.endswith('store.feed_lost fault="connection refused" password=[redacted]'), first
    assert "hunter2-secret" not in out.getvalue()
    assert rest[0].startswith("Traceback") and rest[-1] == "RuntimeError: boom"


def test_a_line_without_fields_is_the_plain_format(logged: tuple[logging.Logger, io.StringIO]) -> None:
    log, out = logged
    log.info("store.feed_live")
    assert out.getvalue().rstrip("\n").endswith(" INFO tests.fixa36.fields store.feed_live")
