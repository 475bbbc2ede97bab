"""`${...}` references: named the way the preview lists them, filled only with supplied values (R-1.8)."""

from __future__ import annotations

import pytest

from mcp_center.interchange.variables import Reference, find_references, substitute


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${GITHUB_TOKEN}", [Reference("GITHUB_TOKEN", "env")]),
        ("${PORT:-8080}", [Reference("PORT", "env", "8080")]),
        ("${EMPTY:-}", [Reference("EMPTY", "env", "")]),
        ("${env:API_KEY}", [Reference("API_KEY", "env")]),
        ("${input:api-key}", [Reference("input:api-key", "input")]),
        ("${workspaceFolder}/src", [Reference("workspaceFolder", "client")]),
        ("${userHome}${/}bin", [Reference("userHome", "client"), Reference("/", "client")]),
        ("${config:editor.tabSize}", [Reference("config:editor.tabSize", "client")]),
        ("Bearer ${A} and ${B:-x:y}", [Reference("A", "env"), Reference("B", "env", "x:y")]),
        ("no references, $HOME stays literal", []),
    ],
)
def test_each_reference_form_is_named_and_kinded(text: str, expected: list[Reference]) -> None:
    found, error = find_references("args.0", text)
    assert error is None
    assert found == expected


@pytest.mark.parametrize(
    "text",
    ["${}", "${A B}", "${env:not valid}", "${input:}", "${A:-${B}}", "prefix ${UNTERMINATED", "${1ABC}"],
)
def test_a_malformed_nested_or_unterminated_reference_rejects_the_value(text: str) -> None:
    found, error = find_references("env.X", text)
    assert found == []
    assert error is not None
    assert (error.field, error.code) == ("env.X", "VARIABLE_INVALID")


def test_substitution_is_one_pass_so_a_supplied_value_is_never_expanded_again() -> None:
    values = {"A": "${B}", "B": "leaked"}
    assert substitute("x-${A}-${env:B}", lambda ref: values[ref.name]) == "x-${B}-leaked"


def test_substitution_uses_only_the_callback_never_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANTED_FOR_VARIABLES_TEST", "from-the-host")
    seen: list[Reference] = []

    def value_of(ref: Reference) -> str:
        seen.append(ref)
        return "supplied"

    assert substitute("${PLANTED_FOR_VARIABLES_TEST}", value_of) == "supplied"
    assert seen == [Reference("PLANTED_FOR_VARIABLES_TEST", "env")]
