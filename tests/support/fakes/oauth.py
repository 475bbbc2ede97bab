"""A fake OAuth authorization server and a protected MCP server, small Starlette/ASGI apps for tests.

Both record every request they see (`seen`), so tests assert on what reached which server: that a
refresh token never reached the MCP server, that a changed issuer never received old credentials.

- `FakeAuthorizationServer`: RFC 8414 metadata, dynamic registration (RFC 7591), an auto-approving
  `/authorize` (302 back to the redirect URI with `code`, `state` and optionally `iss`), and `/token`
  for the authorization code (with PKCE S256 and `resource` checks), refresh token and client
  credentials grants. Knobs make it misbehave in one way at a time.
- `FakeProtectedResource`: protected resource metadata (RFC 9728) and the echo MCP server behind a
  bearer check that asks the authorization servers whether a token is valid; a 401 carries
  `resource_metadata` (and a scope), a `tools/call` without `step_up_scope` gets 403 insufficient_scope.

Serve them on loopback (`tests/support/loopback.py`) and set `base_url` once the port is known, or
in process through `RoutingTransport` under any https host name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.servers.http_echo import make_echo_server

__all__ = ["FakeAuthorizationServer", "FakeProtectedResource", "RoutingTransport", "Seen"]


@dataclass
class Seen:
    """One request a fake saw: method, path, query, lower-cased headers and the raw body."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        """The body parsed as a form."""
        return dict(parse_qsl(self.body.decode("utf-8", "replace")))

    def text(self) -> str:
        """Everything about the request as one string (for "never contains" assertions)."""
        return f"{self.method} {self.path} {self.query} {self.headers} {self.body.decode('utf-8', 'replace')}"


async def _record(request: Request, seen: list[Seen]) -> Seen:
    body = await request.body()
    item = Seen(
        method=request.method,
        path=request.url.path,
        query=dict(request.query_params),
        headers={k.lower(): v for k, v in request.headers.items()},
        body=body,
    )
    seen.append(item)
    return item


def _challenge_of(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclass
class _Client:
    client_id: str
    secret: str | None
    method: str


@dataclass
class _Code:
    client_id: str
    challenge: str
    redirect_uri: str
    scope: str | None
    resource: str | None


@dataclass
class FakeAuthorizationServer:
    """An authorization server; `base_url` is set once it listens (issuer = base_url + issuer_path)."""

    base_url: str = ""
    issuer_path: str = ""
    issuer_override: str | None = None
    code_challenge_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic", "client_secret_post", "none"])
    scopes_supported: list[str] | None = None
    registration: bool = True
    registered_client_id: Callable[[], Any] | None = None
    """Returns the `client_id` to answer registrations with (anything JSON); None: random ids."""
    issue_refresh_tokens: bool = True
    granted_scope: str | None = None
    """When set, every token grants this scope whatever was asked (a server that never grants more)."""
    refresh_error: str | None = None
    """When set, every refresh_token grant answers 400 with this `error`."""
    refresh_status: int | None = None
    """When set, every refresh_token grant answers this status (e.g. 503), error `temporarily_unavailable`."""
    rotate_refresh_tokens: bool = False
    """Single-use, rotating refresh tokens: a refresh consumes the one presented (a second use is
    `invalid_grant`) and answers a new one (OAuth 2.1 §4.3.1 for public clients)."""
    before_refresh_answer: Callable[[], Awaitable[None]] | None = None
    """Awaited after a refresh token was accepted and before the answer is sent (to hold a refresh
    open while another client tries)."""
    refreshes: int = 0
    """refresh_token grants answered 200."""
    code_error: str | None = None
    """When set, every authorization_code grant answers 400/401 with this `error`."""
    send_iss: bool = False
    cimd_supported: bool = False
    metadata_redirect: str | None = None
    """When set, the metadata URL answers 307 to this location."""
    preregistered: dict[str, str] = field(default_factory=dict[str, str])
    """client_id -> client_secret of pre-registered confidential clients (client_secret_basic)."""
    seen: list[Seen] = field(default_factory=list[Seen])
    clients: dict[str, _Client] = field(default_factory=dict[str, _Client])
    codes: dict[str, _Code] = field(default_factory=dict[str, _Code])
    access_tokens: dict[str, str] = field(default_factory=dict[str, str])
    """access token -> granted scope."""
    refresh_tokens: dict[str, str] = field(default_factory=dict[str, str])
    """refresh token -> granted scope."""
    issued: list[str] = field(default_factory=list[str])
    """Every credential this server ever issued: codes, access and refresh tokens, client secrets."""

    @property
    def issuer(self) -> str:
        """The issuer identifier the protected resource lists."""
        return self.base_url + self.issuer_path

    @property
    def metadata_path(self) -> str:
        """RFC 8414 path insertion of the issuer's path."""
        return "/.well-known/oauth-authorization-server" + self.issuer_path

    def revoke_access_tokens(self) -> None:
        """Every access token issued so far stops working (refresh tokens still work)."""
        self.access_tokens.clear()

    def scope_of(self, token: str) -> str | None:
        """The granted scope of a valid access token, None if the token is unknown."""
        return self.access_tokens.get(token)

    def saw(self, path_suffix: str) -> list[Seen]:
        """Requests whose path ends with `path_suffix`."""
        return [s for s in self.seen if s.path.endswith(path_suffix)]

    @property
    def app(self) -> ASGIApp:
        """The Starlette app."""
        prefix = self.issuer_path
        return Starlette(
            routes=[
                Route(self.metadata_path, self._metadata),
                Route(prefix + "/authorize", self._authorize),
                Route(prefix + "/token", self._token, methods=["POST"]),
                Route(prefix + "/register", self._register, methods=["POST"]),
            ]
        )

    async def _metadata(self, request: Request) -> Response:
        await _record(request, self.seen)
        if self.metadata_redirect is not None:
            return RedirectResponse(self.metadata_redirect, status_code=307)
        prefix = self.issuer
        doc: dict[str, Any] = {
            "issuer": self.issuer_override or self.issuer,
            "authorization_endpoint": prefix + "/authorize",
            "token_endpoint": prefix + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.registration:
            doc["registration_endpoint"] = prefix + "/register"
        if self.code_challenge_methods is not None:
            doc["code_challenge_methods_supported"] = self.code_challenge_methods
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.send_iss:
            doc["authorization_response_iss_parameter_supported"] = True
        if self.cimd_supported:
            doc["client_id_metadata_document_supported"] = True
        return JSONResponse(doc)

    async def _register(self, request: Request) -> Response:
        seen = await _record(request, self.seen)
        body = json.loads(seen.body)
        method = body.get("token_endpoint_auth_method") or "client_secret_basic"
        client_id: Any = self.registered_client_id() if self.registered_client_id else "client-" + secrets.token_hex(6)
        secret = None if method == "none" else "secret-" + secrets.token_hex(12)
        if secret is not None:
            self.issued.append(secret)
        if isinstance(client_id, str) and client_id:
            self.clients[client_id] = _Client(client_id, secret, method)
        answer: dict[str, Any] = {"client_id": client_id, "token_endpoint_auth_method": method, **body}
        answer["client_id"] = client_id
        if secret is not None:
            answer["client_secret"] = secret
        return JSONResponse(answer, status_code=201)

    async def _authorize(self, request: Request) -> Response:
        seen = await _record(request, self.seen)
        query = seen.query
        client_id = query.get("client_id", "")
        known = client_id in self.clients or client_id in self.preregistered or client_id.startswith("https://")
        if not known or query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = "code-" + secrets.token_hex(12)
        self.issued.append(code)
        self.codes[code] = _Code(
            client_id, query["code_challenge"], query.get("redirect_uri", ""), query.get("scope"), query.get("resource")
        )
        params = {"code": code, "state": query.get("state", "")}
        if self.send_iss:
            params["iss"] = self.issuer
        return RedirectResponse(query.get("redirect_uri", "") + "?" + urlencode(params), status_code=302)

    def _authenticate(self, seen: Seen) -> str | None:
        """The authenticated client id of a token request, or None."""
        form = seen.form
        auth = seen.headers.get("authorization", "")
        if auth.startswith("Basic "):
            raw = base64.b64decode(auth[6:]).decode()
            client_id, _, secret = raw.partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        if client_id in self.preregistered:
            return client_id if self.preregistered[client_id] == secret else None
        client = self.clients.get(client_id)
        if client is None:
            return client_id if client_id.startswith("https://") else None
        if client.secret is not None and client.secret != secret:
            return None
        return client_id

    def _issue(self, scope: str | None) -> dict[str, Any]:
        if self.granted_scope is not None:
            scope = self.granted_scope
        access = "at-" + secrets.token_hex(16)
        self.issued.append(access)
        self.access_tokens[access] = scope or ""
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": 3600}
        if scope:
            answer["scope"] = scope
        if self.issue_refresh_tokens:
            refresh = "rt-" + secrets.token_hex(16)
            self.issued.append(refresh)
            self.refresh_tokens[refresh] = scope or ""
            answer["refresh_token"] = refresh
        return answer

    async def _token(self, request: Request) -> Response:
        seen = await _record(request, self.seen)
        form = seen.form
        client_id = self._authenticate(seen)
        if client_id is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            if self.code_error is not None:
                return JSONResponse({"error": self.code_error}, status_code=401 if "client" in self.code_error else 400)
            code = self.codes.pop(form.get("code", ""), None)
            if (
                code is None
                or code.client_id != client_id
                or _challenge_of(form.get("code_verifier", "")) != code.challenge
                or form.get("redirect_uri") != code.redirect_uri
                or form.get("resource") != code.resource
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return JSONResponse(self._issue(code.scope))
        if grant == "refresh_token":
            if self.refresh_status is not None:
                return JSONResponse({"error": "temporarily_unavailable"}, status_code=self.refresh_status)
            if self.refresh_error is not None:
                return JSONResponse({"error": self.refresh_error}, status_code=400)
            presented = form.get("refresh_token", "")
            scope = self.refresh_tokens.pop(presented, None) if self.rotate_refresh_tokens else None
            if not self.rotate_refresh_tokens:
                scope = self.refresh_tokens.get(presented)
            if scope is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            if self.before_refresh_answer is not None:
                await self.before_refresh_answer()
            answer = self._issue(scope)
            if not self.rotate_refresh_tokens:
                answer.pop("refresh_token", None)  # no rotation: the old refresh token stays valid
            self.refreshes += 1
            return JSONResponse(answer)
        if grant == "client_credentials":
            return JSONResponse(self._issue(form.get("scope")))
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)


@dataclass
class FakeProtectedResource:
    """The echo MCP server at `/mcp` behind a bearer check, with its protected resource metadata."""

    authorization_servers: list[FakeAuthorizationServer]
    base_url: str = ""
    resource_override: str | None = None
    resource_metadata_override: str | None = None
    """What the 401 names as `resource_metadata` (None: the path-aware well-known URL, "": nothing)."""
    prm_redirect: str | None = None
    """When set, the path-aware PRM answers 307 to this location."""
    listed_issuers: list[str] | None = None
    """Issuers the PRM lists (None: every authorization server's issuer)."""
    challenge_scope: str | None = None
    step_up_scope: str | None = None
    """A `tools/call` needs this scope too; without it: 403 insufficient_scope."""
    prm_path: str = ""
    """Where the PRM is served (default: the path-aware location of the MCP URL); elsewhere 404."""
    sse: bool = False
    """Serve the legacy HTTP+SSE transport (GET `/sse`, POST `/messages/`) instead of Streamable HTTP."""

    def __post_init__(self) -> None:
        if not self.prm_path:
            self.prm_path = "/.well-known/oauth-protected-resource" + self.mcp_path

    @property
    def mcp_path(self) -> str:
        """The MCP endpoint's path."""
        return "/sse" if self.sse else "/mcp"

    prm_status: int | None = None
    """When set, the PRM location answers this status instead."""
    scopes_supported: list[str] | None = None
    """The PRM `scopes_supported`."""
    seen: list[Seen] = field(default_factory=list[Seen])
    refused: int = 0
    """401 answers given (a missing or unknown bearer token)."""
    _inner: ASGIApp | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return self.base_url + self.mcp_path

    @property
    def app(self) -> ASGIApp:
        """The ASGI app (the echo server's Starlette app behind this wrapper)."""
        if self._inner is None:
            server = make_echo_server("oauth-echo")
            self._inner = server.sse_app() if self.sse else server.streamable_http_app()
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (an instance with an async `__call__`, which uvicorn recognizes as ASGI 3)."""
        inner = self._inner
        assert inner is not None
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        request = Request(scope, receive)
        seen = await _record(request, self.seen)
        path = request.url.path
        if path == self.prm_path or path.startswith("/.well-known/"):
            await self._prm(path)(scope, receive, send)
            return
        if path != self.mcp_path and not (self.sse and path.startswith("/messages/")):
            await JSONResponse({"error": "not_found"}, status_code=404)(scope, receive, send)
            return
        denial = self._check(seen)
        if denial is not None:
            await denial(scope, receive, send)
            return
        await inner(scope, _replay(seen.body, receive), send)

    def _prm(self, path: str) -> Response:
        if path != self.prm_path:
            return JSONResponse({"error": "not_found"}, status_code=404)
        if self.prm_redirect is not None:
            return RedirectResponse(self.prm_redirect, status_code=307)
        if self.prm_status is not None:
            return JSONResponse({"error": "unavailable"}, status_code=self.prm_status)
        issuers = self.listed_issuers
        if issuers is None:
            issuers = [a.issuer for a in self.authorization_servers]
        doc: dict[str, Any] = {"resource": self.resource_override or self.url, "authorization_servers": issuers}
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        return JSONResponse(doc)

    def _www_authenticate(self, *, error: str, scope: str | None) -> str:
        parts = [f'Bearer error="{error}"']
        metadata = self.resource_metadata_override
        if metadata is None:
            metadata = self.base_url + self.prm_path
        if metadata:
            parts.append(f'resource_metadata="{metadata}"')
        if scope:
            parts.append(f'scope="{scope}"')
        return ", ".join(parts)

    def _check(self, seen: Seen) -> Response | None:
        auth = seen.headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        granted = next((s for a in self.authorization_servers if (s := a.scope_of(token)) is not None), None)
        if granted is None:
            self.refused += 1
            header = self._www_authenticate(error="invalid_token", scope=self.challenge_scope)
            return JSONResponse({"error": "invalid_token"}, status_code=401, headers={"WWW-Authenticate": header})
        if self.step_up_scope and b'"tools/call"' in seen.body and self.step_up_scope not in granted.split():
            wanted = " ".join(filter(None, [self.challenge_scope, self.step_up_scope]))
            header = self._www_authenticate(error="insufficient_scope", scope=wanted)
            return JSONResponse({"error": "insufficient_scope"}, status_code=403, headers={"WWW-Authenticate": header})
        return None

    def tokens_seen(self) -> list[str]:
        """Every bearer token the MCP endpoint received."""
        headers = [s.headers.get("authorization", "") for s in self.seen]
        return [h[7:] for h in headers if h.startswith("Bearer ")]


def _replay(body: bytes, original: Receive) -> Receive:
    """A `receive` that yields the already read body once, then waits on the real one (disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive


class RoutingTransport(httpx2.AsyncBaseTransport):
    """An in-process transport that sends each request to the ASGI app of its host (https any host).

    Args:
        apps: `host -> ASGI app`; a request to another host fails like a DNS error.
    """

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self._transports = {host: httpx2.ASGITransport(app=app) for host, app in apps.items()}
        self.requests: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        transport = self._transports.get(request.url.host)
        if transport is None:
            raise httpx2.ConnectError(f"no fake for {request.url.host}", request=request)
        return await transport.handle_async_request(request)

    def hosts_contacted(self) -> set[str]:
        """Host names requested so far."""
        return {r.url.host for r in self.requests}


def origin(url: str) -> str:
    """`scheme://netloc` of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
