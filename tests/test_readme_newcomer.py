"""What a newcomer following README.md hit (issue: newcomer fixes): the Inspector's Node.js
requirement, what `export --gateway` prints, and the library snippet's data directory (R-9.2)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.mcp_servers import NODE_DIR

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_the_readme_states_the_node_version_the_pinned_inspector_requires() -> None:
    package = json.loads((NODE_DIR / "node_modules/@modelcontextprotocol/inspector/package.json").read_text())
    pinned = re.search(r"@modelcontextprotocol/inspector@([\d.]+) --cli", README)
    assert pinned is not None
    assert package["version"] == pinned.group(1)
    minimum = re.fullmatch(r">=(\d+)\.(\d+)\.0", package["engines"]["node"])
    assert minimum is not None, package["engines"]
    assert f"Inspector {pinned.group(1)} needs Node.js {minimum.group(1)}.{minimum.group(2)} or later" in README


def test_the_readme_shows_the_claude_code_file_export_gateway_prints(tmp_path: Path) -> None:
    sentence = README[README.index("`mcp-center export --format claude-code --gateway` prints") :][:200]
    assert "prints the Claude Code `.mcp.json` above" in sentence
    exported = run_cli(tmp_path / "data", "export", "--format", "claude-code", "--gateway")
    assert exported.returncode == 0, exported.stderr
    printed = json.loads(exported.stdout)  # one .mcp.json document, nothing else
    shown = [json.loads(b) for b in JSON_BLOCK.findall(README[: README.index(sentence)])]
    assert printed in shown
    assert printed["mcpServers"]["mcp-center"]["type"] == "http"
    assert "stores that header, the token in it, in plain text in `~/.claude.json`" in README


def test_the_claude_desktop_token_placeholder_is_one_in_readme_export_and_gateway_page(tmp_path: Path) -> None:
    exported = run_cli(tmp_path / "data", "export", "--format", "claude-desktop", "--gateway")
    assert exported.returncode == 0, exported.stderr
    placeholder = json.loads(exported.stdout)["mcpServers"]["mcp-center"]["env"]["MCP_CENTER_GATEWAY_TOKEN"]
    [readme_desktop] = [json.loads(b) for b in JSON_BLOCK.findall(README) if '"--stdio"' in b]
    assert readme_desktop["mcpServers"]["mcp-center"]["env"] == {"MCP_CENTER_GATEWAY_TOKEN": placeholder}
    page = (ROOT / "src/mcp_center/web/static/js/gateway.js").read_text(encoding="utf-8")
    assert f'token ?? "{placeholder}"' in page


def test_the_agents_python_snippet_uses_serves_data_directory_and_creates_no_stray_one(tmp_path: Path) -> None:
    [snippet] = [b for b in PYTHON_BLOCK.findall(README) if 'agent_tools(format="openai")' in b]
    serve_data = tmp_path / "serve-data"
    assert run_cli(serve_data, "add", "Local", "--", sys.executable, "-c", "pass").returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(serve_data)}
    done = subprocess.run(
        [sys.executable, "-c", snippet], cwd=work, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # Local is not enabled: no tools, from serve's directory
    assert list(work.iterdir()) == []  # no ./data made behind the user's back
