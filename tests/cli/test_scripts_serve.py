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


def _fake_checkout(tmp_path: Path, script: str) -> tuple[Path, Path]:
    """A checkout with the real `scripts/<script>` and a `.venv/bin` whose python and mcp-center only
    record whether PYTHONDONTWRITEBYTECODE reached them (in `seen`)."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / script, checkout / "scripts" / script)
    bootstrap = checkout / "scripts" / "bootstrap"
    if script != "bootstrap":
        bootstrap.write_text("#!/bin/sh\nexit 0\n")
        bootstrap.chmod(0o755)
    seen = tmp_path / "seen"
    recorder = f'#!/bin/sh\necho "${{PYTHONDONTWRITEBYTECODE-unset}}" >> {seen}\n'
    (checkout / ".venv" / "bin").mkdir(parents=True)
    for name in ("python", "mcp-center"):
        (checkout / ".venv" / "bin" / name).write_text(recorder)
        (checkout / ".venv" / "bin" / name).chmod(0o755)
    return checkout, seen


def test_scripts_serve_and_bootstrap_let_python_write_its_bytecode_caches(tmp_path: Path) -> None:
    """Images that set PYTHONDONTWRITEBYTECODE made every `scripts/serve` recompile src/ (~0.3 s of
    CPU per start); both scripts unset it, as scripts/test does (issue 16)."""
    env = {**serve_env(), "PYTHONDONTWRITEBYTECODE": "1"}
    checkout, seen = _fake_checkout(tmp_path / "serve", "serve")
    subprocess.run([str(checkout / "scripts" / "serve"), "--port", "0"], env=env, check=True, timeout=60)
    assert seen.read_text().split() == ["unset"]
    checkout, seen = _fake_checkout(tmp_path / "bootstrap", "bootstrap")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (checkout / "constraints.txt").write_text("")
    fake_python = checkout / ".venv" / "bin" / "python"
    subprocess.run(
        [str(checkout / "scripts" / "bootstrap")], env={**env, "PYTHON": str(fake_python)}, check=True, timeout=60
    )
    assert seen.read_text().split() == ["unset"]  # its `python -m pip install`


def test_bootstrap_with_its_venv_made_looks_for_no_system_python(tmp_path: Path) -> None:
    """The system Python is only needed to create .venv: looking for it on every run went through
    pyenv's shims (about 0.3 s of each `scripts/serve`, also the one refused with
    SERVE_ALREADY_RUNNING) (cli39)."""
    checkout, seen = _fake_checkout(tmp_path, "bootstrap")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (checkout / "constraints.txt").write_text("")
    shims = tmp_path / "shims"
    shims.mkdir()
    looked = tmp_path / "looked"
    for name in ("python3.11", "python3"):
        (shims / name).write_text(f"#!/bin/sh\necho {name} >> {looked}\nexit 0\n")
        (shims / name).chmod(0o755)
    env = {**serve_env(), "PATH": f"{shims}:/usr/bin:/bin"}
    env.pop("PYTHON", None)
    subprocess.run([str(checkout / "scripts" / "bootstrap")], env=env, check=True, timeout=60)
    assert seen.read_text().split() == ["unset"]  # .venv's python installed the package
    assert not looked.exists()  # no system Python was asked
    (checkout / ".venv" / "bin" / "python").unlink()
    subprocess.run([str(checkout / "scripts" / "bootstrap")], env=env, check=False, timeout=60)
    assert looked.read_text().split()[0] == "python3.11"  # without .venv it looks, as before
