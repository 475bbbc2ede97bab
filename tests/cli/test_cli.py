"""The CLI verbs call the same service code and exit with the error's exit code (issue 2 §11).

Verbs run in process (`tests/support/cli.py`); `test_the_console_script_runs_as_a_process` is the
one smoke test of the installed `mcp-center` script, and `auth`'s wait for a browser login runs as a
real process because the test reads its URL line while it still runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.errors import CenterError
from mcp_center.service import McpCenter
from tests.support.cli import CLI, CliResult, ready_with_cli, run_cli, run_cli_process
from tests.support.fakes.oauth import FakeAuthorizationServer, FakeProtectedResource
from tests.support.loopback import NO_TLS, serve_loopback
from tests.support.ports import closed_port_url, free_port


def run(data_dir: Path, *args: str, stdin: str | None = None) -> CliResult:
    return run_cli(data_dir, *args, input=stdin)


def test_add_trust_test_enable_call_list_show_delete(tmp_path: Path, echo_url: str) -> None:
    data = tmp_path / "data"
    added = run(data, "add", "Echo", "--url", echo_url)
    assert added.returncode == 0, added.stderr
    assert "added echo" in added.stdout
    trusted = run(data, "trust", "echo", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert "sha256:" in trusted.stdout
    tested = run(data, "test", "echo")
    assert tested.returncode == 0, tested.stderr
    assert "4 tools" in tested.stdout
    enabled = run(data, "enable", "echo")
    assert enabled.returncode == 0, enabled.stderr
    called = run(data, "call", "echo", "add", "--args", '{"a": 40, "b": 2}')
    assert called.returncode == 0, called.stderr
    assert called.stdout.splitlines()[0] == "42"
    # A required argument left out is named from the tool's inputSchema, not the server's validator text.
    bare = run(data, "call", "echo", "add")
    assert (bare.returncode, bare.stderr.splitlines()[0]) == (
        2,
        "error [REQUEST_INVALID]: missing required arguments 'a', 'b' of tool 'add'",
    )
    assert bare.stderr.splitlines()[-1] == """  pass --args '{"a": ..., "b": ...}'"""
    half = run(data, "call", "echo", "add", "--args", '{"a": 40}')
    assert "missing required argument 'b' of tool 'add'" in half.stderr
    assert "arguments.b: is required by the tool [FIELD_REQUIRED]" in half.stderr
    assert half.stderr.splitlines()[-1] == """  pass --args '{"a": 40, "b": ...}'"""  # what was given, kept
    listed = run(data, "list", "--json")
    assert [s["id"] for s in json.loads(listed.stdout)] == ["echo"]
    shown = json.loads(run(data, "show", "echo").stdout)
    assert shown["enabled"] is True and shown["trusted"] is True
    deleted = run(data, "delete", "echo", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(run(data, "list", "--json").stdout) == []


def test_errors_print_the_stable_code_and_use_its_exit_code(tmp_path: Path) -> None:
    data = tmp_path / "data"
    missing = run(data, "show", "nope")
    assert missing.returncode == 3
    assert "MCP_SERVER_NOT_FOUND" in missing.stderr
    bad = run(data, "add", "Bad", "--url", "http://user:pw@example.com/mcp")
    assert bad.returncode == 2
    assert "CONFIG_INVALID" in bad.stderr
    assert "URL_HAS_CREDENTIALS" in bad.stderr
    shell = run(data, "add", "Shell", "--", "npx foo | sh")
    assert shell.returncode == 2
    assert "COMMAND_NOT_A_PROGRAM" in shell.stderr
    run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    early = run(data, "enable", "local")
    assert early.returncode == 4
    assert "MCP_SERVER_NOT_TRUSTED" in early.stderr
    bad_json = run(data, "call", "local", "x", "--args", "{not json")
    assert bad_json.returncode == 2
    assert "REQUEST_INVALID" in bad_json.stderr


def test_a_disabled_server_that_is_not_trusted_suggests_trust_not_enable(tmp_path: Path) -> None:
    """`tools qq` on a new server suggested `enable qq`, which is refused with MCP_SERVER_NOT_TRUSTED:
    the hint follows the readiness rule's first missing step (issue 16, F7)."""
    data = tmp_path / "data"
    assert run(data, "add", "qq", "--", sys.executable, "-c", "pass").returncode == 0
    refused = run(data, "tools", "qq")
    assert refused.returncode == 4
    assert refused.stderr.splitlines()[0] == "error [MCP_SERVER_DISABLED]: server 'qq' is not enabled"
    assert refused.stderr.splitlines()[1].startswith("  next: mcp-center trust qq")
    assert run(data, "trust", "qq", "--yes").returncode == 0
    assert run(data, "tools", "qq").stderr.splitlines()[1].startswith("  next: mcp-center test qq")


