"""Catalogues for agents: qualified tool names, the tool registry, prompts and resources (R-5). No I/O."""

from mcp_center.registry.naming import (
    HASH_CHARS,
    MAX_NAME_CHARS,
    TOOL_NAME_PATTERN,
    AliasTable,
    ToolAlias,
    map_characters,
    tool_prefix,
)
from mcp_center.registry.prompts import PromptEntry, build_prompts, split_prompt_name
from mcp_center.registry.resources import ResourceEntry, build_resources, search_resources, uri_template_variables
from mcp_center.registry.tools import EXPORT_FORMATS, ExportFormat, RegisteredTool, ServerTools, ToolRegistry
from mcp_center.registry.uri_templates import template_matches

__all__ = [
    "EXPORT_FORMATS",
    "HASH_CHARS",
    "MAX_NAME_CHARS",
    "TOOL_NAME_PATTERN",
    "AliasTable",
    "ExportFormat",
    "PromptEntry",
    "RegisteredTool",
    "ResourceEntry",
    "ServerTools",
    "ToolAlias",
    "ToolRegistry",
    "build_prompts",
    "build_resources",
    "map_characters",
    "search_resources",
    "split_prompt_name",
    "template_matches",
    "tool_prefix",
    "uri_template_variables",
]
