"""The broker's own HTTP client: no redirects, a URL policy, bounded bodies (R-4.2, docs/sdk-notes.md#oauth-broker).

Threats: a redirect during discovery or at a token endpoint carrying the request (and its client
secret or refresh token) somewhere else (docs/sdk-notes.md#oauth-dev-6); a request to a URL the policy
forbids (`UrlPolicy`); a hostile endpoint answering with an endless body. The MCP connection's client
is never used for OAuth requests: it carries the server's configured headers (API keys), which must
not reach an authorization server.

Every response is read completely up to `MAX_BODY_BYTES`, within `DEFAULT_TOTAL_S` for the whole
request (httpx2's timeouts are per read: an endpoint that drips a byte before each read timeout would
otherwise hold the request, and the user's OAuth start or the background refresh, forever); a 3xx
is returned as it is (never followed) and the caller decides which error it is.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp_types import LATEST_PROTOCOL_VERSION

from mcp_center.auth.urls import UrlPolicy
from mcp_center.models import is_object

__all__ = ["DEFAULT_TOTAL_S", "MAX_BODY_BYTES", "OAuthHttp", "OAuthResponse"]

MAX_BODY_BYTES = 1024 * 1024
"""Largest metadata, registration or token response read, in bytes; a longer body is cut and fails to parse."""
DEFAULT_TIMEOUT = httpx2.Timeout(15.0)
"""Seconds for each OAuth request (connect, read, write, pool)."""
DEFAULT_TOTAL_S = 30.0
"""Seconds for one OAuth request as a whole: sending it and reading its whole answer."""


def _verifying_context() -> ssl.SSLContext:
    """A TLS context as an `httpx2` client builds by default: the system trust store, the
    environment ignored, certificates and host names verified."""
    return httpx2.create_ssl_context(trust_env=False)


@dataclass(frozen=True)
class OAuthResponse:
    """A response read completely: status, headers, body (at most `MAX_BODY_BYTES`), parsed JSON object.

    `json` is None when the body is not a JSON object. The body is kept for parsing only and never logged.
    """

    status: int
    headers: httpx2.Headers
    body: bytes = field(repr=False)
    json: dict[str, Any] | None = field(repr=False)

    @property
    def is_redirect(self) -> bool:
        """A 3xx status (never followed)."""
        return 300 <= self.status < 400


class OAuthHttp:
    """Factory of the broker's HTTP client and its two request shapes.

    Args:
        transport: An httpx2 transport for tests (`httpx2.ASGITransport`, `MockTransport`); None is the network.
        timeout: httpx2 timeouts, seconds (each one bounds one step: connect, one read, ...).
        total_s: Seconds for a request as a whole; past it the request raises `httpx2.ReadTimeout`.
        tls_context: Returns the verifying TLS context the clients share (the host passes the one
            of its server connections); None builds one, on the first client, for this factory.
    """

    def __init__(
        self,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: httpx2.Timeout = DEFAULT_TIMEOUT,
        total_s: float = DEFAULT_TOTAL_S,
        tls_context: Callable[[], ssl.SSLContext] | None = None,
    ):
        self._transport = transport
        self._timeout = timeout
        self._total_s = total_s
        self._tls_context = tls_context or functools.cache(_verifying_context)

    @asynccontextmanager
    async def client(self) -> AsyncGenerator[httpx2.AsyncClient]:
        """A fresh client for one OAuth operation: redirects off, no proxies from the environment.

        Its TLS context is the shared one: a client's own would load the CA bundle again each time,
        ~25 ms of CPU twice per login (start and callback) and per token refresh (issue 16).
        """
        verify = self._tls_context() if self._transport is None else True
        async with httpx2.AsyncClient(
            transport=self._transport, timeout=self._timeout, follow_redirects=False, trust_env=False, verify=verify
        ) as client:
            yield client

    async def get(
        self, client: httpx2.AsyncClient, url: str, policy: UrlPolicy, *, what: str, accept: str = "application/json"
    ) -> OAuthResponse:
        """GET `url` after checking it against `policy`.

        Raises:
            OAuthDiscoveryFailed: rule `url_refused` (nothing was sent).
            httpx2.HTTPError: the request failed on the network.
        """
        policy.check(url, what=what)
        headers = {"Accept": accept, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}
        return await self._send(client, client.build_request("GET", url, headers=headers))

    async def post(
        self,
        client: httpx2.AsyncClient,
        url: str,
        policy: UrlPolicy,
        *,
        what: str,
        form: Mapping[str, str] | None = None,
        json_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> OAuthResponse:
        """POST a form (`application/x-www-form-urlencoded`) or a JSON body to `url` after the policy check.

        Raises:
            OAuthDiscoveryFailed: rule `url_refused` (nothing was sent).
            httpx2.HTTPError: the request failed on the network.
        """
        policy.check(url, what=what)
        merged = {"Accept": "application/json", **dict(headers or {})}
        if form is not None:
            request = client.build_request("POST", url, data=dict(form), headers=merged)
        else:
            request = client.build_request("POST", url, json=dict(json_body or {}), headers=merged)
        return await self._send(client, request)

    async def status_only(
        self,
        client: httpx2.AsyncClient,
        method: str,
        url: str,
        policy: UrlPolicy,
        *,
        what: str,
        headers: Mapping[str, str] | None = None,
        json_body: Mapping[str, Any] | None = None,
    ) -> httpx2.Response:
        """Send a request and close the response after its head: status and headers only.

        For the unauthenticated probe of an MCP endpoint, whose 200 may be an endless event stream.

        Raises:
            OAuthDiscoveryFailed: rule `url_refused` (nothing was sent).
            httpx2.HTTPError: the request failed on the network.
        """
        policy.check(url, what=what)
        request = client.build_request(
            method, url, headers=dict(headers or {}), json=dict(json_body) if json_body is not None else None
        )
        with self._deadline(request):
            response = await client.send(request, stream=True, follow_redirects=False)
            await response.aclose()
        return response

    @contextmanager
    def _deadline(self, request: httpx2.Request) -> Generator[None]:
        """Bound a request as a whole by `total_s`; past it, `httpx2.ReadTimeout` naming the limit."""
        try:
            with anyio.fail_after(self._total_s):
                yield
        except TimeoutError:
            raise httpx2.ReadTimeout(
                f"no complete answer within {self._total_s} s (the whole request)", request=request
            ) from None

    async def _send(self, client: httpx2.AsyncClient, request: httpx2.Request) -> OAuthResponse:
        with self._deadline(request):
            response = await client.send(request, stream=True, follow_redirects=False)
            try:
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_BODY_BYTES:
                        break
                body = b"".join(chunks)[:MAX_BODY_BYTES]
            finally:
                await response.aclose()
        parsed: dict[str, Any] | None = None
        try:
            value = json.loads(body) if body else None
        except ValueError:
            value = None
        if is_object(value):
            parsed = {str(k): v for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        return OAuthResponse(status=response.status_code, headers=response.headers, body=body, json=parsed)
