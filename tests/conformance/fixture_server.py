"""The conformance fixture: an SDK server implementing what the official server scenarios call (R-8.4).

`@modelcontextprotocol/conformance` 0.1.16 (`conformance server --url`) expects a server with the
tools, prompts, resources, logging and completion its scenarios name (`test_simple_text`,
`test://static-text`, `test_prompt_with_arguments`, ...). `tests.conformance.server_suite` runs the
suite against this server directly and through mcp-center's `/mcp/{server_id}`.

Usage: `python -m tests.conformance.fixture_server --port N` (loopback, Streamable HTTP at `/mcp`,
with an event store so `test_reconnection` can close its stream and be resumed).
"""

from __future__ import annotations

import argparse
import base64
import json
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.streamable_http import EventMessage, EventStore

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc000"
        "000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00"
    b"\x01\x00\x08\x00data\x00\x00\x00\x00"
).decode()


class MemoryEvents(EventStore):
    """A bounded in-memory event store: SSE resumption with Last-Event-ID (SEP-1699)."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = str(len(self._events) + 1)
        self._events.append((event_id, stream_id, message))
        del self._events[:-1000]
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        found = [i for i, (event_id, _s, _m) in enumerate(self._events) if event_id == last_event_id]
        if not found:
            return None
        stream_id = self._events[found[0]][1]
        for event_id, stream, message in self._events[found[0] + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def build() -> MCPServer:
    """The fixture server (see the module docstring)."""
    server = MCPServer(name="conformance-fixture", log_level="WARNING", warn_on_duplicate_tools=False)
    _add_tools(server)
    _add_resources(server)
    _add_prompts(server)
    _add_handlers(server)
    return server


def _add_tools(server: MCPServer) -> None:
    """The scenario tools (content types, logging, progress, errors, sampling, elicitation, SEP-1699)."""

    @server.tool(description="Returns simple text.", structured_output=False)
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(description="Returns an image.", structured_output=False)
    def test_image_content() -> list[types.ContentBlock]:
        return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool(description="Returns audio.", structured_output=False)
    def test_audio_content() -> list[types.ContentBlock]:
        return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @server.tool(description="Returns an embedded resource.", structured_output=False)
    def test_embedded_resource() -> list[types.ContentBlock]:
        resource = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return [types.EmbeddedResource(type="resource", resource=resource)]

    @server.tool(description="Returns text, an image and a resource.", structured_output=False)
    def test_multiple_content_types() -> list[types.ContentBlock]:
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
        )
        return [
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.EmbeddedResource(type="resource", resource=resource),
        ]

    @server.tool(description="Logs three messages while it runs.", structured_output=False)
    async def test_tool_with_logging(ctx: Context) -> str:
        for step, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
            if step:
                await anyio.sleep(0.05)
            await ctx.info(text)  # pyright: ignore[reportDeprecated] - the 2025-11-25 scenario logs
        return "Tool with logging executed successfully"

    @server.tool(description="Reports progress 0, 50, 100 of 100.", structured_output=False)
    async def test_tool_with_progress(ctx: Context) -> str:
        for step, value in enumerate((0, 50, 100)):
            if step:
                await anyio.sleep(0.05)
            await ctx.report_progress(value, 100)
        return "Tool with progress executed successfully"

    @server.tool(description="Always fails.", structured_output=False)
    def test_error_handling() -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool(description="Asks the client's LLM.", structured_output=False)
    async def test_sampling(prompt: str, ctx: Context) -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated] - a 2025-11-25 scenario
            [message], max_tokens=100, related_request_id=ctx.request_id
        )
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else str(content)
        return f"LLM response: {text}"

    async def ask(ctx: Context, message: str, schema: dict[str, Any]) -> str:
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return f"action={result.action}, content={json.dumps(result.content)}"

    @server.tool(description="Asks the user.", structured_output=False)
    async def test_elicitation(message: str, ctx: Context) -> str:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return "User response: " + await ask(ctx, message, schema)

    @server.tool(description="Asks with defaults (SEP-1034).", structured_output=False)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        }
        return "Elicitation completed: " + await ask(ctx, "Please review your information", schema)

    @server.tool(description="Asks with enum schemas (SEP-1330).", structured_output=False)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        titled = [{"const": f"value{i}", "title": f"Option {i}"} for i in (1, 2, 3)]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {"type": "array", "items": {"anyOf": titled}},
            },
        }
        return "Elicitation completed: " + await ask(ctx, "Choose", schema)

    @server.tool(description="Closes its SSE stream mid-call, then answers (SEP-1699).", structured_output=False)
    async def test_reconnection(ctx: Context) -> str:
        await anyio.sleep(0.1)
        await ctx.close_sse_stream()
        await anyio.sleep(0.3)
        return "Reconnection test completed"

    def json_schema_2020_12_tool(name: Any = "", address: Any = None) -> str:
        del name, address
        return "ok"

    server.add_tool(
        json_schema_2020_12_tool,
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
    )


def _add_resources(server: MCPServer) -> None:
    """Static, binary, watched and templated resources."""

    @server.resource(
        "test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain"
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", description="A static PNG.", mime_type="image/png")
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @server.resource("test://watched-resource", name="watched", description="A resource to subscribe to.")
    def watched() -> str:
        return "watched"

    @server.resource(
        "test://template/{id}/data", name="template", description="A templated resource.", mime_type="application/json"
    )
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


def _add_prompts(server: MCPServer) -> None:
    """Prompts with and without arguments, an embedded resource and an image."""

    @server.prompt(description="A simple prompt.")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with arguments.")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(description="A prompt with an embedded resource.")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        resource = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(types.EmbeddedResource(type="resource", resource=resource)),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt(description="A prompt with an image.")
    def test_prompt_with_image() -> list[UserMessage]:
        return [
            UserMessage(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage("Please analyze the image above."),
        ]


def _add_handlers(server: MCPServer) -> None:
    """Completion, resource subscriptions, logging/setLevel, and the 2020-12 schema of SEP-1613."""

    @server.completion()
    async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
        del ref, context
        values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)

    subscribed: set[str] = set()

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def set_level(ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    # SEP-1613: the schema is listed as written, 2020-12 keywords included (MCPServer derives its own).
    tool = server._tool_manager.get_tool("json_schema_2020_12_tool")  # pyright: ignore[reportPrivateUsage]
    assert tool is not None
    tool.parameters = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage] - MCPServer has no API for these
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = build().streamable_http_app(event_store=MemoryEvents(), retry_interval=100, host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
