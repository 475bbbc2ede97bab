"""Which tool names a policy or on/off switch may name (R-5.2, R-5.3; issue 16).

A policy (`tool_policies`) or switch (`disabled_tools`) for a tool the server does not have used to
be stored without a word, and the change still cleared trust and disabled the server (R-1.4): a
typo (`ecoh` for `echo`) changed permissions and left the real tool as it was. The rule here: a
change that adds a tool name is checked against the server's known tool catalogue, its live
session's tools or else the names its last successful test listed (`ServerRecord.known_tools`). A
name outside it is refused (MCP_TOOL_NOT_FOUND with did-you-mean) before anything is stored. With
no catalogue known yet (never tested, no live session) the name is accepted and the answer carries
a TOOL_NOT_KNOWN_YET warning naming it (docs/decisions.md). Removing a name is always accepted
(that is how a stored typo is cleaned up).
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp_center.config import ServerConfig
from mcp_center.errors import ToolNotFound, did_you_mean
from mcp_center.service.views import ViewWarning

__all__ = ["added_tool_names", "check_tool_names"]


def added_tool_names(before: ServerConfig, after: ServerConfig) -> list[str]:
    """The tool names `after` gives a policy or switch that `before` did not (sorted, no repeats)."""
    old = set(before.tool_policies) | set(before.disabled_tools)
    new = set(after.tool_policies) | set(after.disabled_tools)
    return sorted(new - old)


def check_tool_names(
    server_id: str, names: list[str], known: Iterable[str] | None, *, from_test: bool = False
) -> ViewWarning | None:
    """Check the tool names a change adds against the server's known catalogue (issue 16, R-5.3).

    Args:
        names: The added names (`added_tool_names`).
        known: The tool names of the live session or of the last successful test; None when no
            catalogue is known yet.
        from_test: `known` is the last test's (a server may have added tools since: the refusal
            says to test it again, which refreshes them).
    Returns:
        None when every name is known (or none was added); a TOOL_NOT_KNOWN_YET warning naming the
        added tools when no catalogue is known yet.
    Raises:
        ToolNotFound: a name the known catalogue does not list (`details.tool`, `details.did_you_mean`).
    """
    if not names:
        return None
    if known is None:
        listed = ", ".join(f"'{name}'" for name in names)
        return ViewWarning(
            "TOOL_NOT_KNOWN_YET",
            f"the tools of '{server_id}' are not known yet (no successful test of this configuration and no "
            f"live session), so {listed} could not be checked: after its test, its tool list shows the names",
        )
    catalogue = set(known)
    for name in names:
        if name not in catalogue:
            since = " (as of its last test; if it has added tools since, test it again)" if from_test else ""
            raise ToolNotFound(
                f"server '{server_id}' has no tool '{name}'{since}: nothing changed",
                details={"server_id": server_id, "tool": name, "did_you_mean": did_you_mean(name, catalogue)},
            )
    return None
