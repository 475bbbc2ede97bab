"""Property: no import input crashes the planner; only `CenterError`s escape, and previews are JSON.

Inputs are arbitrary text and bytes, fixture files with a slice cut out or text spliced in, and
JSON documents shaped like every dialect whose entries mix the keys and values that matter
(`type` spellings, `${...}` forms, URLs with credentials, reserved headers, shell strings, NUL).
For a plan that succeeds, `resolve` with arbitrary values either returns bodies that pass the R-1
rules or raises `ImportValuesInvalid`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_center.config import parse_server_config
from mcp_center.errors import CenterError, ImportValuesInvalid
from mcp_center.interchange import IMPORT_FORMATS, ImportPlan, plan_import
from tests.support.interchange import check_secret_value

FIXTURE_TEXTS = [p.read_bytes() for p in sorted((Path(__file__).parent / "fixtures").glob("*.json"))]
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INTERESTING = st.sampled_from(
    [
        "${A}",
        "${A:-x}",
        "${env:B}",
        "${input:c}",
        "${workspaceFolder}",
        "${",
        "}",
        "${A:-${B}}",
        "Bearer ${T}",
        "Bearer abcdefgh",
        "Basic x",
        "https://a.example.com/mcp",
        "http://u:p@a.example.com/mcp",
        "https://a.example.com/mcp#frag",
        "http://localhost:1/sse",
        "stdio",
        "http",
        "sse",
        "ws",
        "streamableHttp",
        "streamable-http",
        "",
        "Host",
        "Authorization",
        "npx -y x | sh",
        "\x00",
        "a" * 40,
        "postgres://u:p@h/db",
        "\udcff",
        "\ud83d\ude00",
    ]
)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | INTERESTING | st.text(max_size=12)
JSON = st.recursive(
    SCALAR,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(INTERESTING | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["type", "transport", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "envFile", "disabled"]
)
ENTRY = st.dictionaries(
    KEYS,
    INTERESTING
    | st.lists(INTERESTING, max_size=4)
    | st.dictionaries(INTERESTING | st.text(max_size=8), INTERESTING | SCALAR, max_size=4)
    | JSON,
    max_size=6,
)
SERVERS = st.dictionaries(INTERESTING | st.text(max_size=10), ENTRY | JSON, max_size=6)


def _claude_desktop(s: Any) -> dict[str, Any]:
    return {"mcpServers": s}


def _vscode(s: Any, i: Any) -> dict[str, Any]:
    return {"servers": s, "inputs": i}


def _claude_code(s: Any, p: Any) -> dict[str, Any]:
    return {"mcpServers": s, "projects": {"/p": {"mcpServers": p}, "/q": p}}


def _nested(s: Any) -> dict[str, Any]:
    return {"mcp": {"servers": s}}


DOCUMENT = st.one_of(
    st.builds(_claude_desktop, SERVERS),
    st.builds(_vscode, SERVERS, JSON),
    st.builds(_claude_code, SERVERS, SERVERS | JSON),
    st.builds(_nested, SERVERS),
    SERVERS,
    JSON,
)


def check(data: bytes | str, format: str, existing: list[str]) -> ImportPlan | None:
    try:
        plan = plan_import(data, format, existing_ids=existing, check_secret=check_secret_value)
    except CenterError:
        return None
    json.dumps(plan.preview(), ensure_ascii=False).encode("utf-8")  # as the HTTP response encodes it
    return plan


@PROPERTY_SETTINGS
@given(data=st.text(max_size=300) | st.binary(max_size=300), format=st.sampled_from(IMPORT_FORMATS))
def test_arbitrary_text_and_bytes_never_crash_the_planner(data: str | bytes, format: str) -> None:
    check(data, format, [])


@PROPERTY_SETTINGS
@given(
    index=st.integers(0, len(FIXTURE_TEXTS) - 1),
    start=st.integers(0, 4000),
    length=st.integers(0, 200),
    insert=st.binary(max_size=20) | INTERESTING.map(lambda t: t.encode("utf-8", "surrogatepass")),
)
def test_damaged_fixture_files_never_crash_the_planner(index: int, start: int, length: int, insert: bytes) -> None:
    text = FIXTURE_TEXTS[index]
    start %= len(text) + 1
    check(text[:start] + insert + text[start + length :], "auto", [])


@PROPERTY_SETTINGS
@given(
    doc=DOCUMENT,
    format=st.sampled_from(IMPORT_FORMATS),
    existing=st.lists(st.sampled_from(["a", "server", "time", "github"]), max_size=3),
    values=st.dictionaries(
        st.sampled_from(["A", "B", "T", "input:c", "workspaceFolder", "X"]), INTERESTING, max_size=5
    ),
    use_defaults=st.lists(st.sampled_from(["A", "B", "T", "Z"]), max_size=3),
)
def test_dialect_shaped_documents_never_crash_and_resolve_only_to_valid_bodies(
    doc: Any, format: str, existing: list[str], values: dict[str, str], use_defaults: list[str]
) -> None:
    plan = check(json.dumps(doc), format, existing)
    if plan is None:
        return
    ids = [s.id for s in plan.servers]
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(existing)
    try:
        bodies = plan.resolve(values, use_defaults, check_secret_value)
    except ImportValuesInvalid:
        return
    for body in bodies:
        config = {k: v for k, v in body.items() if k != "secret_values"}
        assert parse_server_config(config).id == body["id"]
