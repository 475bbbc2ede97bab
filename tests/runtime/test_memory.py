"""Freed heap handed back to the system after a listing (R-8.3: idle RSS; `runtime/memory.py`)."""

from __future__ import annotations

import re
import socket
import ssl
import sys
from pathlib import Path

import httpx2
import pytest

from mcp_center.runtime.memory import release_freed_memory
from mcp_center.transports.http import HttpDiagnostics, build_http_client, shared_tls_context

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, read from /proc")


def _rss_kib() -> int:
    found = re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text())
    assert found is not None
    return int(found.group(1))


@linux_only
def test_memory_freed_in_the_middle_of_the_heap_goes_back_to_the_system() -> None:
    # Many small objects, then all freed but every 64th: the heap is full of free holes that stay
    # resident until malloc_trim hands their pages back (what a 1,000-tool listing leaves behind).
    blocks = [bytearray(600) for _ in range(150_000)]  # about 100 MB of C heap
    kept = blocks[::64]
    del blocks
    before = _rss_kib()
    release_freed_memory()
    after = _rss_kib()
    assert len(kept) > 0
    assert before - after > 20 * 1024, (before, after)


def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed): a connection there is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pool_context(client: httpx2.AsyncClient, pool: str) -> ssl.SSLContext | None:
    """The TLS context of one of a connection client's two pools (`_plain`, `_tls`), None while unmade."""
    made: object = getattr(client._transport, pool)  # pyright: ignore[reportPrivateUsage]
    if made is None:
        return None
    context: object = getattr(getattr(made, "_pool"), "_ssl_context")  # noqa: B009 - private httpx2 internals
    assert isinstance(context, ssl.SSLContext)
    return context


@pytest.mark.anyio
async def test_https_requests_share_one_verifying_tls_context_and_plain_ones_never_load_it() -> None:
    """R-8.3: the trust store is loaded once per process, and only when an https:// request is made;
    the plain pool's context trusts no certificate, so it could never carry an unverified TLS session."""
    port = _refused_port()
    async with (
        build_http_client({}, HttpDiagnostics()) as first,
        build_http_client({}, HttpDiagnostics()) as second,
    ):
        for client in (first, second):
            with pytest.raises(httpx2.ConnectError):
                await client.post(f"http://127.0.0.1:{port}/mcp", content=b"{}")
            assert _pool_context(client, "_tls") is None
        plain = _pool_context(first, "_plain")
        assert plain is not None
        assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
        assert plain.get_ca_certs() == [] and plain is not shared_tls_context()
        for client in (first, second):
            with pytest.raises(httpx2.ConnectError):
                await client.post(f"https://127.0.0.1:{port}/mcp", content=b"{}")
        contexts = {id(_pool_context(client, "_tls")) for client in (first, second)}
    assert contexts == {id(shared_tls_context())}
