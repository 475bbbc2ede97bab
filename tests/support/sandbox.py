"""Helpers for sandbox tests: the escape server's command line and the paths it needs (R-11.1).

The escape server (`tests/servers/escape_stdio.py`) uses the standard library only, so it runs
with the system's Python: `/usr/bin/python3` when the host has one (Debian), else this
interpreter, whose installation prefix must then be bound into the sandbox read-only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_center.config import SandboxPath
from mcp_center.transports import sandbox_support

SERVERS = Path(__file__).resolve().parent.parent / "servers"
ESCAPE = SERVERS / "escape_stdio.py"
SYSTEM_PYTHON = "/usr/bin/python3"


def python_for_sandbox() -> tuple[str, list[SandboxPath]]:
    """(a Python to run a standard-library-only script with inside a sandbox, the paths it needs)."""
    if os.path.isfile(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK):
        return SYSTEM_PYTHON, []
    prefix = os.path.realpath(sys.base_prefix)
    return os.path.realpath(sys.executable), [SandboxPath(path=prefix)]


def escape_command() -> tuple[list[str], list[SandboxPath]]:
    """(argv of the escape server, sandbox paths it needs: its directory read-only, maybe a Python)."""
    python, paths = python_for_sandbox()
    return [python, "-I", str(ESCAPE)], [SandboxPath(path=str(SERVERS)), *paths]


def require_sandbox() -> None:
    """Fail (never skip) when this host cannot run sandboxes: the tests would prove nothing."""
    support = sandbox_support(refresh=True)
    if not support.available:
        pytest.fail(f"sandbox tests need bubblewrap and namespaces: {support.message} (.ci/run installs bubblewrap)")
