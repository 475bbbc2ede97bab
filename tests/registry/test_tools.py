"""The tool registry and its exports (R-5.1, R-5.2, R-5.6): names, hints, schemas unchanged."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_center.registry import ServerTools, ToolRegistry

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "Where"}, "n": {"type": "integer", "minimum": 1}},
    "required": ["path"],
    "additionalProperties": False,
}


def _tool(name: str, **extra: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=SCHEMA, **extra)


def _registry() -> ToolRegistry:
    return ToolRegistry.build(
        [
            ServerTools(
                server_id="files",
                server_name="Files",
                tools=[
                    _tool(
                        "read.file",
                        description="Read a file",
                        annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False),
                    ),
                    _tool("delete", title="Delete a file"),
                    _tool("secret-admin"),
                ],
                disabled_tools=frozenset({"secret-admin"}),
                tool_policies={"delete": "deny", "read.file": "allow"},
            ),
            ServerTools(server_id="echo", server_name="Echo", tools=[_tool("echo")]),
        ]
    )


def test_disabled_tools_are_invisible_but_still_resolvable_so_a_call_can_be_refused() -> None:
    registry = _registry()
    visible = [t.name for t in registry.tools()]
    assert visible == ["mcp__echo__echo", registry.aliases.name_of("files", "read.file"), "mcp__files__delete"]
    hidden = registry.aliases.name_of("files", "secret-admin")
    assert hidden == "mcp__files__secret-admin"
    resolved = registry.resolve(hidden)
    assert resolved is not None
    assert resolved.enabled is False
    assert hidden not in registry.aliases_dict()


def test_annotations_are_hints_and_every_tool_is_write_effect_never_retried() -> None:
    registry = _registry()
    name = registry.aliases.name_of("files", "read.file")
    assert name is not None
    tool = registry.resolve(name)
    assert tool is not None
    view = tool.view()
    assert view["hints"] == {"readOnlyHint": True, "destructiveHint": False}
    assert view["effects"] == "write"
    assert view["retry"] == "never"
    assert view["policy"] == "allow"
    assert view["approval_required"] is False
    assert view["tool"] == "read.file"
    echo = registry.resolve("mcp__echo__echo")
    assert echo is not None
    assert echo.view()["policy"] == "ask"
    assert echo.view()["approval_required"] is True


def test_openai_export_is_a_function_tool_with_the_schema_unchanged() -> None:
    exported = _registry().export("openai")
    first = exported[0]
    assert first == {"type": "function", "function": {"name": "mcp__echo__echo", "parameters": SCHEMA}}
    delete = next(t for t in exported if t["function"]["name"] == "mcp__files__delete")
    assert delete["function"]["description"] == "Delete a file"


def test_anthropic_export_uses_input_schema_with_the_schema_unchanged() -> None:
    exported = _registry().export("anthropic")
    read = next(t for t in exported if t["name"].startswith("mcp__files__read_file_"))
    assert read == {"name": read["name"], "description": "Read a file", "input_schema": SCHEMA}


def test_mcp_export_renames_and_records_the_origin_in_meta() -> None:
    exported = _registry().export("mcp")
    read = next(t for t in exported if t["name"].startswith("mcp__files__read_file_"))
    assert read["inputSchema"] == SCHEMA
    assert read["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    assert read["_meta"]["mcp-center/origin"] == {"server_id": "files", "tool": "read.file"}


def test_the_signature_changes_with_policy_and_definition_but_not_with_order() -> None:
    base = _registry()
    same = ToolRegistry.build(
        [
            ServerTools(server_id="echo", server_name="Echo", tools=[_tool("echo")]),
            ServerTools(
                server_id="files",
                server_name="Files",
                tools=[
                    _tool(
                        "read.file",
                        description="Read a file",
                        annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False),
                    ),
                    _tool("delete", title="Delete a file"),
                    _tool("secret-admin"),
                ],
                disabled_tools=frozenset({"secret-admin"}),
                tool_policies={"delete": "deny", "read.file": "allow"},
            ),
        ]
    )
    assert same.signature() == base.signature()
    changed = ToolRegistry.build([ServerTools(server_id="echo", server_name="Echo", tools=[_tool("echo")])])
    policy = ToolRegistry.build(
        [ServerTools(server_id="echo", server_name="Echo", tools=[_tool("echo")], tool_policies={"echo": "allow"})]
    )
    assert changed.signature() != policy.signature()
