"""Every fixture client file previews exactly as its `<case>.expected.json` says (R-1.8).

`fixtures/` holds realistic files written for these tests (invented names and tokens): Claude
Code `.mcp.json` and `~/.claude.json` (top-level and per-project servers), Claude Desktop (BOM,
trailing commas, numbers in env), Cursor (no `type`, `${env:...}`, `${workspaceFolder}`), VS Code
(`servers` + `inputs`, and a settings.json), Windsurf (`serverUrl`), a bare map, every `type`
spelling, every rejection we promise, id clashes, and broken JSON. Each `*.expected.json` names
its input, the format asked for and the ids already registered, and holds either the whole
preview or the error code with its details.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_center.errors import CenterError
from mcp_center.interchange import plan_import
from tests.support.interchange import check_secret_value

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(FIXTURES.glob("*.expected.json"))


def _case(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def test_the_fixture_set_covers_every_dialect_and_failure() -> None:
    previews = [_case(p).get("preview") for p in CASES]
    formats = {p["format"] for p in previews if p is not None}
    assert formats == {"claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "bare"}
    errors = {_case(p)["error"]["code"] for p in CASES if "error" in _case(p)}
    assert errors == {"IMPORT_JSON_INVALID", "IMPORT_FORMAT_UNKNOWN", "IMPORT_FORMAT_MISMATCH"}
    rejected = {e["code"] for p in previews if p is not None for r in p["rejected"] for e in r["errors"]}
    assert {"COMMAND_AND_URL", "URL_HAS_CREDENTIALS", "HEADER_RESERVED", "TRANSPORT_UNSUPPORTED"} <= rejected


@pytest.mark.parametrize("expected_path", CASES, ids=[p.name.removesuffix(".expected.json") for p in CASES])
def test_a_fixture_previews_exactly_as_expected(expected_path: Path) -> None:
    case = _case(expected_path)
    data = (FIXTURES / case["input"]).read_bytes()
    if "error" in case:
        with pytest.raises(CenterError) as caught:
            plan_import(data, case["format"], existing_ids=case["existing_ids"], check_secret=check_secret_value)
        assert caught.value.code == case["error"]["code"]
        details = {k: v for k, v in caught.value.details.items() if k != "reason"}
        assert details == case["error"]["details"]
        return
    plan = plan_import(data, case["format"], existing_ids=case["existing_ids"], check_secret=check_secret_value)
    assert plan.preview() == case["preview"]


@pytest.mark.parametrize("expected_path", CASES, ids=[p.name.removesuffix(".expected.json") for p in CASES])
def test_no_literal_secret_of_a_fixture_appears_in_its_preview(expected_path: Path) -> None:
    """The invented credentials written literally in the fixtures never reach a preview (R-1.5)."""
    planted = (
        "hunter2-invented",
        "ZGFuYTppbnZlbnRlZC1wYXNz",
        "BSA-invented-7f3c9d2e1b",
        "acme-docs-key-invented-1234",
        "ch_live_invented_9a8b7c6d",
        "pa55word-invented",
    )
    text = expected_path.read_text(encoding="utf-8")
    assert [p for p in planted if p in text] == []
