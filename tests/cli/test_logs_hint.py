"""The "see the server's log with 'mcp-center logs ID'" of an error works as printed: it carries the
command's non-default `--data-dir`, shell-quoted (fix37, R-3.11, R-7.3).

A real stdio server (`tests/servers/quirky_stdio.py`) that writes a debug line on stdout and answers
the call under an id nobody sent, so the one-second call times out naming its log.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio

from mcp_center.config import Settings
from mcp_center.service import McpCenter
from tests.hostile._support import quirky_body
from tests.support.cli import run_cli

_NOISE_THEN_WRONG_ID = b'debug: echo called\n{"jsonrpc": "2.0", "id": "x{id}", "result": {"content": []}}'


def test_the_log_command_of_a_call_error_names_the_data_dir_it_was_given(tmp_path: Path) -> None:
    data = tmp_path / "my data"  # a space: the path must be quoted to work as printed
    scenario = {"calls": {"echo": {"raw_hex": _NOISE_THEN_WRONG_ID.hex()}}}

    async def ready() -> None:
        async with McpCenter.open(Settings.load(data_dir=data, environ={}), connect=False) as center:
            body = quirky_body("mix", scenario, call_timeout_s=1, tool_policies={"echo": "allow"})
            view = await center.create_server(body)
            await center.trust(view.id, view.digest)
            assert (await center.test(view.id)).ok

    anyio.run(ready)
    enabled = run_cli(None, "enable", "mix", "--data-dir", str(data))
    assert enabled.returncode == 0, enabled.stderr
    called = run_cli(None, "call", "mix", "echo", "--args", '{"text": "x"}', "--data-dir", str(data))
    assert called.returncode == 8, called.stderr
    expected = shlex.join(["mcp-center", "logs", "mix", "--data-dir", str(data)])
    assert called.stderr.endswith(f"see the server's log with {expected}\n"), called.stderr
    plain = tmp_path / "plain"
    (data).rename(plain)  # a path without quotes keeps the message's quotes around the command
    again = run_cli(None, "call", "mix", "echo", "--args", "{}", "--data-dir", str(plain))
    assert again.stderr.endswith(f"see the server's log with 'mcp-center logs mix --data-dir {plain}'\n"), again.stderr


def test_a_long_error_message_keeps_its_end_the_next_step() -> None:
    """A call's timeout message ran past the 500 characters an echoed value may take and lost its
    end, the log command to run (fix39); an error's message is clipped in its middle instead."""
    from mcp_center.cli._shared import MAX_MESSAGE_CHARS, shown_message

    message = "x" * 3000 + "; see the server's log with 'mcp-center logs mix'"
    printed = shown_message(message)
    assert len(printed) < MAX_MESSAGE_CHARS + 40
    assert printed.endswith("; see the server's log with 'mcp-center logs mix'")
    assert "more characters) ..." in printed
    assert shown_message("short \x1b[31m") == "short \\x1b[31m"
