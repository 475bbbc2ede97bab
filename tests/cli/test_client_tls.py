"""The CLI's client of a running host loads the trust store only for an https:// host (issue 16)."""

from __future__ import annotations

import ssl

import pytest

from mcp_center.cli.host import client_tls


@pytest.mark.parametrize("url", ["https://center.example", "HTTPS://center.example:8443"])
def test_an_https_host_is_verified_against_the_system_trust_store(url: str) -> None:
    assert client_tls(url) is True


def test_a_plain_http_host_gets_a_context_that_would_refuse_any_tls_connection() -> None:
    context = client_tls("http://127.0.0.1:8765")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs() == []  # trusts nothing, so a TLS handshake through it fails
