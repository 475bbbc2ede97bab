"""Capabilities for agents: the tool registry, agent calls through approvals, prompts, resources (R-5).

One class in three modules, one responsibility each: `agent_registry.py` (`AgentCatalog`: the
registry and the reads every use case shares), `tool_calls.py` (`ToolCalls`: exports and agent
calls through the user's policy) and `context_items.py` (`ContextItems`: prompts and resources).
`Capabilities` joins them; `McpCenter` builds and owns it.

The registry (`registry/`, pure) is rebuilt from what the connection manager and the store know:
every ready server's validated catalog (R-3.6) and its tool settings. It is rebuilt whenever its
inputs changed — servers.json (also when another process wrote it), a connection, a catalog
generation — and a watcher rebuilds it on every `server.*` event (catalog refreshes, state and
configuration changes) to announce `tools.changed` when the names, definitions or policies agents
see changed.

Agent-initiated calls (`call`) go through the user's policy (R-5.3): `deny` refuses, `allow`
calls, `ask` (the default) waits for an approval first. Settings are re-read from the store at
call time, so a policy or a disabled tool the user changed a moment ago counts. User-initiated
calls do not come through here (`McpCenter.call_tool`).
"""

from __future__ import annotations

from mcp_center.service.agent_registry import DEFAULT_RESOURCE_LIMIT, MAX_RESOURCE_LIMIT
from mcp_center.service.context_items import ContextItems
from mcp_center.service.tool_calls import ToolCalls

__all__ = ["DEFAULT_RESOURCE_LIMIT", "MAX_RESOURCE_LIMIT", "Capabilities"]


class Capabilities(ToolCalls, ContextItems):
    """Registry upkeep and the agent-facing use cases (R-5, R-8). Built and owned by `McpCenter`.

    Args:
        store: The host's store (server settings are re-read at call time).
        manager: The connection manager (catalogs, calls, reads).
        approvals: Where `ask` calls wait for the user (R-5.3).
        interactions: Tracks calls for elicitation cards (R-6).
    """
