"""Packaging facts users rely on (issue 15): any Python from 3.11 on may install mcp-center."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_requires_python_has_a_floor_and_no_upper_bound() -> None:
    """3.11 is the floor (CI runs it, ruff and pyright target it); a newer Python is not refused."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["requires-python"] == ">=3.11"
    assert project["tool"]["ruff"]["target-version"] == "py311"
    assert project["tool"]["pyright"]["pythonVersion"] == "3.11"
