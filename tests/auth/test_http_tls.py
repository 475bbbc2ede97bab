"""The OAuth broker's clients share one verifying TLS context (R-4.2, issue 16).

Each client used to build its own and load the CA bundle into it: ~25 ms of CPU twice per login
and once per token refresh. Sharing must not loosen anything: the context still verifies
certificates and host names against the system trust store.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx2
import pytest

from mcp_center.auth import OAuthHttp
from mcp_center.config import Settings
from mcp_center.service import McpCenter
from mcp_center.transports import shared_tls_context

pytestmark = pytest.mark.anyio


def _context(client: httpx2.AsyncClient) -> ssl.SSLContext:
    """The TLS context of an OAuth client's connection pool (private httpx2 internals)."""
    pool: object = getattr(client._transport, "_pool")  # noqa: B009  # pyright: ignore[reportPrivateUsage]
    context: object = getattr(pool, "_ssl_context")  # noqa: B009
    assert isinstance(context, ssl.SSLContext)
    return context


def _assert_verifying(context: ssl.SSLContext) -> None:
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the trust store is loaded: nothing is trusted blindly


async def test_the_clients_of_one_factory_share_one_verifying_context() -> None:
    http = OAuthHttp()
    async with http.client() as first, http.client() as second:
        assert _context(first) is _context(second)
        _assert_verifying(_context(first))


async def test_the_hosts_oauth_clients_use_the_server_connections_context(tmp_path: Path) -> None:
    async with McpCenter.open(Settings.load(data_dir=tmp_path / "data", environ={})) as center:
        http: OAuthHttp = getattr(center.oauth.broker, "_http")  # noqa: B009 - the broker's private factory
        async with http.client() as client:
            assert _context(client) is shared_tls_context()
    _assert_verifying(shared_tls_context())
