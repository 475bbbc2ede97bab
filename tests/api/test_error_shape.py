"""Every error the REST API answers is one envelope: `{"error": {"code", "message", "details"}}` (STYLE §3).

Modelled on simonw/datasette `tests/test_error_shape.py`: walk every route the app declares, hit it
with a garbage server id and bad bodies, and assert the shape of every non-2xx answer. Framework
errors (unknown path, wrong method, malformed JSON) and unexpected exceptions use it too, and a 500
never shows exception text.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any, NoReturn

import httpx2
import pytest
from fastapi import FastAPI

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.support.api import ADMIN_TOKEN, api_client, api_routes, assert_envelope, assert_error, declared_routes

pytestmark = pytest.mark.anyio

MAY_SUCCEED = {
    ("GET", "/api/mcp/servers"),
    ("GET", "/api/mcp/templates"),
    ("POST", "/api/operations/no-such-operation/cancel"),
    ("GET", "/api/tools"),
    ("GET", "/api/approvals"),
    ("GET", "/api/prompts"),
    ("GET", "/api/resources"),
    ("GET", "/api/interactions"),
    ("GET", "/api/gateway"),
    ("GET", "/api/gateway/tokens"),
    ("GET", "/api/instances"),
}
"""Routes that answer 200 to garbage: lists (unknown query parameters are ignored) and the idempotent cancel."""

BODIES: list[tuple[str, bytes | None]] = [
    ("no body", None),
    ("not json", b"{oops"),
    ("a list", b"[1, 2, 3]"),
    ("a string", b'"text"'),
    ("garbage object", b'{"zzz": {"nested": [1]}, "version": "x", "digest": 5, "arguments": 7, "value": null}'),
]


@pytest.fixture
async def app(center: McpCenter, settings: Settings) -> FastAPI:
    built = create_api(settings, ADMIN_TOKEN)
    built.state.center = center
    return built


@pytest.fixture
async def client(app: FastAPI) -> AsyncGenerator[httpx2.AsyncClient]:
    # raise_app_exceptions=False: Starlette re-raises after answering a 500 (for the server's log).
    async with api_client(app, raise_app_exceptions=False) as opened:
        yield opened


async def test_the_route_walk_covers_the_seed_endpoint_list_and_the_openapi_document(app: FastAPI) -> None:
    """seed 002 §4 (docs/decisions.md#seed-002-4) lists these (and issue 6 the import routes); the walk
    below must see them all."""
    declared = declared_routes(app)
    expected = {
        ("GET", "/api/mcp/servers"),
        ("POST", "/api/mcp/servers"),
        ("GET", "/api/mcp/servers/{server_id}"),
        ("PUT", "/api/mcp/servers/{server_id}"),
        ("DELETE", "/api/mcp/servers/{server_id}"),
        ("GET", "/api/mcp/servers/{server_id}/tools"),
        ("POST", "/api/mcp/servers/{server_id}/trust"),
        ("POST", "/api/mcp/servers/{server_id}/test"),
        ("POST", "/api/mcp/servers/{server_id}/enable"),
        ("POST", "/api/mcp/servers/{server_id}/disable"),
        ("PUT", "/api/mcp/servers/{server_id}/secrets/{key}"),
        ("DELETE", "/api/mcp/servers/{server_id}/secrets/{key}"),
        ("POST", "/api/mcp/import/preview"),
        ("POST", "/api/mcp/import/apply"),
        ("GET", "/api/mcp/export"),
        ("GET", "/api/mcp/templates"),
        ("GET", "/api/tools"),
        ("POST", "/api/tools/{name}/call"),
        ("PUT", "/api/mcp/servers/{server_id}/tools/{tool}/policy"),
        ("GET", "/api/approvals"),
        ("POST", "/api/approvals/{approval_id}"),
        ("GET", "/api/prompts"),
        ("POST", "/api/prompts/{name:path}/get"),
        ("GET", "/api/resources"),
        ("POST", "/api/resources/read"),
        ("GET", "/api/interactions"),
        ("POST", "/api/interactions/{interaction_id}"),
    }
    assert expected <= declared
    documented = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops if p.startswith("/api")}
    # OpenAPI writes a path converter (`{name:path}`) as a plain parameter (`{name}`).
    assert documented == {(m, re.sub(r":\w+\}", "}", p)) for m, p in declared if p.startswith("/api")}


@pytest.mark.parametrize(("body_name", "body"), BODIES, ids=[name for name, _ in BODIES])
@pytest.mark.parametrize("query", ["", "?kind=nonsense&version=abc", "?kind=header&version=0"])
async def test_every_api_route_answers_errors_in_the_envelope(
    app: FastAPI, client: httpx2.AsyncClient, body_name: str, body: bytes | None, query: str
) -> None:
    succeeded: set[tuple[str, str]] = set()
    routes = api_routes(app)
    assert len(routes) >= 13
    for method, path in routes:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        response = await client.request(method, path + query, content=body, headers=headers)
        assert response.status_code != 500, (method, path, body_name, response.text)
        if response.is_success:
            succeeded.add((method, path))
            continue
        error = assert_envelope(response)
        assert error["code"].isupper(), error
        # The bad path value or a broken body never comes back as a traceback or a repr.
        assert "Traceback" not in response.text
    # Everything but the lists (which ignore unknown query parameters) and the idempotent cancel fails.
    assert succeeded <= MAY_SUCCEED, succeeded - MAY_SUCCEED


async def test_every_api_route_answers_unknown_server_ids_with_the_not_found_code(
    app: FastAPI, client: httpx2.AsyncClient
) -> None:
    # A valid body for each route (a body that breaks the route's model answers 422 first).
    bodies: dict[str, Any] = {
        "/trust": {"digest": "sha256:00"},
        "/secrets/": {"value": "some-secret-value"},
        "/call": {"arguments": {}},
        "/policy": {"policy": "allow", "version": 1},
        "/logging/level": {"level": "info"},
        "/rpc": {"method": "ping"},
        "/oauth/complete": {"callback_url": "http://127.0.0.1/oauth/callback?code=c&state=s"},
        "/oauth/start": {},
        "/complete": {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
        "": {"version": 1, "name": "x", "transport": "streamable_http", "url": "https://a.example/mcp"},
    }
    checked = 0
    for method, path in api_routes(app):
        if "no-such-server" not in path:
            continue
        kind = next((k for k in bodies if k and k in path), "")
        json_body = bodies[kind] if method in {"POST", "PUT", "PATCH"} else None
        query = "?kind=header" if "secrets" in path else ""
        response = await client.request(method, path + query, json=json_body)
        assert_error(response, 404, "MCP_SERVER_NOT_FOUND")
        checked += 1
    assert checked >= 12


async def test_an_unknown_path_under_api_answers_404_in_the_envelope(client: httpx2.AsyncClient) -> None:
    for path in ("/api/nope", "/api/mcp/servers/x/nope", "/api/mcp/servers/x/tools/t/call/extra"):
        assert_error(await client.get(path), 404, "NOT_FOUND")


async def test_an_unknown_path_outside_api_answers_404_in_the_envelope(app: FastAPI) -> None:
    async with api_client(app, token=None) as anonymous:
        assert_error(await anonymous.get("/nope"), 404, "NOT_FOUND")


async def test_a_wrong_method_answers_405_in_the_envelope_with_allow(client: httpx2.AsyncClient) -> None:
    for method, path in (
        ("DELETE", "/api/mcp/servers"),
        ("PATCH", "/api/mcp/servers"),
        ("GET", "/api/mcp/servers/x/trust"),
        ("POST", "/api/mcp/servers/x/tools"),
    ):
        response = await client.request(method, path)
        assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers.get("allow"), (method, path, response.headers)


async def test_a_query_parameter_of_the_wrong_type_names_the_field(client: httpx2.AsyncClient) -> None:
    created = await client.post(
        "/api/mcp/servers", json={"id": "remote", "name": "R", "transport": "sse", "url": "https://a.example/sse"}
    )
    assert created.status_code == 201
    for query in ("?version=abc", "?version=0"):
        error = assert_error(await client.delete(f"/api/mcp/servers/remote{query}"), 422, "REQUEST_INVALID")
        assert [e["field"] for e in error["details"]["errors"]] == ["version"]
    assert (await client.get("/api/mcp/servers/remote")).status_code == 200


async def test_an_unexpected_exception_is_a_500_that_shows_no_exception_text(
    client: httpx2.AsyncClient, center: McpCenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(*_args: object, **_kwargs: object) -> NoReturn:
        raise RuntimeError("boom-secret-text")

    monkeypatch.setattr(center, "list_servers", boom)
    monkeypatch.setattr(center, "get_server", boom)
    for path in ("/api/mcp/servers", "/api/mcp/servers/anything"):
        response = await client.get(path)
        error = assert_error(response, 500, "INTERNAL_ERROR")
        assert "boom" not in response.text
        assert "RuntimeError" not in response.text
        assert error["details"] == {}


async def test_revoking_an_unknown_gateway_token_is_the_trees_not_found(client: httpx2.AsyncClient) -> None:
    """`GatewayTokenNotFound` lives in errors.py with its code and status (R-7.1, R-7.3)."""
    from mcp_center.errors import GatewayTokenNotFound, NotFound

    assert issubclass(GatewayTokenNotFound, NotFound)
    error = assert_error(await client.delete("/api/gateway/tokens/0123456789ab"), 404, "GATEWAY_TOKEN_NOT_FOUND")
    assert error["details"]["id"] == "0123456789ab"


TRAVERSALS = ["..%2f", "..%2F", "x%2fy", "%2e%2e%2f", "..%2f..%2fhealthz", "..%5c"]
"""Path-parameter values that look like a path: an encoded `/` or `\\`, a `..` segment."""


async def test_every_route_with_a_path_parameter_answers_traversal_looking_values_in_the_envelope_never_a_redirect(
    app: FastAPI, client: httpx2.AsyncClient
) -> None:
    """`DELETE /api/gateway/tokens/..%2f` answered 307 to `/api/gateway/..` (routing redirected the
    decoded `/../` without its trailing slash); every `{name}` of every route answers 4xx instead."""
    templates = sorted((m, p) for m, p in declared_routes(app) if p.startswith("/api") and "{" in p)
    assert len(templates) >= 20
    checked = 0
    for method, template in templates:
        for value in TRAVERSALS:
            path = re.sub(r"\{\w+(?::\w+)?\}", value, template, count=1)
            path = re.sub(r"\{(\w+)(?::\w+)?\}", "x", path)
            for candidate in (path, path + "/"):
                response = await client.request(method, candidate, json={})
                assert "location" not in response.headers, (method, candidate)
                if response.is_success and template == "/api/operations/{operation_id}/cancel" and candidate == path:
                    continue  # cancelling an unknown operation is idempotent (MAY_SUCCEED)
                assert 400 <= response.status_code < 500, (method, candidate, response.status_code, response.text)
                error = assert_envelope(response)
                assert error["code"].isupper(), error
                checked += 1
    assert checked >= 20 * len(TRAVERSALS) * 2


async def test_a_path_matching_no_route_says_which_and_why(client: httpx2.AsyncClient) -> None:
    trailing = assert_error(await client.delete("/api/gateway/tokens/..%2f"), 404, "NOT_FOUND")
    assert trailing["message"] == "no route for DELETE /api/gateway/tokens/../: paths end without '/'"
    slash = assert_error(await client.delete("/api/gateway/tokens/a%2fb"), 404, "NOT_FOUND")
    assert "never holds '/', not even encoded as %2F" in slash["message"]
    assert_error(await client.get("/api/mcp/servers/"), 404, "NOT_FOUND")
    # A mistyped path gets the closest routes, not the %2F remark (it holds no encoded '/').
    typo = assert_error(await client.get("/api/mcp/server"), 404, "NOT_FOUND")
    assert typo["message"] == "no route for GET /api/mcp/server: did you mean /api/mcp/servers?"
    assert typo["details"]["did_you_mean"] == ["/api/mcp/servers"]
    call = assert_error(await client.post("/api/mcp/servers/x/tools/t/cal", json={}), 404, "NOT_FOUND")
    assert call["details"]["did_you_mean"] == ["/api/mcp/servers/{server_id}/tools/{tool}/call"]
    unknown = assert_error(await client.get("/api/xyz"), 404, "NOT_FOUND")
    assert "did_you_mean" not in unknown["details"] and "%2F" not in unknown["message"]


@pytest.mark.parametrize("path", ["/api/mcp/servers", "/api/mcp/import/preview"])
async def test_a_body_that_is_not_json_says_the_line_and_column(client: httpx2.AsyncClient, path: str) -> None:
    """ux35: "is not valid JSON" named neither where nor what (R-7.3)."""
    body = '{\n  "name": "x",\n  "transport" "stdio"\n}'
    answer = await client.post(path, content=body, headers={"content-type": "application/json"})
    error = assert_error(answer, 422, "REQUEST_INVALID")
    assert (error["details"]["line"], error["details"]["column"]) == (3, 15)
    assert "line 3, column 15" in error["message"] and "delimiter" in error["message"]
    assert error["details"]["errors"][0]["code"] == "JSON_INVALID"
