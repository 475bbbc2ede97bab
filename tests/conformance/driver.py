"""Conformance client driver: mcp-center, driven through its own REST API, as an MCP client under test.

The official harness (`@modelcontextprotocol/conformance`) runs `<this command> <server URL>` once per
scenario, with `MCP_CONFORMANCE_SCENARIO` (and, for four scenarios, `MCP_CONFORMANCE_CONTEXT`) set.
The driver opens a fresh `McpCenter` in a temporary data directory, mounts the real REST app in
process, and does what a user would: create the server (with the OAuth settings the scenario needs),
trust its summary, authorize it with the product's broker, test, enable, list tools, call the
scenario's tool, exit.

The browser step is played headlessly, as the conformance README explains: GET the authorize URL
without following redirects, take the `Location` (our `<base URL>/oauth/callback?code=...&state=...`)
and hand its query to our callback route. Step-up (403 insufficient_scope) authorizes again; the
broker's own limit ends `auth/scope-retry-limit`.

For `elicitation-sep1034-client-defaults` the connection answers form elicitations with the schema
defaults (durable elicitation cards come with their own issue). Exit code 0 when the scenario's steps
all succeeded, 1 otherwise (the harness judges by what its mock servers saw, not by this code).

Usage: `python -m tests.conformance.driver <server URL>` from the repository root.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.context import ClientRequestContext

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.runtime import SessionHooks
from mcp_center.secrets import install_log_redaction
from mcp_center.service import McpCenter
from mcp_center.transports import ConnectionSpec
from tests.support.loopback import NO_TLS
from tests.support.wire import is_object, object_or_empty

ADMIN_TOKEN = "conformance-driver-admin-token-0123456789"
SERVER_ID = "conformance"
STEP_TIMEOUT_S = 20.0
MAX_AUTHORIZATIONS = 6
"""A bound on this driver's own loop; the broker refuses looping step-ups before this."""
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The exact client metadata document URL `auth/basic-cimd` expects as client_id."""
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}
AUTH_CODES = {"OAUTH_AUTHORIZATION_REQUIRED", "OAUTH_STEP_UP_REQUIRED"}

log = logging.getLogger("conformance.driver")


class DriverError(Exception):
    """A step failed; the message names it (and carries the API's error code)."""


def server_body(scenario: str, url: str, context: dict[str, Any]) -> dict[str, Any]:
    """The create body a user would send for this scenario (OAuth settings from the scenario's context)."""
    body: dict[str, Any] = {"id": SERVER_ID, "name": "Conformance", "transport": "streamable_http", "url": url}
    if not scenario.startswith("auth/"):
        return body
    auth: dict[str, Any] = {"kind": "oauth"}
    secrets: dict[str, str] = {}
    if scenario == "auth/basic-cimd":
        auth["client_metadata_url"] = CIMD_URL
    elif scenario.startswith("auth/2025-03-26-"):
        auth["legacy_endpoint_fallback"] = True  # the documented opt-in for 2025-03-26 servers
    elif scenario == "auth/pre-registration":
        auth["client_id"] = context["client_id"]
        secrets["client_secret"] = context["client_secret"]
    elif scenario == "auth/client-credentials-basic":
        auth.update(grant="client_credentials", client_id=context["client_id"])
        secrets["client_secret"] = context["client_secret"]
    elif scenario == "auth/client-credentials-jwt":
        auth.update(
            grant="client_credentials",
            client_id=context["client_id"],
            token_endpoint_auth_method="private_key_jwt",
            jwt_signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        secrets["private_key"] = context["private_key_pem"]
    elif scenario == "auth/cross-app-access-complete-flow":
        auth.update(
            grant="cross_app_access",
            client_id=context["client_id"],
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
        )
        secrets.update(client_secret=context["client_secret"], idp_id_token=context["idp_id_token"])
    body["auth"] = auth
    if secrets:
        body["secret_values"] = {"oauth": secrets}
    return body


async def accept_with_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """Answer a form elicitation with the requested schema's defaults; decline URL mode (R-6.2)."""
    del context
    if not isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="decline")
    properties = object_or_empty(params.requested_schema.get("properties"))
    content: dict[str, Any] = {}
    for name, schema in properties.items():
        if is_object(schema) and "default" in schema:
            content[name] = schema["default"]
    return types.ElicitResult(action="accept", content=content)


def hooks_for(_spec: ConnectionSpec, _connection_id: str) -> SessionHooks:
    """Session hooks of the driver's long-lived connections."""
    return SessionHooks(elicitation_callback=accept_with_defaults)


def _error(response: httpx2.Response) -> tuple[str, dict[str, Any]]:
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return "HTTP_" + str(response.status_code), {}
    return str(error.get("code")), dict(error)


async def _expect(response: httpx2.Response, what: str) -> dict[str, Any]:
    if response.status_code >= 400:
        code, error = _error(response)
        raise DriverError(f"{what} failed: {code}: {error.get('message')}")
    body: dict[str, Any] = response.json() if response.content else {}
    return body


class Driver:
    """One scenario run against an in-process mcp-center."""

    def __init__(self, api: httpx2.AsyncClient, browser: httpx2.AsyncClient) -> None:
        self.api = api
        self.browser = browser
        self.authorizations = 0

    async def authorize(self) -> None:
        """Start an authorization and play the browser: authorize URL -> Location -> our callback."""
        self.authorizations += 1
        if self.authorizations > MAX_AUTHORIZATIONS:
            raise DriverError("too many authorizations")
        started = await _expect(await self.api.post(f"/api/mcp/servers/{SERVER_ID}/oauth/start"), "oauth/start")
        log.info("authorization started: issuer %s, scopes %s", started["issuer"], started["scopes"])
        if started["authorized"]:
            return
        answer = await self.browser.get(started["authorization_url"])
        location = answer.headers.get("location")
        if answer.status_code not in (302, 303, 307) or not location:
            raise DriverError(f"the authorization endpoint answered {answer.status_code} without a redirect")
        redirected = httpx2.URL(location)
        callback = await self.api.get(
            redirected.path, params=dict(redirected.params), headers={"Accept": "application/json"}
        )
        await _expect(callback, "the OAuth callback")

    async def with_auth(self, what: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        """Send an API request; when OAuth asks for a (step-up) authorization, authorize and retry."""
        while True:
            response = await self.api.request(method, path, **kwargs)
            code, _ = _error(response) if response.status_code >= 400 else ("", {})
            if code not in AUTH_CODES:
                return response
            log.info("%s needs authorization (%s)", what, code)
            await self.authorize()

    async def test_until_ok(self) -> dict[str, Any]:
        """`POST .../test`, authorizing first whenever the failure is an OAuth one."""
        while True:
            result = await _expect(await self.api.post(f"/api/mcp/servers/{SERVER_ID}/test"), "test")
            if result["ok"]:
                return result
            error = object_or_empty(result.get("error"))
            if error.get("code") not in AUTH_CODES:
                raise DriverError(f"test failed: {error.get('code')}: {error.get('message')}")
            log.info("test needs authorization (%s)", error.get("code"))
            await self.authorize()
            await self.trust()

    async def trust(self) -> None:
        """Confirm the current summary (a recorded binding may have changed the digest)."""
        view = await _expect(await self.api.get(f"/api/mcp/servers/{SERVER_ID}"), "read")
        if not view["trusted"]:
            await _expect(
                await self.api.post(f"/api/mcp/servers/{SERVER_ID}/trust", json={"digest": view["digest"]}), "trust"
            )

    async def run(self, scenario: str, url: str, context: dict[str, Any]) -> None:
        """Create, trust, authorize, test, enable, list tools, call the scenario's tool."""
        await _expect(await self.api.post("/api/mcp/servers", json=server_body(scenario, url, context)), "create")
        await self.trust()
        if scenario.startswith("auth/"):
            await self.authorize()
            await self.trust()
        if scenario == "initialize":
            # The mock answers tools/list with an empty result; the handshake is what is checked.
            await self.api.post(f"/api/mcp/servers/{SERVER_ID}/test")
            return
        await self.test_until_ok()
        view = await _expect(await self.api.post(f"/api/mcp/servers/{SERVER_ID}/enable"), "enable")
        log.info("enabled: %s", view["status"]["state"])
        tools = await _expect(
            await self.with_auth("tools/list", "GET", f"/api/mcp/servers/{SERVER_ID}/tools"), "tools/list"
        )
        names = [tool["name"] for tool in tools["tools"]]
        log.info("tools: %s", names)
        name, arguments = TOOLS.get(scenario, ("test-tool", {}))
        if name not in names:
            raise DriverError(f"the server has no tool {name!r}")
        result = await _expect(
            await self.with_auth(
                "tools/call",
                "POST",
                f"/api/mcp/servers/{SERVER_ID}/tools/{name}/call",
                json={"arguments": arguments},
            ),
            f"tools/call {name}",
        )
        log.info("tool result: %s", json.dumps(result)[:200])
        if result.get("isError"):
            raise DriverError(f"tool {name} answered isError")


async def main(url: str) -> int:
    """Run the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`; return the exit code."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    log.info("scenario %s at %s", scenario, url)
    with tempfile.TemporaryDirectory(prefix="mcp-center-conformance-") as data_dir:
        settings = Settings.load(data_dir=data_dir, environ={})
        async with McpCenter.open(settings, connect=False, hooks_for=hooks_for) as center:
            app = create_api(settings, ADMIN_TOKEN)
            app.state.center = center
            async with (
                httpx2.AsyncClient(
                    transport=httpx2.ASGITransport(app=app),
                    base_url=settings.base_url,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                    timeout=STEP_TIMEOUT_S,
                ) as api,
                httpx2.AsyncClient(
                    verify=NO_TLS, follow_redirects=False, trust_env=False, timeout=STEP_TIMEOUT_S
                ) as browser,
            ):
                driver = Driver(api, browser)
                try:
                    with anyio.fail_after(4 * STEP_TIMEOUT_S):
                        await driver.run(scenario, url, context)
                except DriverError as exc:
                    log.error("scenario %s: %s", scenario, exc)
                    return 1
    log.info("scenario %s: done", scenario)
    return 0


if __name__ == "__main__":
    install_log_redaction()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    sys.exit(anyio.run(main, sys.argv[-1]))
