"""What a running `serve` writes to its log (newcomer trial, issue 16): a balancer's passing health
checks are not logged, failing ones and every other request are (R-10.2)."""

from __future__ import annotations

from pathlib import Path

from tests.support.serve import running_host


def test_passed_health_checks_leave_no_access_log_line_and_failed_ones_do(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        for _ in range(5):
            assert host.client.get("/healthz").status_code == 200
        refused = host.client.get("/healthz", headers={"Host": "elsewhere.example"})  # not an allowed Host
        assert refused.status_code >= 400
        assert host.client.get("/api/instances").status_code == 200
    lines = host.log().splitlines()
    assert [line for line in lines if '"GET /healthz HTTP/1.1" 200' in line] == []
    assert [line for line in lines if f'"GET /healthz HTTP/1.1" {refused.status_code}' in line] != []
    assert [line for line in lines if '"GET /api/instances HTTP/1.1" 200' in line] != []
