"""No OAuth credential in any response, log record or data file (R-1.5, R-4.7).

One scripted session drives every OAuth path with real fake servers on loopback: dynamic
registration (the authorization server issues a client secret), a pre-registered client with a
configured client secret, a client-credentials machine, logins through the callback, refresh after
revoked access tokens, `invalid_grant`, step-up, forgetting. Everything observable is captured —
every API response (body and headers), every log record of every logger at DEBUG, every file in the
data directory — and none may hold an access token, refresh token, client secret, authorization code
or PKCE verifier, in plain, URL-encoded or base64 form.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.config import Settings
from tests.api.test_no_secret_leak import forms
from tests.support.api import Captured
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.readiness import STEP_TIMEOUT_S

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
CONFIGURED_SECRET = "configured-client-secret-" + "a1b2c3d4e5f6"
MACHINE_SECRET = "machine-client-secret-" + "f6e5d4c3b2a1"


@contextmanager
def browser_logs_off() -> Generator[None]:
    """The browser is not part of the host: its HTTP client's debug logs (the redirect with the code) are muted."""
    loggers = [
        logger
        for name, logger in list(logging.root.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and name.split(".")[0] in {"httpcore2", "httpx2"}
    ]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger in loggers:
            logger.disabled = False


async def login(api: httpx2.AsyncClient, server_id: str) -> None:
    started = await api.post(f"{SERVERS}/{server_id}/oauth/start")
    assert started.status_code == 200, started.text
    with browser_logs_off():
        async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
            location = httpx2.URL((await browser.get(started.json()["authorization_url"])).headers["location"])
    callback = await api.get(location.path, params=dict(location.params))
    assert callback.status_code == 200, callback.text


async def make(api: httpx2.AsyncClient, server_id: str, url: str, auth: dict[str, Any], **extra: Any) -> None:
    body = {"id": server_id, "name": server_id, "transport": "streamable_http", "url": url, "auth": auth, **extra}
    created = await api.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    trusted = await api.post(f"{SERVERS}/{server_id}/trust", json={"digest": created.json()["digest"]})
    assert trusted.status_code == 200, trusted.text


async def use(api: httpx2.AsyncClient, server_id: str) -> httpx2.Response:
    return await api.post(f"{SERVERS}/{server_id}/tools/echo/call", json={"arguments": {"text": "hello"}})


async def session(
    api: httpx2.AsyncClient, authorization: FakeAuthorizationServer, resource: FakeProtectedResource
) -> None:
    url = resource.url
    await make(api, "dcr", url, {"kind": "oauth"})
    secret_values = {"oauth": {"client_secret": CONFIGURED_SECRET}}
    await make(api, "pre", url, {"kind": "oauth", "client_id": "pre-client"}, secret_values=secret_values)
    await make(
        api,
        "machine",
        url,
        {"kind": "oauth", "grant": "client_credentials", "client_id": "machine", "client_secret": MACHINE_SECRET},
    )
    for server_id in ("dcr", "pre"):
        await login(api, server_id)
    assert (await api.post(f"{SERVERS}/machine/oauth/start")).status_code == 200
    for server_id in ("dcr", "pre", "machine"):
        assert (await api.post(f"{SERVERS}/{server_id}/test")).json()["ok"]
        assert (await api.post(f"{SERVERS}/{server_id}/enable")).status_code == 200
        assert (await use(api, server_id)).status_code == 200
    # Revoked access tokens: refresh (dcr, pre) and a new machine grant.
    authorization.revoke_access_tokens()
    for server_id in ("dcr", "pre", "machine"):
        assert (await use(api, server_id)).status_code == 200
    # Step-up and invalid_grant failures, views and lists.
    resource.step_up_scope = "mcp:write"
    assert (await use(api, "dcr")).status_code == 409
    resource.step_up_scope = None
    authorization.revoke_access_tokens()
    authorization.refresh_error = "invalid_grant"
    assert (await use(api, "pre")).status_code in (409, 502)
    authorization.refresh_error = None
    await login(api, "pre")
    for server_id in ("dcr", "pre", "machine"):
        assert (await api.get(f"{SERVERS}/{server_id}")).status_code == 200
    assert (await api.get(SERVERS)).status_code == 200
    replayed = await api.get("/oauth/callback", params={"code": "code-made-up", "state": "forged-state"})
    assert replayed.status_code == 400
    assert (await api.delete(f"{SERVERS}/machine/oauth")).status_code == 200


async def test_oauth_credentials_appear_in_no_response_log_record_or_data_file(
    client: httpx2.AsyncClient, captured: Captured, settings: Settings
) -> None:
    authorization = FakeAuthorizationServer(preregistered={"pre-client": CONFIGURED_SECRET, "machine": MACHINE_SECRET})
    resource = FakeProtectedResource([authorization], challenge_scope="mcp:read")
    async with serve_loopback(authorization.app) as as_base, serve_loopback(resource.app) as rs_base:
        authorization.base_url, resource.base_url = as_base, rs_base
        with anyio.fail_after(6 * STEP_TIMEOUT_S):
            await session(client, authorization, resource)

    verifiers = [s.form["code_verifier"] for s in authorization.saw("/token") if "code_verifier" in s.form]
    credentials = [*authorization.issued, *verifiers, CONFIGURED_SECRET, MACHINE_SECRET]
    assert len(authorization.issued) >= 12, authorization.issued
    needles = {f"{value[:10]}…:{name}": needle for value in credentials for name, needle in forms(value).items()}

    def leaks(where: str, blob: bytes | str) -> list[str]:
        data = blob.encode("utf-8", "backslashreplace") if isinstance(blob, str) else blob
        return [f"{where}: {name}" for name, needle in needles.items() if needle in data]

    found: list[str] = []
    assert len(captured.responses) >= 30
    for where, response in captured.responses:
        found += leaks(f"response body of {where}", response.content)
        found += leaks(f"response headers of {where}", repr(response.headers.multi_items()))
    assert captured.records
    for record in captured.records:
        where = f"log record {record.name}:{record.getMessage()[:60]!r}"
        found += leaks(where, record.getMessage())
        found += leaks(where + " (fields)", repr(vars(record)))
        if record.exc_info:
            found += leaks(where + " (formatted)", logging.Formatter().format(record))
    files = [p for p in settings.data_dir.rglob("*") if p.is_file()]
    assert {"servers.json", "secrets.json"} <= {p.name for p in files}
    for path in files:
        found += leaks(f"file {path.relative_to(settings.data_dir)}", path.read_bytes())
    assert not found, "\n".join(found)
