"""`mcp-center serve` as users run it: a second instance on a busy port fails fast (R-7.3)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_center.errors import AddressInUse
from mcp_center.store.running import RUNNING_FILE
from tests.e2e.conftest import ADMIN_TOKEN, VENV_BIN, running_host

pytestmark = pytest.mark.e2e


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root`: relative path → (size, mtime in ns)."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


def _serve(data_dir: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(MCP_CENTER_ADMIN_TOKEN=ADMIN_TOKEN)
    return subprocess.run(
        [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("same_data_dir", [True, False], ids=["same-data-dir", "other-data-dir"])
def test_a_second_serve_on_a_busy_port_fails_before_starting_anything(tmp_path: Path, same_data_dir: bool) -> None:
    with running_host(tmp_path) as host:
        port = int(host.url.rsplit(":", 1)[1])
        before = _files(host.data_dir)
        data_dir = host.data_dir if same_data_dir else tmp_path / "second"

        second = _serve(data_dir, port)

        output = second.stdout + second.stderr
        assert second.returncode == AddressInUse.exit_code, output
        assert f"[{AddressInUse.code}]" in second.stderr
        assert f"127.0.0.1:{port}" in second.stderr
        assert "--port" in second.stderr
        assert len(output.strip().splitlines()) == 1, output  # one message: no banner, no runtime, no traceback
        # The running instance is untouched: same files, same record, still serving.
        assert _files(host.data_dir) == before
        assert str(host.proc.pid) in (host.data_dir / RUNNING_FILE).read_text()
        assert host.client.get("/api/mcp/servers").status_code == 200
        assert same_data_dir or not data_dir.exists()
