"""The host's own safety at the HTTP edge (R-7.1 admin token, R-7.2 Host allow-list and Origin checks).

Threats: another local program or page driving the admin API without the token; DNS rebinding (an
attacker's name resolving to 127.0.0.1, so the browser sends `Host: evil.example`); cross-site
state-changing requests from a browser (a foreign `Origin`). Each refusal must also change nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import pytest
from fastapi import FastAPI

from mcp_center.api import create_api
from mcp_center.app import create_app
from mcp_center.config import Settings
from mcp_center.errors import SecretStoreError
from mcp_center.service import McpCenter
from tests.support.api import ADMIN_TOKEN, api_client, api_routes, assert_error, open_api, remote_body

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
CREATE = remote_body("remote", "https://mcp.example.com/mcp")


@pytest.fixture
async def app(center: McpCenter, settings: Settings) -> FastAPI:
    built = create_api(settings, ADMIN_TOKEN)
    built.state.center = center
    return built


@pytest.fixture
async def anonymous(app: FastAPI) -> AsyncGenerator[httpx2.AsyncClient]:
    async with api_client(app, token=None) as client:
        yield client


async def server_ids(api: httpx2.AsyncClient) -> list[str]:
    response = await api.get(SERVERS)
    assert response.status_code == 200, response.text
    return [s["id"] for s in response.json()["servers"]]


# ----- admin token (R-7.1) ---------------------------------------------------------------------------


async def test_every_api_route_without_the_token_answers_401_with_a_bearer_challenge(
    app: FastAPI, anonymous: httpx2.AsyncClient, api: httpx2.AsyncClient
) -> None:
    routes = api_routes(app)
    assert len(routes) >= 13
    for method, path in routes:
        response = await anonymous.request(method, path + "?kind=header", json=CREATE)
        assert_error(response, 401, "ADMIN_AUTH_REQUIRED")
        assert response.headers["www-authenticate"] == "Bearer", (method, path)
    assert await server_ids(api) == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", SERVERS, b"{not json"),
        ("PUT", f"{SERVERS}/remote", b"[1"),
        ("GET", "/api/nope", None),
        ("GET", "/api", None),
        ("DELETE", SERVERS, None),
        ("GET", f"{SERVERS}/remote?version=abc", None),
    ],
)
async def test_without_the_token_a_bad_body_unknown_path_or_wrong_method_still_answers_401_first(
    anonymous: httpx2.AsyncClient, method: str, path: str, body: bytes | None
) -> None:
    """An anonymous caller learns nothing about routes or bodies: auth runs before parsing and routing."""
    response = await anonymous.request(method, path, content=body, headers={"Content-Type": "application/json"})
    assert_error(response, 401, "ADMIN_AUTH_REQUIRED")
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong-token-0123456789",
        f"Bearer {ADMIN_TOKEN}x",
        f"Bearer {ADMIN_TOKEN[:-1]}",
        f"Basic {ADMIN_TOKEN}",
        ADMIN_TOKEN,
        "Bearer",
        "Bearer ",
    ],
)
async def test_a_wrong_or_malformed_token_answers_401_and_changes_nothing(
    anonymous: httpx2.AsyncClient, api: httpx2.AsyncClient, authorization: str
) -> None:
    headers = {"Authorization": authorization}
    for method, path in (("GET", SERVERS), ("POST", SERVERS)):
        response = await anonymous.request(method, path, json=CREATE, headers=headers)
        assert_error(response, 401, "ADMIN_AUTH_REQUIRED")
        assert response.headers["www-authenticate"] == "Bearer"
        assert ADMIN_TOKEN not in response.text
        assert "wrong-token" not in response.text
        # A token that was sent is called wrong; a missing or malformed one is asked for.
        sent = authorization.lower().startswith("bearer ") and authorization[7:].strip()
        assert ("not this host's admin token" in response.json()["error"]["message"]) == bool(sent)
    assert await server_ids(api) == []


async def test_the_bearer_scheme_is_case_insensitive(anonymous: httpx2.AsyncClient) -> None:
    """RFC 9110 §11.1: the auth scheme is case-insensitive."""
    response = await anonymous.get(SERVERS, headers={"Authorization": f"bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200, response.text


async def test_healthz_and_the_openapi_document_need_no_token(anonymous: httpx2.AsyncClient) -> None:
    health = await anonymous.get("/healthz")
    assert health.status_code == 200
    assert health.json()["ok"] is True
    openapi = await anonymous.get("/openapi.json")
    assert openapi.status_code == 200
    assert "/api/mcp/servers" in openapi.json()["paths"]


# ----- Host allow-list (R-7.2, DNS rebinding) --------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8765",
        "127.0.0.1.evil.example",
        "localhost.evil",
        "",
        "127.0.0.1:8765@evil.example",
        "localhost:notaport",
        "[::1]evil.example",
    ],
)
async def test_a_foreign_host_header_is_refused_on_every_path_and_changes_nothing(
    api: httpx2.AsyncClient, host: str
) -> None:
    headers = {"Host": host}
    for method, path in (
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
        ("GET", SERVERS),
        ("POST", SERVERS),
        ("GET", "/api/nope"),
        ("GET", "/"),
    ):
        response = await api.request(method, path, json=CREATE, headers=headers)
        assert_error(response, 403, "HOST_NOT_ALLOWED")
    assert await server_ids(api) == []


async def test_no_page_loads_a_third_party_script_on_the_admin_origin(anonymous: httpx2.AsyncClient) -> None:
    """R-7.2: FastAPI's Swagger UI (/docs) would load its script from a CDN; it is not served."""
    assert (await anonymous.get("/docs")).status_code == 404
    assert (await anonymous.get("/redoc")).status_code == 404
    assert (await anonymous.get("/openapi.json")).status_code == 200


