"""What a new user's trial of import, export and logs found (issue 16): a refused or dry-run import
created the data directory and its key (a mistyped --data-dir became a new directory); an import
did not name the directory it used; a dry run did not say it created nothing; `export --format
cusor` and `logs tiem` gave no did-you-mean (R-1.8, R-1.9, R-3.11, R-9.2, R-7.3)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.serve import ADMIN_TOKEN, running_host

FIXTURES = Path(__file__).parents[1] / "interchange" / "fixtures"
PROJECT = FIXTURES / "claude_code_project.mcp.json"


def test_a_refused_or_dry_run_import_creates_no_directory_and_no_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {', encoding="utf-8")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"mcpServers": {"notes": {"command": "notes-mcp"}}}), encoding="utf-8")
    cases = {
        "invalid": (["import", str(bad)], 2, "IMPORT_JSON_INVALID"),
        "value": (["import", str(PROJECT), "--yes"], 2, "VALUE_REQUIRED"),
        "answer": (["import", str(FIXTURES / "cursor.json")], 2, "ANSWER_REQUIRED"),
        "confirm": (["import", str(plain)], 2, "CONFIRMATION_REQUIRED"),
        "dry": (["import", str(PROJECT), "--dry-run"], 0, None),
    }
    for name, (args, code, error) in cases.items():
        fresh = tmp_path / f"fresh-{name}"
        result = run_cli(fresh, *args, input="")
        assert result.returncode == code, (name, result.stdout, result.stderr)
        if error is not None:
            assert f"[{error}]" in result.stderr, (name, result.stderr)
        assert not fresh.exists(), (name, sorted(p.name for p in fresh.iterdir()))
    dry = run_cli(tmp_path / "fresh-dry", "import", str(PROJECT), "--dry-run")
    assert dry.stdout.splitlines()[-1] == (
        f"dry run: nothing created in {tmp_path / 'fresh-dry'} (data directory, which does not exist)"
    )


def test_an_import_names_the_directory_it_used(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = tmp_path / ".mcp.json"
    source.write_text(json.dumps({"mcpServers": {"notes": {"command": "notes-mcp"}}}), encoding="utf-8")
    first = run_cli(data, "import", str(source), "--yes")
    assert first.returncode == 0, first.stderr
    assert f"imported 1 (untrusted, disabled) into {data} (data directory): notes;" in first.stdout
    again = run_cli(data, "import", str(source), "--yes")
    assert again.returncode == 0, again.stderr
    assert f"nothing to import into {data} (data directory): 1 already here, unchanged (notes)" in again.stdout


def test_a_mistyped_export_format_gets_a_did_you_mean(tmp_path: Path) -> None:
    result = run_cli(tmp_path / "data", "export", "--format", "cusor")
    assert result.returncode == 2
    assert result.stderr.splitlines()[1:] == ["  did you mean: cursor?"]
    assert not (tmp_path / "data").exists()


def test_logs_of_a_mistyped_server_id_gets_the_did_you_mean_of_the_host(tmp_path: Path) -> None:
    with running_host(tmp_path) as host:
        added = run_cli(host.data_dir, "add", "Time", "--", "echo", "hi")
        assert added.returncode == 0, added.stderr
        result = run_cli(host.data_dir, "logs", "tiem", env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        "error [MCP_SERVER_NOT_FOUND]: no server with id 'tiem'",
        "  did you mean: time?",
    ]
