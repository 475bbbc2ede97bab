"""OAuth 2.1 for remote servers, owned by us (R-4): discovery, registration, PKCE, tokens, the runtime auth.

`OAuthBroker` runs the flow; `BoundBearerAuth` is what a connection carries; `CredentialVault` keeps the
encrypted per-binding credentials. See `docs/sdk-notes.md#oauth` for why the SDK's provider is not
used. This package sits between the runtime and the transports (import-linter `layers`).
"""

from mcp_center.auth.bearer import BoundBearerAuth
from mcp_center.auth.broker import (
    MAX_STEP_UP_AUTHORIZATIONS,
    PENDING_TTL_S,
    AuthorizationStart,
    Completion,
    OAuthBroker,
)
from mcp_center.auth.discovery import AuthorizationServer, Challenge, Discovery, discover, select_issuer
from mcp_center.auth.http import OAuthHttp
from mcp_center.auth.registration import MAX_CLIENT_ID_CHARS, valid_client_id
from mcp_center.auth.target import OAuthTarget
from mcp_center.auth.tokens import ClientIdentity, TokenSet, check_private_key
from mcp_center.auth.urls import UrlPolicy, canonical_resource, same_resource
from mcp_center.auth.vault import Binding, CredentialVault, StoredCredentials

__all__ = [
    "MAX_CLIENT_ID_CHARS",
    "MAX_STEP_UP_AUTHORIZATIONS",
    "PENDING_TTL_S",
    "AuthorizationServer",
    "AuthorizationStart",
    "Binding",
    "BoundBearerAuth",
    "Challenge",
    "ClientIdentity",
    "Completion",
    "CredentialVault",
    "Discovery",
    "OAuthBroker",
    "OAuthHttp",
    "OAuthTarget",
    "StoredCredentials",
    "TokenSet",
    "UrlPolicy",
    "canonical_resource",
    "check_private_key",
    "discover",
    "same_resource",
    "select_issuer",
    "valid_client_id",
]
