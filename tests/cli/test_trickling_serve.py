"""A serve that sends its headers and then one byte every so often is waited for once, in all, not per
network read (issue 16, F4, R-7.3).

httpx2's timeouts bound each read: the breaker's fake serve sent a byte every 3 s and `approvals
list`, `logs`, `list` and `show` (a 5 s bound) hung for ever; `list` never fell back to the data
directory's view.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mcp_center.cli import host, listing
from mcp_center.store.owner import FileOwnerLock, ServeOwner
from tests.support.cli import run_cli
from tests.support.serve import ADMIN_TOKEN
from tests.support.trickle import trickling_serve

_BOUND_S = 0.5
_INTERVAL_S = 0.1  # every read gets a byte well within the per-read timeout


def test_list_and_show_give_up_on_a_trickling_serve_once_and_show_the_local_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    token = {"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
    assert run_cli(data, "add", "Kept", "--", "node", "kept.js").returncode == 0
    monkeypatch.setattr(listing, "LIVE_TIMEOUT_S", _BOUND_S)
    with trickling_serve(_INTERVAL_S) as url:
        lock = FileOwnerLock(data)
        lock.claim(ServeOwner.this_process(url))  # this live test process is the directory's serve
        try:
            started = time.monotonic()
            listed = run_cli(data, "list", "--json", env=token)
            shown = run_cli(data, "show", "kept", env=token)
            elapsed = time.monotonic() - started
        finally:
            lock.release()
    said = f"the serve on {url} did not answer within {_BOUND_S:g} s; showing the data directory's view"
    for result in (listed, shown):
        assert result.returncode == 0, result.stderr
        assert said in " ".join(result.stderr.split()), result.stderr
    assert [s["id"] for s in json.loads(listed.stdout)] == ["kept"]
    assert json.loads(shown.stdout)["id"] == "kept"
    assert elapsed < 10, elapsed  # the serve cuts its answers after 15 s: without a deadline, 30 s


def test_approvals_and_logs_give_up_on_a_trickling_serve_with_the_silent_serve_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "ANSWER_TIMEOUT_S", _BOUND_S)
    token = {"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
    with trickling_serve(_INTERVAL_S) as url:
        started = time.monotonic()
        approvals = run_cli(tmp_path, "approvals", "list", "--url", url, env=token, columns=300)
        logs = run_cli(tmp_path, "logs", "kept", "--url", url, env=token, columns=300)
        elapsed = time.monotonic() - started
    said = f"error [MCP_SERVER_UNREACHABLE]: the serve on {url} did not answer within {_BOUND_S:g} s"
    for result in (approvals, logs):
        assert result.returncode == 7, result.stderr
        assert result.stderr.startswith(said), result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert elapsed < 10, elapsed