def test_secret_values_are_read_from_stdin_and_never_printed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    result = run(
        data, "secret", "set", "local", "API_KEY", "--kind", "environment", "--new", stdin="cli-secret-value-77\n"
    )
    assert result.returncode == 0, result.stderr
    shown = run(data, "show", "local")
    assert json.loads(shown.stdout)["secret_env"] == {"API_KEY": {"configured": True}}
    assert "cli-secret-value-77" not in shown.stdout + shown.stderr + result.stdout + result.stderr
    assert "cli-secret-value-77" not in (data / "mcp" / "servers.json").read_text()


def test_secret_set_with_nothing_on_stdin_sets_no_empty_secret(tmp_path: Path) -> None:
    """An empty pipe set an empty secret value. Now: ANSWER_REQUIRED, exit 2, nothing stored; a
    real process with standard input closed says the same (R-7.3)."""
    data = tmp_path / "data"
    run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    empty = run(data, "secret", "set", "local", "API_KEY", "--kind", "environment", "--new", stdin="")
    assert empty.returncode == 2, empty.stdout
    assert empty.stderr.startswith("error [ANSWER_REQUIRED]: no value (standard input is closed or empty)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    closed = subprocess.run(
        ["sh", "-c", 'exec "$0" secret set local API_KEY --kind environment --new --data-dir "$1" <&-', CLI, str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    # The same line; the suggested command carries the --data-dir this run was given (issue 16).
    assert (closed.returncode, closed.stderr.splitlines()[0]) == (
        2,
        f"{empty.stderr.splitlines()[0]} --data-dir {data}",
    )
    shown = json.loads(run(data, "show", "local").stdout)
    assert shown["secret_env"] == {}, shown


def test_a_server_that_dies_after_initialize_shows_its_exit_code_and_last_stderr_lines(tmp_path: Path) -> None:
    """`mcp-center test` of a server that crashed at its first request mostly said only "the
    connection closed during tools/list": its stdout closed before its exit was reaped, so neither
    the exit status nor its last stderr lines were in the error. Three runs (the race lost about
    three in four). The stderr line's ESC is shown as a control picture, never sent (R-3.1, R-7.3)."""
    data = tmp_path / "data"
    server = Path(__file__).parents[1] / "servers" / "exit_after_initialize.py"
    assert run(data, "add", "Dies", "--", sys.executable, str(server), "9").returncode == 0
    assert run(data, "trust", "dies", "--yes").returncode == 0
    for _ in range(3):
        tested = run(data, "test", "dies")
        assert tested.returncode == 1, tested.stdout
        said, first, *tail = tested.stderr.splitlines()
        assert said == "testing dies: starting it (a first start may download packages)..."  # trialfix36
        assert first.startswith(
            "failed [MCP_SERVER_UNREACHABLE]: the server process exited with code 9 during tools/list; "
            "its error output:"
        ), tested.stderr
        assert tail == ["  server stderr:", "    starting", "    fatal: \u241b[31mdatabase locked"], tested.stderr
        assert "\x1b" not in tested.stderr


def test_production_profile_refuses_stdio_servers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "add", "Local", "--", sys.executable, "-c", "pass")
    run(data, "trust", "local", "--yes")
    refused = run(data, "test", "local", "--profile", "production")
    assert refused.returncode == 5
    assert "MCP_SANDBOX_REQUIRED" in refused.stderr


def test_a_prompt_without_an_answer_says_nothing_changed_and_names_yes(tmp_path: Path) -> None:
    """A script or CI (stdin at its end) got click's bare "Aborted.", a closed stdin a traceback, and
    an answer read from a pipe left the next line glued to the prompt. Now: one error line ending in
    a newline, CONFIRMATION_REQUIRED, exit 2, naming --yes; the prompt's line always ends (faces: CLI)."""
    data = tmp_path / "data"
    expected = (
        "error [CONFIRMATION_REQUIRED]: no answer (standard input is closed or was interrupted): "
        "nothing changed; pass --yes to confirm without asking\n"
    )
    assert run(data, "add", "Local", "--", sys.executable, "-c", "pass").returncode == 0
    for verb in ("trust", "delete"):
        unanswered = run(data, verb, "local", stdin="")
        assert unanswered.returncode == 2, unanswered.stdout
        assert unanswered.stderr.endswith(expected), unanswered.stderr
        assert "Aborted" not in unanswered.stderr
    # A real process with its standard input closed (`<&-`: what no in-process run can give, issue 16);
    # standard input at its end is the in-process `stdin=""` above.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" trust local --data-dir "$1" <&-', CLI, str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (2, expected), done.stderr
    assert done.stdout.endswith("\n"), done.stdout
    [server] = json.loads(run(data, "list", "--json").stdout)
    assert server["trusted"] is False  # neither the trust nor the delete happened
    # A real pipe: the answer is not echoed (CliRunner echoes it); the process forked by the fork server.
    declined = run_cli_process("trust", "local", "--data-dir", str(data), input=b"\n", env=env)
    assert declined.returncode == 1
    assert declined.stdout.endswith("[y/N]: \n"), declined.stdout  # the prompt's line ends (not echoed)
    assert declined.stderr == "not trusted; nothing changed\n"
    answered = run(data, "trust", "local", stdin="y\n")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(run(data, "list", "--json").stdout)[0]["trusted"] is True


def test_list_prints_names_with_brackets_as_text_not_markup(tmp_path: Path) -> None:
    """A display name may hold '[/]' (R-1.1 allows printable text); rich must not parse it as markup."""
    data = tmp_path / "data"
    assert run(data, "add", "[/] [bold]x", "--id", "brackets", "--", sys.executable, "-c", "pass").returncode == 0
    listed = run(data, "list")
    assert listed.returncode == 0, listed.stderr
    assert "[/] [bold]x" in listed.stdout


def test_a_servers_own_text_with_rich_markup_is_printed_as_written(tmp_path: Path) -> None:
    """The server's name and version are untrusted text (R-5.4): `test` prints them as written. A
    closing tag that opens nothing used to end the command in a MarkupError traceback, and the
    server's escape sequences reached the terminal."""
    data = tmp_path / "data"
    hostile = Path(__file__).parents[1] / "servers" / "xss_stdio.py"
    assert run(data, "add", "Hostile", "--id", "hostile", "--", sys.executable, str(hostile)).returncode == 0
    assert run(data, "trust", "hostile", "--yes").returncode == 0
    tested = run(data, "test", "hostile")
    assert tested.returncode == 0, tested.stderr
    assert tested.stdout.startswith("ok: ")
    assert "[/red][link=https://evil.example]x[/link]" in tested.stdout
    # Piped, rich adds no escape sequences of its own: any ESC would be the server's. Each is shown as ␛.
    assert "\x1b" not in tested.stdout and "\u202e" not in tested.stdout
    assert "␛]0;pwned␛[2J\ufffdgnp.exe" in tested.stdout  # a right-to-left override shown, not obeyed


def test_list_shows_a_long_command_whole(tmp_path: Path) -> None:
    """A cut command could look like a real, different one: the target column wraps instead."""
    data = tmp_path / "data"
    args = ["--isolated", "--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
    assert run(data, "add", "Clock", "--", "uvx", *args).returncode == 0
    listed = run(data, "list")
    assert listed.returncode == 0, listed.stderr
    assert " ".join(["uvx", *args]) in " ".join(listed.stdout.split())


# ----- mcp-center auth (R-4.9) ------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


CLI_ADMIN_TOKEN = "cli-auth-admin-token-0123456789abcdef"


def _cli_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env.update(COLUMNS="200", MCP_CENTER_DATA_DIR=str(data), MCP_CENTER_ADMIN_TOKEN=CLI_ADMIN_TOKEN)
    return env


@asynccontextmanager
async def _oauth_host(data: Path) -> AsyncGenerator[tuple[McpCenter, str, FakeAuthorizationServer]]:
    """A host API on a loopback port (its callback is http://127.0.0.1:<port>) with one trusted OAuth
    server `o` behind a fake protected resource and authorization server: (center, host URL, AS)."""
    port = free_port()
    settings = Settings.load(data_dir=data, port=port, environ={})
    app = create_api(settings, CLI_ADMIN_TOKEN)
    authorization = FakeAuthorizationServer()
    resource = FakeProtectedResource([authorization], challenge_scope="mcp:read")
    async with (
        McpCenter.open(settings) as center,
        serve_loopback(authorization.app) as as_base,
        serve_loopback(resource.app) as rs_base,
        serve_loopback(app, port=port) as host,
    ):
        app.state.center = center
        authorization.base_url, resource.base_url = as_base, rs_base
        view = (
            await center.create_server(
                {"id": "o", "name": "O", "transport": "streamable_http", "url": resource.url, "auth": {"kind": "oauth"}}
            )
        ).to_dict()
        await center.trust("o", view["digest"])
        yield center, host, authorization


@pytest.mark.anyio
async def test_auth_prints_issuer_scopes_and_url_then_waits_for_the_browser_login(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with _oauth_host(data) as (_center, host, authorization):
        with anyio.fail_after(30):
            async with await anyio.open_process(
                [CLI, "auth", "o", "--url", host, "--timeout", "20"], env=_cli_env(data), stderr=None
            ) as process:
                assert process.stdout is not None
                lines: list[str] = []
                buffer = b""
                url = ""
                async for chunk in process.stdout:
                    buffer += chunk
                    *complete, buffer = buffer.split(b"\n")
                    lines += [line.decode() for line in complete]
                    url = next((line.strip() for line in lines if line.strip().startswith("http")), "")
                    if url:
                        break
                async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
                    redirect = await browser.get(url)
                    landed = await browser.get(redirect.headers["location"])
                async for chunk in process.stdout:
                    buffer += chunk
                await process.wait()
        lines += buffer.decode().splitlines()
    assert landed.status_code == 200, landed.text
    assert process.returncode == 0, lines
    assert f"authorization server (issuer): {authorization.issuer}" in lines
    assert "scopes: mcp:read" in lines
    assert any(line.startswith("authorized by") for line in lines), lines


@pytest.mark.anyio
async def test_auth_paste_takes_the_redirected_url_and_without_an_answer_changes_nothing(tmp_path: Path) -> None:
    """`auth --paste` (a browser that cannot reach this host): with standard input at its end it says
    ANSWER_REQUIRED in one line (click printed a bare "Aborted."), exit 2, the server stays
    unauthorized; with the URL the browser was sent to on standard input it completes (R-4.9, R-7.3)."""
    data = tmp_path / "data"
    async with _oauth_host(data) as (center, host, authorization):
        command = ("auth", "o", "--url", host, "--paste")

        async def paste(answer: bytes) -> CliResult:
            """A real process (forked by the fork server) with `answer` on a pipe as its standard input."""
            return await anyio.to_thread.run_sync(lambda: run_cli_process(*command, env=_cli_env(data), input=answer))

        with anyio.fail_after(60):
            unanswered = await paste(b"")
            not_text = await paste(b"\xff\xfe http\x80\n")
            out = unanswered.stdout
            url = next(line.strip() for line in out.splitlines() if line.strip().startswith("http"))
            async with httpx2.AsyncClient(verify=NO_TLS, trust_env=False) as browser:
                redirected = (await browser.get(url)).headers["location"]
            pasted = await paste(f"{redirected}\n".encode())
        authorized = (await center.get_server("o")).to_dict()
    assert unanswered.returncode == 2, (out, unanswered.stderr)
    assert "Aborted" not in out + unanswered.stderr
    assert unanswered.stderr.startswith("error [ANSWER_REQUIRED]: no answer"), unanswered.stderr
    assert "without --paste" in unanswered.stderr
    # bytes that are not UTF-8 (a traceback before: the URL could not be sent as JSON)
    assert (not_text.returncode, not_text.stderr.splitlines()) == (
        2,
        [
            "error [REQUEST_INVALID]: the answer is not UTF-8 text: nothing changed",
            "  - answer: is not UTF-8 text [TEXT_INVALID]",
        ],
    ), not_text.stderr
    assert pasted.returncode == 0, (pasted.stdout, pasted.stderr)
    assert "authorized by " + authorization.issuer in pasted.stdout
    assert authorized["oauth"]["authorized"] is True, authorized["oauth"]


def test_auth_without_a_running_host_says_so(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with closed_port_url() as url:  # bound, not listening: refused, and no other test can take the port
        result = run_cli(
            data, "auth", "o", "--url", url.removesuffix("/mcp"), env={"MCP_CENTER_ADMIN_TOKEN": CLI_ADMIN_TOKEN}
        )
    assert result.returncode == 7, result.stderr
    assert "MCP_SERVER_UNREACHABLE" in result.stderr
    assert "mcp-center serve" in result.stderr


def test_help_texts_speak_to_users_not_to_the_spec() -> None:
    """Requirement numbers belong to docstrings and tests; `--help` of every command is free of them."""
    import typer.main

    from mcp_center.cli import app

    group = typer.main.get_command(app)
    pending: list[tuple[str, Any]] = [("mcp-center", group)]
    seen: list[str] = []
    while pending:
        path, command = pending.pop()
        seen.append(path)
        # Click shows a docstring up to its form feed: what follows is for developers.
        text = " ".join(filter(None, [(command.help or "").split("\f")[0], command.short_help]))
        for param in command.params:
            text += " " + (getattr(param, "help", None) or "")
        assert not re.search(r"\bR-\d", text), (path, text)
        for name, sub in getattr(command, "commands", {}).items():
            pending.append((f"{path} {name}", sub))
    assert "mcp-center approvals list" in seen and "mcp-center prompts" in seen


def test_version_is_an_option_and_a_command(tmp_path: Path) -> None:
    from mcp_center import __version__

    assert run(tmp_path, "--version").stdout.strip() == __version__
    assert run(tmp_path, "version").stdout.strip() == __version__


def test_the_console_script_runs_as_a_process(tmp_path: Path) -> None:
    """The one smoke test of the installed `mcp-center` script as a real process (the entry point,
    its exit code and streams); every other verb is driven in process."""
    from mcp_center import __version__

    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    env["MCP_CENTER_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run([CLI, "--version"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, __version__), done.stderr
    missing = subprocess.run([CLI, "show", "nope"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert missing.returncode == 3, missing.stderr
    assert "MCP_SERVER_NOT_FOUND" in missing.stderr


@pytest.mark.anyio
async def test_auth_raises_the_hosts_refusal_with_its_code_and_status(tmp_path: Path) -> None:
    """The host's error envelope comes back as `HostRequestFailed` from errors.py (R-7.3), its code kept."""
    from mcp_center.cli.oauth import AuthReport, authorize
    from mcp_center.errors import CenterError, HostRequestFailed

    settings = Settings(data_dir=tmp_path / "data", admin_token=CLI_ADMIN_TOKEN)
    app = create_api(settings, CLI_ADMIN_TOKEN)
    said: list[str] = []
    async with McpCenter.open(settings) as center, serve_loopback(app) as host:
        app.state.center = center
        report = AuthReport(said.append, lambda _prompt: "")
        with pytest.raises(HostRequestFailed) as raised:
            await anyio.to_thread.run_sync(lambda: authorize(settings, "nope", report, base_url=host, wait=False))
    assert isinstance(raised.value, CenterError)
    assert (raised.value.api_code, raised.value.status) == ("MCP_SERVER_NOT_FOUND", 404)
    assert raised.value.code == "HOST_REQUEST_FAILED"
    assert "nope" in raised.value.message


@pytest.mark.parametrize(
    ("variable", "value", "field"),
    [
        ("MCP_CENTER_PORT", "eighty", "port"),
        ("MCP_CENTER_PROFILE", "staging", "profile"),
        ("MCP_CENTER_APPROVAL_TIMEOUT_S", "-5", "approval_timeout_s"),
        ("MCP_CENTER_DATABASE_URL", "mysql://u:hunter2-secret@db/x", "database_url"),
    ],
)
@pytest.mark.parametrize("verb", [["list"], ["show", "nope"], ["gateway", "token", "list"]])
def test_a_bad_setting_in_the_environment_is_one_error_line_naming_it_not_a_traceback(
    tmp_path: Path, variable: str, value: str, field: str, verb: list[str]
) -> None:
    """R-7.3: every verb reads its settings through one door that prints the error and its field.

    The value of a setting that may hold a secret (a database password) is never printed."""
    result = run_cli(tmp_path / "data", *verb, env={variable: value})
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    # One code, once (fix39: it printed `error [REQUEST_INVALID]: ... [SETTING_INVALID]`), naming the variable.
    assert result.stderr.splitlines() == [result.stderr.splitlines()[0]], result.stderr
    assert result.stderr.startswith(f"error [SETTING_INVALID]: {field}: {variable}"), result.stderr
    assert result.stderr.count("SETTING_INVALID") == 1 and "REQUEST_INVALID" not in result.stderr
    assert "hunter2" not in result.stderr + result.stdout
    assert not (tmp_path / "data").exists()


def test_a_bad_secret_key_is_named_when_a_secret_is_stored_and_its_value_is_never_printed(tmp_path: Path) -> None:
    """R-1.5: the key is checked where it is used (storing a secret), as one error line."""
    result = run_cli(
        tmp_path / "data",
        *["add", "x", "http://127.0.0.1:9/mcp", "-H", "Authorization: Bearer abc"],
        env={"MCP_CENTER_SECRET_KEY": "hunter2-secret-not-a-key"},
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "[SECRET_STORE_ERROR]" in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


def test_help_paragraphs_are_wrapped_by_the_terminal_not_by_the_docstring() -> None:
    """`import --help` printed the docstring's 100-column line breaks inside a wider terminal."""
    from mcp_center.cli import reflow_help

    shown = run_cli(None, "import", "--help", columns=200)
    assert shown.returncode == 0, shown.stderr
    assert "asks for each variable's value (hidden for secrets; a file default is used only if you accept it)" in (
        shown.stdout
    )
    doc = "First line.\n\n    Two\n    lines.\n\n    Example:\n        keep  this\n    \f\n    hidden\n    part"
    assert reflow_help(doc) == "First line.\n\nTwo lines.\n\nExample:\n    keep  this\n\f\nhidden\npart"


def test_every_help_shows_flags_without_a_value_placeholder() -> None:
    """typer's help printed `--yes <bool>`, `--help <bool>` as if a flag took a value; every command's
    `--help` shows a flag alone (`--yes`, `--wait  --no-wait`) and a valued option with its type."""
    import typer.main

    from mcp_center.cli import app

    pending: list[tuple[list[str], Any]] = [([], typer.main.get_command(app))]
    flags_seen = 0
    while pending:
        path, command = pending.pop()
        shown = run_cli(None, *path, "--help", columns=200)
        assert shown.returncode == 0, (path, shown.stderr)
        assert "<bool>" not in shown.stdout, (path, shown.stdout)
        # An option's row: `│ [*] --name [-n] [--no-name] [<type>]  help` (`*`: required).
        lines = [line.removeprefix("│").lstrip(" *") for line in shown.stdout.splitlines()]
        rows = {line.split()[0]: line for line in lines if line.startswith("--")}
        for param in command.params:
            if param.param_type_name != "option" or param.hidden:
                continue
            row = rows[param.opts[0]]
            has_type = re.match(r"--\S+(?:\s+-\w)?(?:\s+--no-\S+)?\s+<", row) is not None
            assert has_type == (not param.is_flag), (path, row)
            flags_seen += param.is_flag
        assert not re.match(r"--help\s+<", rows["--help"]), (path, rows["--help"])
        for name, sub in getattr(command, "commands", {}).items():
            pending.append(([*path, name], sub))
    assert flags_seen >= 10


def test_an_error_echoing_a_bad_id_shows_control_characters_escaped_and_a_huge_one_clipped(tmp_path: Path) -> None:
    """`mcp-center show $'x\\x1b[31m'` wrote the ESC sequence to the terminal inside the error line."""
    hostile = run(tmp_path, "show", "ab\x01c\x1b[31mX\nfake line")
    assert hostile.returncode == 3
    first = hostile.stderr.splitlines()[0]
    assert first == "error [MCP_SERVER_NOT_FOUND]: no server with id 'ab\\x01c\\x1b[31mX\\x0afake line'"
    assert not any(ch in hostile.stderr for ch in "\x01\x1b")
    huge = run(tmp_path, "show", "a" * 5000)
    assert huge.returncode == 3
    line = huge.stderr.splitlines()[0]
    # Clipped in the middle: the message's end (here the closing quote; in a timeout, the log
    # command to run) is always printed (fix39).
    assert len(line) < 1100 and re.search(r"a\.\.\. \(\d+ more characters\) \.\.\.a+", line), line
    assert line.endswith("(5020 characters)"), line  # the error's own clip of the echoed id, kept


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["import", ""], "error [ARGUMENT_MISSING]: mcp-center import needs FILE (it was given empty); usage: "),
        (
            ["import", "x.json", "--format", "cursr"],
            "error [OPTION_VALUE_INVALID]: option '--format' of mcp-center import must be one of: auto,",
        ),
        (["serve", "--port", "99999"], "error [OPTION_VALUE_INVALID]: option '--port' of mcp-center serve must be"),
        (["migrate", "--to", ""], "error [REQUEST_INVALID]: --to: give the target: postgresql://"),
    ],
)
def test_bad_file_format_and_target_arguments_are_refused_with_a_code(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """`import ''` said "cannot read : Is a directory", and `migrate --to ''` tried libpq's default
    database; each is one `error [CODE]` line first, exit 2. (A file that does not exist has its own
    code, IMPORT_FILE_NOT_FOUND, exit 3: tests/cli/test_messages_name_their_subject.py.)"""
    result = run(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(says), result.stderr


@pytest.mark.parametrize(
    "args", [["list"], ["show", "x"], ["gateway", "token", "list"], ["serve", "--port", "0"], ["import", "-"]]
)
def test_a_data_directory_that_is_a_file_is_refused_with_a_code_not_a_traceback(
    tmp_path: Path, args: list[str]
) -> None:
    """`--data-dir` (or MCP_CENTER_DATA_DIR) naming a file failed in a mkdir with a traceback."""
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    result = run_cli(a_file, *args, input="{}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error [SETTING_INVALID]: data_dir: {a_file} is not a directory"), result.stderr


def test_an_unknown_log_level_is_refused_before_serve_starts(tmp_path: Path) -> None:
    """`serve --log-level loud` ended in logging's ValueError traceback."""
    result = run(tmp_path, "serve", "--port", "0", "--log-level", "loud")
    assert result.returncode == 2
    assert result.stderr.startswith(
        "error [OPTION_VALUE_INVALID]: option '--log-level' of mcp-center serve must be one of: "
        "debug, info, warning, error"
    )
    assert not (tmp_path / "serve.json").exists()


def test_a_negative_memory_limit_is_refused_not_taken_as_no_limit(tmp_path: Path) -> None:
    """`add --memory-mb -5` stored a sandbox without a memory limit; only 0 means none (R-11.1)."""
    refused = run(tmp_path, "add", "Local", "--memory-mb", "-5", "--", sys.executable, "-c", "pass")
    assert refused.returncode == 2
    assert refused.stderr.startswith("error [CONFIG_INVALID]: sandbox.memory_mb:"), refused.stderr
    assert run(tmp_path, "show", "local").returncode == 3  # nothing was added


def _error_classes() -> list[type[CenterError]]:
    found: list[type[CenterError]] = []
    level: list[type[CenterError]] = [CenterError]
    while level:
        found += level
        level = [sub for family in level for sub in family.__subclasses__()]
    return found


def test_the_readme_exit_code_table_is_the_error_trees_and_a_usage_error_exits_2(tmp_path: Path) -> None:
    """Exit 2 meant both "cannot parse the command line" and "this value is refused", undocumented
    (issue 16). Both stay 2 (the README and scripts rely on CONFIRMATION_REQUIRED's 2, click on
    usage's 2) and the exit-code table (docs/errors.md, once README's) says so: every code it names
    exits as its row says, and every exit code of the tree has a row (R-7.3)."""
    table = (Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", table, re.MULTILINE)
    by_code = {cls.code: cls.exit_code for cls in _error_classes() if "code" in vars(cls)}  # not the bare families
    named = {code: int(exit) for exit, text in rows for code in re.findall(r"`([A-Z_]+)`", text)}
    assert named and {code: by_code.get(code) for code in named} == named
    assert {cls.exit_code for cls in _error_classes()} <= {int(exit) for exit, _ in rows}
    usage = run(tmp_path / "data", "list", "--no-such-option")
    assert usage.returncode == 2 and "error [OPTION_UNKNOWN]: no option '--no-such-option'" in usage.stderr
    missing = run(tmp_path / "data", "show")  # a missing argument: our code and the usage line, exit 2
    assert missing.returncode == 2 and "error [ARGUMENT_MISSING]: mcp-center show needs SERVER_ID" in missing.stderr


def test_policy_sets_a_tools_approval_and_says_the_server_must_be_confirmed_again(
    tmp_path: Path, echo_url: str
) -> None:
    """`mcp-center policy ID TOOL ask|allow|deny`: there was no CLI for it (REST only; a new-user
    trial). A policy is part of the connection summary: an enabled server is disabled until it is
    trusted, tested and enabled again, and the CLI says so (R-5.3, R-1.4, issue 16)."""
    data = tmp_path / "data"
    assert run(data, "add", "Echo", "--url", echo_url).returncode == 0
    ready_with_cli(data, "echo")
    allowed = run(data, "policy", "echo", "add", "allow")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.splitlines() == [
        "add of echo: allow",
        "server 'echo' was disabled: its tool policy changed, which touched something security-relevant; "
        "confirm the new summary, then test and enable again: mcp-center trust echo, then mcp-center test echo "
        "and mcp-center enable echo",
    ]
    shown = json.loads(run(data, "show", "echo").stdout)
    assert (shown["tool_policies"], shown["enabled"], shown["trusted"]) == ({"add": "allow"}, False, False)
    assert run(data, "trust", "echo", "--yes").returncode == 0
    denied = run(data, "policy", "echo", "echo", "deny")
    assert denied.returncode == 0, denied.stderr
    assert denied.stdout.splitlines()[1].startswith("its trust was cleared: the tool policies are part of")
    asked = run(data, "policy", "echo", "add", "ask")  # the default: the entry goes
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.splitlines() == ["add of echo: ask"]  # trust was already cleared: nothing more to say
    assert json.loads(run(data, "show", "echo").stdout)["tool_policies"] == {"echo": "deny"}
    refused = run(data, "policy", "echo", "add", "always")
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr.startswith("error [REQUEST_INVALID]: policy: must be ask, allow or deny")
    assert json.loads(run(data, "show", "echo").stdout)["tool_policies"] == {"echo": "deny"}  # nothing changed
    unknown = run(data, "policy", "nope", "add", "allow")
    assert unknown.returncode != 0 and "MCP_SERVER_NOT_FOUND" in unknown.stderr
