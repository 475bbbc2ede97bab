"""A Streamable HTTP server whose `big` tool answers as much as it is asked for (for `tests.soak.memcheck`).

`python -m tests.soak.big_http json|sse` serves on 127.0.0.1 (a free port, printed as the first line on
stdout) until it is killed. `big(text_bytes, blocks)` answers one text block of `text_bytes` bytes plus
`blocks` small text blocks, as one JSON body or as one SSE event.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import uvicorn
from starlette.responses import Response

from tests.support.fakes.streamable_http import FakeStreamableServer
from tests.support.wire import object_or_empty

BIG_TOOL = {"name": "big", "inputSchema": {"type": "object"}}


async def big(fake: FakeStreamableServer, message: dict[str, Any]) -> Response:
    arguments = object_or_empty(message["params"].get("arguments"))
    size, blocks = int(arguments.get("text_bytes", 0)), int(arguments.get("blocks", 0))
    content = [{"type": "text", "text": "x" * size}] if size else []
    content += [{"type": "text", "text": f"item {n}"} for n in range(blocks)]
    content += [
        {"type": "text", "text": "y" * int(arguments.get("string_bytes", 0))}
        for _ in range(int(arguments.get("strings", 0)))
    ]
    return await fake.reply(message, {"content": content})


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "json"
    assert mode in ("json", "sse")
    fake = FakeStreamableServer(tools=[BIG_TOOL], response_mode=mode, handlers={"tools/call": big})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(fake.app, log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
