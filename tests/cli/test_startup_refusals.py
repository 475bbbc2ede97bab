"""A refused start is one error line, the first thing on the terminal, with one error code
(fix37, R-7.3, R-10.1).

`serve` runs as a process (`run_cli_process`); the database URLs name a socket directory with no
server in it, so nothing here needs PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli_process
from tests.support.serve import serve_env

PASSWORD = "pw-fix37-never-shown"


def test_serve_refused_by_an_unreachable_database_prints_its_error_before_any_log_line(tmp_path: Path) -> None:
    """The store logged `ERROR ... store.database_unavailable` above the refusal line."""
    url = f"postgresql://mcp:{PASSWORD}@/nowhere?host={tmp_path}"
    done = run_cli_process(
        "serve", "--data-dir", str(tmp_path / "data"), "--port", "0", "--database-url", url, env=serve_env()
    )
    assert done.returncode == 10, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error [STORAGE_UNAVAILABLE]: cannot connect to the database "), done.stderr
    assert len(lines) == 1, done.stderr  # no log line after it either: the line says it all
    assert PASSWORD not in done.stderr + done.stdout


def test_a_database_url_of_another_scheme_is_one_option_value_error_naming_the_option(tmp_path: Path) -> None:
    """`--database-url mysql://x` printed `error [REQUEST_INVALID]: ... [SETTING_INVALID]`: two codes,
    and the environment variable's name for a value given as an option."""
    data = str(tmp_path / "data")
    url = f"mysql://mcp:{PASSWORD}@db/mcp"
    for args, option in (
        (("serve", "--data-dir", data, "--port", "0", "--database-url", url), "--database-url"),
        (("migrate", "--data-dir", data, "--to", url), "--to"),
    ):
        done = run_cli_process(*args, env=serve_env())
        assert done.returncode == 2, done.stderr
        command = f"mcp-center {args[0]}"
        assert done.stderr.splitlines() == [
            f"error [OPTION_VALUE_INVALID]: option '{option}' of {command} must be a "
            f"postgresql://user:password@host:port/database URL; see '{command} --help'"
        ]
    assert not (tmp_path / "data").exists()
