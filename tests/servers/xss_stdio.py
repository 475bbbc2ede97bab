"""A hostile stdio MCP server (raw JSON-RPC, no SDK) that puts markup and script-looking strings into
every string a server controls: server info, instructions, tool names/titles/descriptions/schemas/
annotations, prompt and resource metadata and contents, elicitation messages and schemas, log
messages, error messages, stderr. The settings page and the CLI must show all of it as text (R-7, R-5.4).

Every such string also carries `$API_KEY` (a secret env value the host must redact, R-1.5).
The marker `xssmark` makes each injected element easy to find; `--big` adds a 1 MB description and
2,000 tools.
"""

from __future__ import annotations

import json
import os
import sys

MARK = "xssmark"
SECRET = os.environ.get("API_KEY", "")
# Markup and script for the page; for terminal faces, rich markup the CLI must print as written, not
# parse (an unmatched closing tag used to end `mcp-center test` in a MarkupError traceback).
P = (
    f'<img src=x class={MARK} onerror="window.__xss=1">"><svg class={MARK} onload="window.__xss=2"></svg>{SECRET}'
    "[/red][link=https://evil.example]x[/link]"
)
# Escape sequences that would retitle and clear the user's terminal (in the server's name: a tool name
# with control characters is refused by the host as malformed).
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\u202egnp.exe"
JS = "javascript:window.__xss=3//"
BIG = "--big" in sys.argv

ELICIT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": P, "description": P, "default": P},
        "choice": {"type": "string", "title": P, "enum": [P, "b"], "enumNames": [P, P], "default": P},
        "titled": {"type": "string", "title": P, "oneOf": [{"const": P, "title": P}, {"const": "z", "title": P}]},
        "many": {"type": "array", "title": P, "items": {"anyOf": [{"const": P, "title": P}]}, "default": [P]},
        "link": {"type": "string", "format": "uri", "title": P, "default": JS},
        "flag": {"type": "boolean", "title": P, "description": P, "default": True},
    },
    "required": ["name"],
}

INPUT_SCHEMA: dict[str, object] = {
    "type": "object",
    "title": P,
    "description": P,
    "properties": {
        "a": {"type": "string", "title": P, "description": P, "default": P, "examples": [P]},
        "e": {"type": "string", "title": P, "enum": [P, "b"], "default": P},
        "o": {"type": "object", "title": P, "description": P, "properties": {"deep": {"type": "string", "title": P}}},
        "n": {"type": "number", "title": P, "default": P},
        P: {"type": "string", "title": P},
    },
    "required": ["a"],
}


def tools() -> list[dict[str, object]]:
    annotations = {"title": P, "readOnlyHint": True, "destructiveHint": False}
    listed: list[dict[str, object]] = [
        {"name": name, "title": P, "description": P, "inputSchema": INPUT_SCHEMA, "annotations": annotations}
        for name in ("result", "elicit", "err", "log")
    ]
    listed.append({"name": f"odd{P}", "description": P, "inputSchema": {"type": "object"}})
    if BIG:
        listed.append({"name": "huge_description", "description": "D" * 1_000_000, "inputSchema": {"type": "object"}})
        nested: dict[str, object] = {"type": "string"}
        for depth in range(40):
            nested = {"type": "object", "title": f"level {depth}", "properties": {"x": nested}}
        listed.append({"name": "deep", "description": "deep schema", "inputSchema": nested})
        listed.extend({"name": f"t{i}", "description": P, "inputSchema": {"type": "object"}} for i in range(2000))
    return listed


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result_content() -> dict[str, object]:
    svg = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0id2luZG93Ll9feHNzPTQiLz4="
    return {
        "content": [
            {"type": "text", "text": P},
            {"type": "image", "mimeType": "image/svg+xml", "data": svg},
            {"type": "image", "mimeType": 'image/png" onerror="window.__xss=5', "data": '" onerror="x'},
            {"type": "resource_link", "uri": JS, "name": P, "title": P, "mimeType": P},
            {"type": "resource", "resource": {"uri": JS, "mimeType": "text/html", "text": P}},
        ],
        "structuredContent": {P: P},
    }


pending: dict[object, object] = {}


def answer(request_id: object, method: str, params: dict[str, object]) -> None:
    result: dict[str, object]
    if method == "initialize":
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}, "logging": {}},
            "serverInfo": {"name": P + ESCAPES, "title": P, "version": P, "websiteUrl": JS},
            "instructions": P,
        }
    elif method == "tools/list":
        result = {"tools": tools()}
    elif method == "tools/call":
        name = params.get("name")
        if name == "err":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": P, "data": P}})
            return
        if name == "log":
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "error", "logger": P, "data": P},
                }
            )
            sys.stderr.write(P + "\n")
            sys.stderr.flush()
        if name == "elicit":
            asked = f"el-{request_id}"
            pending[asked] = request_id
            send(
                {
                    "jsonrpc": "2.0",
                    "id": asked,
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": P, "requestedSchema": ELICIT_SCHEMA},
                }
            )
            return
        result = result_content()
    elif method == "prompts/list":
        result = {
            "prompts": [
                {
                    "name": "p",
                    "title": P,
                    "description": P,
                    "arguments": [{"name": "arg", "title": P, "description": P, "required": True}],
                },
                {"name": f"q{P}", "description": P},
            ]
        }
    elif method == "prompts/get":
        result = {
            "description": P,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": P}},
                {
                    "role": "assistant",
                    "content": {"type": "resource", "resource": {"uri": JS, "text": P, "mimeType": P}},
                },
                {"role": "user", "content": {"type": "resource_link", "uri": JS, "name": P}},
            ],
        }
    elif method == "resources/list":
        result = {
            "resources": [
                {"uri": JS, "name": P, "title": P, "description": P, "mimeType": P},
                {"uri": "test://plain", "name": P, "description": P, "mimeType": "text/html"},
            ]
        }
    elif method == "resources/templates/list":
        result = {
            "resourceTemplates": [
                {"uriTemplate": "javascript:{code}", "name": P, "title": P, "description": P, "mimeType": P}
            ]
        }
    elif method == "resources/read":
        result = {"contents": [{"uri": str(params.get("uri")), "mimeType": "text/html", "text": P}]}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    sys.stderr.write(P + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if "method" in message and "id" in message:
            answer(message["id"], message["method"], message.get("params") or {})
        elif "id" in message and message["id"] in pending:
            original = pending.pop(message["id"])
            answered = json.dumps(message.get("result"))
            send({"jsonrpc": "2.0", "id": original, "result": {"content": [{"type": "text", "text": answered}]}})


if __name__ == "__main__":
    main()
