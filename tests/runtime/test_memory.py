"""Freed heap handed back to the system after a listing (R-8.3: idle RSS; `runtime/memory.py`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

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


@pytest.mark.anyio
async def test_every_server_connection_shares_one_tls_context() -> None:
    async with (
        build_http_client({}, HttpDiagnostics()) as first,
        build_http_client({}, HttpDiagnostics()) as second,
    ):
        contexts = {
            id(client._transport._inner._pool._ssl_context)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
            for client in (first, second)
        }
    assert contexts == {id(shared_tls_context())}
