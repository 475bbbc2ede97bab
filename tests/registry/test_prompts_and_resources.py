"""Prompts as `/server:prompt` (R-5.4) and the `@` search over resources and templates (R-5.5)."""

from __future__ import annotations

import mcp_types as types
import pytest

from mcp_center.registry import build_prompts, build_resources, search_resources, split_prompt_name
from mcp_center.registry import uri_template_variables as variables


def test_a_prompt_is_offered_as_a_server_colon_prompt_command_with_its_arguments() -> None:
    prompt = types.Prompt(
        name="args-prompt",
        description="With arguments",
        arguments=[
            types.PromptArgument(name="city", description="Where", required=True),
            types.PromptArgument(name="state"),
        ],
    )
    [entry] = build_prompts([("everything", "Everything", [prompt])])
    view = entry.to_dict()
    assert view["name"] == "everything:args-prompt"
    assert view["command"] == "/everything:args-prompt"
    assert view["arguments"] == [
        {"name": "city", "title": None, "description": "Where", "required": True},
        {"name": "state", "title": None, "description": None, "required": False},
    ]


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("srv:simple", ("srv", "simple")),
        ("/srv:simple", ("srv", "simple")),
        ("srv:a:b/c", ("srv", "a:b/c")),
        ("srv", None),
        (":x", None),
        ("srv:", None),
    ],
)
def test_a_prompt_name_splits_at_the_first_colon(name: str, parts: tuple[str, str] | None) -> None:
    assert split_prompt_name(name) == parts


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("test://static/resource/{id}", ["id"]),
        ("file:///{+path}{?q,lang}", ["path", "q", "lang"]),
        ("http://x/{a}/{b:3}/{c*}{#frag}{&d,a}", ["a", "b", "c", "frag", "d"]),
        ("no/variables", []),
        ("broken/{", []),
        ("bad/{ a b }", []),
    ],
)
def test_uri_template_variables_are_listed_in_order(template: str, names: list[str]) -> None:
    assert variables(template) == names


def test_the_search_matches_name_uri_and_description_with_name_matches_first() -> None:
    entries = build_resources(
        [
            (
                "everything",
                "Everything",
                [
                    types.Resource(uri="test://static/resource/1", name="Resource 1", mime_type="text/plain"),
                    types.Resource(uri="file:///notes.md", name="notes", description="Meeting notes about a resource"),
                ],
                [types.ResourceTemplate(uri_template="test://static/resource/{id}", name="Static Resource")],
            ),
            ("docs", "Docs", [types.Resource(uri="docs://resource-guide", name="guide")], []),
        ]
    )
    found = [e.to_dict() for e in search_resources(entries, "resource", limit=10)]
    assert [(f["server_id"], f["name"]) for f in found] == [
        ("everything", "Resource 1"),
        ("everything", "Static Resource"),
        ("docs", "guide"),
        ("everything", "notes"),
    ]
    template = found[1]
    assert template["kind"] == "template"
    assert template["uri_template"] == "test://static/resource/{id}"
    assert template["variables"] == ["id"]
    assert found[0]["mention"] == "@everything:test://static/resource/1"


def test_a_blank_query_lists_everything_up_to_the_limit() -> None:
    entries = build_resources([("a", "A", [types.Resource(uri=f"x://{i}", name=f"n{i}") for i in range(5)], [])])
    assert len(search_resources(entries, "  ", limit=3)) == 3
    assert search_resources(entries, "nothing-like-this", limit=3) == []
