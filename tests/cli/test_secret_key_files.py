"""A secret key that cannot open a data directory's stored secrets is refused at start-up, on the
files' store as on PostgreSQL: one SECRET_KEY_MISMATCH line naming where the key came from, exit 1,
never a key value (fix37, R-1.5, R-7.3, R-10.1).

Real data directories with a stored bearer token; the CLI in process (`run_cli`), `serve` as a process.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli, run_cli_process
from tests.support.serve import serve_env

TOKEN = "bearer-fix37-invented-0042"


def a_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")


def add_docs(data: Path, env: dict[str, str] | None = None) -> None:
    added = run_cli(
        data, "add", "Docs", "https://docs.example.net/mcp", "-H", f"Authorization: Bearer {TOKEN}", env=env
    )
    assert added.returncode == 0, added.stderr


def refused(result: CliResult, *keys: str) -> str:
    """The one error line of a refused start (asserted), for the caller's checks on its wording."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [SECRET_KEY_MISMATCH]: "), result.stderr
    for key in keys:
        assert key not in result.stderr + result.stdout
    assert TOKEN not in result.stderr + result.stdout
    return lines[0]


@pytest.fixture
def sealed(tmp_path: Path) -> Path:
    """A data directory whose bearer token is sealed with its own `secret.key`."""
    data = tmp_path / "data"
    add_docs(data)
    return data


def test_an_env_key_that_differs_from_the_key_file_is_refused_naming_both_sources(sealed: Path) -> None:
    """The env key overrode `secret.key` silently; every command then failed on the first secret."""
    other = a_key()
    line = refused(run_cli(sealed, "list", env={"MCP_CENTER_SECRET_KEY": other}), other)
    assert f"MCP_CENTER_SECRET_KEY (env) differs from {sealed / 'secret.key'} (file)" in line
    assert "the stored secrets open with secret.key: unset MCP_CENTER_SECRET_KEY" in line
    file_key = (sealed / "secret.key").read_text().strip()
    same = run_cli(sealed, "list", env={"MCP_CENTER_SECRET_KEY": file_key})
    assert same.returncode == 0, same.stderr  # the file's own key given in the env is that key


def test_a_key_that_opens_none_of_the_stored_secrets_is_refused_by_every_command(sealed: Path) -> None:
    (sealed / "secret.key").rename(sealed.parent / "kept.key")  # the env key is then the only one
    other = a_key()
    for args in (["list"], ["show", "docs"], ["gateway", "token", "list"]):
        line = refused(run_cli(sealed, *args, env={"MCP_CENTER_SECRET_KEY": other}), other)
        assert "the secret key from MCP_CENTER_SECRET_KEY (env) does not open the secrets stored in " in line
    assert not (sealed / "secret.key").exists()  # a refused command made no key file either
    right = (sealed.parent / "kept.key").read_text().strip()
    shown = run_cli(sealed, "show", "docs", env={"MCP_CENTER_SECRET_KEY": right})
    assert shown.returncode == 0, shown.stderr


def test_a_replaced_key_file_is_refused_as_the_file_source(sealed: Path) -> None:
    path = sealed / "secret.key"
    path.write_text(a_key() + "\n")
    line = refused(run_cli(sealed, "show", "docs"))
    assert f"the secret key from {path} (file) does not open the secrets stored in {sealed}" in line


def test_a_missing_key_file_beside_stored_secrets_is_refused_and_not_made_anew(sealed: Path) -> None:
    path = sealed / "secret.key"
    path.unlink()
    line = refused(run_cli(sealed, "show", "docs"))
    assert f"{path} (file) is missing, and the secrets stored in {sealed} were sealed with a key" in line
    assert not path.exists()


def test_serve_with_a_key_that_opens_nothing_stored_refuses_before_its_banner(sealed: Path) -> None:
    """It printed its banner and kept serving secrets it could not decrypt (a traceback per use)."""
    other = a_key()
    env = {**serve_env(), "MCP_CENTER_SECRET_KEY": other}
    done = run_cli_process("serve", "--data-dir", str(sealed), "--port", "0", env=env)
    line = refused(done, other)
    assert line.startswith("error [SECRET_KEY_MISMATCH]: MCP_CENTER_SECRET_KEY (env) differs from ")


def test_a_fresh_data_dir_with_an_env_key_keeps_working_without_a_key_file(tmp_path: Path) -> None:
    data, key = tmp_path / "fresh", a_key()
    add_docs(data, env={"MCP_CENTER_SECRET_KEY": key})
    listed = run_cli(data, "show", "docs", env={"MCP_CENTER_SECRET_KEY": key})
    assert listed.returncode == 0, listed.stderr
    assert not (data / "secret.key").exists()
    refused(run_cli(data, "list", env={"MCP_CENTER_SECRET_KEY": a_key()}))
