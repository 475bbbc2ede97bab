"""The exit-code table (docs/errors.md, once README's) lists every code the CLI can exit with, in the
row of its exit code, and a verb that needs a running serve says there is none (issue 16 item 3,
R-7.3, R-9.2).

`approvals --data-dir D` where no serve ever ran exited 6 (ADMIN_AUTH_REQUIRED: "no admin token")
although README promised exit 7 for "the running serve cannot be reached"; GATEWAY_TOKEN_NOT_FOUND
(what `gateway token revoke` exits with) was not in the table at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mcp_center.errors as errors_module
from mcp_center.errors import CenterError, HostRequestFailed
from tests.support.cli import run_cli

ERRORS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def _tree(cls: type[CenterError]) -> list[type[CenterError]]:
    found: list[type[CenterError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_tree(sub)]
    return [c for c in found if c.__module__ == errors_module.__name__]


def _table() -> dict[str, int]:
    """code -> the exit code of the docs/errors.md table row that names it."""
    text = ERRORS_PAGE.read_text(encoding="utf-8")
    start = text.index("| exit | meaning (error codes) |")
    rows: dict[str, int] = {}
    for line in text[start:].splitlines()[2:]:
        row = re.fullmatch(r"\| (\d+) \| (.*) \|", line)
        if row is None:
            break
        for code in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.group(2)):
            assert code not in rows, f"{code} is in two rows"
            rows[code] = int(row.group(1))
    return rows


def test_every_code_of_the_error_tree_is_in_the_row_of_its_exit_code() -> None:
    table = _table()
    # A family's own placeholder code is INTERNAL_ERROR; HOST_REQUEST_FAILED is never printed (the
    # CLI prints the host's own code, and exits by its HTTP status).
    classes = [CenterError, *(c for c in _tree(CenterError) if c.code != CenterError.code)]
    expected = {c.code: c.exit_code for c in classes if c is not HostRequestFailed}
    assert "GATEWAY_TOKEN_NOT_FOUND" in expected
    assert {code: table.get(code) for code in expected} == expected
    assert set(table) <= set(expected), set(table) - set(expected)


@pytest.mark.parametrize("verb", [["approvals"], ["approvals", "approve", "a1"], ["logs", "time"]])
def test_a_verb_that_needs_a_serve_says_none_runs_where_none_ever_ran(tmp_path: Path, verb: list[str]) -> None:
    data = tmp_path / "never-served"
    result = run_cli(None, *verb, "--data-dir", str(data))
    assert result.returncode == 7, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        f"error [MCP_SERVER_UNREACHABLE]: no mcp-center serve runs on the data directory {data}; start one with "
    ), first
    assert "ADMIN_AUTH_REQUIRED" not in result.stderr
    assert not data.exists()
