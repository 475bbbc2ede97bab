"""Conformance driver for `elicitation-sep1034-client-defaults`, through mcp-center's own elicitation handling.

Usage (the harness appends the server URL):

    shared/conformance/run-client-suite \
        --command "<repo>/.venv/bin/python <repo>/tests/conformance/elicitation_driver.py" \
        --scenarios elicitation-sep1034-client-defaults

What it does, as a user of the library would: open an `McpCenter` on a fresh data directory,
register the mock server (Streamable HTTP), trust its summary, test it, enable it (the long-lived
connection advertises elicitation), then call `test_client_elicitation_defaults` as a
user-initiated call. The server's `elicitation/create` becomes an interaction card; the driver
answers it the way a user accepts the pre-filled form — `accept` with no content — so the
schema defaults are filled in by the product (SEP-1034), validated, and sent.

This driver covers the elicitation scenario only; a general driver for the other scenarios
(OAuth and the rest) is separate work.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from typing import Any

import anyio

from mcp_center.config import Settings
from mcp_center.errors import CenterError
from mcp_center.service import McpCenter

SCENARIO = "elicitation-sep1034-client-defaults"
TOOL = "test_client_elicitation_defaults"
STEP_TIMEOUT_S = 20.0

log = logging.getLogger("elicitation_driver")


async def run(url: str) -> dict[str, Any]:
    """Connect through mcp-center, call the scenario's tool, accept the card with its defaults."""
    with tempfile.TemporaryDirectory(prefix="mcp-center-conformance-") as data_dir:
        settings = Settings.load(data_dir=data_dir, environ={})
        async with McpCenter.open(settings) as center:
            with anyio.fail_after(STEP_TIMEOUT_S):
                view = (
                    await center.create_server({"name": "Conformance", "transport": "streamable_http", "url": url})
                ).to_dict()
                server_id = view["id"]
                await center.trust(server_id, view["digest"])
                tested = await center.test(server_id)
                if not tested.ok:
                    raise RuntimeError(f"test failed: {tested.error}")
                await center.enable(server_id)
                tools = [t.name for t in await center.list_tools(server_id)]
                log.info("tools: %s", tools)
            result: dict[str, Any] = {}
            with anyio.fail_after(STEP_TIMEOUT_S):
                async with center.events.subscribe() as events, anyio.create_task_group() as tg:

                    async def call() -> None:
                        result.update((await center.call_tool(server_id, TOOL, {})).to_dict())

                    tg.start_soon(call)
                    while True:
                        event = await events.next()
                        if event["type"] == "interaction.created":
                            break
                    card = event["interaction"]
                    log.info("card %s defaults %s", card["id"], json.dumps(card["defaults"]))
                    # The user accepts the pre-filled form: no content, so every default is used.
                    answered = await center.answer_interaction(card["id"], "accept")
                    log.info("answered: %s", list(answered.interaction.answer_fields))
            return result


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", SCENARIO)
    if scenario != SCENARIO:
        log.error("this driver only runs %s, not %s", SCENARIO, scenario)
        return 2
    url = sys.argv[-1]
    try:
        result = anyio.run(run, url)
    except CenterError as exc:
        log.error("mcp-center error [%s]: %s", exc.code, exc.message)
        return 1
    sys.stdout.write(json.dumps(result) + "\n")
    return 0 if not result.get("isError") else 1


if __name__ == "__main__":
    sys.exit(main())
