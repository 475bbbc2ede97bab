"""ux35 (trial findings, LOW): what the CLI says names what it is about — the URL `list --url` asked,
the file `import` could not read (its own code), codes whole in the import preview at 80 columns, and
what `unconfined` means under `list` (R-7.3, R-1.8, R-11.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.ports import free_port


def test_list_with_a_url_that_does_not_answer_names_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "add", "clock", "--", sys.executable, "-c", "pass").returncode == 0
    url = f"http://127.0.0.1:{free_port()}"
    listed = run_cli(data, "list", "--url", url)
    assert listed.returncode == 0, listed.stderr
    assert f"the 'mcp-center serve' at {url} (--url); it did not answer" in listed.stderr
    assert "clock" in listed.stdout


def test_list_says_what_unconfined_means_when_it_shows_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "add", "clock", "--", sys.executable, "-c", "pass").returncode == 0
    listed = run_cli(data, "list", columns=80)
    assert "  unconfined" in listed.stdout.splitlines()
    legend = " ".join(listed.stdout.split())
    assert "unconfined: no sandbox; the server runs with your user's rights" in legend
    assert "'mcp-center add --sandbox' confines one" in legend


def test_import_of_a_missing_file_names_it_with_its_own_code(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "mcp.json"
    result = run_cli(tmp_path / "data", "import", str(missing), input="")
    assert result.returncode == 3, result.stderr
    assert (
        result.stderr.splitlines()[0]
        == f"error [IMPORT_FILE_NOT_FOUND]: no file '{missing}' to import: it does not exist"
    )
    unreadable = run_cli(tmp_path / "data", "import", str(tmp_path), input="")
    assert unreadable.returncode == 2, unreadable.stderr
    assert unreadable.stderr.startswith(f"error [IMPORT_FILE_UNREADABLE]: cannot read the file '{tmp_path}' to import")


def test_the_import_preview_keeps_codes_whole_at_80_columns(tmp_path: Path) -> None:
    source = tmp_path / "mcp.json"
    long_name = "a-very-long-server-name-that-needs-the-whole-id-column"
    servers = {long_name: {"command": "npx", "args": ["-y", "some-pkg"]}, "b": {"command": "uvx", "args": ["t==1.0"]}}
    source.write_text(json.dumps({"mcpServers": servers}))
    result = run_cli(tmp_path / "data", "import", str(source), columns=80, input="n\n")
    lines = result.stdout.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table), result.stdout
    # The unpinned package is said once, as the full warning: no "note ... PACKAGE_NOT_PINNED" line too
    # (trialfix36).
    assert result.stdout.count("PACKAGE_NOT_PINNED") == 1, result.stdout
    assert "warning [PACKAGE_NOT_PINNED] a-very-long-server-name-that-nee:" in result.stdout, result.stdout
    wide = run_cli(tmp_path / "data", "import", str(source), columns=160, input="n\n")
    assert any("PACKAGE_NOT_PINNED │" in line for line in wide.stdout.splitlines()), wide.stdout
