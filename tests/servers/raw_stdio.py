"""A hand-written MCP server over stdio (no SDK), for what the SDK would never send.

It speaks newline-delimited JSON-RPC: `initialize` (answering with the client's protocol
version), `tools/list` and `tools/call`. Its catalog holds two good tools and one malformed one
(`broken`: no `inputSchema`), which the host must quarantine with a reason (R-3.6).

Tools:
    echo(text): returns `text`.
    exit(code): writes "exiting on request with code N" to stderr, then exits at once with `code`
        (the server dies while a call is in flight: the host must attribute it).

On start it writes one stderr line that quotes the environment variable `RAW_TOKEN`, so tests can
check that a secret a server echoes on stderr is redacted before anyone sees it.

Flags:
    --broken-prompts: advertise prompts, but answer every `prompts/list` with a JSON-RPC error
        (a category whose refresh fails while the others work).
    --deep-schema N: nest the `echo` tool's input schema N objects deep (valid JSON, beyond what a
        strict parser accepts at a few hundred levels).
    --report-capabilities: add a tool `client_capabilities` that returns, as JSON text, the
        `capabilities` the client sent in `initialize` (what the host advertises, R-6.1).
    --typed-tool: add a tool `typed` whose input schema has one argument of each kind the settings
        page's playground draws (string, integer, number, boolean, enum with "", object, array; some
        required); it returns the arguments it received as JSON text (keys sorted), exactly; and a tool
        `odd` that does the same, whose properties are named `__proto__`, `constructor`, `toString` and
        have schema defaults (`null` among them); and a prompt `odd` with arguments of those three
        names whose one message is the arguments received as JSON text (keys sorted).
    --hold-later-starts DIR: the first start serves at once (and leaves DIR/started); every later
        start waits, before it reads stdin, until DIR/release exists: a test holds the long-lived
        session in `connecting` as long as it likes (bounded by the host's start-up timeout). Here
        rather than in the SDK server: each start skips the SDK's import (~1.5 s of CPU; issue 16).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TypeGuard

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "exit",
        "description": "Exit the server process with the given code (no answer is sent).",
        "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}, "required": ["code"]},
    },
    {"name": "broken", "description": "A malformed tool: it has no inputSchema."},
]


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


BROKEN_PROMPTS = "--broken-prompts" in sys.argv[1:]
DEPTH = int(sys.argv[sys.argv.index("--deep-schema") + 1]) if "--deep-schema" in sys.argv else 0
REPORT_CAPABILITIES = "--report-capabilities" in sys.argv[1:]
HOLD = Path(sys.argv[sys.argv.index("--hold-later-starts") + 1]) if "--hold-later-starts" in sys.argv else None
TYPED = "--typed-tool" in sys.argv[1:]
CLIENT_CAPABILITIES: dict[str, Any] = {}
TYPED_TOOL = {
    "name": "typed",
    "description": "Return the arguments received, as JSON.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "mode": {"enum": ["fast", "", "slow"]},
            "options": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["text", "count", "flag", "mode", "tags"],
    },
}
ODD_TOOL = {
    "name": "odd",
    "description": "Return the arguments received, as JSON (names a page may mistake for its own; defaults).",
    "inputSchema": {
        "type": "object",
        "properties": {
            "__proto__": {"type": "string"},
            "constructor": {"type": "integer"},
            "toString": {"enum": ["a", "b"]},
            "note": {"type": "string", "default": "hello"},
            "limit": {"type": "integer", "default": 10},
            "fast": {"type": "boolean", "default": True},
            "maybe": {"type": ["string", "null"], "default": None},
            "shape": {"type": "object", "default": None},
        },
    },
}
ODD_PROMPT = {
    "name": "odd",
    "description": "One message: the arguments received, as JSON.",
    "arguments": [{"name": "__proto__"}, {"name": "constructor"}, {"name": "toString"}],
}
REPORT_TOOL = {
    "name": "client_capabilities",
    "description": "The client's capabilities.",
    "inputSchema": {"type": "object"},
}


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a parsed JSON object (its keys are strings; its members are not checked)."""
    return isinstance(value, dict)


def _object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a missing or null member reads as `{}`."""
    return value if _is_object(value) else {}


def _deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


PROMPTS_ERROR = {"code": -32603, "message": "prompts are broken on purpose"}


def _answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    params = _object(request.get("params"))
    if method == "initialize":
        CLIENT_CAPABILITIES.update(_object(params.get("capabilities")))
        capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
        if BROKEN_PROMPTS or TYPED:
            capabilities["prompts"] = {"listChanged": False}
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": capabilities,
            "serverInfo": {"name": "raw-stdio", "version": "0.1.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        listed = [{**TOOLS[0], "inputSchema": _deep(DEPTH)}, *TOOLS[1:]] if DEPTH else TOOLS
        extra = [*([REPORT_TOOL] if REPORT_CAPABILITIES else []), *([TYPED_TOOL, ODD_TOOL] if TYPED else [])]
        return {"tools": [*listed, *extra]}
    if method == "prompts/list" and TYPED:
        return {"prompts": [ODD_PROMPT]}
    if method == "prompts/get" and TYPED and params.get("name") == "odd":
        text = json.dumps(_object(params.get("arguments")), sort_keys=True)
        return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    if method == "tools/call":
        name = params.get("name")
        arguments = _object(params.get("arguments"))
        if name == "echo":
            return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}], "isError": False}
        if name == "client_capabilities" and REPORT_CAPABILITIES:
            return {"content": [{"type": "text", "text": json.dumps(CLIENT_CAPABILITIES)}], "isError": False}
        if name in ("typed", "odd") and TYPED:
            return {"content": [{"type": "text", "text": json.dumps(arguments, sort_keys=True)}], "isError": False}
        if name == "exit":
            code = int(arguments.get("code", 7))
            _log(f"exiting on request with code {code}")
            os._exit(code)
        return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
    return None


def _hold_later_starts(directory: Path) -> None:
    started = directory / "started"
    if started.exists():
        while not (directory / "release").exists():
            time.sleep(0.05)
    started.touch()


def main() -> None:
    _log(f"raw-stdio starting; RAW_TOKEN={os.environ.get('RAW_TOKEN', '(unset)')}")
    if HOLD is not None:
        _hold_later_starts(HOLD)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue  # a notification or a response: nothing to answer
        result = _answer(request)
        if request["method"] == "prompts/list" and BROKEN_PROMPTS:
            _send({"jsonrpc": "2.0", "id": request["id"], "error": PROMPTS_ERROR})
        elif result is None:
            error = {"code": -32601, "message": f"method not found: {request['method']}"}
            _send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        else:
            _send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
