"""The refusal of a call to a quarantined tool (R-3.6, R-5.2; ux35).

A tool whose definition fails validation (a missing or broken `inputSchema`, a bad name, a duplicate,
one over the item limit: `runtime.catalog`) is quarantined: it is not offered to agents and never
called. A caller that names it anyway (an agent that saw it before the server changed it, a user who
read its name in the server's own docs) got MCP_TOOL_NOT_FOUND with a "did you mean" elsewhere, as if
it did not exist. `quarantined_refusal` finds it among the live connections' quarantined tools and
returns the refusal that says what is wrong and where to look (MCP_TOOL_QUARANTINED).

Only asked where a name did not resolve (a rare path): the gateway's resolution of a listed tool pays
nothing for it.
"""

from __future__ import annotations

from mcp_center.errors import ToolQuarantined
from mcp_center.registry import tool_prefix
from mcp_center.runtime import ConnectionManager

__all__ = ["quarantined_refusal"]


def quarantined_refusal(manager: ConnectionManager, name: str, server_id: str | None) -> ToolQuarantined | None:
    """The refusal for a call to a quarantined tool, or None when `name` is not one.

    Args:
        manager: Whose live connections' catalogs are looked at (none is started).
        name: The name as called: the exposed `mcp__{serverId}__{tool}` when `server_id` is None, else
            the server's own tool name.
        server_id: The server the name belongs to (a user's call, a per-server gateway endpoint), or None.
    Returns:
        `ToolQuarantined` whose message names the tool, the server, why it was quarantined and how to
        have it checked again; its `details` are `tool`, `server_id`, `server_tool`, `reason`, `catalog`.
    """
    for sid in [server_id] if server_id is not None else sorted(manager.configured()):
        own = name
        if server_id is None:  # a configured id is a valid one: `tool_prefix` does not raise
            prefix = tool_prefix(sid)
            if not name.startswith(prefix):
                continue
            own = name[len(prefix) :]
        conn = manager.current(sid)
        if conn is None:
            continue
        for item in conn.catalog.quarantined["tools"]:
            if item.name == own:
                return _refusal(name, sid, own, item.reason)
    return None


def _refusal(name: str, server_id: str, server_tool: str, reason: str) -> ToolQuarantined:
    catalog = f"/api/mcp/servers/{server_id}/catalog"
    return ToolQuarantined(
        f"tool '{name}' of server '{server_id}' is quarantined: the definition the server lists for it is "
        f"invalid ({reason}), so mcp-center does not offer it to agents and does not call it; it is checked "
        f"again each time the tool list is read (the server's tools/list_changed, a reconnect, or "
        f"GET {catalog}?refresh=true once the server is fixed); 'mcp-center test {server_id}' and "
        f"GET {catalog} list the quarantined tools with their reasons",
        details={
            "tool": name,
            "server_id": server_id,
            "server_tool": server_tool,
            "reason": reason,
            "catalog": catalog,
        },
    )