@pytest.mark.parametrize(
    "host", ["localhost:1234", "localhost", "LOCALHOST:8765", "127.0.0.1:9999", "127.0.0.1", "[::1]:8765", "[::1]"]
)
async def test_loopback_host_headers_on_any_port_are_allowed(api: httpx2.AsyncClient, host: str) -> None:
    response = await api.get(SERVERS, headers={"Host": host})
    assert response.status_code == 200, response.text


async def test_an_extra_allowed_host_is_accepted_and_others_still_refused(tmp_path: Path) -> None:
    settings = Settings.load(
        data_dir=tmp_path / "data",
        allowed_hosts=("mcp.internal",),
        environ={"MCP_CENTER_ALLOWED_HOSTS": "Team.Example:9000"},
    )
    async with open_api(settings) as api:
        for host in ("mcp.internal", "mcp.internal:8765", "MCP.INTERNAL", "team.example:9000", "127.0.0.1:8765"):
            response = await api.get(SERVERS, headers={"Host": host})
            assert response.status_code == 200, (host, response.text)
        assert_error(await api.get(SERVERS, headers={"Host": "other.internal"}), 403, "HOST_NOT_ALLOWED")
        created = await api.post(
            SERVERS, json=CREATE, headers={"Host": "mcp.internal:8765", "Origin": "https://mcp.internal"}
        )
        assert created.status_code == 201, created.text


