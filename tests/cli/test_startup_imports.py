"""A CLI process that does not run the host starts without the host's heavy imports (issue 16).

`mcp-center --help`, `--version`, an argument error and the verbs that ask a running host over REST
(`approvals`) need typer, rich, the settings and an HTTP client; importing the MCP SDK, the web
stack or the service (about a second of CPU per process before the change) is a regression. Each
case runs in a fresh interpreter, the only place where `sys.modules` says what a start-up imported.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

import mcp_center.config
import mcp_center.gateway
import mcp_center.interchange
import mcp_center.service
import mcp_center.store
import mcp_center.transports
from mcp_center.errors import StorageError
from mcp_center.store.owner import FileOwnerLock, ServeOwner
from tests.support.loopback import serve_threaded

HEAVY = (
    "mcp",
    "mcp_types",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp_center.service",
    "mcp_center.runtime",
    "mcp_center.config.servers",
    "cryptography",  # the secret cipher loads it on a first seal or open
)
"""Packages and modules a light CLI start must not import. (pydantic itself is allowed: typer
converts a command's parameters with it; the configuration models built on it are not.)"""

SRC = str(Path(mcp_center.config.__file__).resolve().parents[2])
"""The `src/` this test process imports mcp_center from: the child interpreters import the same code
(a worktree's, not necessarily the one the venv's editable install points at)."""

_RUN_AND_LIST_MODULES = """
import json, sys
argv, report = sys.argv[1:-1], sys.argv[-1]
sys.argv = ["mcp-center", *argv]
from mcp_center.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 0
else:
    code = 0
with open(report, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def heavy_imports(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    """Run `mcp-center *argv` in a fresh interpreter: its exit code, the `HEAVY` modules it
    imported, and its stdout."""
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, *argv, str(report)],
        stdin=subprocess.DEVNULL,  # `gateway --stdio` reads it: ends at once
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "120", "PYTHONPATH": SRC, **(env or {})},
        check=False,
    )
    assert report.exists(), done.stderr
    found = json.loads(report.read_text())
    return found["code"], [name for name in HEAVY if name in found["modules"]], done.stdout


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (("--help",), 0),
        (("--version",), 0),
        (("show",), 2),  # a missing argument: click's usage error
        (("gateway", "token", "--help"), 0),
    ],
)
def test_help_version_and_argument_errors_import_no_sdk_web_stack_or_service(
    tmp_path: Path, argv: tuple[str, ...], code: int
) -> None:
    exit_code, heavy, _ = heavy_imports(tmp_path, *argv)
    assert exit_code == code
    assert heavy == []


HOST = tuple(name for name in HEAVY if name != "mcp_center.config.servers")
"""What a refused `serve` must not import: the host (the store it opens reads the configuration models)."""


def test_a_serve_refused_on_a_busy_port_imports_no_sdk_web_stack_or_service(tmp_path: Path) -> None:
    # `serve` binds its port and claims its data directory before it imports the host
    # (`mcp_center.launch`): a refused start ends in well under a second of CPU, not ~2.5 s (issue 16).
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        exit_code, heavy, _ = heavy_imports(
            tmp_path, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port)
        )
    assert exit_code == 4  # SERVE_ADDRESS_IN_USE
    assert heavy == []
    assert not (tmp_path / "data").exists()  # refused before it touched the data directory


def test_a_serve_refused_on_a_data_directory_another_serve_owns_imports_no_sdk_web_stack_or_service(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    owner = FileOwnerLock(data)
    owner.claim(ServeOwner.this_process("http://127.0.0.1:9"))  # this live test process owns it
    try:
        exit_code, heavy, _ = heavy_imports(tmp_path, "serve", "--data-dir", str(data), "--port", "0")
    finally:
        owner.release()
    assert exit_code == 4  # SERVE_DATA_DIR_IN_USE
    assert heavy == []


def test_a_serve_refused_on_a_damaged_data_file_imports_no_sdk_web_stack_or_service(tmp_path: Path) -> None:
    # The store is opened (and a damaged file refused) before the host is imported, too.
    data = tmp_path / "data"
    (data / "mcp").mkdir(parents=True)
    damaged = data / "mcp" / "servers.json"
    damaged.write_text('{"schema_version": 1, "servers": [{"config": ')
    exit_code, heavy, _ = heavy_imports(tmp_path, "serve", "--data-dir", str(data), "--port", "0")
    assert exit_code == StorageError("").exit_code
    assert [name for name in heavy if name in HOST] == []
    assert damaged.read_text() == '{"schema_version": 1, "servers": [{"config": '  # never written
    assert not (data / "admin-token").exists()  # refused before the token


class _FakeServe(BaseHTTPRequestHandler):
    """A running serve's GET answers (`ANSWERS`: path -> JSON) to the admin token
    `startup-admin-token`; any other path or token gets 401 ADMIN_AUTH_REQUIRED."""

    ANSWERS: ClassVar[dict[str, object]] = {}

    def do_GET(self) -> None:
        ok = self.path in self.ANSWERS and self.headers.get("Authorization") == "Bearer startup-admin-token"
        body = json.dumps(
            self.ANSWERS[self.path] if ok else {"error": {"code": "ADMIN_AUTH_REQUIRED", "message": "no"}}
        )
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        del format, args


class _Approvals(_FakeServe):
    """A running host's `GET /api/approvals`, as far as the CLI reads it: no pending approvals."""

    ANSWERS: ClassVar[dict[str, object]] = {"/api/approvals": {"approvals": []}}


@pytest.fixture
def host_url() -> Iterator[str]:
    with serve_threaded(_Approvals) as url:
        yield url


def test_a_verb_that_asks_the_running_host_over_rest_imports_no_sdk_web_stack_or_service(
    tmp_path: Path, host_url: str
) -> None:
    exit_code, heavy, stdout = heavy_imports(
        tmp_path,
        "approvals",
        "list",
        "--json",
        "--url",
        host_url,
        "--data-dir",
        str(tmp_path / "data"),
        env={"MCP_CENTER_ADMIN_TOKEN": "startup-admin-token"},
    )
    assert exit_code == 0
    assert json.loads(stdout) == []  # it did reach the host and print its answer
    assert heavy == []


STORE_ONLY = tuple(name for name in HEAVY if name not in ("mcp_center.service", "mcp_center.config.servers"))
"""What a verb that opens the store but not the host must not import: the store reads the configuration
models, and the verb imports its one module of `service` (the package's names load lazily)."""


def test_a_gateway_token_verb_opens_the_store_without_the_host_the_sdk_or_the_web_stack(tmp_path: Path) -> None:
    # `gateway token create/list/revoke` build `GatewayTokens` on the store: importing the service
    # package's facade with it (the runtime, the MCP SDK, about 1.5 s of CPU) was a regression of
    # every such process, e.g. a revoke from a script (issue 16).
    data = tmp_path / "data"
    env = {"MCP_CENTER_DATA_DIR": str(data)}
    exit_code, _, stdout = heavy_imports(tmp_path, "gateway", "token", "create", "ci", env=env)
    assert exit_code == 0
    assert stdout.startswith("mcpg_")  # the new token, printed once
    report = tmp_path / "modules.json"
    exit_code, _, stdout = heavy_imports(tmp_path, "gateway", "token", "list", env=env)
    assert exit_code == 0
    assert "ci" in stdout  # it did open the store and read the token
    modules: list[str] = json.loads(report.read_text())["modules"]
    assert "mcp_center.service.gateway_tokens" in modules
    assert [name for name in STORE_ONLY if name in modules] == []
    assert "mcp_center.service.center" not in modules


_SERVED_VIEW = {
    "id": "clock",
    "name": "Clock",
    "transport": "stdio",
    "command": "uvx",
    "args": ["mcp-server-time"],
    "enabled": True,
    "needs": [],
    "status": {"state": "ready", "tool_count": 2},
}


class _Servers(_FakeServe):
    """A running serve's `GET /api/mcp/servers` and `GET /api/mcp/servers/clock`, as far as `list`
    and `show` read them: one ready server."""

    ANSWERS: ClassVar[dict[str, object]] = {
        "/api/mcp/servers": {"servers": [_SERVED_VIEW]},
        "/api/mcp/servers/clock": _SERVED_VIEW,
    }


def test_list_and_show_beside_the_serve_of_their_data_directory_ask_it_and_import_no_host(tmp_path: Path) -> None:
    # The serve of the data directory answers `list` and `show` whole (its views are the store's, with
    # live states): the CLI process builds no host of its own (about 1.5 s of CPU each, issue 16).
    data = tmp_path / "data"
    (data / "mcp").mkdir(parents=True)  # state to list
    with serve_threaded(_Servers) as url:
        owner = FileOwnerLock(data)
        owner.claim(ServeOwner.this_process(url))  # this live test process is the data directory's serve
        try:
            env = {"MCP_CENTER_ADMIN_TOKEN": "startup-admin-token"}
            exit_code, heavy, stdout = heavy_imports(tmp_path, "list", "--data-dir", str(data), env=env)
            json_code, _, json_out = heavy_imports(tmp_path, "list", "--json", "--data-dir", str(data), env=env)
            show_code, show_heavy, show_out = heavy_imports(tmp_path, "show", "clock", "--data-dir", str(data), env=env)
        finally:
            owner.release()
    assert exit_code == 0
    assert "clock" in stdout and "ready" in stdout  # the serve's server and its live state
    assert heavy == []
    assert json_code == 0
    assert json.loads(json_out) == [_SERVED_VIEW]
    assert (show_code, json.loads(show_out), show_heavy) == (0, _SERVED_VIEW, [])


_SERVED_TOOLS: dict[str, object] = {
    "tools": [
        {"name": "now", "description": "The time", "inputSchema": {"type": "object"}, "enabled": True, "policy": "ask"}
    ],
    "quarantined": [],
}


class _LiveState(_FakeServe):
    """A running serve's answers to `enable`, `disable` (POST) and `tools` (GET) for `clock`."""

    ANSWERS: ClassVar[dict[str, object]] = {
        "/api/mcp/servers/clock/enable": _SERVED_VIEW,
        "/api/mcp/servers/clock/disable": {**_SERVED_VIEW, "enabled": False, "status": {"state": "disconnected"}},
        "/api/mcp/servers/clock/tools": _SERVED_TOOLS,
    }

    def do_POST(self) -> None:
        self.do_GET()


def test_enable_disable_and_tools_beside_the_serve_ask_it_and_import_no_host(tmp_path: Path) -> None:
    # Run in-process they built the host and started the server (the SDK, the runtime: 3-5 s of CPU
    # each, trial38); beside the serve of their data directory they send it one request (cli39).
    data = tmp_path / "data"
    (data / "mcp").mkdir(parents=True)  # state: the server exists
    env = {"MCP_CENTER_ADMIN_TOKEN": "startup-admin-token"}
    with serve_threaded(_LiveState) as url:
        owner = FileOwnerLock(data)
        owner.claim(ServeOwner.this_process(url))  # this live test process is the data directory's serve
        try:
            runs = {
                verb: heavy_imports(tmp_path, verb, "clock", "--data-dir", str(data), env=env)
                for verb in ("enable", "disable", "tools")
            }
        finally:
            owner.release()
    assert runs["enable"] == (0, [], "enabled clock (state: ready)\n")
    assert runs["disable"] == (0, [], "disabled clock\n")
    code, heavy, table = runs["tools"]
    assert (code, heavy) == (0, [])
    assert "now" in table and "The time" in table
    modules: list[str] = json.loads((tmp_path / "modules.json").read_text())["modules"]  # the last run's: tools
    assert "httpx2" not in modules  # one request: the standard library's client (~0.2 s of CPU less)


def test_the_stdio_bridge_starts_without_the_host_the_service_or_the_web_stack(tmp_path: Path) -> None:
    # `gateway --stdio` is a process an MCP client starts per session: it needs the SDK's client
    # (which brings starlette and uvicorn), never the gateway's endpoint and server, the service,
    # the runtime or fastapi (issue 16). Empty stdin: the bridge ends before it sends anything.
    report = tmp_path / "modules.json"
    argv = ["gateway", "--stdio", "--url", "http://127.0.0.1:9/mcp", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, *argv, str(report)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PYTHONPATH": SRC,
            "MCP_CENTER_GATEWAY_TOKEN": "bridge-token",
        },
        check=False,
    )
    assert report.exists(), done.stderr
    found = json.loads(report.read_text())
    assert found["code"] == 0, done.stderr
    assert "mcp_center.gateway.bridge" in found["modules"]  # the bridge did run
    host_side = (
        "fastapi",
        "mcp_center.gateway.endpoint",
        "mcp_center.gateway.server",
        "mcp_center.service",
        "mcp_center.runtime",
        "mcp_center.config.servers",
        "mcp_center.web",
    )
    assert [name for name in host_side if name in found["modules"]] == []


