"""Helpers shared by the REST API tests: envelope assertions, server bodies, an API over any settings.

The API tests drive the real FastAPI app in process (`httpx2.ASGITransport`) against an open
`McpCenter`, and real SDK MCP servers on loopback (`tests/support/loopback.py`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.wire import is_object

__all__ = [
    "ADMIN_TOKEN",
    "BASE_URL",
    "Captured",
    "api_client",
    "api_routes",
    "assert_envelope",
    "assert_error",
    "create_remote",
    "declared_routes",
    "open_api",
    "remote_body",
    "stdio_body",
]

ADMIN_TOKEN = "test-admin-token-0123456789abcdef"
"""The admin token of the API the in-process tests build (`tests/conftest.py`)."""

BASE_URL = "http://127.0.0.1:8765"
"""What the in-process client pretends to be (Host 127.0.0.1:8765)."""


def assert_envelope(response: httpx2.Response) -> dict[str, Any]:
    """Assert `response` is the R-7.3 error envelope and return its `error` object."""
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    body: object = response.json()
    assert is_object(body), body
    assert set(body) == {"error"}, body
    error: object = body["error"]
    assert is_object(error), body
    assert set(error) == {"code", "message", "details"}, body
    assert isinstance(error["code"], str), body
    assert error["code"], body
    assert isinstance(error["message"], str), body
    assert error["message"], body
    assert isinstance(error["details"], dict), body
    return error


def assert_error(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """Assert an error response with this status and stable code; return the `error` object."""
    assert response.status_code == status, (response.status_code, response.text)
    error = assert_envelope(response)
    assert error["code"] == code, error
    return error


def field_codes(error: dict[str, Any]) -> list[tuple[str, str]]:
    """`(field, code)` of every entry in `details.errors`."""
    return [(e["field"], e["code"]) for e in error["details"].get("errors", [])]


def remote_body(server_id: str, url: str, **extra: Any) -> dict[str, Any]:
    """A create body for a Streamable HTTP server."""
    return {"id": server_id, "name": f"Server {server_id}", "transport": "streamable_http", "url": url, **extra}


def stdio_body(server_id: str, command: str, args: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A create body for a stdio server."""
    return {
        "id": server_id,
        "name": f"Server {server_id}",
        "transport": "stdio",
        "command": command,
        "args": list(args or []),
        **extra,
    }


async def create_remote(api: httpx2.AsyncClient, server_id: str, url: str, **extra: Any) -> dict[str, Any]:
    """Create a Streamable HTTP server and return its read shape."""
    response = await api.post("/api/mcp/servers", json=remote_body(server_id, url, **extra))
    assert response.status_code == 201, response.text
    return response.json()


def register_ready(api: httpx2.Client, body: dict[str, Any]) -> dict[str, Any]:
    """Register `body` through a running serve's REST API (a sync client), trust the digest it shows,
    test and enable it (R-1.1, R-2); returns the created view. Fails the test at the first step refused."""
    created = api.post("/api/mcp/servers", json=body)
    assert created.status_code == 201, created.text
    view: dict[str, Any] = created.json()
    server = f"/api/mcp/servers/{view['id']}"
    assert api.post(f"{server}/trust", json={"digest": view["digest"]}).is_success
    tested = api.post(f"{server}/test")
    assert tested.json()["ok"], tested.text
    assert api.post(f"{server}/enable").is_success
    return view


def create_gateway_token(api: httpx2.Client, name: str) -> dict[str, Any]:
    """Create a gateway token named `name` (R-8); returns the answer (`id`, `token` shown once, ...)."""
    token = api.post("/api/gateway/tokens", json={"name": name})
    assert token.status_code == 201, token.text
    answer: dict[str, Any] = token.json()
    return answer


@asynccontextmanager
async def api_client(
    app: Any, *, token: str | None = ADMIN_TOKEN, base_url: str = BASE_URL, raise_app_exceptions: bool = True
) -> AsyncGenerator[httpx2.AsyncClient]:
    """An httpx2 client on `app` in process, with `Authorization: Bearer <token>` unless token is None."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    transport = httpx2.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
    async with httpx2.AsyncClient(transport=transport, base_url=base_url, headers=headers) as client:
        yield client


@asynccontextmanager
async def open_api(settings: Settings) -> AsyncGenerator[httpx2.AsyncClient]:
    """Like the `api` fixture, for settings of the test's choosing (profile, allowed hosts)."""
    async with McpCenter.open(settings) as center:
        app = create_api(settings, ADMIN_TOKEN)
        app.state.center = center
        async with api_client(app) as client:
            yield client


PATH_VALUES = {
    "server_id": "no-such-server",
    "key": "X-Key",
    "tool": "no_such_tool",
    "operation_id": "no-such-operation",
    "name": "no-such:name",
    "approval_id": "no-such-approval",
    "interaction_id": "no-such-interaction",
    "token_id": "no-such-token",
}
"""Garbage values for the path parameters of the route walk."""


def declared_routes(app: FastAPI) -> set[tuple[str, str]]:
    """`(method, path template)` of every APIRoute, including those of included routers.

    FastAPI 0.165 keeps an included router as one lazy entry in `app.routes`; `iter_route_contexts`
    flattens it to the effective routes (prefix applied).
    """
    found: set[tuple[str, str]] = set()
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.path is not None:
            found.update((method, context.path) for method in context.methods or ())
    return found


STREAMING_ROUTES = frozenset({("GET", "/api/events")})
"""Never-ending responses: covered by their own tests over a real loopback server."""


def api_routes(app: FastAPI) -> list[tuple[str, str]]:
    """`(method, concrete path)` of every route under /api (streams excepted), path parameters filled with garbage."""
    return sorted(
        (method, re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: PATH_VALUES[m.group(1)], path))
        for method, path in declared_routes(app)
        if path.startswith("/api") and (method, path) not in STREAMING_ROUTES
    )


class Captured:
    """Every response and log record seen during the test."""

    def __init__(self) -> None:
        self.responses: list[tuple[str, httpx2.Response]] = []
        self.records: list[logging.LogRecord] = []

    async def on_response(self, response: httpx2.Response) -> None:
        await response.aread()
        self.responses.append((f"{response.request.method} {response.request.url.path}", response))
