"""The README's library example runs as written (a real process and a real stdio server), and the
README shows exactly that file (issue 16: the library is a first-class face)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "library_agent.py"


def test_the_readme_shows_the_example_file_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    body = EXAMPLE.read_text(encoding="utf-8")
    code = body[body.index("from __future__") :].rstrip()
    assert code in readme


def test_the_example_registers_calls_and_approves_through_the_library(tmp_path: Path) -> None:
    server = ROOT / "tests" / "servers" / "echo_stdio.py"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "data"), sys.executable, str(server)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "registered echo; needs trust, test, enable"
    assert lines[1] == "mcp__echo__echo needs approval: True"
    assert lines[2] == "answer: hello"
    # Library logging etiquette: nothing on stderr from a script that did not configure logging.
    assert done.stderr == ""


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
