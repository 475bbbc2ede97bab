"""Credentials the vault never held are masked in a stdio server's output too (R-1.5, issue 16).

Only registered secret values were redacted from the stderr tail (20 lines, shown by the REST
answer, the CLI, the page and the server's logs): a server printing its database URL with a
password, a GitHub or Slack token, or an `Authorization:` header showed them in full. A real
stdio "server" prints such lines on stderr and stdout and exits; none of the values may appear
in the failed test's error, the server's logs over the API or any log record.
"""

from __future__ import annotations

import json
import sys

import anyio
import httpx2
import pytest

from mcp_center.secrets import REDACTED, mask_credential_shapes
from tests.support.api import Captured, stdio_body
from tests.support.readiness import STEP_TIMEOUT_S

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
LEAKS = {
    "url password": ("db https://bob:hunter2pass@db.example.com/x", "db https://bob:[redacted]@db.example.com/x"),
    "github": ("token ghp_" + "Zq8" * 12 + " done", "token [redacted] done"),
    "github pat": ("github_pat_" + "11AB_cd" * 6, "[redacted]"),
    "slack": ("slack xoxb-2048-4096-QwErTyUiOp", "slack [redacted]"),
    "openai": ("key=sk-live-ABCDEFGHIJKLmnop1234", "key=[redacted]"),
    "aws": ("aws AKIAIOSFODNN7EXAMPLE ok", "aws [redacted] ok"),
    "header": ("sent Authorization: Bearer abc.def-ghi", "sent Authorization: Bearer [redacted]"),
    "bearer": ("with Bearer eyJhbGciOiJIUzI1NiJ9.payload", "with Bearer [redacted]"),
}
HIDDEN = ("hunter2pass", "Zq8Zq8", "11AB_cd", "QwErTyUiOp", "ABCDEFGHIJKL", "AKIAIOSFODNN7", "abc.def", "eyJhbGci")


@pytest.mark.parametrize(("line", "masked"), list(LEAKS.values()), ids=list(LEAKS))
def test_a_credential_shape_is_masked(line: str, masked: str) -> None:
    assert mask_credential_shapes(line) == masked


@pytest.mark.parametrize(
    "line",
    ["https://example.com/a@b", "ftp://anonymous@host/x", "a bearer of news", "sk-short", "task-1234567890abcdef"],
)
def test_text_without_a_credential_is_kept(line: str) -> None:
    assert mask_credential_shapes(line) == line


async def test_a_stdio_servers_output_shows_no_credential_anywhere(
    client: httpx2.AsyncClient, captured: Captured
) -> None:
    script = (
        "import sys\n"
        f"lines = {json.dumps([line for line, _ in LEAKS.values()])}\n"
        "for line in lines:\n"
        "    sys.stderr.write(line + '\\n')\n"
        "print(lines[0], flush=True)\n"
        "sys.stderr.flush()\n"
        "sys.exit(3)\n"
    )
    created = await client.post(SERVERS, json=stdio_body("leaky", sys.executable, ["-c", script]))
    assert created.status_code == 201, created.text
    trusted = await client.post(f"{SERVERS}/leaky/trust", json={"digest": created.json()["digest"]})
    assert trusted.status_code == 200, trusted.text
    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = await client.post(f"{SERVERS}/leaky/test")
    error = tested.json()["error"]
    tail: list[str] = error["details"]["stderr_tail"]
    logs = await client.get(f"{SERVERS}/leaky/logs")
    assert logs.status_code == 200, logs.text
    logged = [entry["line"] for entry in logs.json()["stderr"]]
    assert [masked for _, masked in LEAKS.values()] == [line for line in tail if REDACTED in line]
    assert sum(REDACTED in line for line in logged) >= len(LEAKS)
    for where, text in [
        ("error", json.dumps(error)),
        ("logs", "\n".join(logged)),
        ("log records", "\n".join(record.getMessage() for record in captured.records)),
    ]:
        assert not [value for value in HIDDEN if value in text], where
