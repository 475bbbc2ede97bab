"""`mcp-center call` beside the serve of its data directory is that serve's REST call (call40, R-9.2):
in-process it started a copy of the server of its own beside the serve's live session (trial40:
11.4 s wall, 6.5 s of CPU; 0.15 s through REST). Results, refusals, codes and exit codes are those
of the in-process call; Ctrl-C cancels the call on the serve; a serve that hangs or goes away
mid-call is MCP_SERVER_UNREACHABLE (exit 7) and the call is never run again in the CLI's process.

Each start of the stdio server appends its parent's pid to a marker file: every start must be the serve's.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import typer

from mcp_center.cli._served_call import CALL_MARGIN_S
from tests.support.cli import CLI, CliResult, run_cli
from tests.support.loopback import NO_TLS
from tests.support.readiness import add_ready_on_host
from tests.support.serve import ADMIN_TOKEN, Host, serve_env, spawn_serve, wait_until_serving


def run(data_dir: Path, *args: str) -> CliResult:
    """The CLI as a user beside the serve runs it (that serve's admin token in the environment)."""
    return run_cli(data_dir, *args, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})


def starts(marker: Path) -> list[int]:
    """The parent pid of each start of the marked server so far (the process that started it)."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def echo_body(marker: Path, **more: Any) -> dict[str, Any]:
    """`tests/servers/echo_stdio.py` (`echo`, `big`, `crash`, `spawn_grandchild`) behind a shell that
    appends its parent's pid to `marker`."""
    script = f"echo $PPID >> {shlex.quote(str(marker))}; exec {shlex.quote(sys.executable)} -m tests.servers.echo_stdio"
    return {"name": "Echo", "transport": "stdio", "command": "sh", "args": ["-c", script], **more}


