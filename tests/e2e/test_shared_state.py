"""Several processes on one data directory (R-9.2), for real: a `mcp-center serve` process beside the CLI
and a library script.

- OAuth refresh is single-flight across processes: `serve` and a library script (`McpCenter.open` on
  the same data directory, its own connection to the server) both hold an access token the server
  stopped accepting, against an authorization server with single-use rotating refresh tokens; the
  first refresh is held open until both processes have been refused. Exactly one refresh reaches the
  authorization server, both calls succeed, and the server stays authorized. The token is revoked at
  the script's first request and serve's call is sent once the script was refused: a refresh held
  past the OAuth client's read timeout (15 s), waiting for a process that starts slowly on a loaded
  machine, failed after the authorization server had spent the refresh token, ending the grant.
  (It was `mcp-center call`; beside a serve that verb now asks the serve, or refuses without the
  admin token, so it no longer opens a connection of its own.)
- An approval created by a library script's `McpCenter` is listed in the running serve's
  `GET /api/approvals`, approved there, and the script's call then completes; an elicitation card the
  script's server asks is answered in serve's API and the answer reaches the script's call.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Receive, Scope, Send

from tests.support.api import stdio_body
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource, Seen
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.mcp_servers import running_echo_http
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, running_host
from tests.support.waiting import eventually, until
from tests.support.zygote import launch_command

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SERVERS = "/api/mcp/servers"
REPO = Path(__file__).parents[2]
ECHO_STDIO = str(REPO / "tests" / "servers" / "echo_stdio.py")
STEP_TIMEOUT_S = 60.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _ok(response: httpx2.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


@asynccontextmanager
async def admin(url: str) -> AsyncGenerator[httpx2.AsyncClient]:
    """An async client of the running serve (the test's event loop also runs the fake servers)."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with httpx2.AsyncClient(
        verify=NO_TLS, base_url=url, headers=headers, timeout=STEP_TIMEOUT_S, trust_env=False
    ) as client:
        yield client


async def _enable(api: httpx2.AsyncClient, server_id: str) -> dict[str, Any]:
    view = _ok(await api.get(f"{SERVERS}/{server_id}"))
    _ok(await api.post(f"{SERVERS}/{server_id}/trust", json={"digest": view["digest"]}))
    assert _ok(await api.post(f"{SERVERS}/{server_id}/test"))["ok"] is True
    enabled = _ok(await api.post(f"{SERVERS}/{server_id}/enable"))
    assert enabled["status"]["state"] == "ready", enabled["status"]
    return enabled


async def _authorize(api: httpx2.AsyncClient, server_id: str) -> None:
    """Start an authorization in serve and play the browser up to serve's own callback."""
    started = _ok(await api.post(f"{SERVERS}/{server_id}/oauth/start"))
    async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
        redirect = await browser.get(started["authorization_url"])
        assert redirect.status_code == 302, redirect.text
        callback = await browser.get(redirect.headers["location"], headers={"Accept": "application/json"})
        assert callback.status_code == 200, callback.text


