"""Tool schema checks and normalisation, structured output checks (issue 14 items 1 and 3; R-3.6, R-5.1)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_center.registry.schemas import MAX_SCHEMA_DEPTH, check_tool, output_problem


def _tool(input_schema: object, **extra: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": input_schema, **extra}


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "string"}, "inputSchema.type:"),
        ({"type": ["string", "null"]}, "inputSchema.type:"),
        ({"oneOf": [{"type": "object"}, {"type": "array"}]}, "inputSchema.oneOf[1]:"),
        ({"type": "object", "properties": {"x": {"type": 5}}}, "inputSchema.properties.x.type:"),
        ({"type": "object", "properties": {"x": {"minimum": "low"}}}, "inputSchema.properties.x.minimum:"),
        ({"type": "object", "required": ["a"], "additionalProperties": False}, "inputSchema.required:"),
        ("not a schema", "inputSchema:"),
        (None, "inputSchema:"),
    ],
)
def test_a_tool_whose_input_schema_cannot_describe_object_arguments_is_quarantined(schema: object, where: str) -> None:
    verdict = check_tool(_tool(schema))
    assert verdict.tool is None
    assert verdict.reason is not None and verdict.reason.startswith(where)


NORMALISED: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"anyOf": [{"type": "object"}, {"properties": {"b": {}}}]},
        {"anyOf": [{"type": "object"}, {"properties": {"b": {}}}], "type": "object"},
    ),
    ({}, {"type": "object"}),
    ({"type": ["object", "null"]}, {"type": "object"}),
    ({"type": "object", "required": ["x"]}, {"type": "object", "required": ["x"], "properties": {"x": {}}}),
]
"""(a schema missing only what object arguments imply, the schema the catalogue keeps)."""


@pytest.mark.parametrize(("schema", "expected"), NORMALISED)
def test_a_schema_that_only_misses_what_object_arguments_imply_is_normalised_with_a_note(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    original = {**schema}
    verdict = check_tool(_tool(schema))
    assert verdict.tool is not None
    assert verdict.tool["inputSchema"] == expected
    assert verdict.changes
    assert schema == original  # the server's object is not modified


def test_a_valid_tool_is_kept_as_it_is() -> None:
    item = _tool({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
    verdict = check_tool(item)
    assert verdict.tool == item
    assert verdict.changes == ()


@pytest.mark.parametrize(
    "output_schema",
    [{"type": "array"}, {"type": "object", "properties": {"n": {"type": "nonsense"}}}, "text", [1]],
)
def test_an_unusable_output_schema_is_removed_and_the_tool_kept(output_schema: object) -> None:
    verdict = check_tool(_tool({"type": "object"}, outputSchema=output_schema))
    assert verdict.tool is not None
    assert "outputSchema" not in verdict.tool
    assert any(change.startswith("outputSchema: removed") for change in verdict.changes)


def test_a_deeply_nested_schema_is_quarantined_not_a_crash() -> None:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"x": schema}}
    verdict = check_tool(_tool(schema))
    assert verdict.tool is None
    assert verdict.reason == f"inputSchema: nested more than {MAX_SCHEMA_DEPTH} levels deep"
    output = check_tool(_tool({"type": "object"}, outputSchema=schema))
    assert output.tool is not None and "outputSchema" not in output.tool


SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["n"],
}


@pytest.mark.parametrize(
    ("structured", "problem"),
    [
        ({"n": 1, "tags": ["a"]}, None),
        ({"n": "one"}, "structuredContent.n:"),
        ({"n": 1, "tags": ["a", 2]}, "structuredContent.tags[1]:"),
        ({}, "structuredContent:"),
        (None, "no structuredContent"),
    ],
)
def test_structured_output_is_checked_against_the_output_schema(structured: object, problem: str | None) -> None:
    found = output_problem(SCHEMA, structured)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_an_unresolvable_ref_in_an_output_schema_is_a_problem_not_a_fetch() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}}
    found = output_problem(schema, {"x": 1})
    assert found is not None and "does not resolve" in found


def test_each_schema_object_keeps_its_own_verdict_when_results_are_checked_again_and_again() -> None:
    """R-3.9, R-8.3: validators are remembered per schema object; a second object (another tool's
    schema, equal keys or not) is checked against its own rules, on every call."""
    wants_int = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    wants_str = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    for _ in range(3):
        assert output_problem(wants_int, {"x": 1}) is None
        assert output_problem(wants_str, {"x": "a"}) is None
        assert "structuredContent.x" in (output_problem(wants_int, {"x": "a"}) or "")
        assert "structuredContent.x" in (output_problem(wants_str, {"x": 1}) or "")
    same_keys = dict(wants_int)
    assert output_problem(same_keys, {"x": 2}) is None
    assert output_problem(same_keys, {}) is not None


def test_equal_schemas_of_a_catalog_are_kept_once_and_different_ones_apart() -> None:
    """R-8.3 (idle memory of a large catalog): tools whose schemas are the same JSON keep one object
    for them; a schema with other content, or the same members in another order (agents see the
    server's text), keeps its own; normalising one tool's schema changes no other tool's."""

    def page() -> list[dict[str, Any]]:  # as parsed from a server's page: new objects each time
        props = {"value": {"type": "string", "default": ""}, "count": {"type": "integer", "default": 0}}
        return [
            _tool({"type": "object", "properties": props}, outputSchema={"type": "object", "properties": props}),
            _tool({"type": "object", "properties": {**props}}, outputSchema={"type": "object", "properties": props}),
            _tool({"properties": props, "type": "object"}),
            _tool({"type": "object", "properties": {"value": {"type": "integer"}}}),
            _tool({"properties": {**props}}),
        ]

    first, second, reordered, other, normalised = (check_tool(item).tool for item in page())
    assert first is not None and second is not None and reordered is not None
    assert other is not None and normalised is not None
    assert second["inputSchema"] is first["inputSchema"]
    assert second["outputSchema"] is first["outputSchema"]
    assert list(reordered["inputSchema"]) == ["properties", "type"]
    assert reordered["inputSchema"] is not first["inputSchema"]
    assert other["inputSchema"]["properties"] == {"value": {"type": "integer"}}
    assert normalised["inputSchema"] == {"properties": first["inputSchema"]["properties"], "type": "object"}
    assert first["inputSchema"] == {"type": "object", "properties": page()[0]["inputSchema"]["properties"]}
    again = check_tool(page()[0]).tool
    assert again is not None and again["inputSchema"] is first["inputSchema"]
