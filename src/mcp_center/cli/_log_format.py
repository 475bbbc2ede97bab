"""The log line format of `serve` and the stdio bridge: the message, then its fields (fixa36).

A log call names its subject in `extra=` (`logger.warning("sandbox.follow_failed", extra={"server_id":
..., "exit_code": ...})`); `logging.Formatter` drops those fields, leaving `sandbox.follow_failed` alone
on a line. `FieldsFormatter` appends them as `key=value` after the message, in the order given.
Secrets never reach it: `secrets.redact.install_log_redaction` scrubs every record's fields when it
is made (a field named like a secret shows as `[REDACTED]`, known secret values are masked in
strings); values are rendered with `str` (quoted as JSON when they hold spaces, quotes or `=`).
"""

from __future__ import annotations

import json
import logging

__all__ = ["LOG_FORMAT", "FieldsFormatter"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's coloured copy of the message
}


class FieldsFormatter(logging.Formatter):
    """`logging.Formatter` that appends a record's `extra=` fields as ` key=value` (see the module)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [
            f"{key}={_value(value)}"
            for key, value in record.__dict__.items()
            if key not in _STANDARD and not key.startswith("_")
        ]
        if not fields:
            return line
        head, newline, rest = line.partition("\n")  # a traceback stays below the fields
        return f"{head} {' '.join(fields)}{newline}{rest}"


def _value(value: object) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in "\"'=" for c in text):
        return json.dumps(text, ensure_ascii=False)
    return text
