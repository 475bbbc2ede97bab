"""Issue 14: stdio servers that speak badly or die early, and messages that say what to do (R-3.1,
R-3.11, R-1.5). Items 11, 13 and 15, through the REST API (and the gateway where a call is involved)."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hostile._support import QUIRKY, Host, quirky_body, running_host, text_of
from tests.support.fakes.streamable_http import ECHO_TOOL

pytestmark = pytest.mark.anyio

SECRET = "sk-quirky-0123456789abcdef"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncGenerator[Host]:
    async with running_host(tmp_path / "data") as running:
        yield running


def _raw_answer(text: bytes) -> bytes:
    """A result line whose text holds `text` as raw bytes; the id (`{id}`, filled in by the server)
    comes last, so the offset of the first invalid byte does not depend on it."""
    return b'{"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "' + text + b'"}]}, "id": {id}}'


@pytest.mark.parametrize("raw", [b"caf\xb0\xa1 au lait", b"\xff", b"cut \xe2\x82"])
async def test_a_reply_line_with_invalid_utf8_answers_at_once_decoded_and_marked(host: Host, raw: bytes) -> None:
    """Item 11: not stdout noise and a 60 s wait; the answer comes with U+FFFD and the byte offset."""
    line = _raw_answer(raw)
    first_bad = next(i for i, b in enumerate(line) if b >= 0x80)
    scenario = {"tools": [ECHO_TOOL], "calls": {"echo": {"raw_hex": line.hex()}}}
    await host.ready(quirky_body("latin", scenario, call_timeout_s=60, tool_policies={"echo": "allow"}))
    with anyio.fail_after(10):
        called = await host.call("latin", "echo", {"text": "x"})
    assert called.status_code == 200, called.text
    body = called.json()
    assert "\ufffd" in text_of(body)
    mark = body["_meta"]["mcp-center/invalid_utf8"]
    assert mark["first_offset"] == first_bad
    assert mark["replacements"] >= 1
    async with host.agent() as agent:
        with anyio.fail_after(10):
            result = await agent.call_tool("mcp__latin__echo", {"text": "y"})
    assert "\ufffd" in text_of(result)
    assert result.is_error is not True


async def test_an_error_line_with_invalid_utf8_fails_the_call_at_once_with_a_note(host: Host) -> None:
    """Item 11: a JSON-RPC error answer that is not UTF-8 is still the call's answer, marked."""
    line = b'{"jsonrpc": "2.0", "error": {"code": -32000, "message": "quota \xe9puis\xe9"}, "id": {id}}'
    scenario = {"tools": [ECHO_TOOL], "calls": {"echo": {"raw_hex": line.hex()}}}
    await host.ready(quirky_body("latinerr", scenario, call_timeout_s=60))
    with anyio.fail_after(10):
        called = await host.call("latinerr", "echo", {"text": "x"})
    assert called.status_code == 502, called.text
    error = called.json()["error"]
    assert error["code"] == "MCP_SERVER_ERROR"
    assert "invalid UTF-8" in error["message"]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_a_server_that_prints_and_exits_before_initialize_shows_its_output_redacted(
    host: Host, stream: str
) -> None:
    """Item 13: "exited with code 3 during initialize; its last output: '...'" — bounded, redacted."""
    scenario = {"before_initialize": {stream: "fatal: the API key $QUIRKY_KEY was refused", "exit": 3}}
    body = quirky_body("dies", scenario, secret_env=["QUIRKY_KEY"], secret_values={"env": {"QUIRKY_KEY": SECRET}})
    view = await host.create(body)
    tested = await host.test(view["id"])
    assert tested["ok"] is False
    error = tested["error"]
    assert error["reason"] == "process_exited"
    assert error["details"]["exit_code"] == 3
    assert "exited with code 3 during initialize" in error["message"]
    assert "fatal: the API key [redacted] was refused" in error["message"]
    assert SECRET not in json.dumps(tested)
    assert len(error["message"]) < 1000


def _package_runner(tmp_path: Path, name: str) -> str:
    """An executable called `name` (like `npx`) that runs the quirky server with its arguments."""
    runner = tmp_path / "bin" / name
    runner.parent.mkdir(parents=True, exist_ok=True)
    runner.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{QUIRKY}" "$@"\n')
    runner.chmod(runner.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return os.fspath(runner)


INSTALL_OUTPUT = [
    "npm warn exec The following package was not found and will be installed: mongodb-mcp-server@1.2.0",
    "npm http fetch GET 200 https://registry.npmjs.org/mongodb-mcp-server 312ms",
]


@pytest.mark.parametrize(
    ("output", "says"), [(INSTALL_OUTPUT, "still installing packages"), ([], "npx printed no install output")]
)
async def test_a_startup_timeout_names_its_setting_and_says_whether_the_process_was_installing(
    host: Host, tmp_path: Path, output: list[str], says: str
) -> None:
    """Item 15: "(startup_timeout_s; raise it ...)", and what the package runner was doing."""
    npx = _package_runner(tmp_path, "npx")
    scenario: dict[str, Any] = {"stderr_on_start": output, "hang_initialize": True}
    body = {**quirky_body("cold", scenario, startup_timeout_s=1), "command": npx, "args": [json.dumps(scenario)]}
    view = await host.create(body)
    tested = await host.test(view["id"])
    assert tested["ok"] is False
    error = tested["error"]
    assert error["code"] == "MCP_SERVER_TIMEOUT", error
    assert "startup_timeout_s" in error["message"]
    assert error["details"]["setting"] == "startup_timeout_s"
    assert says in error["message"]
    assert error["details"]["installing"] is bool(output)
    if output:
        assert "mongodb-mcp-server" in error["message"]
