"""Client configuration interchange: import, export and templates (R-1.8 to R-1.10). Pure: no I/O, no store.

Reads the `mcpServers` / `servers` files of Claude Code, Claude Desktop, Cursor, VS Code and
Windsurf leniently (`lenient_json`, `dialects`), decides what becomes a secret (`credentials`)
and which `${...}` values the user must supply (`variables`), and plans the import (`plan`);
writes the same formats without secret values (`export`); and lists the three server
templates (`templates`). The store-backed two-step flow is `mcp_center.service.imports`.
"""

from typing import TYPE_CHECKING

from mcp_center.lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_center.interchange.dialects import (
        EXPORT_FORMATS,
        IMPORT_FORMATS,
        ClientDocument,
        format_named,
        read_document,
    )
    from mcp_center.interchange.export import (
        GATEWAY_TOKEN_VARIABLE,
        ExportDocument,
        export_servers,
        gateway_snippet,
    )
    from mcp_center.interchange.lenient_json import MAX_IMPORT_BYTES, decode_text, loads_lenient
    from mcp_center.interchange.plan import (
        ON_CONFLICT,
        ExistingEntry,
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
    "ON_CONFLICT",
    "TEMPLATES",
    "ClientDocument",
    "ExistingEntry",
    "ExportDocument",
    "ImportPlan",
    "PlannedServer",
    "RejectedEntry",
    "SecretCheck",
    "VariableInfo",
    "decode_text",
    "export_servers",
    "format_named",
    "gateway_snippet",
    "list_templates",
    "loads_lenient",
    "plan_document",
    "plan_import",
    "read_document",
    "render_template",
]

_LAZY: dict[str, str] = {
    "IMPORT_FORMATS": "mcp_center.interchange.dialects",
    "ClientDocument": "mcp_center.interchange.dialects",
    "read_document": "mcp_center.interchange.dialects",
    "format_named": "mcp_center.interchange.dialects",
    "EXPORT_FORMATS": "mcp_center.interchange.dialects",
    "GATEWAY_TOKEN_VARIABLE": "mcp_center.interchange.export",
    "ExportDocument": "mcp_center.interchange.export",
    "export_servers": "mcp_center.interchange.export",
    "gateway_snippet": "mcp_center.interchange.export",
    "MAX_IMPORT_BYTES": "mcp_center.interchange.lenient_json",
    "decode_text": "mcp_center.interchange.lenient_json",
    "loads_lenient": "mcp_center.interchange.lenient_json",
    "ImportPlan": "mcp_center.interchange.plan",
    "ON_CONFLICT": "mcp_center.interchange.plan",
    "ExistingEntry": "mcp_center.interchange.plan",
    "PlannedServer": "mcp_center.interchange.plan",
    "RejectedEntry": "mcp_center.interchange.plan",
    "SecretCheck": "mcp_center.interchange.plan",
    "VariableInfo": "mcp_center.interchange.plan",
    "plan_document": "mcp_center.interchange.plan",
    "plan_import": "mcp_center.interchange.plan",
    "TEMPLATES": "mcp_center.interchange.templates",
    "list_templates": "mcp_center.interchange.templates",
    "render_template": "mcp_center.interchange.templates",
}
"""Name -> module, imported on first use: `mcp-center --help` needs only the format names, not the
export's configuration models (issue 16)."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
