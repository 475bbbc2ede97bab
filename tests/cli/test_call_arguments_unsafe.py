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


def nested(depth: int) -> str:
    """`{"a": {"a": ... 1}}` nested `depth` objects deep (JSON text)."""
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [990, 3000, 60_000])
def test_call_refuses_arguments_nested_past_what_the_parser_can_read_like_any_deep_ones(
    tmp_path: Path, depth: int
) -> None:
    """fixb36 (R-7.3): 990 and 3000 levels were a RecursionError traceback (exit 1) where 950 was
    REQUEST_INVALID (exit 2). 60,000 objects is the deepest one argument can hold (128 KiB)."""
    given = nested(depth) if depth < 10_000 else "[" * depth + "]" * depth
    refused = run_cli(tmp_path, "call", "nosuch", "tool", "--args", given)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        "error [REQUEST_INVALID]: arguments: nests deeper than 64 levels [FIELD_INVALID]"
    ], refused.stderr
    assert refused.stdout == ""


@pytest.mark.own_serve
@pytest.mark.parametrize("kind", ["readable by others", "a directory"])
def test_call_beside_a_serve_with_an_unusable_admin_token_file_says_so_like_every_verb(
    shared_serve: Host, kind: str
) -> None:
    """fixb36: `call` read the admin token outside its error handling (a SecretStoreError traceback,
    exit 1) where `tools` printed `error [SECRET_STORE_ERROR]`; every verb's errors now go through
    one handler (`CenterCommand.invoke`)."""
    token_file = shared_serve.data_dir / "admin-token"
    if token_file.exists():
        token_file.unlink()
    if kind == "a directory":
        token_file.mkdir()
    else:
        token_file.write_text("mcpc_" + "x" * 40 + "\n", encoding="ascii")
        token_file.chmod(0o644)
    for verb in (["tools", "nosuch"], ["call", "nosuch", "tool", "--args", "{}"]):
        refused = run_cli(shared_serve.data_dir, *verb)
        assert refused.returncode == 1, (verb, refused.stderr)
        assert refused.stderr.startswith("error [SECRET_STORE_ERROR]: "), (verb, refused.stderr)
        assert "Traceback" not in refused.stderr and "x" * 40 not in refused.stderr


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_the_rest_api_refuses_arguments_nested_past_what_the_parser_can_read_the_same_way(
    shared_serve: Host, depth: int
) -> None:
    """fixb36 (R-7.3): as `mcp-center call` says it (at `body`: the parser stops before it knows the
    field); it said "body: cannot be parsed as JSON" of valid JSON."""
    answer = shared_serve.client.post(
        "/api/mcp/servers/nosuch/tools/tool/call",
        content=f'{{"arguments": {nested(depth)}}}'.encode(),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 422, answer.text[:500]
    error = answer.json()["error"]
    assert error["code"] == "REQUEST_INVALID", error
    assert error["message"] == "body: nests deeper than 64 levels", error
    assert error["details"]["errors"] == [
        {"field": "body", "code": "FIELD_INVALID", "message": "nests deeper than 64 levels"}
    ], error