def _build_the_host(script: str, tmp_path: Path) -> Any:
    """Run `script` (which builds the host on the data directory `argv[1]` and writes its JSON report
    to `argv[2]`) in a fresh interpreter with a bare environment; the report, parsed.

    Raises:
        AssertionError: no report was written (the script's stderr is shown).
    """
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data"), str(report)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": SRC},
        check=False,
    )
    assert report.exists(), done.stderr
    return json.loads(report.read_text())


_BUILD_THE_HOST = """
import json, sys
from pathlib import Path
import mcp_center.cli, mcp_center.gateway.wire
from mcp_center.app import create_app
from mcp_center.config import Settings
create_app(Settings.load(data_dir=Path(sys.argv[1]), environ={}))
with open(sys.argv[2], "w") as f:
    json.dump(sorted(sys.modules), f)
"""

RARE_PATHS = (
    "psycopg",  # no --database-url
    "psycopg_pool",
    "mcp_center.store.pg_store",
    "jinja2",  # the settings page's templates load when a page is first asked for
    "jwt",  # a private_key_jwt client assertion
    "mcp_center.interchange.plan",  # an import preview
    "mcp_center.interchange.export",  # an export
    "mcp_center.interchange.templates",  # GET /api/mcp/templates
    "mcp_center.gateway.bridge",  # `gateway --stdio`
)
"""Modules `serve` imports only on the path that needs them (issue 16: every serve start, ~50 per suite run)."""


