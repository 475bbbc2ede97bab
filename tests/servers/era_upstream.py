"""A real SDK server (low level) for the tests of the upstream protocol era (R-8.3, R-8.5).

It speaks both eras, as every SDK 2.3 server does, and records each POST it receives (`Seen`):
its `Mcp-Method`/`Mcp-Name` headers, its protocol version header, whether it carried a session.

Tools:
- `add(a, b)`: needs nothing from the client;
- `hold()`: runs until cancelled and says so on `HOLD` (in-process servers only); with no `Hold`
  waiting it answers a JSON-RPC error at once;
- `maybe(prompt?)`: asks the client's model through the session-era back-channel
  (`sampling/createMessage` on the call's stream) only when given a prompt;
- `confirm(ask?)`: asks the 2026-07-28 way (an `input_required` result carrying an elicitation
  and a `requestState`) only when `ask` is true and on a 2026-07-28 request; answers with what
  the client said and the state it echoed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.support.wire import is_object, object_or_empty

__all__ = ["HOLD", "Hold", "Post", "buffered", "make_era_server", "recorded"]

_OBJECT = {"type": "object"}
TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    ),
    types.Tool(name="hold", description="Run until cancelled.", input_schema=_OBJECT),
    types.Tool(
        name="maybe",
        description="Ask the client's model when given a prompt.",
        input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ),
    types.Tool(
        name="confirm",
        description="Ask the user (2026-07-28 input_required) when `ask` is true.",
        input_schema={"type": "object", "properties": {"ask": {"type": "boolean"}}},
    ),
]
STATE = "state-1"
"""The `requestState` `confirm` sends with its question."""


@dataclass
class Hold:
    """What the `hold` tool did: it started; it was cancelled (events of the test's event loop)."""

    started: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)


HOLD: list[Hold] = []


@dataclass(frozen=True)
class Post:
    """One POST the server received."""

    method: str
    name: str | None
    version: str | None
    session: bool


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    arguments = params.arguments or {}
    if params.name == "add":
        return _text(str(int(arguments["a"]) + int(arguments["b"])))
    if params.name == "maybe":
        if not arguments.get("prompt"):
            return _text("nothing asked")
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=arguments["prompt"]))
        result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated] - the session era's way
            [message], max_tokens=50, related_request_id=ctx.request_id
        )
        content = result.content
        return _text(f"model said: {content.text if isinstance(content, types.TextContent) else content}")
    if params.name == "confirm":
        return _confirm(params)
    if params.name == "hold" and HOLD:
        HOLD[-1].started.set()
        try:
            await anyio.sleep_forever()
        finally:
            HOLD[-1].cancelled.set()
    raise MCPError(code=types.INVALID_PARAMS, message=f"nothing to do for {params.name}")


def _confirm(params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
    arguments = params.arguments or {}
    answered = (params.input_responses or {}).get("ok")
    if answered is not None:
        content: dict[str, Any] = getattr(answered, "content", None) or {}
        return _text(f"confirmed: {content.get('answer')} (state {params.request_state})")
    if not arguments.get("ask"):
        return _text("nothing asked")
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="Proceed?",
            requested_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        )
    )
    return types.InputRequiredResult(input_requests={"ok": question}, request_state=STATE)


def make_era_server() -> Server[Any]:
    """Build the server (serve it with `recorded(server.streamable_http_app(), posts)`)."""
    return Server("eras", on_list_tools=_list_tools, on_call_tool=_call_tool)


_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


def recorded(app: _App, posts: list[Post]) -> _App:
    """`app`, appending a `Post` for every JSON-RPC request POSTed to it (answers and notifications
    are not requests and are not recorded)."""

    async def wrapped(scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body, replayed = await buffered(receive)
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            parsed: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            parsed = None
        if is_object(parsed) and "method" in parsed and "id" in parsed:
            name = object_or_empty(parsed.get("params")).get("name")
            posts.append(
                Post(
                    method=str(parsed["method"]),
                    name=name if isinstance(name, str) else None,
                    version=headers.get("mcp-protocol-version"),
                    session="mcp-session-id" in headers,
                )
            )
        await app(scope, replayed, send)

    return wrapped


async def buffered(receive: _Receive) -> tuple[bytes, _Receive]:
    """The whole body of an ASGI request read from `receive`, and a `receive` that gives the app
    the same messages again (then whatever comes next)."""
    messages: list[MutableMapping[str, Any]] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    replay = iter(messages)

    async def replayed() -> MutableMapping[str, Any]:
        return next(replay, None) or await receive()

    return body, replayed
