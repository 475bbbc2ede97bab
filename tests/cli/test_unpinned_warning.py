"""`add` and `import` say when an npx/uvx package names no version, and still do it (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_cli


def test_add_warns_of_an_unpinned_package_and_adds_the_server(tmp_path: Path) -> None:
    added = run_cli(tmp_path, "add", "pkg", "--", "npx", "-y", "some-pkg")
    assert added.returncode == 0, added.stderr
    assert added.stderr.splitlines() == [
        "warning [PACKAGE_NOT_PINNED]: 'some-pkg' names no fixed version: npx runs whatever release is newest "
        "at each start, not the code you trusted; pin one, e.g. 'some-pkg@1.2.3'"
    ]
    pinned = run_cli(tmp_path, "add", "pinned", "--", "npx", "-y", "some-pkg@1.4.2")
    assert pinned.returncode == 0 and "PACKAGE_NOT_PINNED" not in pinned.stderr


def test_an_import_preview_warns_of_an_unpinned_package(tmp_path: Path) -> None:
    config = tmp_path / "claude.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    previewed = run_cli(tmp_path / "data", "import", str(config), "--dry-run")
    assert previewed.returncode == 0, previewed.stderr
    assert (
        "warning [PACKAGE_NOT_PINNED] time: 'mcp-server-time' names no fixed version: uvx runs whatever release "
        "is newest at each start, not the code you trusted; pin one, e.g. 'mcp-server-time==1.2.3' "
        "(or 'mcp-server-time@1.2.3')"
    ) in previewed.stdout.replace("\n", " ")
