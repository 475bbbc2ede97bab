"""A hostile OAuth endpoint that drips its answer cannot hold an OAuth request open (R-4.2, R-7.3).

httpx2's timeouts are per read: a server that sends one byte before each read timeout keeps a request
alive for as long as it likes. `OAuthHttp` bounds each request as a whole (`total_s`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp_center.auth import OAuthHttp, UrlPolicy
from tests.support.loopback import serve_loopback

pytestmark = pytest.mark.anyio


def dripping_app() -> Starlette:
    """Answers 200 and then one space every 50 ms, forever (each read gets a byte well before its timeout)."""

    async def drip(request: Request) -> Response:
        async def body() -> AsyncGenerator[bytes]:
            while True:
                yield b" "
                await anyio.sleep(0.05)  # the hostile server's pace, not a synchronisation

        return StreamingResponse(body(), media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", drip, methods=["GET", "POST"])])


async def test_a_metadata_answer_dripped_byte_by_byte_is_given_up_after_the_total_deadline() -> None:
    http = OAuthHttp(timeout=httpx2.Timeout(5.0), total_s=0.5)
    async with serve_loopback(dripping_app()) as base:
        policy = UrlPolicy.for_server(base + "/mcp")
        with anyio.fail_after(20):  # without a total deadline the request never ends
            async with http.client() as client:
                with pytest.raises(httpx2.TimeoutException) as caught:
                    await http.get(client, base + "/.well-known/oauth-protected-resource", policy, what="metadata")
    assert "0.5" in str(caught.value)


async def test_a_token_answer_dripped_byte_by_byte_is_given_up_after_the_total_deadline() -> None:
    http = OAuthHttp(timeout=httpx2.Timeout(5.0), total_s=0.5)
    async with serve_loopback(dripping_app()) as base:
        policy = UrlPolicy.for_server(base + "/mcp")
        with anyio.fail_after(20):
            async with http.client() as client:
                with pytest.raises(httpx2.TimeoutException):
                    await http.post(client, base + "/token", policy, what="token endpoint", form={"a": "b"})
