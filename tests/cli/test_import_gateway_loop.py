"""`export --gateway` then `import` of that file: the gateway entry is refused, not a server (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_cli


def test_importing_the_exported_gateway_snippet_is_refused_as_a_loop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli(data, "add", "time", "--", "uvx", "mcp-server-time==2025.1.0").returncode == 0
    exported = run_cli(data, "export", "--format", "claude-code", "--gateway")
    assert exported.returncode == 0, exported.stderr
    snippet = tmp_path / "claude.json"
    snippet.write_text(exported.stdout)
    imported = run_cli(data, "import", str(snippet), "--yes")
    assert imported.returncode == 2  # IMPORT_NOTHING_TO_APPLY: the one entry was rejected
    assert "IMPORT_NOTHING_TO_APPLY" in imported.stderr
    assert "GATEWAY_LOOP: url is this host's own gateway (http://127.0.0.1:8765/mcp)" in " ".join(
        imported.stdout.replace("│", " ").split()
    )
    listed = run_cli(data, "list", "--json")
    assert [s["id"] for s in json.loads(listed.stdout)] == ["time"]
