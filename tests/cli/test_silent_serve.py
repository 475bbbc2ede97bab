"""A serve that stops answering, dies or cannot be asked while `mcp-center call` (or another verb that
asks it) runs: said within seconds, in words that match what happened, and never a second run of the
tool, in the serve or in the CLI's own process (cli36, R-9.2, R-7.3).

- A serve stopped (SIGSTOP) after `call` sent its call: `call` was silent for the whole call wait
  (start-up + call timeout + 60 s: 180 s); now a look at the serve each second, within the 5 s every
  verb's look has, ends it: exit 7, "did not answer within 5 s", and the tool ran once.
- A serve that closed the connection and is exiting: its pid was named as running.
- No admin token here beside a live serve: the call ran in the CLI's process, a second copy of the
  server beside the serve's, without a word; now refused (exit 6) naming the token file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_center.cli._served_call import POLL_S
from mcp_center.cli._where import EXIT_SETTLE_S
from mcp_center.cli.host import ANSWER_TIMEOUT_S
from tests.cli.test_call_beside_serve import cli_process, echo_body, killable_serve, run, starts
from tests.support.cli import run_cli
from tests.support.mcp_servers import running_echo_http
from tests.support.readiness import add_ready_on_host
from tests.support.serve import ADMIN_TOKEN, Host
from tests.support.waiting import eventually_sync


@pytest.fixture
def ledger_url() -> Iterator[str]:
    """`tests/servers/run_ledger_http.py`: `pay(note)` writes a line to its ledger, then works 20 s."""
    with running_echo_http("tests.servers.run_ledger_http") as url:
        yield url


def ledger(host: Host) -> list[dict[str, str]]:
    """The ledger's lines so far, read through the serve's own session (`ledger()`)."""
    answer = host.client.post("/api/mcp/servers/ledger/tools/ledger/call", json={"arguments": {}})
    assert answer.status_code == 200, answer.text
    return json.loads(answer.json()["content"][0]["text"])


def test_a_serve_stopped_after_the_call_was_sent_is_said_so_within_seconds_and_the_tool_runs_once(
    tmp_path: Path, ledger_url: str
) -> None:
    with killable_serve(tmp_path) as host:
        add_ready_on_host(host, {"name": "Ledger", "transport": "streamable_http", "url": ledger_url})
        with cli_process(host.data_dir, "call", "ledger", "pay", "--args", '{"note": "once"}') as proc:
            eventually_sync(lambda: ledger(host), timeout_s=60)  # the call reached the server: it runs
            os.kill(host.proc.pid, signal.SIGSTOP)
            stopped = time.monotonic()
            try:
                out, rest = proc.communicate(timeout=60)  # before cli36: the whole 180 s call wait
            finally:
                os.kill(host.proc.pid, signal.SIGCONT)
            waited_s = time.monotonic() - stopped
        assert proc.returncode == 7, rest
        assert out == ""
        first = rest.splitlines()[0]
        assert first.startswith("error [MCP_SERVER_UNREACHABLE]: "), rest
        assert f"did not answer within {ANSWER_TIMEOUT_S:g} s: it may be busy, or hung or stopped" in first
        assert "the call was sent and may have run there" in first and "not called again here" in first
        assert "Run this command again" not in first  # a call that may have run is not advised again
        assert waited_s < POLL_S + 2 * ANSWER_TIMEOUT_S + 5, waited_s
        assert [line["note"] for line in ledger(host)] == ["once"]  # once, in the serve's session only


OWNER_THAT_DROPS = textwrap.dedent(
    """
    import os, socket, sys, time
    from pathlib import Path
    from mcp_center.store.owner import FileOwnerLock, ServeOwner

    owner = FileOwnerLock(Path(sys.argv[1]))
    owner.claim(ServeOwner.this_process())
    listener = socket.create_server(("127.0.0.1", 0))
    owner.announce(f"http://127.0.0.1:{listener.getsockname()[1]}")
    print("listening", flush=True)
    for answered in (True, False):  # the look at the server's record, then the action
        connection, _ = listener.accept()
        received = b""
        while b"\\r\\n\\r\\n" not in received:
            received += connection.recv(65536)
        if answered:
            head = "HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n"
            connection.sendall(head.encode() + b"{}")
        connection.close()
    time.sleep(float(sys.argv[2]))  # a killed serve closes its sockets a moment before it is gone
    os._exit(0)  # as after SIGKILL: serve.json stays, naming this pid
    """
)


def test_a_serve_that_closed_the_connection_and_exited_is_not_named_as_running(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN}
    assert run_cli(data, "add", "Local", "--", sys.executable, "-c", "pass", env=env).returncode == 0
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_THAT_DROPS, str(data), str(EXIT_SETTLE_S / 4)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "listening\n"
        pid = owner.pid
        dropped = run_cli(data, "enable", "local", env=env)
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait(timeout=20)
        if owner.stdout is not None:
            owner.stdout.close()
    assert dropped.returncode == 7, dropped.stderr
    assert "closed the connection before it answered" in dropped.stderr, dropped.stderr
    assert f"serve (pid {pid}) runs on it" not in dropped.stderr, dropped.stderr  # before cli36: named as running
    assert f"the mcp-center serve (pid {pid}) that ran on {data} has stopped" in dropped.stderr, dropped.stderr


def test_no_admin_token_beside_a_live_serve_is_refused_and_never_runs_a_second_copy(
    shared_serve: Host, tmp_path: Path
) -> None:
    host, data = shared_serve, shared_serve.data_dir
    marker = tmp_path / "starts"
    add_ready_on_host(host, echo_body(marker))
    before = starts(marker)
    token_file = data / "admin-token"
    assert not token_file.exists()  # the serve's token is in its environment, none in the directory
    assert run(data, "call", "echo", "echo", "--args", '{"text": "with"}').returncode == 0

    for command in (["call", "echo", "echo", "--args", '{"text": "hi"}'], ["tools", "echo"], ["disable", "echo"]):
        refused = run_cli(data, *command)  # no MCP_CENTER_ADMIN_TOKEN
        assert refused.returncode == 6, (command, refused.stdout, refused.stderr)
        first = refused.stderr.splitlines()[0]
        assert first.startswith("error [ADMIN_AUTH_REQUIRED]: a serve runs on this data directory at "), first
        assert f"{token_file} is missing" in first and "MCP_CENTER_ADMIN_TOKEN" in first, first
        assert "second copy of the server" in first, first
        assert f"runs on it at {host.url}" in refused.stderr
        assert refused.stdout == ""
    assert starts(marker) == before  # nothing started in the CLI's process
    assert host.client.get("/api/mcp/servers/echo").json()["enabled"] is True  # `disable` did nothing
