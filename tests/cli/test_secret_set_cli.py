"""`mcp-center secret set`: a key the server does not use needs `--new`, every flag is checked before
the value is read, and a value's true fault is named (R-1.5, R-7.3, issue 16: a new user's CLI trial).

In process (`tests/support/cli.run_cli`), except the one test that needs a real terminal: the value
question must not be printed, let alone answered, before a bad `--kind` is refused.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CLI, CliResult, ready_with_cli, run_cli

VALUE = "secret-set-invented-0042"


def run(data: Path, *args: str, stdin: str | None = None) -> CliResult:
    return run_cli(data, *args, input=stdin)


def show(data: Path, server_id: str) -> dict[str, Any]:
    shown = run(data, "show", server_id)
    assert shown.returncode == 0, shown.stderr
    result: dict[str, Any] = json.loads(shown.stdout)
    return result


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data directory with `local` (stdio: plain env MODE, secret env API_KEY) and `docs` (remote:
    plain header X-Team, secret header X-Api-Key)."""
    data = tmp_path / "data"
    added = run(data, "add", "Local", "-e", "MODE=fast", "-e", f"API_KEY={VALUE}", "--", sys.executable, "-c", "pass")
    assert added.returncode == 0, added.stderr
    remote = ["add", "Docs", "https://docs.example.net/mcp", "-H", "X-Team: core", "-H", f"X-Api-Key: {VALUE}"]
    added = run(data, *remote)
    assert added.returncode == 0, added.stderr
    return data


def test_a_key_the_server_does_not_use_is_refused_with_the_keys_it_does(data: Path) -> None:
    """A typo (`API_KEYY`) declared a second secret nothing reads and left API_KEY as it was."""
    result = run(data, "secret", "set", "local", "API_KEYY", "--kind", "environment", stdin=f"{VALUE}-2\n")
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        "error [SECRET_KEY_INVALID]: key: local has no env var API_KEYY (it uses: API_KEY, MODE); "
        "pass --new to add it [KEY_NOT_USED]"
    ]
    assert show(data, "local")["secret_env"] == {"API_KEY": {"configured": True}}
    headers = run(data, "secret", "set", "docs", "X-Api-Kye", "--kind", "header", stdin=f"{VALUE}-2\n")
    assert headers.returncode == 2, headers.stdout
    assert "docs has no header X-Api-Kye (it uses: X-Api-Key, X-Team)" in headers.stderr
    assert VALUE not in result.stderr + headers.stderr


def test_a_key_the_server_uses_plain_or_secret_is_set_without_new(data: Path) -> None:
    for server, key, kind in [("local", "API_KEY", "environment"), ("local", "MODE", "environment"),
                              ("docs", "x-api-key", "header"), ("docs", "X-Team", "header")]:  # fmt: skip
        result = run(data, "secret", "set", server, key, "--kind", kind, stdin=f"{VALUE}-3\n")
        assert result.returncode == 0, (key, result.stderr)
    local = show(data, "local")
    assert (local["env"], local["secret_env"]) == ({}, {"API_KEY": {"configured": True}, "MODE": {"configured": True}})
    assert set(show(data, "docs")["secret_headers"]) == {"X-Api-Key", "X-Team"}


def test_new_adds_a_key_the_server_did_not_have(data: Path) -> None:
    result = run(data, "secret", "set", "local", "GITHUB_TOKEN", "--kind", "environment", "--new", stdin=f"{VALUE}\n")
    assert result.returncode == 0, result.stderr
    assert set(show(data, "local")["secret_env"]) == {"API_KEY", "GITHUB_TOKEN"}
    bad_name = run(data, "secret", "set", "local", "NOT-A-NAME", "--kind", "environment", "--new", stdin=f"{VALUE}\n")
    assert bad_name.returncode == 2  # --new skips the "is it used" check, never the form of the key
    assert "error [SECRET_KEY_INVALID]: 'NOT-A-NAME' is not a valid env var name" in bad_name.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["local", "API_KEY", "--kind", "envirnment"], "error [REQUEST_INVALID]: kind: must be one of: environment"),
        (["nope", "API_KEY", "--kind", "environment"], "error [MCP_SERVER_NOT_FOUND]: no server with id 'nope'"),
        (["local", "API_KEYY", "--kind", "environment"], "error [SECRET_KEY_INVALID]: key: local has no env var"),
        (["local", "X-Api-Key", "--kind", "header"], "error [SECRET_KEY_INVALID]: header secrets are for remote"),
    ],
    ids=["kind", "server", "key", "kind-for-transport"],
)
def test_every_flag_is_checked_before_the_value_is_read(data: Path, args: list[str], expected: str) -> None:
    """Standard input is empty: had the value been read first, the answer would be ANSWER_REQUIRED."""
    result = run(data, "secret", "set", *args, stdin="")
    assert result.returncode in (2, 3), result.stdout
    assert result.stderr.startswith(expected), result.stderr
    assert "ANSWER_REQUIRED" not in result.stderr


