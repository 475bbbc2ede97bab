"""Contracts of the code base that no linter states (docs/architecture.md#contracts, issue 16).

- Module size: no module under `src/` passes `MAX_MODULE_LINES` (the last modules over it were split
  in issue 16; there is no list of exceptions any more).
- No I/O in `registry/` and `interchange/`: import-linter forbids the I/O modules (pyproject.toml);
  the builtin `open` needs no import, so it is looked for here, in the syntax tree.
- One error tree (R-7.3): an exception class that does not derive from the `mcp_center.errors` tree is an
  internal signal of one package, listed in `INTERNAL_SIGNALS`, and no module outside that package
  imports it (so it cannot reach a caller as anything but the `CenterError` it is turned into).
- Strict pyright everywhere: no `[[tool.pyright.executionEnvironments]]` (tests/, src/) turns off a
  rule the top level turns on (issue 16: the `reportUnknown*` rules hold for tests/ too).
"""

from __future__ import annotations

import ast
import builtins
import tomllib
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mcp_center"
MAX_MODULE_LINES = 800
"""Split a module past this many lines (STYLE.md: one noun per module, mostly 150-400 lines)."""


def _line_counts() -> dict[str, int]:
    return {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SRC.rglob("*.py"))
    }


def test_no_module_passes_the_size_limit() -> None:
    counts = _line_counts()
    assert len(counts) > 50, "the scan found the package's modules"
    over = {name: lines for name, lines in counts.items() if lines > MAX_MODULE_LINES}
    assert not over, f"split these modules (over {MAX_MODULE_LINES} lines): {over}"


def _opens(path: Path) -> list[int]:
    """Lines of `path` that call the builtin `open` (or `io.open`, `os.open` by attribute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "open") or (
                isinstance(func, ast.Attribute) and func.attr in {"open", "write_text", "write_bytes", "read_text"}
            ):
                found.append(node.lineno)
    return sorted(found)


@pytest.mark.parametrize("package", ["registry", "interchange"])
def test_pure_packages_open_no_files(package: str) -> None:
    calls = {
        path.relative_to(SRC).as_posix(): lines
        for path in sorted((SRC / package).rglob("*.py"))
        if (lines := _opens(path))
    }
    assert not calls, f"{package}/ is free of I/O (R-1.8, R-5.1): the caller reads and writes files: {calls}"


def test_the_open_check_finds_an_open(tmp_path: Path) -> None:
    """The scan above would see a file opened for writing (so its silence means something)."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f(p):\n    with open(p, 'w') as out:\n        out.write('x')\n    p.write_text('y')\n")
    assert _opens(sample) == [2, 4]


INTERNAL_SIGNALS: dict[str, str] = {
    # class (module:name) -> the package it never leaves, and what turns it into a CenterError there.
    "runtime/http1.py:Http1Error": "runtime",  # forward.py re-raises it as an httpx2 transport error, attributed
    "runtime/attribution.py:SessionEnded": "runtime",  # attribute() makes it ServerUnreachable/ConnectionLost
    "runtime/requests.py:SessionExpired": "runtime",  # re-initialize and re-send once, else its CenterError
    "store/pg_store.py:_ReadOnlySession": "store",  # _writing() drains the pool, retries once, else StorageUnavailable
    "service/forms.py:UnsupportedSchema": "service",  # interactions.py declines the elicitation, with why
    "service/forms.py:_Problem": "service",  # forms.py collects them into ElicitationAnswerInvalid
    "transports/_guarded_spawn.py:GateFailed": "transports",  # spawn_failure() makes it ServerUnreachable
}


def _builtin_exception(name: str) -> bool:
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _stray_exceptions() -> set[str]:
    """`module:Class` of every class under src/ whose direct base is a builtin exception."""
    found: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and _builtin_exception(base.id) for base in node.bases
            ):
                found.add(f"{path.relative_to(SRC).as_posix()}:{node.name}")
    return found


def test_every_exception_is_in_the_error_tree_or_a_listed_internal_signal() -> None:
    assert _stray_exceptions() - {"errors/_base.py:CenterError"} == set(INTERNAL_SIGNALS), (
        "derive it from a class of mcp_center.errors (R-7.3), or list it as an internal signal"
    )


@pytest.mark.parametrize("signal", sorted(INTERNAL_SIGNALS))
def test_an_internal_signal_is_imported_only_inside_its_package(signal: str) -> None:
    module, name = signal.split(":")
    package = INTERNAL_SIGNALS[signal]
    # Only a module whose text has the name can import it: the others are not parsed (issue 16).
    importers = [
        path.relative_to(SRC).as_posix()
        for path in sorted(SRC.rglob("*.py"))
        if not path.relative_to(SRC).as_posix().startswith(package + "/")
        and name in (text := path.read_text(encoding="utf-8"))
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names)
    ]
    assert not importers, f"{name} ({module}) is imported outside {package}/: {importers}"


def _rules_turned_off(pyright: dict[str, Any]) -> dict[str, list[str]]:
    """{environment root: rules the top level turns on and that environment turns off}."""
    on = {key for key, value in pyright.items() if key.startswith("report") and value is True}
    environments: list[dict[str, Any]] = pyright.get("executionEnvironments", [])
    return {
        str(env.get("root")): sorted(rule for rule in on if env.get(rule, True) is not True)
        for env in environments
        if any(env.get(rule, True) is not True for rule in on)
    }


def test_no_pyright_environment_turns_off_a_strict_rule() -> None:
    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    pyright: dict[str, Any] = project["tool"]["pyright"]
    assert "reportUnknownMemberType" in pyright, "the scan reads the top-level rules"
    assert not _rules_turned_off(pyright), "these rules are on for src/; fix the findings instead"


def test_the_pyright_check_finds_a_rule_turned_off() -> None:
    """The scan above would see an environment turning a rule off (so its silence means something)."""
    pyright = {
        "reportUnknownMemberType": True,
        "executionEnvironments": [{"root": "tests", "reportUnknownMemberType": False}],
    }
    assert _rules_turned_off(pyright) == {"tests": ["reportUnknownMemberType"]}
