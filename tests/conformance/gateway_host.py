"""A real mcp-center host for the conformance server suite: the composed app on loopback, with the
fixture registered as server `fixture` and every request given the host's gateway token (R-8.4).

The harness connects without credentials; `WithGatewayToken` adds `Authorization: Bearer <token>`
and changes nothing else (Host and Origin stay as the harness sent them). Writes `--ready FILE`
once the fixture is enabled. Usage: `python -m tests.conformance.gateway_host --port N --upstream URL --ready FILE`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import anyio
import httpx2
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_center.app import create_app
from mcp_center.config import Settings
from tests.support.loopback import NO_TLS

ADMIN = "conformance-host-admin-token-0123456789"
GATEWAY = "conformance-host-gateway-token-0123456789"
POLICIES = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_reconnection",
    "json_schema_2020_12_tool",
]


class WithGatewayToken:
    """ASGI middleware: every HTTP request carries the gateway token (the harness sends none)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith("/mcp"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
            scope = {**scope, "headers": [*headers, (b"authorization", f"Bearer {GATEWAY}".encode())]}
        await self.app(scope, receive, send)


async def serve(port: int, upstream: str, ready: Path) -> None:
    with tempfile.TemporaryDirectory() as data:
        environ = {"MCP_CENTER_ADMIN_TOKEN": ADMIN, "MCP_CENTER_SERVE_GATEWAY_TOKEN": GATEWAY}
        settings = Settings.load(data_dir=Path(data), port=port, environ=environ)
        app, _token, _created = create_app(settings)
        config = uvicorn.Config(WithGatewayToken(app), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                await anyio.sleep(0.05)
            base = f"http://127.0.0.1:{port}"
            async with httpx2.AsyncClient(
                verify=NO_TLS, base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60
            ) as admin:
                body = {
                    "id": "fixture",
                    "name": "Conformance fixture",
                    "transport": "streamable_http",
                    "url": upstream,
                    "tool_policies": dict.fromkeys(POLICIES, "allow"),
                }
                created = await admin.post("/api/mcp/servers", json=body)
                assert created.status_code == 201, created.text
                view = created.json()
                (await admin.post("/api/mcp/servers/fixture/trust", json={"digest": view["digest"]})).raise_for_status()
                tested = (await admin.post("/api/mcp/servers/fixture/test")).json()
                assert tested["ok"], tested
                (await admin.post("/api/mcp/servers/fixture/enable")).raise_for_status()
            await anyio.Path(ready).write_text("ready\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--ready", type=Path, required=True)
    args = parser.parse_args()
    anyio.run(serve, args.port, args.upstream, args.ready)


if __name__ == "__main__":
    main()