async def test_the_public_url_host_is_allowed(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", public_url="https://mcp.corp.example/", environ={})
    async with open_api(settings) as api:
        response = await api.get(SERVERS, headers={"Host": "mcp.corp.example"})
        assert response.status_code == 200, response.text


async def test_binding_all_interfaces_does_not_allow_every_host(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", host="0.0.0.0", environ={})
    async with open_api(settings) as api:
        assert_error(await api.get(SERVERS, headers={"Host": "evil.example"}), 403, "HOST_NOT_ALLOWED")
        assert_error(await api.get(SERVERS, headers={"Host": "0.0.0.0:8765"}), 403, "HOST_NOT_ALLOWED")


# ----- Origin checks (R-7.2, CSRF) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://evil.example:8765", "null", "http://127.0.0.1.evil"]
)
async def test_a_state_changing_request_from_a_foreign_origin_is_refused_and_changes_nothing(
    api: httpx2.AsyncClient, origin: str
) -> None:
    headers = {"Origin": origin}
    assert_error(await api.post(SERVERS, json=CREATE, headers=headers), 403, "ORIGIN_NOT_ALLOWED")
    assert await server_ids(api) == []
    created = await api.post(SERVERS, json=CREATE)
    assert created.status_code == 201
    for method, path, body in (
        ("PUT", f"{SERVERS}/remote", {**CREATE, "version": 1, "name": "X"}),
        ("PATCH", f"{SERVERS}/remote", {"version": 1, "name": "X"}),
        ("DELETE", f"{SERVERS}/remote", None),
        ("POST", f"{SERVERS}/remote/trust", {"digest": created.json()["digest"]}),
        ("PUT", f"{SERVERS}/remote/secrets/X-Key?kind=header", {"value": "secret-value"}),
    ):
        response = await api.request(method, path, json=body, headers=headers)
        assert_error(response, 403, "ORIGIN_NOT_ALLOWED")
    after = (await api.get(f"{SERVERS}/remote")).json()
    assert after["version"] == 1
    assert after["trusted"] is False
    assert after["secret_headers"] == {}


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8765", "http://localhost:8765"])
async def test_a_state_changing_request_from_our_own_origin_is_allowed(api: httpx2.AsyncClient, origin: str) -> None:
    response = await api.post(SERVERS, json=CREATE, headers={"Origin": origin})
    assert response.status_code == 201, response.text


async def test_a_read_with_a_foreign_origin_is_answered_without_cors_headers(api: httpx2.AsyncClient) -> None:
    """A GET changes nothing; without CORS headers the foreign page still cannot read the answer."""
    response = await api.get(SERVERS, headers={"Origin": "https://evil.example"})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers
    assert await server_ids(api) == []


# ----- the admin token file (R-7.1) ------------------------------------------------------------------


async def test_create_app_creates_a_private_admin_token_once_and_the_app_requires_it(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", environ={})
    app, token, created = create_app(settings)
    token_file = settings.data_dir / "admin-token"
    assert created is True
    assert len(token) >= 32
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(settings.data_dir.stat().st_mode) == 0o700
    assert token_file.read_text(encoding="ascii").strip() == token

    again_app, again_token, again_created = create_app(settings)
    assert (again_token, again_created) == (token, False)
    assert again_app is not app

    async with app.router.lifespan_context(app):
        async with api_client(app, token=token) as api:
            assert (await api.get(SERVERS)).status_code == 200
        async with api_client(app, token=ADMIN_TOKEN) as wrong:
            assert_error(await wrong.get(SERVERS), 401, "ADMIN_AUTH_REQUIRED")


async def test_an_admin_token_from_the_environment_is_used_instead_of_a_file(tmp_path: Path) -> None:
    env_token = "env-admin-token-0123456789abcdef"
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_ADMIN_TOKEN": env_token})
    app, token, created = create_app(settings)
    assert (token, created) == (env_token, False)
    assert not (settings.data_dir / "admin-token").exists()
    async with app.router.lifespan_context(app):
        async with api_client(app, token=env_token) as api:
            assert (await api.get(SERVERS)).status_code == 200
        async with api_client(app, token="mcpc_some-other-token-value") as wrong:
            assert_error(await wrong.get(SERVERS), 401, "ADMIN_AUTH_REQUIRED")


async def test_a_short_admin_token_from_the_environment_is_refused(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_ADMIN_TOKEN": "short"})
    with pytest.raises(SecretStoreError) as caught:
        create_app(settings)
    assert caught.value.code == "SECRET_STORE_ERROR"


async def test_an_admin_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", environ={})
    create_app(settings)
    token_file = settings.data_dir / "admin-token"
    os.chmod(token_file, 0o644)
    with pytest.raises(SecretStoreError) as caught:
        create_app(settings)
    assert caught.value.code == "SECRET_STORE_ERROR"
    assert token_file.read_text(encoding="ascii").strip() not in str(caught.value)
