"""Several instances (R-10.2): `GET /api/instances`, and the header naming the instance that answered.

Behind a load balancer a person (or a test) needs to know which instance served a response: every
response — REST, page, gateway — carries `X-MCP-Center-Instance: <instance name>`
(`--instance-name`, default `<host name>:<port>`). The name is not a secret; it is what the page's
instance list shows.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_center.api.openapi import API_ERRORS
from mcp_center.api.security import ADMIN_ONLY
from mcp_center.service import McpCenter
from mcp_center.service.instances import INSTANCE_HEADER

__all__ = ["InstanceHeader", "router"]

router = APIRouter(prefix="/api/instances", tags=["instances"], dependencies=[ADMIN_ONLY], responses=API_ERRORS)


@router.get("", summary="Live instances and their connection states")
async def list_instances(request: Request) -> dict[str, Any]:
    """`{"here": id, "instances": [{id, name, url, hostname, pid, started_at, here, servers: {server_id:
    {state, reason, updated_at}}}]}`: every live `serve` on the shared store, oldest first; `url` is
    where the instance listens (`http://127.0.0.1:8801`), not the public URL they share."""
    center: McpCenter = request.app.state.center
    return (await center.instances()).to_dict()


class InstanceHeader:
    """ASGI middleware: add `X-MCP-Center-Instance: <name>` to every HTTP response.

    Args:
        app: The wrapped app.
        name: This instance's name (printable ASCII, from `Settings.instance_label`).
    """

    def __init__(self, app: ASGIApp, name: str) -> None:
        self.app = app
        self._header = (INSTANCE_HEADER.lower().encode("latin-1"), name.encode("latin-1", "replace"))

    @property
    def header(self) -> tuple[bytes, bytes]:
        """The header it adds, `(name, value)` as ASGI sends them (also on the gateway's direct answers)."""
        return self._header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self._header]
            await send(message)

        await self.app(scope, receive, send_named)
