"""A hand-written MCP server over stdio that does not die with its host by itself (R-9.3).

It ignores end-of-input (after stdin closes it sleeps until it is killed) and starts grandchildren
(`sleep 600`) in its own process group, so only a group-wide signal stops it all. On start it
appends one JSON line `{"leader": pid, "grandchildren": [pid, ...]}` to `--pidfile`, so a test can
watch those pids in /proc even when the host is killed in the middle of a call.

It speaks newline-delimited JSON-RPC: `initialize`, `tools/list` and `tools/call` of two tools:
    pids(): the JSON line above, as text.
    wait(seconds): answers after `seconds` (a call that is still running when the host is killed).

Flags:
    --pidfile PATH: where to append the pids line (required).
    --grandchildren N: how many `sleep 600` to start (default 2).
    --ignore-term: ignore SIGTERM as well (only SIGKILL stops the leader).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypeGuard

TOOLS: list[dict[str, Any]] = [
    {
        "name": "pids",
        "description": "The pids of this server and its grandchildren.",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "wait",
        "description": "Answer after the given number of seconds.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    },
]


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a parsed JSON object (its keys are strings; its members are not checked)."""
    return isinstance(value, dict)


def _object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a missing or null member reads as `{}`."""
    return value if _is_object(value) else {}


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _answer(request: dict[str, Any], pids: str) -> dict[str, Any] | None:
    method, params = request.get("method"), _object(request.get("params"))
    if "id" not in request:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stubborn", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "pids":
        result = {"content": [{"type": "text", "text": pids}]}
    elif method == "tools/call" and params.get("name") == "wait":
        time.sleep(float(_object(params.get("arguments")).get("seconds", 0)))
        result = {"content": [{"type": "text", "text": "waited"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pidfile", required=True)
    parser.add_argument("--grandchildren", type=int, default=2)
    parser.add_argument("--ignore-term", action="store_true")
    args = parser.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    children = [
        subprocess.Popen(
            ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(args.grandchildren)
    ]
    pids = json.dumps({"leader": os.getpid(), "grandchildren": [child.pid for child in children]})
    with Path(args.pidfile).open("a", encoding="utf-8") as pidfile:
        pidfile.write(pids + "\n")
    for line in sys.stdin:
        try:
            request: object = json.loads(line)
        except ValueError:
            continue
        if _is_object(request):
            answer = _answer(request, pids)
            if answer is not None:
                _send(answer)
    while True:  # end of input is not a reason to stop
        time.sleep(60)


if __name__ == "__main__":
    main()
