"""A scriptable, misbehaving stdio MCP server (raw JSON-RPC, no SDK) for the issue 14 tests.

`python -m tests.servers.quirky_stdio '<scenario JSON>'` (or a path to a JSON file). The scenario:

- `tools`: the raw `tools/list` answer's `tools` (default: one `echo` tool); sent as given.
- `initialize`: fields merged over the default `initialize` result; a field whose value is null is
  removed (`{"protocolVersion": null}`: an answer without a version).
- `before_initialize`: `{"stdout": text, "stderr": text, "exit": code}` — print, then exit before
  answering anything (a server that dies at start). `$NAME` in the texts is the environment
  variable NAME (a server that prints its secret).
- `calls`: per tool name, what `tools/call` does:
  `{"result": {...}}` answers that result (default: echo `text` back);
  `{"raw_hex": "..."}` writes these bytes as the answer line, `{id}` replaced by the request id;
  `{"progress": {"count": n, "interval_s": s}}` first sends n `notifications/progress` (when the
  request carries a `progressToken`), s seconds apart (time is the point of that test);
  `{"delay_s": s}` answers after s seconds;
  `{"big": true}` answers `arguments.text_bytes` bytes of text in one block, or
  `arguments.blocks` small text blocks (a huge result, built here: argv cannot carry it).
- `stderr_on_start`: lines written to stderr at start (e.g. install output of a package runner).
- `stdout_on_start`: lines written to stdout at start, before any message (a banner; `$NAME` expanded).
- `initialize_id`: answer `initialize` with this id instead of the request's (a server that mixes ids up).
- `hang_initialize`: never answer `initialize` (a server that is still starting).
- `initialize_delay_s`: answer `initialize` after this many seconds (a slow start).
- `slow_while`: a file path: `initialize_delay_s` applies only to a start that finds this file, so
  a test makes the server ready at full speed and then creates the file (issue 16: the ready
  steps, test and enable, each waited the delay out).

Requests are answered on their own threads, so a slow call never blocks `ping` or `tools/list`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, TypeGuard

_LOCK = threading.Lock()
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a parsed JSON object (its keys are strings; its members are not checked)."""
    return isinstance(value, dict)


def _object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a missing or null member of a message or
    of the scenario reads as `{}`."""
    return value if _is_object(value) else {}


def _scenario() -> dict[str, Any]:
    raw = sys.argv[1] if len(sys.argv) > 1 else "{}"
    if os.path.isfile(raw):
        with open(raw, encoding="utf-8") as handle:
            raw = handle.read()
    value: object = json.loads(raw)
    assert _is_object(value), "the scenario is a JSON object"
    return value


SCENARIO = _scenario()


def _write(data: bytes) -> None:
    with _LOCK:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()


def _send(message: dict[str, Any]) -> None:
    _write(json.dumps(message).encode())


def _initialize(request_id: object, params: dict[str, Any]) -> None:
    if SCENARIO.get("hang_initialize"):
        return
    slow_while = SCENARIO.get("slow_while")
    if SCENARIO.get("initialize_delay_s") and (slow_while is None or os.path.exists(str(slow_while))):
        time.sleep(float(SCENARIO["initialize_delay_s"]))
    result: dict[str, Any] = {
        "protocolVersion": params.get("protocolVersion", "2025-06-18"),
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "quirky", "version": "1"},
    }
    for key, value in _object(SCENARIO.get("initialize")).items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    _send({"jsonrpc": "2.0", "id": SCENARIO.get("initialize_id", request_id), "result": result})


def _call(request_id: object, params: dict[str, Any]) -> None:
    name = params.get("name")
    arguments = _object(params.get("arguments"))
    plan = _object(_object(SCENARIO.get("calls")).get(name)) if isinstance(name, str) else {}
    progress = _object(plan.get("progress"))
    token: object = _object(params.get("_meta")).get("progressToken")
    if progress:
        for step in range(int(progress["count"])):
            time.sleep(float(progress["interval_s"]))
            if token is not None:
                _send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step + 1, "total": progress["count"]},
                    }
                )
    if plan.get("delay_s"):
        time.sleep(float(plan["delay_s"]))
    if plan.get("big"):
        size, blocks = int(arguments.get("text_bytes", 0)), int(arguments.get("blocks", 0))
        content = [{"type": "text", "text": "x" * size}] if size else []
        content += [{"type": "text", "text": f"item {n}"} for n in range(blocks)]
        strings, string_bytes = int(arguments.get("strings", 0)), int(arguments.get("string_bytes", 0))
        content += [{"type": "text", "text": "y" * string_bytes} for _ in range(strings)]
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": content}})
        return
    if "raw_hex" in plan:
        _write(bytes.fromhex(plan["raw_hex"]).replace(b"{id}", json.dumps(request_id).encode()))
        return
    result: object = plan.get("result") or {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


def _answer(message: dict[str, Any]) -> None:
    method = message["method"]
    request_id = message["id"]
    params = _object(message.get("params"))
    if method == "initialize":
        _initialize(request_id, params)
    elif method == "tools/list":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": SCENARIO.get("tools", [ECHO])}})
    elif method == "tools/call":
        _call(request_id, params)
    elif method == "ping":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    else:
        _send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


def main() -> None:
    for line in SCENARIO.get("stderr_on_start", []):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    for line in SCENARIO.get("stdout_on_start", []):
        _write(os.path.expandvars(line).encode())
    early = _object(SCENARIO.get("before_initialize"))
    if early:
        if early.get("stdout"):
            sys.stdout.write(os.path.expandvars(early["stdout"]) + "\n")
            sys.stdout.flush()
        if early.get("stderr"):
            sys.stderr.write(os.path.expandvars(early["stderr"]) + "\n")
            sys.stderr.flush()
        sys.exit(int(early.get("exit", 1)))
    for line in sys.stdin:
        try:
            message: object = json.loads(line)
        except ValueError:
            continue
        if _is_object(message) and "id" in message and "method" in message:
            threading.Thread(target=_answer, args=(message,), daemon=True).start()


if __name__ == "__main__":
    main()