def test_serve_builds_the_host_without_the_rare_paths_modules(tmp_path: Path) -> None:
    # What `serve` imports and builds before it answers (`create_app` on a files data directory),
    # in a fresh interpreter: none of the rare paths' modules is among them.
    modules = set(_build_the_host(_BUILD_THE_HOST, tmp_path))
    assert "mcp_center.service.imports" in modules  # the module that uses the interchange was built
    assert [name for name in RARE_PATHS if name in modules] == []


_BUILD_THE_HOST_AS_SERVE = """
import json, sys
from pathlib import Path
from mcp_center.launch import without_pydantic_v1
without_pydantic_v1()
from mcp_center.app import create_app
from mcp_center.config import Settings
app, _, _ = create_app(Settings.load(data_dir=Path(sys.argv[1]), environ={}))
schema = app.openapi()
with open(sys.argv[2], "w") as f:
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    json.dump({"modules": loaded, "paths": sorted(schema["paths"])}, f)
"""


def test_serve_builds_the_host_and_its_openapi_without_pydantic_v1(tmp_path: Path) -> None:
    # fastapi imports pydantic.v1 to ask whether each route's model is a v1 model (about 1.4 MB of
    # an idle host, R-8.3); `serve` marks it missing first, and every route and model still builds.
    found = _build_the_host(_BUILD_THE_HOST_AS_SERVE, tmp_path)
    assert [name for name in found["modules"] if name.startswith("pydantic.v1")] == []
    assert "/api/mcp/servers" in found["paths"]
    assert "/api/mcp/servers/{server_id}/test" in found["paths"]


@pytest.mark.parametrize(
    "package",
    [
        mcp_center.config,
        mcp_center.store,
        mcp_center.interchange,
        mcp_center.gateway,
        mcp_center.transports,
        mcp_center.service,
    ],
)
def test_every_name_a_lazy_package_exports_resolves(package: ModuleType) -> None:
    # The packages import their heavier modules on first use (`_LAZY`): every name of `__all__`
    # must resolve, from the module that `_LAZY` names.
    names: list[str] = vars(package)["__all__"]
    lazy: dict[str, str] = vars(package)["_LAZY"]
    for name in names:
        value = getattr(package, name)
        assert value is not None
        if name in lazy:
            assert getattr(sys.modules[lazy[name]], name) is value
    assert set(lazy) <= set(names)
