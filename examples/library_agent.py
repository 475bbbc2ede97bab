"""An agent script against the mcp-center library: register, trust, test, enable, call, approve.

Run: `python examples/library_agent.py DATA_DIR COMMAND [ARGS...]`, COMMAND being a stdio MCP
server with an `echo` tool. The call waits for the user's approval (policy `ask`, R-5.3); here
the script plays the user too and approves it with `wait_for_approval`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from mcp_center.config import Settings
from mcp_center.service import McpCenter, ServerView


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
        name = next(t["name"] for t in tools.tools if t["name"].endswith("__echo"))
        print(f"{name} needs approval: {name in tools.approval_required}")

        async def approve() -> None:
            approval = await center.wait_for_approval(tool=name, timeout_s=30)
            await center.decide_approval(approval.id, "approve")

        async with anyio.create_task_group() as tg:
            tg.start_soon(approve)
            answer = await center.call_agent_tool(name, {"text": "hello"}, caller={"via": "script"})
            print(f"answer: {answer['content'][0]['text']}")


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2:])