@contextmanager
def cli_process(data_dir: Path, *args: str) -> Generator[subprocess.Popen[str]]:
    """The real `mcp-center` (signals reach it as a user's Ctrl-C would), killed if still running at the end."""
    proc = subprocess.Popen(
        [CLI, *args, "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=serve_env(),
        cwd=Path(__file__).parents[2],
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=20)


def stderr_line_with(proc: subprocess.Popen[str], words: str, timeout_s: float = 60.0) -> str:
    """The first line of `proc`'s stderr that contains `words`, read as it comes (bounded wait)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stderr.readline()
        if not line:
            break
        if words in line:
            return line
    raise AssertionError(f"no stderr line with {words!r} within {timeout_s} s")


def pending_cards(host: Host) -> list[dict[str, Any]]:
    answer: dict[str, Any] = host.client.get("/api/interactions", params={"state": "pending"}).json()
    return answer["interactions"]


def test_a_call_beside_a_serve_runs_in_its_session_with_the_in_process_results_and_refusals(
    shared_serve: Host, tmp_path: Path
) -> None:
    host, data = shared_serve, shared_serve.data_dir
    marker = tmp_path / "starts"
    body = echo_body(marker, disabled_tools=["spawn_grandchild"], tool_policies={"crash": "deny"})
    add_ready_on_host(host, body)
    assert starts(marker) == [host.proc.pid] * 2  # its test and its enable

    called = run(data, "call", "echo", "echo", "--args", '{"text": "hi"}')
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    big = run(data, "call", "echo", "big", "--args", '{"kib": 1024}')  # bounded by the serve as in-process
    over_rest = host.client.post("/api/mcp/servers/echo/tools/big/call", json={"arguments": {"kib": 1024}}).json()
    printed = "".join(f"{block['text']}\n" for block in over_rest["content"])  # each text block, then its note
    assert (big.returncode, big.stdout) == (0, printed), big.stderr[-500:]
    assert len(big.stdout) > 64 * 1024
    assert "[truncated by mcp-center: " in big.stdout

    tool_error = run(data, "call", "echo", "big", "--args", '{"kib": "lots"}')  # the server's isError result
    assert tool_error.returncode == 1, tool_error.stderr
    assert "kib" in tool_error.stdout
    assert tool_error.stderr == ""

    missing = run(data, "call", "echo", "echo")
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        "error [REQUEST_INVALID]: missing required argument 'text' of tool 'echo'",
        "  - arguments.text: is required by the tool [FIELD_REQUIRED]",
        """  pass --args '{"text": ...}'""",
    ]
    given = run(data, "call", "echo", "echo", "--args", '{"x": [1]}')  # trialfix36: what was given, kept
    assert (given.returncode, given.stderr.splitlines()[-1]) == (2, """  pass --args '{"x": [1], "text": ...}'""")
    not_object = run(data, "call", "echo", "echo", "--args", "[1]")
    assert not_object.returncode == 2
    assert not_object.stderr == "error [REQUEST_INVALID]: arguments: must be a JSON object [FIELD_INVALID]\n"

    denied = run(data, "call", "echo", "crash", "--args", '{"code": 3}')
    assert denied.returncode == 5
    assert denied.stderr.startswith("error [MCP_TOOL_DENIED]: the policy of tool 'crash' of server 'echo' is deny")
    disabled = run(data, "call", "echo", "spawn_grandchild")
    assert disabled.returncode == 5
    assert disabled.stderr.startswith("error [MCP_TOOL_DISABLED]: tool 'spawn_grandchild' of server 'echo' is disabled")
    unknown = run(data, "call", "echo", "ech")
    assert unknown.returncode == 3
    assert unknown.stderr.splitlines()[:2] == [
        "error [MCP_TOOL_NOT_FOUND]: server 'echo' has no tool 'ech'",
        "  did you mean: echo?",
    ]
    assert f"looked in {data}" in unknown.stderr
    no_server = run(data, "call", "ecoh", "echo")
    assert no_server.returncode == 3
    assert no_server.stderr.splitlines()[:2] == [
        "error [MCP_SERVER_NOT_FOUND]: no server with id 'ecoh'",
        "  did you mean: echo?",
    ]

    assert starts(marker) == [host.proc.pid] * 2  # no call started a server of its own
    log = host.log()
    assert '"POST /api/mcp/servers/echo/tools/echo/call HTTP/1.1" 200' in log
    assert '"POST /api/mcp/servers/echo/tools/crash/call HTTP/1.1" 403' in log
    assert os.getpid() != host.proc.pid


@pytest.mark.own_serve  # it leaves an elicitation card: a serve of its own
def test_a_question_is_answered_on_the_serves_inbox_and_ctrl_c_cancels_the_call_there(
    shared_serve: Host, caps_url: str
) -> None:
    """In-process, a server's question was refused (no elicitation offered); beside a serve the call
    waits for the card, says where it is, and Ctrl-C cancels the call on the serve (R-3.8)."""
    host, data = shared_serve, shared_serve.data_dir
    add_ready_on_host(host, {"name": "Caps", "transport": "streamable_http", "url": caps_url})

    answered: list[CliResult] = []
    caller = threading.Thread(
        target=lambda: answered.append(run(data, "call", "caps", "ask", "--args", '{"question": "Deploy?"}'))
    )
    caller.start()
    try:
        deadline = time.monotonic() + 60
        while not (cards := pending_cards(host)) and time.monotonic() < deadline and caller.is_alive():
            time.sleep(0.1)  # polling the serve's state, not a synchronisation sleep
        assert cards, "no card appeared on the serve"
        reply = host.client.post(f"/api/interactions/{cards[0]['id']}", json={"action": "decline"})
        assert reply.status_code == 200, reply.text
    finally:
        caller.join(timeout=60)
    (result,) = answered
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("decline")

    with cli_process(data, "call", "caps", "ask", "--args", '{"question": "Again?"}') as proc:
        line = stderr_line_with(proc, "/inbox/")
        (card,) = pending_cards(host)
        assert f"/inbox/{card['id']}" in line
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 130, rest
    assert "interrupted: the serve was told to cancel the call" in rest and "may have done part or all" in rest
    assert pending_cards(host) == []
    log = host.log()
    assert '"POST /api/operations/' in log
    assert '"POST /api/mcp/servers/caps/tools/ask/call HTTP/1.1" 409' in log  # MCP_CALL_CANCELLED


@contextmanager
def killable_serve(tmp_path: Path) -> Generator[Host]:
    """A serve of its own that the test may stop (SIGSTOP) or kill (SIGKILL); killed at the end, its log unchecked."""
    data, log_path = tmp_path / "data", tmp_path / "serve.log"
    proc = spawn_serve(data, 0, log_path)
    try:
        url = wait_until_serving(data, 60, proc)
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        with httpx2.Client(verify=NO_TLS, base_url=url, headers=headers, timeout=60) as client:
            yield Host(url, proc, client, data, log_path)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(timeout=20)


def test_a_hung_serve_is_said_so_and_a_serve_gone_mid_call_is_not_called_again_here(
    tmp_path: Path, caps_url: str
) -> None:
    with killable_serve(tmp_path) as host:
        data = host.data_dir
        add_ready_on_host(host, {"name": "Caps", "transport": "streamable_http", "url": caps_url})
        os.kill(host.proc.pid, signal.SIGSTOP)
        try:
            hung = run(data, "call", "caps", "echo", "--args", '{"text": "x"}')
        finally:
            os.kill(host.proc.pid, signal.SIGCONT)
        assert hung.returncode == 7, hung.stderr
        assert hung.stderr.startswith("error [MCP_SERVER_UNREACHABLE]: ")
        assert "the call was not sent" in hung.stderr
        assert hung.stdout == ""

        with cli_process(data, "call", "caps", "ask", "--args", '{"question": "Still there?"}') as proc:
            stderr_line_with(proc, "/inbox/")  # the call waits on the serve for an answer
            host.proc.kill()
            out, rest = proc.communicate(timeout=30)
        assert proc.returncode == 7, rest
        assert rest.startswith("error [MCP_SERVER_UNREACHABLE]: ")
        assert "closed the connection before it answered" in rest
        assert out == ""


def test_a_result_prints_the_same_lines_from_the_serves_json_as_from_the_sdks_blocks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`print_call_result` reads the `CallToolResult` JSON both paths give (`ToolCallResult.to_dict()`
    in-process, the serve's answer beside one): one line per non-text block, as before call40."""
    import mcp_types as types

    from mcp_center.cli._served_call import call_wait_s, missing_example, print_call_result
    from mcp_center.errors import HostRequestFailed, RequestInvalid
    from mcp_center.service import ToolCallResult

    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="[bold]plain[/bold]"),
            types.ImageContent(type="image", data="QUJD" * 4, mime_type="image/png"),
            types.AudioContent(type="audio", data="QUJD", mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///b", text="bee")),
            types.EmbeddedResource(
                type="resource", resource=types.BlobResourceContents(uri="file:///c", blob="QUJD", mime_type="x/y")
            ),
        ],
        is_error=True,
    )
    with pytest.raises(typer.Exit) as ended:
        print_call_result(ToolCallResult(result).to_dict())
    assert ended.value.exit_code == 1  # isError
    assert capsys.readouterr().out.splitlines() == [
        "[bold]plain[/bold]",
        "[image image/png, about 12 bytes]",
        "[audio audio/wav, about 3 bytes]",
        "[resource link file:///a.txt]",
        "[resource file:///b]",
        "bee",
        "[resource file:///c]",
        "[binary x/y]",
    ]
    print_call_result({"content": [], "structuredContent": {"n": 1}})
    assert json.loads(capsys.readouterr().out) == {"n": 1}

    assert call_wait_s({"startup_timeout_s": 200, "call_timeout_s": 30.0}) == 200 + 30 + CALL_MARGIN_S
    assert call_wait_s(None) == 60 + 60 + CALL_MARGIN_S  # unknown: the defaults
    refusal = {"missing": ["a", "b"], "tool": "t"}
    assert missing_example(RequestInvalid("m", details=refusal)) == '{"a": ..., "b": ...}'
    assert missing_example(HostRequestFailed("REQUEST_INVALID", "m", refusal, 422)) == '{"a": ..., "b": ...}'
    assert missing_example(HostRequestFailed("MCP_TOOL_DENIED", "m", refusal, 403)) is None
    # What was given is kept (trialfix36: `--args '{"a":1}'` was told to pass `{"b": ...}`).
    half = {"missing": ["b"], "tool": "t"}
    assert missing_example(RequestInvalid("m", details=half), {"a": 1, "s": "x"}) == '{"a": 1, "s": "x", "b": ...}'


def test_a_tool_whose_name_holds_a_slash_is_called_beside_a_serve(shared_serve: Host, caps_url: str) -> None:
    """break41: the REST API's paths never carry a '/', so `call caps files/read` beside a serve was
    NOT_FOUND (exit 3) though `tools` listed the tool; such a call runs in the CLI's own process."""
    host, data = shared_serve, shared_serve.data_dir
    add_ready_on_host(host, {"id": "slashed", "name": "Slashed", "transport": "streamable_http", "url": caps_url})
    called = run(data, "call", "slashed", "files/read")
    assert called.returncode == 0, called.stderr
    assert "ran files/read" in called.stdout
