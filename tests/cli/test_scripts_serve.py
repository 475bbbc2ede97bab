"""`scripts/serve` run from another directory (newcomer trial, issue 16): the relative paths it is
given mean the caller's working directory, as they would for `mcp-center serve` itself (R-9.2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.serve import VENV_BIN, serve_env, serving

ROOT = Path(__file__).resolve().parent.parent.parent


def test_scripts_serve_keeps_a_relative_data_dir_in_the_callers_directory(tmp_path: Path) -> None:
    # A checkout of its own: the real scripts/serve, a bootstrap with nothing left to do (this
    # checkout's own is run by every scripts/test), and the venv's mcp-center.
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "serve", checkout / "scripts" / "serve")
    bootstrap = checkout / "scripts" / "bootstrap"
    bootstrap.write_text("#!/bin/sh\nexit 0\n")
    bootstrap.chmod(0o755)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "mcp-center").symlink_to(VENV_BIN / "mcp-center")
    work = tmp_path / "work"
    work.mkdir()
    log_path = tmp_path / "serve.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [str(checkout / "scripts" / "serve"), "--data-dir", "./dtest", "--port", "0"],
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=serve_env(),
        )
    with serving(proc, work / "dtest", log_path) as host:
        assert host.client.get("/healthz").status_code == 200
    assert (work / "dtest" / "secret.key").is_file()
    assert not (checkout / "dtest").exists()
    assert f"data: {work / 'dtest'}" in host.log()
