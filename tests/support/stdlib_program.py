"""Checks for the programs the host runs as `python -I -S FILE` (the watchdog, the exec gate).

Such a program starts without site-packages and must not import mcp_center or anything installed:
it has to start in milliseconds and work whatever state the host's interpreter is in.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


def assert_stdlib_program(path: str, usage: str) -> None:
    """`path` imports the standard library only, and run without arguments it prints `usage` on
    stderr and exits with status 2."""
    tree = ast.parse(Path(path).read_text())
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    done = subprocess.run([sys.executable, "-I", "-S", path], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert usage in done.stderr
