"""In-process OAuth worlds for the broker tests: fake servers under https host names, no network.

`World` routes `mcp.example.com`, `as.example.com`, `as2.example.com` and `evil.example.com` to fake
apps through `RoutingTransport`, so the https-only rules of R-4.2 can be exercised without TLS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_center.auth import Challenge, OAuthBroker, OAuthHttp, OAuthTarget, UrlPolicy
from mcp_center.config import AuthOAuth
from mcp_center.models import TransportKind
from mcp_center.secrets import Redactor, SecretCipher
from mcp_center.store import JsonStore
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource, RoutingTransport, Seen

MCP_URL = "https://mcp.example.com/mcp"
REDIRECT_URI = "http://127.0.0.1:8765/oauth/callback"


@dataclass
class Recorder:
    """A host that answers every request with `answer` and records it (the "evil" site)."""

    answer: Mapping[str, Any] = field(default_factory=dict[str, Any])
    seen: list[Seen] = field(default_factory=list[Seen])

    @property
    def app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            body = await request.body()
            self.seen.append(Seen(request.method, request.url.path, dict(request.query_params), {}, body))
            return JSONResponse(dict(self.answer))

        return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "POST"])])


@dataclass
class World:
    """Two authorization servers, a protected resource and an evil host, all in process."""

    authorization: FakeAuthorizationServer
    second: FakeAuthorizationServer
    resource: FakeProtectedResource
    evil: Recorder
    transport: RoutingTransport
    http: OAuthHttp

    def policy(self, url: str = MCP_URL) -> UrlPolicy:
        return UrlPolicy.for_server(url)


def make_world(**resource_options: Any) -> World:
    """A world whose resource lists the first authorization server (options go to the resource)."""
    authorization = FakeAuthorizationServer(base_url="https://as.example.com")
    second = FakeAuthorizationServer(base_url="https://as2.example.com")
    resource = FakeProtectedResource([authorization, second], base_url="https://mcp.example.com", **resource_options)
    if resource.listed_issuers is None:
        resource.listed_issuers = [authorization.issuer]
    evil = Recorder(answer={"resource": MCP_URL, "authorization_servers": ["https://evil.example.com"]})
    transport = RoutingTransport(
        {
            "mcp.example.com": resource.app,
            "as.example.com": authorization.app,
            "as2.example.com": second.app,
            "evil.example.com": evil.app,
        }
    )
    return World(authorization, second, resource, evil, transport, OAuthHttp(transport=transport))


def challenge(resource_metadata: str | None = None, scope: str | None = None) -> Challenge:
    """A 401 challenge as the MCP server would send it."""
    parts = ['Bearer error="invalid_token"']
    if resource_metadata:
        parts.append(f'resource_metadata="{resource_metadata}"')
    if scope:
        parts.append(f'scope="{scope}"')
    return Challenge.from_header(401, ", ".join(parts))


def make_broker(world: World, data_dir: Path, redactor: Redactor | None = None) -> OAuthBroker:
    """A broker over a fresh JSON store in `data_dir`, talking to the world."""
    return OAuthBroker(
        store=JsonStore(data_dir),
        cipher=SecretCipher(b"k" * 32),
        redactor=redactor or Redactor(),
        redirect_uri=REDIRECT_URI,
        http=world.http,
    )


def target(auth: AuthOAuth | None = None, *, url: str = MCP_URL, server_id: str = "srv", **secrets: str) -> OAuthTarget:
    """The broker's view of a server at `url`."""
    return OAuthTarget(
        server_id=server_id,
        url=url,
        transport=TransportKind.STREAMABLE_HTTP,
        auth=auth or AuthOAuth(),
        client_secret=secrets.get("client_secret"),
        private_key=secrets.get("private_key"),
        idp_id_token=secrets.get("idp_id_token"),
    )