def test_a_bad_kind_is_refused_on_a_terminal_before_the_value_is_asked_for(data: Path) -> None:
    """On a terminal, the user typed the secret and only then read that --kind was wrong. A real
    process on a pseudo-terminal: it must end without printing the value question (R-7.3)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [CLI, "secret", "set", "local", "API_KEY", "--kind", "envirnment", "--data-dir", str(data)],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env,
            timeout=60,  # a value question would wait here for an answer that never comes
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed and everything read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    text = shown.decode()
    assert done.returncode == 2, text
    # One line, with the closest kind (trial35: the message twice and no did-you-mean).
    said = [line for line in text.splitlines() if "must be one of" in line]
    assert len(said) == 1, text
    assert (
        "error [REQUEST_INVALID]: kind: must be one of: environment, header, bearer, oauth; "
        "did you mean 'environment'? [FIELD_INVALID]"
    ) in said[0], text
    assert "value:" not in text


def test_a_value_with_nul_gets_its_own_reason(data: Path) -> None:
    """It said "must be a non-empty string of at most 32 KiB" for a 20-character value."""
    result = run(data, "secret", "set", "local", "API_KEY", "--kind", "environment", stdin="abc\x00defghijklmnop\n")
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        "error [CONFIG_INVALID]: value: must not contain a NUL character (\\x00) [SECRET_VALUE_HAS_NUL]"
    ]
    assert "32 KiB" not in result.stderr and "defghijklmnop" not in result.stderr


def test_a_changed_secret_says_the_enabled_server_was_disabled_and_what_to_run(tmp_path: Path, echo_url: str) -> None:
    """The server stopped silently: `secret set` said "needs trust and test again" whatever happened,
    and never that the running server had been disabled (R-1.4, R-2.4, issue 16). It now says so in
    the settings page's words, with the commands to run; a server that was never trusted lost
    nothing and gets no such line."""
    data = tmp_path / "data"
    assert run(data, "add", "Echo", "--url", echo_url, "-H", f"X-Api-Key: {VALUE}").returncode == 0
    ready_with_cli(data, "echo")
    changed = run(data, "secret", "set", "echo", "X-Api-Key", "--kind", "header", stdin=f"{VALUE}-rotated\n")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.splitlines() == [
        "secret X-Api-Key set",
        "server 'echo' was disabled: its secret changed, which touched something security-relevant; confirm "
        "the new summary, then test and enable again: mcp-center trust echo, "
        "then mcp-center test echo and mcp-center enable echo",
    ]
    assert (show(data, "echo")["enabled"], show(data, "echo")["trusted"]) == (False, False)
    untrusted = run(data, "secret", "set", "echo", "X-Api-Key", "--kind", "header", stdin=f"{VALUE}-again\n")
    assert (untrusted.returncode, untrusted.stdout.splitlines()) == (0, ["secret X-Api-Key set"])
    assert run(data, "trust", "echo", "--yes").returncode == 0
    trusted_only = run(data, "secret", "set", "echo", "X-Api-Key", "--kind", "header", stdin=f"{VALUE}-third\n")
    assert trusted_only.stdout.splitlines()[1:] == [
        "its trust was cleared: the secret is part of the connection summary; next: mcp-center trust echo, "
        "then mcp-center test echo and mcp-center enable echo"
    ]
    assert VALUE not in changed.stdout + changed.stderr + trusted_only.stdout
