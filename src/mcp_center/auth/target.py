"""`OAuthTarget`: one server's OAuth configuration with its configured credentials decrypted.

The service builds a target from the stored record right before an OAuth action or a connection; the
broker never reads configuration itself. Secret fields are excluded from `repr`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_center.auth.tokens import ClientIdentity
from mcp_center.auth.urls import UrlPolicy, canonical_resource, same_resource
from mcp_center.auth.vault import Binding
from mcp_center.config import AuthOAuth
from mcp_center.models import TransportKind

__all__ = ["OAuthTarget"]


@dataclass(frozen=True)
class OAuthTarget:
    """What the broker needs to know about one server.

    Attributes:
        server_id: The server's id.
        url: The configured MCP URL.
        transport: `streamable_http` or `sse` (decides how the unauthenticated probe is sent).
        auth: The OAuth configuration.
        client_secret: The configured client secret (`oauth_client` secret), or None.
        private_key: The configured PEM key for `private_key_jwt`, or None.
        idp_id_token: The configured identity provider ID token (`cross_app_access`), or None.
    """

    server_id: str
    url: str
    transport: TransportKind
    auth: AuthOAuth
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    idp_id_token: str | None = field(default=None, repr=False)

    @property
    def resource(self) -> str:
        """The canonical MCP resource (RFC 8707), part of the binding."""
        return canonical_resource(self.url)

    @property
    def policy(self) -> UrlPolicy:
        """Where this server's OAuth requests may go."""
        return UrlPolicy.for_server(self.url)

    @property
    def bound_issuer(self) -> str | None:
        """The binding's issuer when the binding is for the current resource, else None."""
        binding = self.auth.binding
        if binding is None or not same_resource(binding.resource, self.resource):
            return None
        return binding.issuer

    @property
    def binding(self) -> Binding | None:
        """The current binding (server, canonical resource, issuer), or None before the first authorization."""
        issuer = self.bound_issuer
        return Binding(self.server_id, self.resource, issuer) if issuer is not None else None

    @property
    def interactive(self) -> bool:
        """The authorization code grant: a user logs in in a browser."""
        return self.auth.grant == "authorization_code"

    def configured_identity(self, offered: tuple[str, ...] | None = None) -> ClientIdentity | None:
        """The configured client (id, secret or key, auth method), or None when none is configured.

        Args:
            offered: The authorization server's `token_endpoint_auth_methods_supported`. Without a
                configured method, a client secret is sent with `client_secret_basic` unless the server
                offers only `client_secret_post`; without a secret the method is `none`.
        """
        client_id = self.auth.client_id
        if client_id is None:
            return None
        method = self.auth.token_endpoint_auth_method
        if method is None:
            method = "client_secret_basic" if self.client_secret else "none"
            post_only = bool(offered) and "client_secret_basic" not in offered and "client_secret_post" in offered
            if self.client_secret and post_only:
                method = "client_secret_post"
        return ClientIdentity(
            client_id=client_id,
            auth_method=method,
            client_secret=self.client_secret,
            private_key=self.private_key,
            signing_algorithm=self.auth.jwt_signing_algorithm,
            source="configured",
        )