async def test_serve_and_a_library_script_refresh_a_rotating_refresh_token_once_and_both_stay_authorized(
    tmp_path: Path,
) -> None:
    authorization = FakeAuthorizationServer(rotate_refresh_tokens=True)
    resource = FakeProtectedResource([authorization])
    inner = resource.app
    armed = anyio.Event()
    revoked_at: list[int] = []
    """`len(resource.seen)` when the token was revoked: what came later was refused."""

    async def revoking(scope: Scope, receive: Receive, send: Send) -> None:
        """The resource, which stops accepting the access token both processes know (it is stored,
        encrypted) once `armed`, at the first request without a session: the script's initialize."""
        if (
            armed.is_set()
            and not revoked_at
            and scope["type"] == "http"
            and (scope["method"], scope["path"]) == ("POST", resource.mcp_path)
            and all(name != b"mcp-session-id" for name, _ in scope["headers"])
        ):
            revoked_at.append(len(resource.seen))
            authorization.revoke_access_tokens()
        await inner(scope, receive, send)

    with running_host(tmp_path) as host:
        async with (
            serve_loopback(authorization.app) as auth_base,
            serve_loopback(revoking) as resource_base,
            admin(host.url) as api,
        ):
            authorization.base_url, resource.base_url = auth_base, resource_base
            body = {"id": "o", "name": "O", "transport": "streamable_http", "url": resource.url}
            _ok(await api.post(SERVERS, json={**body, "auth": {"kind": "oauth"}}), 201)
            view = _ok(await api.get(f"{SERVERS}/o"))
            _ok(await api.post(f"{SERVERS}/o/trust", json={"digest": view["digest"]}))
            await _authorize(api, "o")
            await _enable(api, "o")
            first_refresh_token = next(iter(authorization.refresh_tokens))

            # The script's start takes seconds (tens on a loaded machine): the token is revoked only when
            # its first request arrives, so serve's own requests meanwhile (health pings) start no
            # refresh, and none is held open for longer than the OAuth client's read timeout (15 s).
            armed.set()
            both_refused = anyio.Event()

            def refused(with_session: bool) -> bool:
                # serve's session has an id; the script's first request (its initialize) has none.
                since = revoked_at[0] if revoked_at else len(resource.seen)
                return any(
                    _refused(s) and ("mcp-session-id" in s.headers) == with_session for s in resource.seen[since:]
                )

            def refused_by_both() -> bool:
                return refused(with_session=True) and refused(with_session=False)

            async def hold_until_both_refused() -> None:
                # Without the cross-process lock the second process would now present the same,
                # already used, refresh token and get invalid_grant.
                with anyio.move_on_after(30):
                    await until(refused_by_both, timeout_s=30)
                    both_refused.set()

            authorization.before_refresh_answer = hold_until_both_refused
            outcomes: dict[str, Any] = {}

            async def call_through_serve() -> None:
                response = await api.post(f"{SERVERS}/o/tools/echo/call", json={"arguments": {"text": "from-serve"}})
                outcomes["serve"] = (response.status_code, response.text)

            async def call_from_the_script() -> None:
                outcomes["script"] = await _script_call(host.data_dir, "from-script")

            with anyio.fail_after(STEP_TIMEOUT_S):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call_from_the_script)
                    # The script's refresh is held (or about to be): serve, warm, is refused long before
                    # the held refresh's read timeout.
                    await until(lambda: refused(with_session=False), timeout_s=STEP_TIMEOUT_S)
                    tg.start_soon(call_through_serve)
            assert both_refused.is_set(), ("the processes did not race: one was never refused", outcomes)
            assert outcomes["serve"][0] == 200, outcomes["serve"]
            assert "from-serve" in outcomes["serve"][1]
            assert outcomes["script"][0] == 0, outcomes["script"]
            assert "from-script" in outcomes["script"][1]
            assert authorization.refreshes == 1
            refreshes = [s for s in authorization.saw("/token") if s.form.get("grant_type") == "refresh_token"]
            assert [s.form["refresh_token"] for s in refreshes] == [first_refresh_token]

            after = _ok(await api.get(f"{SERVERS}/o"))
            assert after["oauth"]["authorized"] is True
            assert after["oauth"]["needs"] is None
            again = await _script_call(host.data_dir, "later")
            assert again[0] == 0 and "later" in again[1], again
            assert authorization.refreshes == 1  # the rotated tokens were stored for every process


CALL_SCRIPT = """
import sys, anyio
from pathlib import Path
from mcp_center.config import Settings
from mcp_center.service import McpCenter

async def main() -> None:
    settings = Settings.load(data_dir=Path(sys.argv[1]), environ={})
    async with McpCenter.open(settings) as center:
        result = await center.call_tool("o", "echo", {"text": sys.argv[2]})
        print(result.text, flush=True)

anyio.run(main)
"""


