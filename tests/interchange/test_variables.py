"""`${...}` references: named the way the preview lists them, filled only with supplied values (R-1.8)."""

from __future__ import annotations

import itertools

import pytest

from mcp_center.interchange.variables import Reference, could_give, find_references, substitute
from tests.support.hang import assert_returns


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


def _gives_by_brute_force(parts: list[str], value: str) -> bool:
    """The reference semantics on small strings: try every text for every reference."""
    if len(parts) == 1:
        return value == parts[0]
    if not value.startswith(parts[0]):
        return False
    rest = value[len(parts[0]) :]
    return any(_gives_by_brute_force(parts[1:], rest[cut:]) for cut in range(len(rest) + 1))


@pytest.mark.parametrize(
    ("text", "value", "gives"),
    [
        ("--root ${ROOT:-/srv}", "--root /data", True),
        ("--root ${ROOT:-/srv}", "--root  /data", True),
        ("--root ${ROOT:-/srv}", "-root /data", False),
        ("${A}", "", True),
        ("${A}${B}", "anything", True),
        ("https://${HOST}/mcp", "https:///mcp", True),
        ("https://${HOST}/mcp", "https://h/mc", False),
        ("a${X}a", "a", False),  # prefix and suffix may not overlap
        ("a${X}a", "aa", True),
        ("${X}ab${Y}ab${Z}", "abab", True),
        ("${X}ab${Y}ab${Z}", "aba", False),
        ("x${A}", "x${A}", True),
        ("plain", "plain", True),
        ("plain", "plainer", False),
    ],
)
def test_a_text_with_references_could_give_the_values_they_may_fill(text: str, value: str, gives: bool) -> None:
    assert could_give(text, value) is gives


def test_could_give_agrees_with_brute_force_on_every_small_case() -> None:
    """Every template of up to 4 symbols over {a, b, reference} against every value of up to 5
    characters over {a, b}: the leftmost scan decides as trying every split does."""
    values = ["".join(v) for n in range(6) for v in itertools.product("ab", repeat=n)]
    checked = 0
    for n in range(5):
        for symbols in itertools.product(("a", "b", "*"), repeat=n):
            template = "".join("${V}" if s == "*" else s for s in symbols)
            parts = [str(part) for part in "".join(symbols).split("*")]
            for value in values:
                assert could_give(template, value) is _gives_by_brute_force(parts, value), (template, value)
                checked += 1
    assert checked == 121 * len(values)


def _fourteen_references_against_a_long_near_miss() -> None:
    text = "".join(f"${{V{i}}}" for i in range(14)) + "/zz"
    assert not could_give(text, "https://docs.example.com/" + "a/" * 50_000 + "z")
    assert could_give(text, "https://docs.example.com/" + "a/" * 50_000 + "zz")
    assert not could_give("${A}x${B}x${C}x${D}y", "x" * 100_000)


def test_matching_many_references_is_linear_not_exponential() -> None:
    """A hang check (R-7.3): `${V0}...${V13}/zz` as a `.*` regex froze the server on one preview."""
    assert_returns(_fourteen_references_against_a_long_near_miss)
