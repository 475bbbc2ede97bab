"""What a newcomer following README.md hit (issue: newcomer fixes): the Inspector's Node.js
requirement, what `export --gateway` prints, and the library snippet's data directory (R-9.2). The
snippet and most CLI examples moved to docs/ pages (readme40); those pages are checked the same way."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import ready_with_cli, run_cli
from tests.support.mcp_servers import NODE_DIR

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
AGENTS_PAGE = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
DESIGN_PAGES = frozenset(
    {"architecture.md", "decisions.md", "hostile-servers.md", "requirements.md", "sdk-notes.md", "state.md"}
)
"""Docs pages for contributors: they quote command lines as history or as what is refused
(`gateway --url U token create T`), not for a user to copy."""
USER_PAGES = {
    path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    if path.name not in DESIGN_PAGES
}
"""README.md and the user's docs pages, by path: where a user copies `mcp-center` command lines from."""
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
    [snippet] = [b for b in PYTHON_BLOCK.findall(AGENTS_PAGE) if 'agent_tools(format="openai")' in b]
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


def test_the_agents_python_snippet_prints_the_tools_of_a_server_slower_to_start_than_a_lazy_read_waits(
    tmp_path: Path,
) -> None:
    """trial38: the snippet printed `[]` after 22.8 s with four enabled `uvx`/`npx` servers (the
    export stopped waiting after 10 s). A server that takes 11 s to start, more than that old wait,
    is waited for and its tool printed; one that cannot start is named with its error code (ux39)."""
    [snippet] = [b for b in PYTHON_BLOCK.findall(AGENTS_PAGE) if 'agent_tools(format="openai")' in b]
    serve_data = tmp_path / "serve-data"
    delay = tmp_path / "delay"
    slow = [sys.executable, str(ROOT / "tests" / "servers" / "slow_start_stdio.py"), str(delay)]
    assert run_cli(serve_data, "add", "slow", "--", *slow).returncode == 0
    ready_with_cli(serve_data, "slow")
    broken = tmp_path / "broken"
    assert run_cli(serve_data, "add", "gone", "--", *slow[:-1], str(broken)).returncode == 0
    ready_with_cli(serve_data, "gone")
    delay.write_text("11", encoding="utf-8")
    broken.write_text("not a number", encoding="utf-8")  # the server now fails at start
    env = {**os.environ, "MCP_CENTER_DATA_DIR": str(serve_data)}
    done = subprocess.run(
        [sys.executable, "-c", snippet], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "['mcp__slow__echo']", done.stdout
    assert re.match(r"gone: MCP_[A-Z_]+: ", lines[1]), done.stdout


SHELL_FENCE = re.compile(r"^```(bash|sh)\n(.*?)^```", re.MULTILINE | re.DOTALL)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
SHELL_STOPS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "(", ")", "&", "$"})
RUNS_THE_CLI = re.compile(r"(?:^|[|&;(]|\s)(?:\S*/)?mcp-center\s")


def _invocations(line: str) -> list[list[str]]:
    """The arguments of each `mcp-center` (or `.venv/bin/mcp-center`) run on a shell line: the program
    in command position (first, or after `|`, `&&`, `$(`...), its words up to the next operator."""
    if not RUNS_THE_CLI.search(line):
        return []
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    runs: list[list[str]] = []
    for at, word in enumerate(words):
        at_command = at == 0 or words[at - 1] in SHELL_STOPS or words[at - 1].endswith("$")
        if at_command and (word == "mcp-center" or word.endswith("/mcp-center")):
            args: list[str] = []
            for arg in words[at + 1 :]:
                if arg in SHELL_STOPS:
                    break
                args.append(arg)
            runs.append(args)
    return runs


def _parse_problem(args: list[str]) -> str | None:
    """Why `mcp-center ARGS` would not parse (unknown verb or option, missing argument or required
    option such as `--kind`), or None; parsed the way click parses it, without running the verb."""
    import typer
    import typer.main

    from mcp_center.cli import app

    command: Any = typer.main.get_command(app)
    name, rest, parent = "mcp-center", list(args), None
    try:
        while True:
            context = command.make_context(name, rest, parent=parent)
            if not hasattr(command, "commands"):
                return None
            # typer's group keeps the sub-command's name apart from its arguments (click's layout)
            pending = [*context._protected_args, *context.args]  # pyright: ignore[reportPrivateUsage]
            if not pending:
                return None if getattr(command, "invoke_without_command", False) else "a command is missing"
            name, command, rest = command.resolve_command(context, pending)
            parent = context
    except typer.TyperException as exc:  # click's usage errors: what the verb would print instead of running
        shown = exc.format_message()
        return f"{type(exc).__name__}: {shown}"


def test_every_cli_example_in_the_readme_and_docs_parses() -> None:
    """A newcomer copied `mcp-center secret set ...` (README's short form, without the required
    `--kind`) and got a usage error. Every `mcp-center` line of a shell block, and every inline
    example that gives arguments (a bare `mcp-center call` naming a verb is prose), parses with
    the CLI's real options (R-7.3, issue 16)."""
    import typer.main

    from mcp_center.cli import app

    root: Any = typer.main.get_command(app)

    def names_a_verb(args: list[str]) -> bool:  # `mcp-center gateway token create` in a sentence
        command = root
        for word in args:
            command = getattr(command, "commands", {}).get(word)
            if command is None:
                return False
        return True

    examples: list[tuple[str, list[str]]] = []
    for page, text in USER_PAGES.items():
        for _, block in SHELL_FENCE.findall(text):
            for line in block.replace("\\\n", " ").splitlines():
                examples += [(f"{page}: {line.strip()}", args) for args in _invocations(line)]
        for span in INLINE_CODE.findall(FENCE.sub("", text)):
            examples += [(f"{page}: {span}", args) for args in _invocations(span) if not names_a_verb(args)]
    verbs = {args[0] for _, args in examples if args}
    assert len(examples) > 20 and verbs >= {"add", "import", "secret", "trust", "export"}, examples
    problems = [(where, _parse_problem(args)) for where, args in examples]
    assert [(where, problem) for where, problem in problems if problem] == []