async def _script_call(data_dir: Path, text: str) -> tuple[int, str, str]:
    """Call `o`'s `echo` with `text` from a library script in a process of its own (R-9.2).

    Returns:
        (exit code, stdout, stderr) of the script.
    """
    done = await anyio.run_process(
        [sys.executable, "-c", CALL_SCRIPT, str(data_dir), text], cwd=REPO, env=_env(), check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _refused(seen: Seen) -> bool:
    return seen.method == "POST" and seen.path == "/mcp" and "authorization" in seen.headers


SCRIPT = """
import json, sys, anyio
from pathlib import Path
from mcp_center.config import Settings
from mcp_center.errors import CenterError
from mcp_center.service import McpCenter

async def main() -> None:
    settings = Settings.load(data_dir=Path(sys.argv[1]), environ={})
    async with McpCenter.open(settings) as center:
        try:
            if sys.argv[2] == "agent":
                result = await center.call_agent_tool("mcp__caps__record", {"note": "from-the-script"})
            else:
                result = await center.call_tool("caps", "ask", {"question": "Who are you?"})
        except CenterError as exc:
            print(json.dumps({"error": exc.code}), flush=True)
            return
        print(json.dumps({"result": result.to_dict()}), flush=True)

anyio.run(main)
"""


@pytest.mark.parametrize("kind", ["agent", "ask"], ids=["approval", "elicitation-card"])
async def test_a_library_scripts_approval_or_card_is_decided_in_serve_and_the_scripts_call_completes(
    tmp_path: Path, kind: str
) -> None:
    with running_echo_http("tests.servers.run_capabilities") as caps_url, running_host(tmp_path) as host:
        async with admin(host.url) as api:
            _ok(
                await api.post(
                    SERVERS, json={"id": "caps", "name": "Caps", "transport": "streamable_http", "url": caps_url}
                ),
                201,
            )
            await _enable(api, "caps")
            script = await anyio.open_process(
                [sys.executable, "-c", SCRIPT, str(host.data_dir), kind], cwd=REPO, env=_env()
            )
            async with script:
                assert script.stdout is not None
                if kind == "agent":
                    pending = await eventually(
                        lambda: _items(api, "/api/approvals", "approvals"), timeout_s=STEP_TIMEOUT_S
                    )
                    assert pending[0]["tool"] == "mcp__caps__record"
                    assert pending[0]["arguments"] == {"note": "from-the-script"}
                    decided = _ok(await api.post(f"/api/approvals/{pending[0]['id']}", json={"decision": "approve"}))
                    assert decided["state"] == "approved"
                else:
                    pending = await eventually(
                        lambda: _items(api, "/api/interactions?state=pending", "interactions"), timeout_s=STEP_TIMEOUT_S
                    )
                    assert pending[0]["message"] == "Who are you?"
                    assert pending[0]["actions"] == ["accept", "decline", "cancel"]
                    answered = _ok(
                        await api.post(
                            f"/api/interactions/{pending[0]['id']}",
                            json={"action": "accept", "content": {"name": "Grace"}},
                        )
                    )
                    assert answered["interaction"]["state"] == "accepted"
                with anyio.fail_after(STEP_TIMEOUT_S):
                    output = b""
                    async for chunk in script.stdout:
                        output += chunk
                    await script.wait()
            assert script.returncode == 0
            printed = json.loads(output.decode().strip().splitlines()[-1])
            assert "result" in printed, printed
            text = printed["result"]["content"][0]["text"]
            assert ("from-the-script" in text) if kind == "agent" else text.startswith("accept: ")
            if kind == "agent":
                [closed] = _ok(await api.get("/api/approvals", params={"include_closed": True}))["approvals"]
                assert closed["state"] == "approved"
            else:
                [card] = _ok(await api.get("/api/interactions"))["interactions"]
                assert (card["state"], card["delivered"]) == ("accepted", True)


async def _items(api: httpx2.AsyncClient, path: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = _ok(await api.get(path))[key]
    return items


@pytest.mark.parametrize(
    ("name", "content", "fault"),
    [
        ("servers.json", b'{"schema_version": 1, "servers": [{"config": ', "truncated JSON"),
        ("interactions.json", b'{"schema_version": 3, "interactions": []}', "newer mcp-center (schema 3"),
    ],
)
async def test_serve_does_not_start_on_a_damaged_data_file_and_says_which_and_why(
    tmp_path: Path, name: str, content: bytes, fault: str
) -> None:
    """R-9.1: one line naming the file and the fault, a non-zero exit, the file untouched, nothing created."""
    data_dir = tmp_path / "data"
    (data_dir / "mcp").mkdir(parents=True)
    damaged = data_dir / "mcp" / name
    damaged.write_bytes(content)
    with anyio.fail_after(STEP_TIMEOUT_S):
        done = await anyio.run_process(
            [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", "0"],
            env=_env(),
            check=False,
        )
    assert done.returncode == 1, done.stderr.decode()
    [line] = [text for text in done.stderr.decode().splitlines() if text.startswith("error [STORAGE_ERROR]")]
    assert str(damaged) in line
    assert fault in line
    assert damaged.read_bytes() == content
    left = {p.name for p in data_dir.iterdir()}
    assert not left & {"secret.key", "admin-token", "serve.json"}, left  # it stopped before any of them


async def test_a_serve_whose_data_directory_was_moved_refuses_to_fork_its_state_and_keeps_its_servers(
    tmp_path: Path,
) -> None:
    """`mv data moved` while serve runs with an enabled stdio server (R-9.1, R-9.2): the API answers
    STORAGE_ERROR (`directory_moved`) and stores nothing, nothing is made at the old path, the
    watcher does not act on the state it could not read, and once the directory is back the server
    is still on its first connection."""
    with running_host(tmp_path) as host:
        async with admin(host.url) as api:
            command, *args = launch_command(ECHO_STDIO)  # in the fork server (issue 16)
            _ok(await api.post(SERVERS, json=stdio_body("local", command, args)), 201)
            enabled = await _enable(api, "local")
            connection = enabled["status"]["connection_id"]
            moved = tmp_path / "moved"
            host.data_dir.rename(moved)
            try:
                listed = await api.get(SERVERS)
                assert listed.status_code == 500, listed.text
                assert listed.json()["error"]["code"] == "STORAGE_ERROR"
                assert listed.json()["error"]["details"]["fault"] == "directory_moved"
                created = await api.post(SERVERS, json=stdio_body("forked", sys.executable, [ECHO_STDIO]))
                assert created.json()["error"]["code"] == "STORAGE_ERROR", created.text
                # The watcher saw servers.json vanish and could not read the state: it did nothing.
                await until(lambda: "store.change_failed" in host.log(), timeout_s=30)
                assert not host.data_dir.exists()
            finally:
                moved.rename(host.data_dir)
            view = _ok(await api.get(f"{SERVERS}/local"))
            assert view["status"]["state"] == "ready", view["status"]
            assert view["status"]["connection_id"] == connection
            assert [s["id"] for s in _ok(await api.get(SERVERS))["servers"]] == ["local"]
