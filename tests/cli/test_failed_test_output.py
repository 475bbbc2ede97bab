"""A stdio server that exits at once shows enough of its stderr to diagnose it (issue 16, R-3.1).

The failed test showed 3 lines (5 in `details.stderr_tail`): of a Python traceback, only its last
frame. It now shows the last 20 lines, 2 KiB at most, redacted, says how many there were in all,
and where the others are.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.cli import run_cli

SCRIPT = """\
import os, sys
for i in range(30):
    print(f"line {i}: the failure goes on, token {os.environ['API_TOKEN']}", file=sys.stderr)
sys.exit(3)
"""


def test_a_failed_test_shows_the_last_20_lines_of_stderr_and_where_the_rest_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    script = tmp_path / "dies.py"
    script.write_text(SCRIPT)
    secret = "very-secret-token-4242"
    added = run_cli(data, "add", "dies", "-e", f"API_TOKEN={secret}", "--", sys.executable, str(script))
    assert added.returncode == 0, added.stderr
    assert run_cli(data, "trust", "dies", "--yes").returncode == 0
    tested = run_cli(data, "test", "dies")
    assert tested.returncode == 1
    lines = tested.stderr.splitlines()
    start = lines.index("  server stderr (last 20 of 30 lines):")
    assert lines[start + 1 : start + 21] == [
        f"    line {i}: the failure goes on, token [redacted]" for i in range(10, 30)
    ]
    assert lines[start + 21] == (
        "  the earlier lines were not kept; to see them, run the server's command yourself "
        "('mcp-center show dies' prints it)"
    )
    assert secret not in tested.stderr and "line 9:" not in tested.stderr
