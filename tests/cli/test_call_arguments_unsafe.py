"""Arguments JSON cannot carry (NaN, a number such as 1e400 that is infinite once read, a lone
surrogate) are a malformed call, not configuration: REQUEST_INVALID with the bad value's position,
from `mcp-center call` (exit 2, before any serve is asked or server started) as from the REST API
(422), where both said CONFIG_INVALID / TEXT_INVALID (cli36, R-7.3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.serve import Host

CASES = [
    ('{"limit": NaN}', "arguments.limit", "is NaN or infinite"),
    ('{"values": [1, 2, 1e400]}', "arguments.values.2", "is NaN or infinite (or a number too large, such as 1e400)"),
    ('{"outer": {"name": "x\\ud800"}}', "arguments.outer.name", "contains an unpaired surrogate"),
]


@pytest.mark.parametrize(("given", "where", "problem"), CASES)
def test_call_refuses_arguments_json_cannot_carry_as_a_request_naming_the_position(
    tmp_path: Path, given: str, where: str, problem: str
) -> None:
    refused = run_cli(tmp_path, "call", "nosuch", "tool", "--args", given)  # nothing is looked up first
    assert refused.returncode == 2, refused.stderr
    first = refused.stderr.splitlines()[0]
    assert first.startswith(f"error [REQUEST_INVALID]: {where}: {problem}"), first
    assert first.endswith("[FIELD_INVALID]"), first
    assert "CONFIG_INVALID" not in refused.stderr and "TEXT_INVALID" not in refused.stderr
    assert refused.stdout == ""


def test_the_rest_api_refuses_them_with_the_same_code(shared_serve: Host) -> None:
    for given, where, problem in CASES:
        answer = shared_serve.client.post(
            "/api/mcp/servers/nosuch/tools/tool/call",
            content=f'{{"arguments": {given}}}'.encode(),
            headers={"Content-Type": "application/json"},
        )
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["code"] == "REQUEST_INVALID", error
        assert error["message"].startswith(f"{where}: {problem}"), error
        assert error["details"]["errors"] == [
            {"field": where, "code": "FIELD_INVALID", "message": error["message"].removeprefix(f"{where}: ")}
        ], error
