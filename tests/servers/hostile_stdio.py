"""A small hostile stdio MCP server (no SDK: raw JSON-RPC) for hardening tests.

It puts the value of `$API_KEY` into its server name, a tool description and a notification
method; its tools misbehave on request:

- `echo_secret`: returns `$API_KEY` as text.
- `rpc_error`: answers with JSON-RPC error -32000 (an ordinary server error code).
- `huge`: prints one line of `size` bytes (over the host's message limit) instead of an answer.
- `slow`: writes `slow: started` to stderr, then answers after `seconds`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, TypeGuard

SECRET = os.environ.get("API_KEY", "no-secret")


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a parsed JSON object (its keys are strings; its members are not checked)."""
    return isinstance(value, dict)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: object, method: str, params: dict[str, object]) -> None:
    if method == "initialize":
        result: dict[str, object] = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"hostile-{SECRET}", "version": f"v-{SECRET}"},
        }
    elif method == "tools/list":
        result = {
            "tools": [
                {"name": name, "description": f"uses {SECRET}", "inputSchema": {"type": "object"}}
                for name in ("echo_secret", "rpc_error", "huge", "slow")
            ]
        }
        send({"jsonrpc": "2.0", "method": f"notifications/x-{SECRET}"})
    elif method == "tools/call":
        name = params.get("name")
        arguments: object = params.get("arguments") or {}
        assert _is_object(arguments), "arguments is a JSON object"
        if name == "rpc_error":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "quota exceeded"}})
            return
        if name == "huge":
            sys.stdout.write("x" * int(arguments.get("size", 2_000_000)) + "\n")
            sys.stdout.flush()
            return
        if name == "slow":
            sys.stderr.write("slow: started\n")  # a test knows the call runs
            sys.stderr.flush()
            time.sleep(float(arguments.get("seconds", 30)))
        result = {"content": [{"type": "text", "text": SECRET}]}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:
            answer(message["id"], message["method"], message.get("params") or {})


if __name__ == "__main__":
    main()
