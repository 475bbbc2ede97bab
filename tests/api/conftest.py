"""Fixtures of the secret-leak scans (R-1.5, R-4.7): an API client whose every response, and every
log record of every logger at DEBUG, is captured for scanning (`tests/api/test_no_secret_leak.py`,
`tests/api/test_oauth_no_secret_leak.py`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.api import ADMIN_TOKEN, BASE_URL, Captured


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> Generator[Captured]:
    """Capture responses (via the client's hook) and every log record of every logger at DEBUG.

    caplog sees what propagates to the root logger; the record factory also sees records of
    loggers that do not propagate, as they are created (after the host's redaction factory).
    """
    capture = Captured()
    caplog.set_level(logging.DEBUG)
    for name, existing in list(logging.root.manager.loggerDict.items()):
        if isinstance(existing, logging.Logger):
            caplog.set_level(logging.DEBUG, logger=name)
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        capture.records.append(record)
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield capture
    finally:
        logging.setLogRecordFactory(previous)
    capture.records.extend(caplog.records)


@pytest.fixture
async def client(center: McpCenter, settings: Settings, captured: Captured) -> AsyncGenerator[httpx2.AsyncClient]:
    """The REST API in process with the admin token; every response it gets is kept in `captured`."""
    app = create_api(settings, ADMIN_TOKEN)
    app.state.center = center
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url=BASE_URL,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        event_hooks={"response": [captured.on_response]},
    ) as opened:
        yield opened
