"""An agent script against the mcp-center library: register, trust, test, enable, call, approve.

Run: `python examples/library_agent.py DATA_DIR COMMAND [ARGS...]`, COMMAND starting a stdio MCP
server with an `echo` tool, e.g. the reference server-everything from npm:

    python examples/library_agent.py ./agent-data npx -y @modelcontextprotocol/server-everything stdio

It calls `echo` of the server it registered on this run (a second run registers `echo-2` and
calls that one's), with "hello" as the first string argument of the tool's input schema
(`message` for server-everything). If the call waits for the user's approval (policy `ask`,
R-5.3), the script plays the user too and approves it with `wait_for_approval`. A tool error
(`isError`) ends the script with exit status 1 and the error's text.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_center.config import Settings
from mcp_center.service import McpCenter, ServerView, ToolCallResult


def first_string_argument(schema: dict[str, Any]) -> str:
    """The name of the first string property of a tool's input schema, required ones first."""
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    names = [n for n in required if n in properties] + [n for n in properties if n not in required]
    return next(n for n in names if properties[n].get("type") == "string")


async def main(data_dir: Path, command: list[str]) -> None:
    settings = Settings.load(data_dir=data_dir, environ={})
    async with McpCenter.open(settings) as center:
        view: ServerView = await center.create_server(
            {"name": "Echo", "transport": "stdio", "command": command[0], "args": command[1:]}
        )
        print(f"registered {view.id}; needs {', '.join(view.needs)}")
        await center.trust(view.id, view.digest)  # the summary the user confirmed
        result = await center.test(view.id)
        if not result.ok:
            raise SystemExit(f"test failed: {result.error}")
        await center.enable(view.id)

        tools = await center.agent_tools("anthropic")
        # The exposed name of *this* server's `echo` (an earlier run's server has its own).
        name = next(
            exposed for exposed, alias in tools.aliases.items() if alias.server_id == view.id and alias.tool == "echo"
        )
        schema = next(t["input_schema"] for t in tools.tools if t["name"] == name)
        argument = first_string_argument(schema)
        needs_approval = name in tools.approval_required
        print(f"{name} needs approval: {needs_approval}")

        async def approve() -> None:
            approval = await center.wait_for_approval(tool=name, timeout_s=30)
            await center.decide_approval(approval.id, "approve")

        # The task group's exit may end its body early (a cancel it absorbs): the answer may be missing.
        answer: ToolCallResult | None = None
        async with anyio.create_task_group() as tg:
            if needs_approval:
                tg.start_soon(approve)
            answer = await center.call_agent_tool(name, {argument: "hello"}, caller={"via": "script"})
        if answer is None:
            raise SystemExit(f"{name} was not answered")
        if answer.is_error:
            raise SystemExit(f"{name} failed: {answer.text}")
        print(f"answer: {answer.text}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python examples/library_agent.py DATA_DIR COMMAND [ARGS...]")
    anyio.run(main, Path(sys.argv[1]), sys.argv[2:])
