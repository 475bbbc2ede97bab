"""Client configuration interchange: import, export and templates (R-1.8 to R-1.10). Pure: no I/O, no store.

Reads the `mcpServers` / `servers` files of Claude Code, Claude Desktop, Cursor, VS Code and
Windsurf leniently (`lenient_json`, `dialects`), decides what becomes a secret (`credentials`)
and which `${...}` values the user must supply (`variables`), and plans the import (`plan`);
writes the same formats without secret values (`export`); and lists the three server
templates (`templates`). The store-backed two-step flow is `mcp_center.service.imports`.
"""

from mcp_center.interchange.dialects import IMPORT_FORMATS, ClientDocument, read_document
from mcp_center.interchange.export import (
    EXPORT_FORMATS,
    GATEWAY_TOKEN_VARIABLE,
    ExportDocument,
    export_servers,
    gateway_snippet,
)
from mcp_center.interchange.lenient_json import MAX_IMPORT_BYTES, decode_text, loads_lenient
from mcp_center.interchange.plan import (
    ImportPlan,
    PlannedServer,
    RejectedEntry,
    SecretCheck,
    VariableInfo,
    plan_document,
    plan_import,
)
from mcp_center.interchange.templates import TEMPLATES, list_templates, render_template

__all__ = [
    "EXPORT_FORMATS",
    "GATEWAY_TOKEN_VARIABLE",
    "IMPORT_FORMATS",
    "MAX_IMPORT_BYTES",
    "TEMPLATES",
    "ClientDocument",
    "ExportDocument",
    "ImportPlan",
    "PlannedServer",
    "RejectedEntry",
    "SecretCheck",
    "VariableInfo",
    "decode_text",
    "export_servers",
    "gateway_snippet",
    "list_templates",
    "loads_lenient",
    "plan_document",
    "plan_import",
    "read_document",
    "render_template",
]
