"""The live event stream of a real `mcp-center serve` (R-3.11): an open stream (every open settings
page holds one) ends when the host stops, so stopping is quick and clean instead of waiting out
uvicorn's graceful-shutdown timeout and cancelling the stream with a traceback.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.support.serve import running_host

pytestmark = pytest.mark.e2e

STOP_WITHIN_S = 4.5
"""uvicorn's graceful-shutdown timeout in `serve` is 5 s: a stream that held it up would take longer."""


def test_an_open_event_stream_does_not_hold_up_stopping_the_host(tmp_path: Path) -> None:
    with running_host(tmp_path) as host, host.client.stream("GET", "/api/events") as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        chunks = stream.iter_text()
        assert next(chunks).startswith(": connected")
        started = time.monotonic()
        host.proc.send_signal(signal.SIGTERM)
        rest = "".join(chunks)  # the host ends the stream: iteration stops instead of hanging
        host.proc.wait(timeout=10)
        elapsed = time.monotonic() - started
        assert "event:" not in rest
    log = host.log()
    assert "graceful shutdown exceeded" not in log, log[-2000:]
    assert elapsed < STOP_WITHIN_S, (elapsed, log[-2000:])
