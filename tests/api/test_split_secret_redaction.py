"""A secret never leaks in pieces through a stdio server's stderr or stdout noise (R-1.5, R-3.11).

stderr lines are cut into records of at most 8192 bytes and noise lines are truncated; both must
be redacted before they are cut, or a secret straddling a cut shows up as two harmless-looking
halves. A real stdio "server" prints `"A" * pad + secret` to stderr and `"N" * pad + secret` to
stdout, then exits with code 3; the failed test's error (`stderr_tail`, `first_noise`), the
server's logs over the API and every log record must hold no piece of the secret.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
import pytest

from mcp_center.runtime.attribution import STDERR_CHARS_IN_ERROR
from tests.support.api import Captured, stdio_body
from tests.support.readiness import STEP_TIMEOUT_S

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
LIMIT = 8192
"""The stdio transport's record size (`max_stderr_line_bytes`)."""
SECRET = "SEKRIT-LEAK-55aa77"
LONG_SECRET = "LONG-" + "".join("xyzXYZ"[(i * i + i // 7) % 6] for i in range(LIMIT + 800))
"""Longer than a whole record: it spans two cuts whatever the offset."""
PIECE = 4
"""Shortest piece of a secret that counts as a leak."""

STRADDLER = (
    "import os, sys\n"
    "secret, pad = os.environ['API_KEY'], int(os.environ['PAD'])\n"
    "sys.stdout.write('N' * pad + secret + ' tail\\n')\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('A' * pad + secret + ' tail\\n')\n"
    "sys.stderr.flush()\n"
    "if os.environ.get('HANG'):\n"
    "    sys.stdin.read()\n"
    "sys.exit(3)\n"
)
"""Prints the secret env value after `PAD` padding characters on both streams, then exits (or,
with `HANG` set, waits for stdin to close: the test then times out and quotes the first noise line)."""


def pieces_of(secret: str, text: str) -> set[str]:
    """The substrings of `secret` of length `PIECE` that occur in `text`."""
    grams = {secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)}
    return grams & {text[i : i + PIECE] for i in range(len(text) - PIECE + 1)}


async def _failed_test(
    client: httpx2.AsyncClient, server_id: str, secret: str, pad: int, *, hang: bool = False
) -> dict[str, Any]:
    env = {"PAD": str(pad)} | ({"HANG": "1"} if hang else {})
    extra: dict[str, Any] = {"startup_timeout_s": 1} if hang else {}
    body = stdio_body(
        server_id, sys.executable, ["-c", STRADDLER], env=env, secret_values={"env": {"API_KEY": secret}}, **extra
    )
    created = await client.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    trusted = await client.post(f"{SERVERS}/{server_id}/trust", json={"digest": created.json()["digest"]})
    assert trusted.status_code == 200, trusted.text
    with anyio.fail_after(STEP_TIMEOUT_S):
        tested = await client.post(f"{SERVERS}/{server_id}/test")
    assert tested.status_code == 200, tested.text
    result = tested.json()
    assert result["ok"] is False
    return result["error"]


@pytest.mark.parametrize(
    ("secret", "pad"),
    [
        *((SECRET, LIMIT - back) for back in (1, 2, 4, 9, 14, 17)),  # straddles the first cut
        (SECRET, LIMIT - len(SECRET)),  # ends exactly at the cut
        (SECRET, LIMIT),  # starts exactly at the cut
        (SECRET, 190),  # straddles the 200 characters kept of the first noise line
        (LONG_SECRET, 0),
        (LONG_SECRET, LIMIT - 3),
    ],
    ids=lambda value: str(value) if isinstance(value, int) else ("long" if value == LONG_SECRET else "short"),
)
async def test_a_secret_straddling_a_cut_appears_in_no_piece_of_logs_errors_or_log_records(
    client: httpx2.AsyncClient, captured: Captured, secret: str, pad: int
) -> None:
    error = await _failed_test(client, "straddle", secret, pad)
    assert error["reason"] == "process_exited"
    tail: list[str] = error["details"]["stderr_tail"]
    logs = await client.get(f"{SERVERS}/straddle/logs")
    assert logs.status_code == 200, logs.text
    stderr = [entry["line"] for entry in logs.json()["stderr"]]

    for where, text in [
        ("stderr_tail", "\n".join(tail)),
        ("error", json.dumps(error)),
        ("logs", "\n".join(stderr)),
        ("log records", "\n".join(record.getMessage() for record in captured.records)),
    ]:
        assert not pieces_of(secret, text), (where, sorted(pieces_of(secret, text))[:5])

    # The output was captured (redacted, not dropped): the scan above is meaningful.
    assert any(line.removeprefix("…").startswith("A" * min(pad, 100)) for line in tail), tail  # 2 KiB: a line's end
    assert any("[redacted]" in line for line in tail), tail
    assert any(line.startswith("[stdout, not JSON-RPC] ") and "N" * min(pad, 100) in line for line in stderr)
    assert sum("[redacted]" in line for line in stderr) >= (2 if pad + len(secret) <= LIMIT else 1), stderr


async def test_each_stderr_record_stays_within_the_limit_and_the_pieces_join_to_the_redacted_line(
    client: httpx2.AsyncClient,
) -> None:
    """Pieces still flow at the limit; joined they are the line with the secret replaced whole (the
    error's tail holds the last 2 KiB of them, issue 16)."""
    pad = LIMIT - 9
    error = await _failed_test(client, "joined", SECRET, pad)
    tail: list[str] = error["details"]["stderr_tail"]
    assert all(len(line.encode()) <= LIMIT for line in tail)
    joined = "".join(tail)
    assert joined.startswith("…") and ("A" * pad + "[redacted] tail").endswith(joined.removeprefix("…"))
    assert len(joined) == 1 + STDERR_CHARS_IN_ERROR
    logs = (await client.get(f"{SERVERS}/joined/logs")).json()["stderr"]
    pieces = [entry["line"] for entry in logs if not entry["line"].startswith("[stdout")]
    assert "".join(pieces) == "A" * pad + "[redacted] tail"


@pytest.mark.parametrize("pad", [190, 195, 199, LIMIT - 9])
async def test_the_first_noise_line_quoted_by_a_startup_timeout_holds_no_piece_of_a_secret(
    client: httpx2.AsyncClient, pad: int
) -> None:
    """The timeout error quotes the first 200 characters of the first noise line (a cut of its own)."""
    error = await _failed_test(client, "quiet", SECRET, pad, hang=True)
    assert error["reason"] == "timeout"
    assert error["details"]["noise_lines"] == 1
    assert error["details"]["first_noise"].startswith("N" * 100)
    assert not pieces_of(SECRET, json.dumps(error)), sorted(pieces_of(SECRET, json.dumps(error)))
