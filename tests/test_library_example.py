"""The library example (docs/library.md, once in the README) runs as written (a real process and a
real stdio server), and the page shows exactly that file (issue 16: the library is a first-class face)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.mcp_servers import EVERYTHING
from tests.support.zygote import launch_command

ROOT = Path(__file__).resolve().parent.parent
ECHO = ROOT / "tests" / "servers" / "echo_stdio.py"
EXAMPLE = ROOT / "examples" / "library_agent.py"


LIBRARY_PAGE = ROOT / "docs" / "library.md"


def test_the_library_page_shows_the_example_file_verbatim() -> None:
    readme = LIBRARY_PAGE.read_text(encoding="utf-8")
    body = EXAMPLE.read_text(encoding="utf-8")
    code = body[body.index("from __future__") :].rstrip()
    assert code in readme


def _run_example(data: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), str(data), *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def test_the_library_page_says_how_to_run_the_example_with_a_real_server() -> None:
    """With the project's Python (a bare `python` lacks mcp-center) and the server-everything
    version the suite pins (newcomer pass: the README asks for exact versions everywhere else)."""
    readme = LIBRARY_PAGE.read_text(encoding="utf-8")
    pinned = json.loads((ROOT / "tests" / "e2e" / "node" / "package.json").read_text(encoding="utf-8"))
    version = pinned["dependencies"]["@modelcontextprotocol/server-everything"]
    command = (
        ".venv/bin/python examples/library_agent.py ./agent-data"
        f" npx -y @modelcontextprotocol/server-everything@{version} stdio"
    )
    assert command in readme


def test_the_example_registers_calls_and_approves_and_a_second_run_calls_its_own_server(tmp_path: Path) -> None:
    """Run 1 registers our echo (`text`), calls and approves it through the library; run 2 registers
    the real server-everything as `echo-2` and must call *its* echo with `message` (calling run 1's
    would fail: no `text` given). One test, not two: the second needs the first run's data directory,
    and a run costs ~7 s of CPU (a Python process importing the host, two echo server starts)."""
    data = tmp_path / "data"
    first = _run_example(data, *launch_command(ECHO))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "registered echo; needs trust, test, enable"
    assert lines[1] == "mcp__echo__echo needs approval: True"
    assert lines[2] == "answer: hello"
    # Library logging etiquette: nothing on stderr from a script that did not configure logging.
    assert first.stderr == ""
    second = _run_example(data, "node", str(EVERYTHING), "stdio")
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0] == "registered echo-2; needs trust, test, enable"
    assert lines[1].startswith("mcp__echo-2__echo needs approval: ")
    assert lines[-1] == "answer: Echo: hello"


def test_a_tool_error_ends_the_example_with_a_non_zero_status_and_the_error(tmp_path: Path) -> None:
    failed = _run_example(tmp_path / "data", *launch_command(ECHO, "--echo-fails"))
    assert failed.returncode == 1, failed.stdout
    assert "mcp__echo__echo failed: " in failed.stderr
    assert "answer:" not in failed.stdout


def test_a_script_that_configures_no_logging_sees_no_bare_event_names() -> None:
    """Library logging etiquette: mcp_center's records go to the application's handlers, not stderr."""
    code = (
        "import logging, mcp_center\n"
        "logging.getLogger('mcp_center.service.reconcile').warning('server.reconcile_failed')\n"
        "logging.getLogger('elsewhere').warning('their.own.warning')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert done.stderr == "their.own.warning\n"  # Python's last resort still serves other libraries
