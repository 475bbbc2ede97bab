"""`add` of a server already registered with the same name and configuration is refused; a different
server of the same name gets `-2` and a note; the REST create and the library refuse it alike
(issue 16 item 6, trialfix36, R-1.1).

A newcomer pasted `mcp-center add time -- uvx mcp-server-time` three times and got `time`, `time-2`
and `time-3`, three copies of one server, with only a note on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_center.config import Settings
from mcp_center.errors import ServerAlreadyRegistered
from mcp_center.service import McpCenter
from tests.support.cli import run_cli

COMMAND = ["--", sys.executable, "-c", "pass"]


def ids(data: Path) -> list[str]:
    return [s["id"] for s in json.loads(run_cli(data, "list", "--json").stdout)]


def test_the_same_server_twice_is_refused_naming_the_existing_one(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "time", *COMMAND).returncode == 0
    again = run_cli(tmp_path, "add", "time", *COMMAND)
    assert again.returncode == 4
    assert again.stderr.splitlines() == [
        "error [MCP_SERVER_ALREADY_REGISTERED]: 'time' is already registered with this name and configuration: "
        "nothing was added; pass --id NEW_ID to register a second copy",
        "  next: mcp-center show time",
    ]
    assert again.stdout == ""
    assert ids(tmp_path) == ["time"]
    copy = run_cli(tmp_path, "add", "time", "--id", "time-copy", *COMMAND)
    assert copy.returncode == 0, copy.stderr
    assert "note: another server is already named 'time' (time); both show that name" in copy.stderr
    assert sorted(ids(tmp_path)) == ["time", "time-copy"]


def test_a_different_server_of_the_same_name_gets_a_suffix_and_a_note(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "add", "time", *COMMAND).returncode == 0
    other = run_cli(tmp_path, "add", "Time", "--", sys.executable, "-c", "print(1)")
    assert other.returncode == 0, other.stderr
    assert other.stdout.startswith("added time-2 ")
    assert other.stderr.splitlines() == ["note: another server is already named 'Time' (time); both show that name"]


def test_a_library_create_of_a_twin_is_refused_unless_told_to_register_it(tmp_path: Path) -> None:
    """The library's `create_server` refuses a twin by default, as `add` and REST do (trialfix36);
    `refuse_twin=False` registers the copy with a SERVER_NAME_SHARED note (R-1.1)."""
    body = {"name": "time", "transport": "stdio", "command": sys.executable, "args": ["-c", "pass"]}

    async def twice() -> tuple[str, list[dict[str, Any]]]:
        async with McpCenter.open(Settings.load(data_dir=tmp_path, environ={}), connect=False) as center:
            first = await center.create_server(dict(body))
            try:
                await center.create_server(dict(body))
                refused = ""
            except ServerAlreadyRegistered as exc:
                refused = exc.details["server_id"]
            second = await center.create_server(dict(body), refuse_twin=False)
            return refused, [first.to_dict(), second.to_dict()]

    refused, (first, second) = anyio.run(twice)
    assert refused == "time"
    assert (first["id"], second["id"]) == ("time", "time-2")
    assert not [w for w in first["warnings"] if w["code"] == "SERVER_NAME_SHARED"]
    assert {
        "code": "SERVER_NAME_SHARED",
        "message": "another server is already named 'time' (time); both show that name",
    } in second["warnings"]


def test_the_refusal_names_the_oldest_of_several_copies(tmp_path: Path) -> None:
    """With `time` and a copy `a-time` (an id sorting first), `add` again named the copy (trialfix36):
    it names the server registered first."""
    assert run_cli(tmp_path, "add", "time", *COMMAND).returncode == 0
    assert run_cli(tmp_path, "add", "time", "--id", "a-time", *COMMAND).returncode == 0
    again = run_cli(tmp_path, "add", "time", *COMMAND)
    assert again.returncode == 4
    assert again.stderr.startswith("error [MCP_SERVER_ALREADY_REGISTERED]: 'time' is already registered")
    assert "pass --id NEW_ID" in again.stderr
