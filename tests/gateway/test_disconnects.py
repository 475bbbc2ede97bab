"""An agent that goes away is one log line; every other error of the SDK transport keeps its traceback (R-3.11).

The records go through the SDK transport's real logger with real, raised exceptions; the whole
`serve` is exercised in `tests/e2e/test_serve.py`.
"""

from __future__ import annotations

import logging

import anyio
import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message

from mcp_center.gateway._disconnects import SDK_TRANSPORT_LOGGER, OneResponse, quiet_client_disconnects

pytestmark = pytest.mark.anyio

POST_FAILED = "Error handling POST request"
"""What the SDK (mcp 2.3.0) logs when one POST's exchange fails."""


def _log_raised(exc: BaseException, message: str = POST_FAILED) -> None:
    try:
        raise exc
    except BaseException:
        logging.getLogger(SDK_TRANSPORT_LOGGER).exception(message)


def _sdk_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == SDK_TRANSPORT_LOGGER]


def _gone_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "gateway.client_gone"]


@pytest.mark.parametrize(
    "exc",
    [
        anyio.ClosedResourceError(),
        anyio.BrokenResourceError(),
        ClientDisconnect(),
        ExceptionGroup("streams", [anyio.ClosedResourceError(), anyio.BrokenResourceError()]),
    ],
    ids=["closed", "broken", "client-disconnect", "group-of-both"],
)
def test_an_agent_that_went_away_is_one_info_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture, exc: BaseException
) -> None:
    caplog.set_level(logging.INFO)
    with quiet_client_disconnects():
        _log_raised(exc)
    assert _sdk_records(caplog) == []
    [gone] = _gone_records(caplog)
    assert gone.levelno == logging.INFO
    assert gone.exc_info is None
    assert gone.__dict__["during"] == POST_FAILED
    assert gone.__dict__["reason"] in {"ClosedResourceError", "BrokenResourceError", "ClientDisconnect"}


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (RuntimeError("a real bug"), POST_FAILED),
        (ExceptionGroup("mixed", [anyio.ClosedResourceError(), ValueError("a real bug")]), POST_FAILED),
        (anyio.ClosedResourceError(), "Unexpected closure of read stream in message router"),
    ],
    ids=["other-exception", "group-with-a-real-error", "not-a-per-request-message"],
)
def test_a_real_error_of_the_sdk_transport_still_logs_with_its_traceback(
    caplog: pytest.LogCaptureFixture, exc: BaseException, message: str
) -> None:
    caplog.set_level(logging.INFO)
    with quiet_client_disconnects():
        _log_raised(exc, message)
    [record] = _sdk_records(caplog)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert record.exc_info[1] is exc
    assert _gone_records(caplog) == []


def test_outside_a_running_gateway_the_sdk_logger_is_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    with quiet_client_disconnects():
        pass
    _log_raised(anyio.ClosedResourceError())
    [record] = _sdk_records(caplog)
    assert record.levelno == logging.ERROR
    assert not logging.getLogger(SDK_TRANSPORT_LOGGER).filters


async def test_messages_after_a_complete_response_are_not_sent() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    guarded = OneResponse(send)
    await guarded({"type": "http.response.start", "status": 202, "headers": []})
    await guarded({"type": "http.response.body", "body": b"", "more_body": False})
    await guarded({"type": "http.response.start", "status": 500, "headers": []})  # the SDK's late answer
    await guarded({"type": "http.response.body", "body": b"error", "more_body": False})
    assert [m.get("status") for m in sent] == [202, None]
    assert guarded.complete


async def test_a_streamed_response_passes_whole() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    guarded = OneResponse(send)
    await guarded({"type": "http.response.start", "status": 200, "headers": []})
    for chunk in (b"event: message\n", b"data: {}\n\n"):
        await guarded({"type": "http.response.body", "body": chunk, "more_body": True})
    assert not guarded.complete
    await guarded({"type": "http.response.body", "body": b"", "more_body": False})
    assert len(sent) == 4
