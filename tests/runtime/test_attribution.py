"""Every connection failure is attributed to a typed reason (R-3.1)."""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from mcp_center.service import McpCenter
from mcp_center.store import TestResult
from tests.servers.http_echo import streamable_app
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


async def _status(request: Request) -> Response:
    status = int(request.path_params["status"])
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'
    if status == 403:
        headers["WWW-Authenticate"] = 'Bearer error="insufficient_scope", scope="files:write"'
    return PlainTextResponse("no", status_code=status, headers=headers)


async def _garbage(_request: Request) -> Response:
    return PlainTextResponse("this is not json", headers={"content-type": "application/json"})


@pytest.fixture
async def fake_base() -> AsyncGenerator[str]:
    app = Starlette(
        routes=[
            Route("/status/{status}", _status, methods=["POST", "GET", "DELETE"]),
            Route("/garbage", _garbage, methods=["POST"]),
        ]
    )
    async with serve_loopback(app) as base:
        yield base


async def _test(center: McpCenter, body: dict[str, object]) -> TestResult:
    view = (await center.create_server({"name": "Target", **body})).to_dict()
    await center.trust(view["id"], view["digest"])
    return await center.test(view["id"])


async def _reason(center: McpCenter, body: dict[str, object]) -> tuple[str | None, dict[str, object]]:
    result = await _test(center, body)
    assert result.ok is False
    assert result.error is not None
    return result.error.reason, result.error.details


@pytest.mark.parametrize(
    ("status", "reason"),
    [(500, "http_status"), (404, "http_status"), (401, "auth_required"), (403, "step_up_required")],
)
async def test_an_http_status_on_initialize_is_attributed(
    center: McpCenter, fake_base: str, status: int, reason: str
) -> None:
    got, details = await _reason(center, {"transport": "streamable_http", "url": f"{fake_base}/status/{status}"})
    assert got == reason
    assert details["status"] == status


async def test_a_garbage_answer_is_a_protocol_error(center: McpCenter, fake_base: str) -> None:
    got, _ = await _reason(center, {"transport": "streamable_http", "url": f"{fake_base}/garbage"})
    assert got == "protocol"


async def test_https_to_a_plain_http_server_is_a_tls_error(center: McpCenter) -> None:
    async with serve_loopback(streamable_app()) as base:
        url = base.replace("http://", "https://") + "/mcp"
        got, _ = await _reason(center, {"transport": "streamable_http", "url": url})
    assert got == "tls"


async def test_a_name_that_does_not_resolve_is_a_dns_error(center: McpCenter) -> None:
    got, _ = await _reason(center, {"transport": "streamable_http", "url": "https://mcp-center-test.invalid/mcp"})
    assert got == "dns"


async def test_a_program_that_cannot_be_started_is_a_spawn_failure(center: McpCenter, tmp_path: object) -> None:
    got, details = await _reason(center, {"transport": "stdio", "command": "/nonexistent/mcp-server"})
    assert got == "spawn_failed"
    assert "errno" in details


async def test_a_process_that_exits_is_attributed_with_its_code(center: McpCenter) -> None:
    got, details = await _reason(
        center, {"transport": "stdio", "command": sys.executable, "args": ["-c", "import sys; sys.exit(9)"]}
    )
    assert got == "process_exited"
    assert details["exit_code"] == 9


async def test_a_legacy_sse_endpoint_on_another_origin_is_a_protocol_error(center: McpCenter) -> None:
    async def sse(_request: Request) -> Response:
        body = "event: endpoint\ndata: http://evil.example/messages\n\n"
        return Response(body, media_type="text/event-stream")

    async with serve_loopback(Starlette(routes=[Route("/sse", sse)])) as base:
        got, details = await _reason(center, {"transport": "sse", "url": f"{base}/sse", "startup_timeout_s": 5})
    assert got == "protocol"
    assert details["endpoint_origin"] == "http://evil.example:80"


def test_an_errors_output_tail_is_its_last_20_lines_and_2_kib_at_most() -> None:
    """Issue 16: 3 lines showed a traceback's last frame only; 20 lines or 2 KiB, the latest kept."""
    from mcp_center.runtime.attribution import STDERR_CHARS_IN_ERROR, last_lines

    short = [f"line {i}" for i in range(30)]
    assert last_lines(short) == short[-20:]
    wide = [f"{i:03d}" + "x" * 297 for i in range(20)]  # 300 characters each: 6 fit in 2 KiB, then a cut one
    kept = last_lines(wide)
    assert kept[1:] == wide[-6:]
    assert kept[0] == "…" + wide[-7][-(STDERR_CHARS_IN_ERROR - 6 * 300) :]
    assert last_lines(["y" * 10_000 + "z"]) == ["…" + "y" * (STDERR_CHARS_IN_ERROR - 1) + "z"]


def test_an_exit_status_that_says_a_signal_names_it() -> None:
    """trial35: a killed server said "exited with code 137"; a shell or npx reports SIGKILL so (R-3.1)."""
    from mcp_center.runtime.attribution import exit_phrase

    assert exit_phrase(-9) == "was killed by SIGKILL (signal 9)"
    assert exit_phrase(137) == "exited with code 137 (killed by SIGKILL: 128 + 9)"
    assert exit_phrase(143) == "exited with code 143 (killed by SIGTERM: 128 + 15)"
    assert exit_phrase(1) == "exited with code 1"
    assert exit_phrase(250) == "exited with code 250"
