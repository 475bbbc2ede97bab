"""Every command the CLI suggests carries the `--data-dir` the user gave (issue 16 item 1, R-9.2).

Copied literally, "next: mcp-center trust time" acted on the default data directory, where `time`
did not exist. The verbs run in process with `--data-dir` and no `MCP_CENTER_DATA_DIR`, so the
directory is not the default one; every suggested `mcp-center ...` line must name it.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from mcp_center.cli._suggest import forget, remember, suggested
from mcp_center.config import Settings
from tests.support.cli import run_cli


def suggestions(text: str) -> list[str]:
    """The `mcp-center ...` commands a message suggests (`next: ...`, `start one with '...'`)."""
    found: list[str] = []
    for line in text.splitlines():
        for marker in ("next: ", "with '", "to change one: "):
            if marker in line:
                tail = line.split(marker, 1)[1]
                if marker == "with '":
                    tail = tail.rsplit("'", 1)[0]  # the message's own quotes around the command
                if tail.startswith("mcp-center "):
                    found.append(tail.split(", then ")[0].split("  (")[0])
    return found


def test_every_suggested_command_carries_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "my data"  # a space: the suggestion must quote it
    dd = ["--data-dir", str(data)]
    config = tmp_path / "f.json"
    config.write_text(json.dumps({"mcpServers": {"clock": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    runs = [
        run_cli(None, "list", *dd),
        run_cli(None, "add", "time", *dd, "--", sys.executable, "-c", "pass"),
        run_cli(None, "enable", "time", *dd),  # MCP_SERVER_NOT_TRUSTED: next trust
        run_cli(None, "trust", "time", *dd, "--yes"),
        run_cli(None, "enable", "time", *dd),  # MCP_SERVER_NOT_TESTED: next test
        run_cli(None, "import", str(config), *dd, "--yes"),
    ]
    seen = [s for r in runs for s in suggestions(r.stdout + r.stderr)]
    assert len(seen) >= 6, [r.stdout + r.stderr for r in runs]
    for command in seen:
        argv = shlex.split(command)
        assert argv[argv.index("--data-dir") + 1] == str(data), command
    verbs = {shlex.split(c)[1] for c in seen}
    assert {"add", "trust", "test"} <= verbs, seen


def test_a_suggestion_for_the_default_data_dir_names_none(tmp_path: Path) -> None:
    """MCP_CENTER_DATA_DIR chose the directory: a command without --data-dir uses it too."""
    added = run_cli(tmp_path, "add", "time", "--", sys.executable, "-c", "pass")
    assert added.stdout.endswith("; next: mcp-center trust time\n"), added.stdout
    trusted = run_cli(tmp_path, "trust", "time", "--yes")
    assert trusted.stdout.splitlines()[-1] == "trusted; next: mcp-center test time"


def test_the_default_directory_is_left_out_and_a_url_goes_only_to_verbs_that_take_it(tmp_path: Path) -> None:
    forget()
    remember(Settings.load(data_dir=tmp_path, environ={}), url="http://127.0.0.1:9")
    try:
        assert suggested("trust", "x") == f"mcp-center trust x --data-dir {tmp_path}"
        assert suggested("approvals") == f"mcp-center approvals --data-dir {tmp_path} --url http://127.0.0.1:9"
        assert suggested("add", "n", "--", "cmd", "-x") == f"mcp-center add n --data-dir {tmp_path} -- cmd -x"
    finally:
        forget()
    assert suggested("trust", "x") == "mcp-center trust x"


def test_a_message_about_a_data_directory_names_it_unless_it_is_the_platform_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trial38: serve's banner printed `--data-dir <the default>` though the README says the default is
    left out; a directory chosen by MCP_CENTER_DATA_DIR is named (another shell may not have it)."""
    monkeypatch.delenv("MCP_CENTER_DATA_DIR", raising=False)
    forget()
    default = Settings.load(environ={})
    assert suggested("serve", settings=default) == "mcp-center serve"
    monkeypatch.setenv("MCP_CENTER_DATA_DIR", str(tmp_path))
    chosen = Settings.load(environ={"MCP_CENTER_DATA_DIR": str(tmp_path)})
    assert suggested("serve", settings=chosen) == shlex.join(["mcp-center", "serve", "--data-dir", str(tmp_path)])


def test_a_suggestion_names_this_programs_path_when_mcp_center_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trial38: after the README's set-up `mcp-center` is `.venv/bin/mcp-center`, not on PATH, and
    `next: mcp-center trust x` did not run as printed (ux39)."""
    script = Path(sys.executable).parent / "mcp-center"
    assert script.is_file(), script  # the project's venv has the console script
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no mcp-center on PATH
    assert suggested("trust", "x") == f"{shlex.quote(str(script))} trust x"
    added = run_cli(tmp_path / "data", "add", "time", "--", sys.executable, "-c", "pass")
    assert added.stdout.endswith(f"; next: {shlex.quote(str(script))} trust time\n"), added.stdout
    monkeypatch.setenv("PATH", str(script.parent))  # this program's own directory first: the bare name
    assert suggested("trust", "x") == "mcp-center trust x"


def test_a_command_leaves_nothing_remembered_when_it_ends(tmp_path: Path) -> None:
    """CI of stop 34: a `--data-dir` command run in this process left its directory remembered, so the
    next suggestion made outside any command (another test, a library caller) carried it."""
    data = tmp_path / "d"
    listed = run_cli(None, "list", "--data-dir", str(data))
    assert listed.returncode == 0, listed.stderr
    assert suggested("trust", "x").endswith(" trust x"), suggested("trust", "x")
    failed = run_cli(None, "enable", "nope", "--data-dir", str(data))
    assert failed.returncode != 0 and "--data-dir" in failed.stdout + failed.stderr, failed
    assert "--data-dir" not in suggested("trust", "x")


def test_a_suggested_url_holds_neither_password_nor_token(tmp_path: Path) -> None:
    """break36: the remembered `--url` is repeated as `display_url` shows it (R-1.5)."""
    forget()
    remember(Settings.load(data_dir=tmp_path, environ={}), url="http://admin:S3CRETPW@127.0.0.1:9/?token=T0KEN")
    try:
        assert suggested("approvals") == shlex.join(
            ["mcp-center", "approvals", "--data-dir", str(tmp_path), "--url", "http://127.0.0.1:9/?token=[redacted]"]
        )
    finally:
        forget()
